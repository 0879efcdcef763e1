// Region (de)compression for Darshan logs: multi-stream zlib/bzip2 inflation with an output cap,
// single-stream deflation (see darshan_compress.h).
#include "planner/darshan/darshan_compress.h"

#include <bzlib.h>
#include <zlib.h>

#include <algorithm>
#include <limits>

namespace clairfs::darshan {
namespace {

constexpr size_t kChunk = 64 * 1024;

// Grows `out` by up to one chunk without passing `limit`; returns the number of new bytes
// available (0 when the limit is reached).
size_t GrowOutput(std::string* out, size_t used, size_t limit) {
  size_t room = limit > used ? std::min(kChunk, limit - used) : 0;
  out->resize(used + room);
  return room;
}

// In kFail mode the decoder may produce one byte beyond the limit, which tells "exactly at the
// limit" apart from "over it".
size_t OutputCap(size_t max_output, LimitMode mode) {
  return mode == LimitMode::kFail ? max_output + 1 : max_output;
}

Status LimitError(size_t max_output) {
  return Status::Invalid("inflates to more than " + std::to_string(max_output) + " bytes (limit)");
}

Result<std::string> InflateZlib(std::string_view in, size_t max_output, LimitMode mode) {
  z_stream z{};
  if (inflateInit(&z) != Z_OK) return Status::Error(ENOMEM, "zlib inflateInit failed");
  std::string out;
  size_t used = 0;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  // Regions longer than 4 GiB are rejected by the caller; avail_in is 32 bits.
  z.avail_in = static_cast<uInt>(in.size());
  Status error;
  const size_t cap = OutputCap(max_output, mode);
  while (true) {
    size_t room = GrowOutput(&out, used, cap);
    if (room == 0) {
      if (mode == LimitMode::kFail) error = LimitError(max_output);
      break;
    }
    z.next_out = reinterpret_cast<Bytef*>(out.data() + used);
    z.avail_out = static_cast<uInt>(room);
    int rc = inflate(&z, Z_NO_FLUSH);
    used += room - z.avail_out;
    if (rc == Z_STREAM_END) {
      if (z.avail_in == 0) break;
      // Another rank's stream follows.
      inflateReset(&z);
      continue;
    }
    if ((rc == Z_OK || rc == Z_BUF_ERROR) && z.avail_in == 0 && z.avail_out > 0) {
      error = Status::Invalid("compressed data ends in the middle of a zlib stream");
      break;
    }
    if (rc == Z_OK || rc == Z_BUF_ERROR) continue;  // needs more output room
    error = Status::Invalid(std::string("zlib: ") + (z.msg ? z.msg : "corrupt data"));
    break;
  }
  inflateEnd(&z);
  if (!error.ok()) return error;
  out.resize(used);
  return out;
}

Result<std::string> InflateBzip2(std::string_view in, size_t max_output, LimitMode mode) {
  bz_stream bz{};
  if (BZ2_bzDecompressInit(&bz, 0, 0) != BZ_OK) {
    return Status::Error(ENOMEM, "bzip2 init failed");
  }
  std::string out;
  size_t used = 0;
  bz.next_in = const_cast<char*>(in.data());
  bz.avail_in = static_cast<unsigned int>(in.size());
  Status error;
  const size_t cap = OutputCap(max_output, mode);
  while (true) {
    size_t room = GrowOutput(&out, used, cap);
    if (room == 0) {
      if (mode == LimitMode::kFail) error = LimitError(max_output);
      break;
    }
    bz.next_out = out.data() + used;
    bz.avail_out = static_cast<unsigned int>(room);
    int rc = BZ2_bzDecompress(&bz);
    size_t produced = room - bz.avail_out;
    used += produced;
    if (rc == BZ_STREAM_END) {
      if (bz.avail_in == 0) break;
      BZ2_bzDecompressEnd(&bz);
      // Keep the position in the input across the re-initialisation.
      char* next_in = bz.next_in;
      unsigned int avail_in = bz.avail_in;
      bz = bz_stream{};
      if (BZ2_bzDecompressInit(&bz, 0, 0) != BZ_OK) {
        return Status::Error(ENOMEM, "bzip2 init failed");
      }
      bz.next_in = next_in;
      bz.avail_in = avail_in;
      continue;
    }
    if (rc != BZ_OK) {
      error = Status::Invalid("bzip2: corrupt data (error " + std::to_string(rc) + ")");
      break;
    }
    // All input consumed, room left, and still no end of stream: the stream was cut short.
    if (bz.avail_in == 0 && produced < room) {
      error = Status::Invalid("compressed data ends in the middle of a bzip2 stream");
      break;
    }
  }
  BZ2_bzDecompressEnd(&bz);
  if (!error.ok()) return error;
  out.resize(used);
  return out;
}

}  // namespace

Result<std::string> InflateRegion(std::string_view compressed, Compression method,
                                  size_t max_output, LimitMode mode) {
  if (compressed.size() > std::numeric_limits<unsigned int>::max()) {
    return Status::Invalid("compressed region larger than 4 GiB");
  }
  if (compressed.empty()) return std::string();
  switch (method) {
    case Compression::kZlib:
      return InflateZlib(compressed, max_output, mode);
    case Compression::kBzip2:
      return InflateBzip2(compressed, max_output, mode);
    case Compression::kNone:
      if (compressed.size() > max_output) {
        if (mode == LimitMode::kFail) return LimitError(max_output);
        return std::string(compressed.substr(0, max_output));
      }
      return std::string(compressed);
  }
  return Status::Invalid("unknown compression method");
}

Result<std::string> DeflateRegion(std::string_view raw, Compression method) {
  if (raw.empty()) return std::string();
  if (raw.size() > std::numeric_limits<unsigned int>::max()) {
    return Status::Invalid("region larger than 4 GiB");
  }
  switch (method) {
    case Compression::kZlib: {
      uLongf out_len = compressBound(static_cast<uLong>(raw.size()));
      std::string out(out_len, '\0');
      int rc = compress2(reinterpret_cast<Bytef*>(out.data()), &out_len,
                         reinterpret_cast<const Bytef*>(raw.data()), static_cast<uLong>(raw.size()),
                         Z_DEFAULT_COMPRESSION);
      if (rc != Z_OK) return Status::Error(EIO, "zlib compress failed: " + std::to_string(rc));
      out.resize(out_len);
      return out;
    }
    case Compression::kBzip2: {
      // bzip2's documented bound: 1% larger plus 600 bytes.
      unsigned int out_len = static_cast<unsigned int>(raw.size() + raw.size() / 100 + 600);
      std::string out(out_len, '\0');
      int rc = BZ2_bzBuffToBuffCompress(out.data(), &out_len, const_cast<char*>(raw.data()),
                                        static_cast<unsigned int>(raw.size()), 9, 0, 30);
      if (rc != BZ_OK) return Status::Error(EIO, "bzip2 compress failed: " + std::to_string(rc));
      out.resize(out_len);
      return out;
    }
    case Compression::kNone:
      return std::string(raw);
  }
  return Status::Invalid("unknown compression method");
}

}  // namespace clairfs::darshan
