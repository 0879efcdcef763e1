// Fixed-width integers and doubles in a given byte order, read from and appended to byte
// strings. Darshan logs are written in the byte order of the machine that produced them; the
// reader decodes every field with the order the header's magic number revealed, so it gives the
// same result on any host, and the writer can produce either order (tests use big-endian logs).
//
// ByteCursor never reads past its view: every read checks the remaining length first and
// returns false on a short read, leaving the output untouched. Values; not thread-safe.
#pragma once

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "planner/darshan/darshan_format.h"

namespace clairfs::darshan {

inline uint64_t LoadU64(const char* p, ByteOrder order) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) {
    uint64_t byte = static_cast<unsigned char>(p[i]);
    v |= order == ByteOrder::kLittle ? byte << (8 * i) : byte << (8 * (7 - i));
  }
  return v;
}

inline uint32_t LoadU32(const char* p, ByteOrder order) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) {
    uint32_t byte = static_cast<unsigned char>(p[i]);
    v |= order == ByteOrder::kLittle ? byte << (8 * i) : byte << (8 * (3 - i));
  }
  return v;
}

inline void AppendU64(std::string* out, uint64_t v, ByteOrder order) {
  for (int i = 0; i < 8; ++i) {
    int shift = order == ByteOrder::kLittle ? 8 * i : 8 * (7 - i);
    out->push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

inline void AppendU32(std::string* out, uint32_t v, ByteOrder order) {
  for (int i = 0; i < 4; ++i) {
    int shift = order == ByteOrder::kLittle ? 8 * i : 8 * (3 - i);
    out->push_back(static_cast<char>((v >> shift) & 0xff));
  }
}

inline void AppendI64(std::string* out, int64_t v, ByteOrder order) {
  AppendU64(out, static_cast<uint64_t>(v), order);
}

inline void AppendDouble(std::string* out, double v, ByteOrder order) {
  AppendU64(out, std::bit_cast<uint64_t>(v), order);
}

class ByteCursor {
 public:
  ByteCursor(std::string_view data, ByteOrder order) : data_(data), order_(order) {}

  size_t remaining() const { return data_.size() - pos_; }
  size_t position() const { return pos_; }
  bool at_end() const { return pos_ == data_.size(); }

  bool U64(uint64_t* v) {
    if (remaining() < 8) return false;
    *v = LoadU64(data_.data() + pos_, order_);
    pos_ += 8;
    return true;
  }
  bool I64(int64_t* v) {
    uint64_t u;
    if (!U64(&u)) return false;
    *v = static_cast<int64_t>(u);
    return true;
  }
  bool U32(uint32_t* v) {
    if (remaining() < 4) return false;
    *v = LoadU32(data_.data() + pos_, order_);
    pos_ += 4;
    return true;
  }
  bool Double(double* v) {
    uint64_t u;
    if (!U64(&u)) return false;
    *v = std::bit_cast<double>(u);
    return true;
  }
  // The next `n` bytes as a view.
  bool Bytes(size_t n, std::string_view* out) {
    if (remaining() < n) return false;
    *out = data_.substr(pos_, n);
    pos_ += n;
    return true;
  }
  // Bytes up to the next NUL, which is consumed too; false if there is none.
  bool CString(std::string_view* out) {
    size_t nul = data_.find('\0', pos_);
    if (nul == std::string_view::npos) return false;
    *out = data_.substr(pos_, nul - pos_);
    pos_ = nul + 1;
    return true;
  }
  bool Skip(size_t n) {
    if (remaining() < n) return false;
    pos_ += n;
    return true;
  }

 private:
  std::string_view data_;
  ByteOrder order_;
  size_t pos_ = 0;
};

}  // namespace clairfs::darshan
