// Tests of TokenBucket reservations with a clock the test controls.
#include "tools/bench/token_bucket.h"

#include <gtest/gtest.h>

#include <thread>
#include <vector>

namespace clairfs {
namespace {

constexpr uint64_t kMsNs = 1'000'000;

TEST(TokenBucket, UnlimitedAnswersAtOnce) {
  TokenBucket bucket(0);
  EXPECT_EQ(bucket.Reserve(1ULL << 40, 123), 123u);
}

TEST(TokenBucket, AQuietBucketLetsABurstThrough) {
  TokenBucket bucket(100'000'000);  // 100 MB/s: 10 ms = 1 MB of burst
  EXPECT_EQ(bucket.Reserve(500'000, 1000 * kMsNs), 1000 * kMsNs);
}

TEST(TokenBucket, BackToBackTransfersAverageToTheRate) {
  TokenBucket bucket(20'000'000);  // 20 MB/s
  const uint64_t start = 5000 * kMsNs;
  uint64_t due = 0;
  // 20 MB in 1 MiB-ish requests all submitted at the same instant.
  for (int i = 0; i < 20; ++i) due = bucket.Reserve(1'000'000, start);
  // 20 MB at 20 MB/s = 1 s, minus the 10 ms burst allowance.
  EXPECT_EQ(due - start, 1000 * kMsNs - TokenBucket::kBurstNanos);
}

TEST(TokenBucket, IdleTimeIsNotBanked) {
  TokenBucket bucket(10'000'000);  // 10 MB/s
  bucket.Reserve(1'000'000, 0);    // busy until 100 ms
  // After a long pause the bucket is full again but holds no more than the burst.
  uint64_t at = 10'000 * kMsNs;
  EXPECT_EQ(bucket.Reserve(100'000, at), at);  // 10 ms of transfer: within the burst
  EXPECT_EQ(bucket.Reserve(1'000'000, at), at + 100 * kMsNs);
}

TEST(TokenBucket, NeverBeforeTheRequestedTime) {
  TokenBucket bucket(1'000'000'000);
  EXPECT_EQ(bucket.Reserve(1, 42), 42u);
  EXPECT_GE(bucket.Reserve(1'000'000'000, 50), 50u);
}

TEST(TokenBucket, ConcurrentReservationsAddUp) {
  TokenBucket bucket(1'000'000);  // 1 MB/s
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 1000; ++i) bucket.Reserve(1000, 0);
    });
  }
  for (auto& t : threads) t.join();
  // 8 MB booked at 1 MB/s: the next byte is due at 8 s (less the burst).
  EXPECT_EQ(bucket.Reserve(0, 0), 8000 * kMsNs - TokenBucket::kBurstNanos);
}

}  // namespace
}  // namespace clairfs
