// Size and bandwidth parsing/formatting (see units.h for the accepted forms).
#include "planner/units.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace clairfs {

Result<uint64_t> ParseSize(std::string_view text) {
  std::string s(text);
  auto bad = [&]() {
    return Status::Invalid("invalid size '" + s + "' (expected e.g. 800G, 1.5T, 512M or bytes)");
  };
  if (s.empty()) return bad();
  char* end = nullptr;
  errno = 0;
  double number = std::strtod(s.c_str(), &end);
  if (end == s.c_str() || errno != 0 || !(number >= 0) || std::isinf(number)) return bad();
  std::string suffix(end);
  for (auto& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (suffix.size() >= 3 && suffix.substr(suffix.size() - 2) == "IB") {
    suffix.resize(suffix.size() - 2);
  } else if (suffix.size() == 2 && suffix.back() == 'B') {
    suffix.resize(1);
  }
  double multiplier = 1;
  if (suffix.empty() || suffix == "B") multiplier = 1;
  else if (suffix == "K") multiplier = 1024.0;
  else if (suffix == "M") multiplier = 1024.0 * 1024;
  else if (suffix == "G") multiplier = 1024.0 * 1024 * 1024;
  else if (suffix == "T") multiplier = 1024.0 * 1024 * 1024 * 1024;
  else if (suffix == "P") multiplier = 1024.0 * 1024 * 1024 * 1024 * 1024;
  else return bad();
  double bytes = number * multiplier;
  if (bytes >= 1.8e19) return bad();
  if (multiplier == 1 && number != std::floor(number)) return bad();
  return static_cast<uint64_t>(std::llround(bytes));
}

Result<uint64_t> ParseBandwidthMBps(std::string_view text) {
  std::string s(text);
  char* end = nullptr;
  errno = 0;
  double mbps = std::strtod(s.c_str(), &end);
  if (s.empty() || end == s.c_str() || errno != 0 || !(mbps >= 0) || std::isinf(mbps)) {
    return Status::Invalid("invalid bandwidth '" + s + "' (expected MB/s, e.g. 200 or 0 for none)");
  }
  std::string rest(end);
  if (!rest.empty() && rest != "MB/s" && rest != "M") {
    return Status::Invalid("invalid bandwidth '" + s + "' (expected MB/s, e.g. 200)");
  }
  return static_cast<uint64_t>(std::llround(mbps * 1e6));
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
  if (unit == 0) snprintf(buf, sizeof(buf), "%llu B", static_cast<unsigned long long>(bytes));
  else snprintf(buf, sizeof(buf), "%.1f %s", value, kUnits[unit]);
  return buf;
}

std::string FormatRate(double bytes_per_second) {
  char buf[64];
  snprintf(buf, sizeof(buf), "%.1f MB/s", bytes_per_second / 1e6);
  return buf;
}

}  // namespace clairfs
