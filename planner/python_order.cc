// Python str order for file names (see python_order.h).
#include "planner/python_order.h"

#include <algorithm>

namespace clairfs {
namespace {

// Decodes one strict UTF-8 sequence at `bytes[i]` (as CPython's decoder accepts it: no overlong
// forms, no surrogates, nothing above U+10FFFF). Returns its length, or 0 if it is invalid.
size_t DecodeOne(std::string_view bytes, size_t i, uint32_t* code_point) {
  auto byte = [&](size_t k) { return static_cast<uint8_t>(bytes[k]); };
  auto continuation = [&](size_t k) { return k < bytes.size() && (byte(k) & 0xc0) == 0x80; };
  uint8_t b0 = byte(i);
  if (b0 < 0x80) {
    *code_point = b0;
    return 1;
  }
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    if (!continuation(i + 1)) return 0;
    *code_point = ((b0 & 0x1fu) << 6) | (byte(i + 1) & 0x3fu);
    return 2;
  }
  if (b0 >= 0xe0 && b0 <= 0xef) {
    if (!continuation(i + 1) || !continuation(i + 2)) return 0;
    uint32_t cp = ((b0 & 0x0fu) << 12) | ((byte(i + 1) & 0x3fu) << 6) | (byte(i + 2) & 0x3fu);
    if (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
    *code_point = cp;
    return 3;
  }
  if (b0 >= 0xf0 && b0 <= 0xf4) {
    if (!continuation(i + 1) || !continuation(i + 2) || !continuation(i + 3)) return 0;
    uint32_t cp = ((b0 & 0x07u) << 18) | ((byte(i + 1) & 0x3fu) << 12) |
                  ((byte(i + 2) & 0x3fu) << 6) | (byte(i + 3) & 0x3fu);
    if (cp < 0x10000 || cp > 0x10ffff) return 0;
    *code_point = cp;
    return 4;
  }
  return 0;
}

}  // namespace

std::vector<uint32_t> DecodeLikePython(std::string_view bytes) {
  // Escaping byte by byte equals CPython's error handling: an invalid sequence's maximal prefix
  // consists of a lead byte and continuation bytes, and a continuation byte never starts a valid
  // sequence, so each of them is escaped on its own either way.
  std::vector<uint32_t> out;
  out.reserve(bytes.size());
  size_t i = 0;
  while (i < bytes.size()) {
    uint32_t cp = 0;
    size_t length = DecodeOne(bytes, i, &cp);
    if (length == 0) {
      out.push_back(0xdc00u + static_cast<uint8_t>(bytes[i]));
      ++i;
    } else {
      out.push_back(cp);
      i += length;
    }
  }
  return out;
}

bool PythonStrLess(std::string_view a, std::string_view b) {
  // Fast path: pure ASCII on both sides is plain byte order.
  bool ascii = std::all_of(a.begin(), a.end(), [](char c) { return (c & 0x80) == 0; }) &&
               std::all_of(b.begin(), b.end(), [](char c) { return (c & 0x80) == 0; });
  if (ascii) return a < b;
  std::vector<uint32_t> da = DecodeLikePython(a);
  std::vector<uint32_t> db = DecodeLikePython(b);
  return std::lexicographical_compare(da.begin(), da.end(), db.begin(), db.end());
}

}  // namespace clairfs
