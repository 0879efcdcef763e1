// TokenBucket: GCRA reservations (see token_bucket.h).
#include "tools/bench/token_bucket.h"

#include <algorithm>

namespace clairfs {

uint64_t TokenBucket::Reserve(uint64_t bytes, uint64_t at_ns) {
  if (rate_ == 0) return at_ns;
  // Transfer time of `bytes` at the rate, rounded up; 128-bit so that TB at 1 B/s cannot wrap.
  unsigned __int128 wide = static_cast<unsigned __int128>(bytes) * 1'000'000'000u + rate_ - 1;
  uint64_t cost_ns =
      static_cast<uint64_t>(std::min<unsigned __int128>(wide / rate_, UINT64_MAX / 4));
  std::lock_guard<std::mutex> lock(mutex_);
  uint64_t start = std::max(booked_until_ns_, at_ns);
  booked_until_ns_ = start + cost_ns;
  uint64_t due = booked_until_ns_ > kBurstNanos ? booked_until_ns_ - kBurstNanos : 0;
  return std::max(due, at_ns);
}

}  // namespace clairfs
