// Synthetic file content: generation and verification (see synthetic_content.h for the format).
#include "planner/synthetic_content.h"

#include <algorithm>
#include <bit>
#include <cstring>

#include "planner/base/fnv1a.h"

namespace clairfs {
namespace {

constexpr uint64_t kGolden = 0x9E3779B97F4A7C15ULL;

inline uint64_t SplitMix64Finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// The stream word that covers bytes [8 * word, 8 * word + 8).
inline uint64_t StreamWord(uint64_t key, uint64_t word) {
  return SplitMix64Finalize(key + (word + 1) * kGolden);
}

inline void StoreLittleEndian(uint64_t value, char* out) {
  if constexpr (std::endian::native == std::endian::little) {
    std::memcpy(out, &value, 8);
  } else {
    for (int i = 0; i < 8; ++i) out[i] = static_cast<char>(value >> (8 * i));
  }
}

inline uint64_t LoadLittleEndian(const char* in) {
  uint64_t value = 0;
  for (int i = 7; i >= 0; --i) value = (value << 8) | static_cast<unsigned char>(in[i]);
  return value;
}

void MakeHeader(uint64_t file_size, char out[kSyntheticHeaderBytes]) {
  std::memcpy(out, kSyntheticMagic, 8);
  StoreLittleEndian(file_size, out + 8);
}

// Fills stream bytes [offset, offset + len); offset >= kSyntheticHeaderBytes.
void FillStream(uint64_t key, uint64_t offset, char* buf, size_t len) {
  char word_bytes[8];
  // Leading partial word.
  if (offset % 8 != 0 && len > 0) {
    StoreLittleEndian(StreamWord(key, offset / 8), word_bytes);
    size_t skip = offset % 8;
    size_t n = std::min(len, 8 - skip);
    std::memcpy(buf, word_bytes + skip, n);
    buf += n;
    offset += n;
    len -= n;
  }
  // Whole words: the hot loop.
  uint64_t word = offset / 8;
  while (len >= 8) {
    StoreLittleEndian(StreamWord(key, word), buf);
    ++word;
    buf += 8;
    len -= 8;
  }
  if (len > 0) {
    StoreLittleEndian(StreamWord(key, word), word_bytes);
    std::memcpy(buf, word_bytes, len);
  }
}

}  // namespace

uint64_t SyntheticPathKey(std::string_view relpath) {
  return SplitMix64Finalize(Fnv1a64(relpath) ^
                            0x636C616972667321ULL);  // "clairfs!": a domain separator
}

void FillSyntheticBytes(std::string_view relpath, uint64_t file_size, uint64_t offset, char* buf,
                        size_t len) {
  if (offset < kSyntheticHeaderBytes && len > 0) {
    char header[kSyntheticHeaderBytes];
    MakeHeader(file_size, header);
    size_t n = std::min<uint64_t>(len, kSyntheticHeaderBytes - offset);
    std::memcpy(buf, header + offset, n);
    buf += n;
    offset += n;
    len -= n;
  }
  if (len > 0) FillStream(SyntheticPathKey(relpath), offset, buf, len);
}

Result<uint64_t> SyntheticSizeFromHeader(std::string_view first_bytes) {
  if (first_bytes.size() < kSyntheticHeaderBytes) {
    return Status::Error(
        EILSEQ, "synthetic header needs 16 bytes, got " + std::to_string(first_bytes.size()));
  }
  if (std::memcmp(first_bytes.data(), kSyntheticMagic, 8) != 0) {
    return Status::Error(EILSEQ, "not a synthetic dataset file (bad magic)");
  }
  return LoadLittleEndian(first_bytes.data() + 8);
}

Status VerifySyntheticFile(std::string_view relpath, std::string_view data) {
  SyntheticVerifier verifier(relpath);
  CLAIRFS_RETURN_IF_ERROR(verifier.Update(data.data(), data.size()));
  return verifier.Finish();
}

SyntheticVerifier::SyntheticVerifier(std::string_view relpath)
    : relpath_(relpath), key_(SyntheticPathKey(relpath)) {}

Status SyntheticVerifier::Mismatch(uint64_t offset, const std::string& what) {
  error_ = Status::Error(EILSEQ, relpath_ + ": " + what + " at offset " + std::to_string(offset));
  return error_;
}

Status SyntheticVerifier::Update(const char* data, size_t len) {
  if (!error_.ok()) return error_;
  // Header bytes: the magic is known up front; the size is known once all 16 bytes are in.
  while (len > 0 && offset_ < kSyntheticHeaderBytes) {
    header_[offset_] = *data;
    if (offset_ < 8 && *data != kSyntheticMagic[offset_]) {
      return Mismatch(offset_, "bad magic (not a synthetic dataset file)");
    }
    ++offset_;
    ++data;
    --len;
    if (offset_ == kSyntheticHeaderBytes) {
      expected_size_ = LoadLittleEndian(header_ + 8);
      size_known_ = true;
      // A file of at least 16 bytes must say so; shorter files carry a truncated header.
      if (expected_size_ < kSyntheticHeaderBytes) {
        return Mismatch(8, "header size " + std::to_string(expected_size_) +
                               " but the file has at least 16 bytes");
      }
    }
  }
  if (len == 0) return Status::Ok();
  if (offset_ + len > expected_size_) {
    return Mismatch(expected_size_,
                    "file longer than its header's size " + std::to_string(expected_size_));
  }
  char expected[64 * 1024];
  while (len > 0) {
    size_t n = std::min(len, sizeof(expected));
    FillStream(key_, offset_, expected, n);
    if (std::memcmp(expected, data, n) != 0) {
      size_t i = 0;
      while (expected[i] == data[i]) ++i;
      return Mismatch(offset_ + i, "wrong content");
    }
    offset_ += n;
    data += n;
    len -= n;
  }
  return Status::Ok();
}

Status SyntheticVerifier::Finish() {
  if (!error_.ok()) return error_;
  if (!size_known_) {
    // A short file: its header is truncated to its own length, so the size bytes present must be
    // the low bytes of that length.
    char header[kSyntheticHeaderBytes];
    MakeHeader(offset_, header);
    for (uint64_t i = 8; i < offset_; ++i) {
      if (header_[i] != header[i]) return Mismatch(i, "truncated header does not match length");
    }
    return Status::Ok();
  }
  if (offset_ != expected_size_) {
    return Mismatch(offset_,
                    "file shorter than its header's size " + std::to_string(expected_size_));
  }
  return Status::Ok();
}

}  // namespace clairfs
