// Name escapes (see name_escape.h).
#include "planner/base/name_escape.h"

#include <cstdint>

namespace clairfs {
namespace {

constexpr char kHex[] = "0123456789abcdef";

// The length of the well-formed UTF-8 sequence starting at text[i] (1-4), or 0 if the byte there
// does not start one. `code` receives the code point.
size_t SequenceAt(std::string_view text, size_t i, uint32_t* code) {
  const auto byte = [&](size_t k) { return static_cast<uint8_t>(text[k]); };
  const uint8_t b0 = byte(i);
  if (b0 < 0x80) {
    *code = b0;
    return 1;
  }
  size_t len;
  uint32_t cp;
  uint8_t lo = 0x80, hi = 0xbf;  // allowed range of the second byte
  if (b0 >= 0xc2 && b0 <= 0xdf) {
    len = 2;
    cp = b0 & 0x1f;
  } else if (b0 >= 0xe0 && b0 <= 0xef) {
    len = 3;
    cp = b0 & 0x0f;
    if (b0 == 0xe0) lo = 0xa0;  // no overlong forms
    if (b0 == 0xed) hi = 0x9f;  // no surrogates
  } else if (b0 >= 0xf0 && b0 <= 0xf4) {
    len = 4;
    cp = b0 & 0x07;
    if (b0 == 0xf0) lo = 0x90;  // no overlong forms
    if (b0 == 0xf4) hi = 0x8f;  // at most U+10FFFF
  } else {
    return 0;
  }
  if (i + len > text.size()) return 0;
  for (size_t k = 1; k < len; ++k) {
    const uint8_t b = byte(i + k);
    const uint8_t min = k == 1 ? lo : 0x80, max = k == 1 ? hi : 0xbf;
    if (b < min || b > max) return 0;
    cp = (cp << 6) | (b & 0x3f);
  }
  *code = cp;
  return len;
}

void AppendHex(std::string* out, uint8_t b) {
  out->push_back('\\');
  out->push_back('x');
  out->push_back(kHex[b >> 4]);
  out->push_back(kHex[b & 0xf]);
}

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string EscapeName(std::string_view raw) {
  std::string out;
  out.reserve(raw.size());
  for (size_t i = 0; i < raw.size();) {
    uint32_t cp = 0;
    const size_t len = SequenceAt(raw, i, &cp);
    if (len == 0 || cp < 0x20 || cp == 0x7f || (cp >= 0x80 && cp <= 0x9f)) {
      // A lone byte, or each byte of a control character's sequence.
      const size_t n = len == 0 ? 1 : len;
      for (size_t k = 0; k < n; ++k) AppendHex(&out, static_cast<uint8_t>(raw[i + k]));
      i += n;
      continue;
    }
    if (cp == '\\') {
      out += "\\\\";
    } else {
      out.append(raw.substr(i, len));
    }
    i += len;
  }
  return out;
}

Result<std::string> UnescapeName(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '\\') {
      out.push_back(text[i]);
      continue;
    }
    if (i + 1 < text.size() && text[i + 1] == '\\') {
      out.push_back('\\');
      ++i;
      continue;
    }
    if (i + 3 < text.size() && text[i + 1] == 'x') {
      const int hi = HexValue(text[i + 2]), lo = HexValue(text[i + 3]);
      if (hi >= 0 && lo >= 0) {
        out.push_back(static_cast<char>(hi * 16 + lo));
        i += 3;
        continue;
      }
    }
    return Status::Invalid("bad escape at byte " + std::to_string(i + 1) + " of \"" +
                           SanitizeText(text) +
                           "\": a backslash starts \\\\ (a backslash) or \\xHH (the byte 0xHH)");
  }
  return out;
}

bool IsValidUtf8(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t len = SequenceAt(text, i, &cp);
    if (len == 0) return false;
    i += len;
  }
  return true;
}

std::string SanitizeText(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size();) {
    uint32_t cp = 0;
    const size_t len = SequenceAt(text, i, &cp);
    if (len == 0 || cp < 0x20 || cp == 0x7f) {
      AppendHex(&out, static_cast<uint8_t>(text[i]));
      ++i;
      continue;
    }
    out.append(text.substr(i, len));
    i += len;
  }
  return out;
}

}  // namespace clairfs
