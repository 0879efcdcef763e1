#include "planner/belady.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <list>
#include <numeric>

namespace clairfs {
namespace {

uint64_t CountHits(const std::vector<uint8_t>& hits) {
  return std::accumulate(hits.begin(), hits.end(), uint64_t{0});
}

TEST(Belady, EvictsTheFileUsedFarthestInTheFuture) {
  // a b c a b with room for two: at c, a (next at 3) stays and b (next at 4) goes.
  auto hits = SimulateBeladyHits({0, 1, 2, 0, 1}, {1, 1, 1}, 2);
  ASSERT_TRUE(hits.ok()) << hits.status().message();
  EXPECT_EQ(*hits, (std::vector<uint8_t>{0, 0, 0, 1, 0}));
}

TEST(Belady, FilesNeverUsedAgainGoFirst) {
  // a b c b a with room for two: c is loaded evicting a (next use 4, farthest); b hits; a
  // misses and evicts c (never used again) rather than b.
  auto hits = SimulateBeladyHits({0, 1, 2, 1, 0}, {1, 1, 1}, 2);
  ASSERT_TRUE(hits.ok());
  EXPECT_EQ(*hits, (std::vector<uint8_t>{0, 0, 0, 1, 0}));
}

TEST(Belady, EverythingFitsOnlyFirstAccessesMiss) {
  std::vector<uint32_t> trace = {0, 1, 2, 3, 2, 1, 0, 3, 3, 1};
  auto hits = SimulateBeladyHits(trace, {10, 20, 30, 40}, 100);
  ASSERT_TRUE(hits.ok());
  EXPECT_EQ(CountHits(*hits), trace.size() - 4);
}

TEST(Belady, EvictsSeveralFilesToFitABigOne) {
  // Capacity 4: a(1) b(1) c(1) are cached; d(3) needs two of them out: c (never again) and
  // b (used at 6, after a at 5). Then a hits, b misses.
  auto hits = SimulateBeladyHits({0, 1, 2, 3, 3, 0, 1}, {1, 1, 1, 3}, 4);
  ASSERT_TRUE(hits.ok());
  EXPECT_EQ(*hits, (std::vector<uint8_t>{0, 0, 0, 0, 1, 1, 0}));
}

TEST(Belady, FileLargerThanCapacityIsNeverCachedAndEvictsNothing) {
  auto hits = SimulateBeladyHits({0, 1, 0, 1, 0}, {5, 100}, 10);
  ASSERT_TRUE(hits.ok());
  EXPECT_EQ(*hits, (std::vector<uint8_t>{0, 0, 1, 0, 1}));
}

TEST(Belady, RejectsIdsWithoutSize) {
  auto hits = SimulateBeladyHits({0, 3}, {1, 1}, 2);
  ASSERT_FALSE(hits.ok());
  EXPECT_EQ(hits.status().code(), EINVAL);
}

// An LRU over the same unit-size trace, the policy clairfs read-through measures against.
uint64_t LruHits(const std::vector<uint32_t>& trace, size_t slots) {
  std::list<uint32_t> order;  // most recent first
  uint64_t hits = 0;
  for (uint32_t f : trace) {
    auto it = std::find(order.begin(), order.end(), f);
    if (it != order.end()) {
      ++hits;
      order.erase(it);
    } else if (order.size() == slots) {
      order.pop_back();
    }
    order.push_front(f);
  }
  return hits;
}

TEST(Belady, NeverWorseThanLruOnShuffledEpochs) {
  // Unit sizes: demand-MIN is optimal, so it must match or beat LRU on every trace.
  uint64_t state = 7;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 33;
  };
  for (int trial = 0; trial < 20; ++trial) {
    const uint32_t files = 50;
    std::vector<uint32_t> trace;
    for (int epoch = 0; epoch < 4; ++epoch) {
      std::vector<uint32_t> order(files);
      std::iota(order.begin(), order.end(), 0);
      for (size_t i = files; i > 1; --i) std::swap(order[i - 1], order[next() % i]);
      trace.insert(trace.end(), order.begin(), order.end());
    }
    const size_t slots = 5 + static_cast<size_t>(next() % 60);
    auto hits = SimulateBeladyHits(trace, std::vector<uint64_t>(files, 1), slots);
    ASSERT_TRUE(hits.ok());
    EXPECT_GE(CountHits(*hits), LruHits(trace, slots)) << "slots " << slots;
    if (slots >= files) {
      EXPECT_EQ(CountHits(*hits), trace.size() - files);
    }
  }
}

}  // namespace
}  // namespace clairfs
