// ProgressMeter: the one-line progress display that long CLI operations show on a terminal.
//
// Shows "<label>: F/N files, B/T, R MB/s, ETA S" on stderr, redrawn in place at most five times
// a second; shows nothing when disabled (stderr is not a terminal, or --json). Finish() erases the
// line so that the final summary starts on a clean line. Update() may be called as often as
// wanted; it costs one clock read when nothing is drawn.
//
// Thread-safety: one thread at a time (the caller serialises updates). No errors: a failed write
// to stderr is ignored.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>

namespace clairfs::cli {

class ProgressMeter {
 public:
  ProgressMeter(std::string label, uint64_t total_files, uint64_t total_bytes, bool enabled);
  ~ProgressMeter();
  ProgressMeter(const ProgressMeter&) = delete;
  ProgressMeter& operator=(const ProgressMeter&) = delete;

  void Update(uint64_t files_done, uint64_t bytes_done);
  void Finish();

  // "ETA 1m05s" style duration text for `seconds` (exposed for tests).
  static std::string FormatDuration(double seconds);

 private:
  void Draw(uint64_t files_done, uint64_t bytes_done);

  std::string label_;
  uint64_t total_files_;
  uint64_t total_bytes_;
  bool enabled_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point last_draw_;
};

}  // namespace clairfs::cli
