// Size and bandwidth parsing/formatting (see units.h for the accepted forms).
#include "planner/base/units.h"

#include <cctype>
#include <cstdio>

namespace clairfs {

Result<uint64_t> ParseSize(std::string_view text) {
  const std::string s(text);
  auto bad = [&](const std::string& why) {
    return Status::Invalid("invalid size '" + s + "' (" + why + ")");
  };
  const std::string expected = "expected e.g. 800G, 1.5T, 512M or bytes";
  size_t i = 0;
  unsigned __int128 whole = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    whole = whole * 10 + static_cast<unsigned>(s[i] - '0');
    if (whole > UINT64_MAX) return bad("more than 2^64-1 bytes");
    ++i;
  }
  if (i == 0) return bad(expected);
  // The fraction as numerator / 10^digits; 19 digits are far below a byte of a PiB.
  unsigned __int128 fraction = 0, scale = 1;
  if (i < s.size() && s[i] == '.') {
    ++i;
    const size_t first = i;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      if (i - first < 19) {
        fraction = fraction * 10 + static_cast<unsigned>(s[i] - '0');
        scale *= 10;
      }
      ++i;
    }
    if (i == first) return bad(expected);
  }
  std::string suffix = s.substr(i);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.size() == 3 && suffix.substr(1) == "IB") {
    suffix.resize(1);
  } else if (suffix.size() == 2 && suffix.back() == 'B') {
    suffix.resize(1);
  }
  int shift = 0;
  if (suffix.empty() || suffix == "B")
    shift = 0;
  else if (suffix == "K")
    shift = 10;
  else if (suffix == "M")
    shift = 20;
  else if (suffix == "G")
    shift = 30;
  else if (suffix == "T")
    shift = 40;
  else if (suffix == "P")
    shift = 50;
  else
    return bad(expected);
  const unsigned __int128 unit = static_cast<unsigned __int128>(1) << shift;
  // Nearest byte of whole.fraction units; a fraction with no unit is a fraction of a byte.
  const unsigned __int128 part = (fraction * unit + scale / 2) / scale;
  if (shift == 0 && fraction != 0) return bad("a size in bytes is a whole number");
  const unsigned __int128 bytes = whole * unit + part;
  if (bytes > UINT64_MAX) return bad("more than 2^64-1 bytes");
  return static_cast<uint64_t>(bytes);
}

Result<uint64_t> ParseCount(std::string_view text, uint64_t min, uint64_t max) {
  auto bad = [&]() {
    return Status::Invalid("invalid number '" + std::string(text) +
                           "' (expected a whole number from " + std::to_string(min) + " to " +
                           std::to_string(max) + ")");
  };
  if (text.empty()) return bad();
  uint64_t value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return bad();
    const uint64_t digit = static_cast<uint64_t>(c - '0');
    if (value > (UINT64_MAX - digit) / 10) return bad();
    value = value * 10 + digit;
  }
  if (value < min || value > max) return bad();
  return value;
}

Result<uint64_t> ParseBandwidthMBps(std::string_view text) {
  const std::string s(text);
  auto bad = [&]() {
    return Status::Invalid("invalid bandwidth '" + s + "' (expected MB/s, e.g. 200 or 0 for none)");
  };
  // Digits with an optional fraction, then nothing, "M" or "MB/s": exactly, as for sizes.
  size_t i = 0;
  unsigned __int128 whole = 0;
  while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
    whole = whole * 10 + static_cast<unsigned>(s[i] - '0');
    if (whole > UINT64_MAX / 1000000) return bad();
    ++i;
  }
  if (i == 0) return bad();
  uint64_t micro = 0;  // the fraction in millionths: bytes of a MB
  if (i < s.size() && s[i] == '.') {
    ++i;
    const size_t first = i;
    uint64_t place = 100000;
    while (i < s.size() && std::isdigit(static_cast<unsigned char>(s[i]))) {
      // Past the sixth digit a fraction is of a byte per second: only zeros (so that a tiny
      // bandwidth never becomes 0, which means no limit).
      if (place == 0 && s[i] != '0') {
        return Status::Invalid("invalid bandwidth '" + s +
                               "' (finer than a byte per second: at most 6 decimals)");
      }
      micro += static_cast<uint64_t>(s[i] - '0') * place;
      place /= 10;
      ++i;
    }
    if (i == first) return bad();
  }
  const std::string rest = s.substr(i);
  if (!rest.empty() && rest != "MB/s" && rest != "M") return bad();
  const unsigned __int128 bytes = whole * 1000000 + micro;
  if (bytes > UINT64_MAX) return bad();
  return static_cast<uint64_t>(bytes);
}

std::string FormatBytes(uint64_t bytes) {
  static const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 5) {
    value /= 1024.0;
    ++unit;
  }
  char buf[64];
  if (unit == 0)
    snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  else
    snprintf(buf, sizeof(buf), "%.1f %s", value, kUnits[unit]);
  return buf;
}

std::string FormatRate(double bytes_per_second) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.1f MB/s", bytes_per_second / 1e6);
  return buf;
}

}  // namespace clairfs
