// CacheDeviceLog: what the log says about a cache device that is full or lost.
//
// While the cache device is full or lost, every copy tried fails the same way, so a line per
// file would bury the log (thousands per pass over a dataset). Each of the two conditions is
// therefore a state with a bounded number of lines:
//   - the first failure logs one line naming the condition and its cause ("cache device full:
//     ... files that need room are not staged ...", "cache device lost: ...");
//   - while it lasts, failures are counted, and at most one line per interval (a minute) gives
//     the count since the previous line and in all;
//   - it is over once copies have been published for a whole interval with no failure of its
//     kind; the next event (a failure or a publish) then logs one line with the count of files
//     not staged while it lasted;
//   - Flush() (the store's destruction, i.e. unmount) logs a condition still on, with its count.
// Full: ENOSPC or EDQUOT from the device, or its free space below the free-space floor
// (--min-free) with no copy left that may be evicted. Lost: any other error the device gives
// staging (EIO, EROFS, ENOENT of the cache's own directories, ...).
// Each failure is one file not staged; that file stays served from the backing store.
//
// Thread-safety: all methods may be called concurrently; one mutex guards the state (a line is
// written under it: one write(2), no other lock taken). Time is the Env's monotonic clock, read
// under the mutex so that it never goes back from one event to the next.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>

#include "cache/env.h"
#include "planner/base/log.h"
#include "planner/base/status.h"

namespace clairfs {

enum class DeviceCondition { kFull = 0, kLost = 1 };

class CacheDeviceLog {
 public:
  using Sink = std::function<void(LogLevel, const std::string&)>;
  static constexpr uint64_t kDefaultIntervalNanos = 60'000'000'000;

  // `device` names the cache in every line. `sink` receives each line (default: Log()).
  CacheDeviceLog(std::string device, Env* env, Sink sink = nullptr,
                 uint64_t interval_ns = kDefaultIntervalNanos);
  ~CacheDeviceLog();

  // ENOSPC and EDQUOT are kFull, anything else kLost.
  static DeviceCondition ConditionOf(const Status& error);
  // One file not staged because of `condition`; `why` is the error that shows it.
  void Failed(DeviceCondition condition, const Status& why);
  // Failed(ConditionOf(why), why).
  void Failed(const Status& why) { Failed(ConditionOf(why), why); }
  // A copy was published: the device took its bytes.
  void Published();
  // Logs every condition still on (with its count) and forgets it.
  void Flush();

  // Files not staged since the condition began (0 when it is off).
  uint64_t failures(DeviceCondition condition);
  bool active(DeviceCondition condition);

 private:
  struct State {
    bool active = false;
    uint64_t began_ns = 0;
    uint64_t last_line_ns = 0;     // when a line about it was last written
    uint64_t last_failure_ns = 0;  // of its kind
    uint64_t failures = 0;         // since it began
    uint64_t since_line = 0;       // failures not yet in a line
    bool published = false;        // a copy was published since its last failure
  };

  // Ends `s` if it has been quiet for an interval while copies were published.
  void MaybeEndLocked(DeviceCondition condition, State* s, uint64_t now);
  void Write(LogLevel level, const std::string& line);

  const std::string device_;
  Env* const env_;
  const Sink sink_;
  const uint64_t interval_ns_;
  std::mutex mu_;  // guards states_
  State states_[2];
};

}  // namespace clairfs
