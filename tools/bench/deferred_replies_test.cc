// Tests of DeferredReplies: ordering, overlap, inline zero delay and flush on Stop().
#include "tools/bench/deferred_replies.h"

#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>
#include <vector>

namespace clairfs {
namespace {

constexpr uint64_t kMs = 1'000'000;

TEST(DeferredReplies, RunsInDueOrderNotSubmitOrder) {
  DeferredReplies replies;
  replies.Start();
  std::mutex mutex;
  std::vector<int> order;
  uint64_t now = DeferredReplies::NowNanos();
  for (int i : {3, 1, 2}) {
    replies.Submit(now + static_cast<uint64_t>(i) * 10 * kMs, [&, i] {
      std::lock_guard<std::mutex> lock(mutex);
      order.push_back(i);
    });
  }
  replies.Stop();  // flushes whatever is still pending, in due order
  EXPECT_EQ(order, (std::vector<int>{1, 2, 3}));
}

TEST(DeferredReplies, DelaysOverlap) {
  DeferredReplies replies;
  replies.Start();
  std::atomic<int> done{0};
  std::vector<uint64_t> ran_at(64);
  uint64_t start = DeferredReplies::NowNanos();
  for (int i = 0; i < 64; ++i) {
    replies.Submit(start + 20 * kMs, [&, i] {
      ran_at[i] = DeferredReplies::NowNanos();
      ++done;
    });
  }
  while (done.load() < 64) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  uint64_t last = 0;
  for (uint64_t t : ran_at) {
    EXPECT_GE(t, start + 20 * kMs);  // never early
    last = std::max(last, t);
  }
  // All 64 run around 20 ms, not 64 x 20 ms (generous bound for a loaded machine).
  EXPECT_LT(last - start, 160 * kMs);
  replies.Stop();
}

TEST(DeferredReplies, PastDueRunsInlineOnTheCaller) {
  DeferredReplies replies;
  replies.Start();
  std::thread::id ran_on;
  replies.Submit(0, [&] { ran_on = std::this_thread::get_id(); });
  EXPECT_EQ(ran_on, std::this_thread::get_id());
  EXPECT_EQ(replies.pending(), 0u);
  replies.Stop();
}

TEST(DeferredReplies, StopAnswersEverythingPendingAtOnce) {
  DeferredReplies replies;
  replies.Start();
  std::atomic<int> ran{0};
  uint64_t far = DeferredReplies::NowNanos() + 3600ULL * 1000 * kMs;
  for (int i = 0; i < 10; ++i) replies.Submit(far, [&] { ++ran; });
  EXPECT_EQ(replies.pending(), 10u);
  uint64_t before = DeferredReplies::NowNanos();
  replies.Stop();
  EXPECT_EQ(ran.load(), 10);
  EXPECT_LT(DeferredReplies::NowNanos() - before, 1000 * kMs);
  // After Stop, submissions run inline.
  replies.Submit(far, [&] { ++ran; });
  EXPECT_EQ(ran.load(), 11);
}

}  // namespace
}  // namespace clairfs
