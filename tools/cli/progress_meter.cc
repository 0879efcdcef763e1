// ProgressMeter: throttled single-line progress on stderr (see progress_meter.h).
#include "tools/cli/progress_meter.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

#include "planner/base/units.h"

namespace clairfs::cli {

ProgressMeter::ProgressMeter(std::string label, uint64_t total_files, uint64_t total_bytes,
                             bool enabled)
    : label_(std::move(label)),
      total_files_(total_files),
      total_bytes_(total_bytes),
      enabled_(enabled),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

ProgressMeter::~ProgressMeter() { Finish(); }

std::string ProgressMeter::FormatDuration(double seconds) {
  if (!(seconds >= 0) || seconds > 99 * 3600) return "--";
  auto s = static_cast<long long>(seconds + 0.5);
  char buf[32];
  if (s >= 3600) {
    snprintf(buf, sizeof(buf), "%lldh%02lldm", s / 3600, (s / 60) % 60);
  } else if (s >= 60) {
    snprintf(buf, sizeof(buf), "%lldm%02llds", s / 60, s % 60);
  } else {
    snprintf(buf, sizeof(buf), "%llds", s);
  }
  return buf;
}

void ProgressMeter::Update(uint64_t files_done, uint64_t bytes_done) {
  if (!enabled_) return;
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ < std::chrono::milliseconds(200)) return;
  last_draw_ = now;
  Draw(files_done, bytes_done);
}

void ProgressMeter::Draw(uint64_t files_done, uint64_t bytes_done) {
  double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double rate = elapsed > 0 ? static_cast<double>(bytes_done) / elapsed : 0;
  double eta = rate > 0 && total_bytes_ >= bytes_done
                   ? static_cast<double>(total_bytes_ - bytes_done) / rate
                   : -1;
  char line[256];
  int n = snprintf(line, sizeof(line), "\r\033[K%s: %llu/%llu files, %s/%s, %s, ETA %s",
                   label_.c_str(), static_cast<unsigned long long>(files_done),
                   static_cast<unsigned long long>(total_files_), FormatBytes(bytes_done).c_str(),
                   FormatBytes(total_bytes_).c_str(), FormatRate(rate).c_str(),
                   FormatDuration(eta).c_str());
  if (n > 0) {
    ssize_t ignored = write(STDERR_FILENO, line, std::min<size_t>(n, sizeof(line) - 1));
    (void)ignored;
  }
  drawn_ = true;
}

void ProgressMeter::Finish() {
  if (!drawn_) return;
  static const char kClear[] = "\r\033[K";
  ssize_t ignored = write(STDERR_FILENO, kClear, sizeof(kClear) - 1);
  (void)ignored;
  drawn_ = false;
}

}  // namespace clairfs::cli
