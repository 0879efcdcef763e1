// TokenBucket: a bandwidth cap that says *when* a transfer may complete instead of blocking.
//
// The PFS emulator must not sleep in FUSE worker threads (that would serialise requests), so the
// bucket is a reservation scheduler (GCRA, the "virtual scheduling" form of a token bucket):
// Reserve(bytes, at) books the transfer behind everything booked before it and returns the time
// at which its last byte may be delivered; the caller defers the reply until then. A transfer may
// start early by up to the burst allowance (10 ms of the rate), so a quiet bucket answers small
// requests immediately while a long run averages to the rate.
//
// Times are nanoseconds on any monotonic clock the caller chooses (the tests pass their own).
// Thread-safety: Reserve() may be called from many threads (a mutex guards the booking state).
// A rate of 0 means unlimited: Reserve() returns `at`.
#pragma once

#include <cstdint>
#include <mutex>

namespace clairfs {

class TokenBucket {
 public:
  static constexpr uint64_t kBurstNanos = 10'000'000;  // 10 ms of the rate may arrive at once

  explicit TokenBucket(uint64_t bytes_per_second = 0) : rate_(bytes_per_second) {}
  TokenBucket(const TokenBucket&) = delete;
  TokenBucket& operator=(const TokenBucket&) = delete;

  uint64_t rate() const { return rate_; }
  // Books `bytes` that become transferable at `at_ns`; returns when they are all delivered
  // (never before `at_ns`).
  uint64_t Reserve(uint64_t bytes, uint64_t at_ns);

 private:
  const uint64_t rate_;  // bytes per second; immutable
  std::mutex mutex_;
  uint64_t booked_until_ns_ = 0;  // guarded by mutex_: end of the last booked transfer
};

}  // namespace clairfs
