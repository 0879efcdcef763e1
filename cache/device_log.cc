// CacheDeviceLog: one line when a device condition begins, counts at most once an interval, one
// when it ends (see device_log.h).
#include "cache/device_log.h"

#include <cstdio>
#include <utility>

namespace clairfs {
namespace {

const char* NameOf(DeviceCondition condition) {
  return condition == DeviceCondition::kFull ? "full" : "lost";
}

std::string Duration(uint64_t ns) {
  const uint64_t seconds = ns / 1'000'000'000;
  char buf[48];
  if (seconds < 120) {
    snprintf(buf, sizeof(buf), "%llu s", static_cast<unsigned long long>(seconds));
  } else {
    snprintf(buf, sizeof(buf), "%llu min", static_cast<unsigned long long>(seconds / 60));
  }
  return buf;
}

std::string Files(uint64_t n) { return std::to_string(n) + (n == 1 ? " file" : " files"); }

}  // namespace

CacheDeviceLog::CacheDeviceLog(std::string device, Env* env, Sink sink, uint64_t interval_ns)
    : device_(std::move(device)), env_(env), sink_(std::move(sink)), interval_ns_(interval_ns) {}

CacheDeviceLog::~CacheDeviceLog() { Flush(); }

DeviceCondition CacheDeviceLog::ConditionOf(const Status& error) {
  return error.code() == ENOSPC || error.code() == EDQUOT ? DeviceCondition::kFull
                                                          : DeviceCondition::kLost;
}

void CacheDeviceLog::Write(LogLevel level, const std::string& line) {
  if (sink_) {
    sink_(level, line);
  } else {
    Log(level, "%s", line.c_str());
  }
}

void CacheDeviceLog::MaybeEndLocked(DeviceCondition condition, State* s, uint64_t now) {
  if (!s->active || !s->published || now - s->last_failure_ns < interval_ns_) return;
  Write(LogLevel::kInfo, "cache device " + std::string(NameOf(condition)) + " (" + device_ +
                             "): over, copies are published again; " + Files(s->failures) +
                             " were not staged in the " +
                             Duration(s->last_failure_ns - s->began_ns) + " it lasted");
  *s = State{};
}

void CacheDeviceLog::Failed(DeviceCondition condition, const Status& why) {
  std::lock_guard<std::mutex> lock(mu_);
  // Read under the lock: times then only grow from one event to the next.
  const uint64_t now = env_->NowMonotonicNanos();
  State* s = &states_[static_cast<int>(condition)];
  MaybeEndLocked(condition, s, now);
  const std::string head = "cache device " + std::string(NameOf(condition)) + " (" + device_ + ")";
  if (!s->active) {
    *s = State{true, now, now, now, 1, 0, false};
    Write(LogLevel::kWarn,
          head + ": " + why.message() +
              (condition == DeviceCondition::kFull
                   ? "; files that need room are not staged until it has room again"
                   : "; staging fails until it works again") +
              " (files stay served from the backing store; counts follow at most every " +
              Duration(interval_ns_) + ")");
    return;
  }
  ++s->failures;
  ++s->since_line;
  s->last_failure_ns = now;
  s->published = false;
  if (now - s->last_line_ns < interval_ns_) return;
  Write(LogLevel::kWarn, head + ": still; " + Files(s->since_line) + " not staged in the last " +
                             Duration(now - s->last_line_ns) + ", " + std::to_string(s->failures) +
                             " since it began " + Duration(now - s->began_ns) + " ago (" +
                             why.message() + ")");
  s->last_line_ns = now;
  s->since_line = 0;
}

void CacheDeviceLog::Published() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t now = env_->NowMonotonicNanos();
  for (int c = 0; c < 2; ++c) {
    State* s = &states_[c];
    if (!s->active) continue;
    s->published = true;
    MaybeEndLocked(static_cast<DeviceCondition>(c), s, now);
  }
}

void CacheDeviceLog::Flush() {
  std::lock_guard<std::mutex> lock(mu_);
  const uint64_t now = env_->NowMonotonicNanos();
  for (int c = 0; c < 2; ++c) {
    State* s = &states_[c];
    if (!s->active) continue;
    const std::string name = NameOf(static_cast<DeviceCondition>(c));
    Write(LogLevel::kWarn, "cache device " + name + " (" + device_ + "): still " + name +
                               " when the cache was closed; " + Files(s->failures) +
                               " not staged since it began " + Duration(now - s->began_ns) +
                               " ago");
    *s = State{};
  }
}

uint64_t CacheDeviceLog::failures(DeviceCondition condition) {
  std::lock_guard<std::mutex> lock(mu_);
  return states_[static_cast<int>(condition)].failures;
}

bool CacheDeviceLog::active(DeviceCondition condition) {
  std::lock_guard<std::mutex> lock(mu_);
  return states_[static_cast<int>(condition)].active;
}

}  // namespace clairfs
