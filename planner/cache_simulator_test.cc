// Tests of the cache replay: exact small examples, and properties on shuffled multi-epoch plans.
#include "planner/cache_simulator.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "planner/plan.h"
#include "planner/plan_spec.h"

namespace clairfs {
namespace {

uint64_t Total(const std::vector<SimEpochResult>& rows, uint64_t SimEpochResult::*field) {
  uint64_t sum = 0;
  for (const auto& r : rows) sum += r.*field;
  return sum;
}

SimTrace OneEpoch(std::vector<uint32_t> accesses) {
  SimTrace trace;
  trace.epochs = {0};
  trace.accesses = {std::move(accesses)};
  return trace;
}

// Cyclic 0 1 2 0 1 2 over a cache of two unit files: the textbook case where LRU always misses.
TEST(CacheSimulatorTest, CyclicTraceExactCounts) {
  const SimTrace trace = OneEpoch({0, 1, 2, 0, 1, 2});
  const std::vector<uint64_t> sizes = {1, 1, 1};
  auto lru = SimulateCache(trace, sizes, 2, SimPolicy::kLru);
  EXPECT_EQ(lru[0].hits, 0u);
  EXPECT_EQ(lru[0].misses, 6u);
  EXPECT_EQ(lru[0].backing_bytes, 6u);
  // MIN: misses 0 1 2 (evicts 1, used later than 0), hits 0, misses 1 (evicts 0), hits 2.
  auto belady = SimulateCache(trace, sizes, 2, SimPolicy::kBelady);
  EXPECT_EQ(belady[0].hits, 2u);
  EXPECT_EQ(belady[0].misses, 4u);
  EXPECT_EQ(belady[0].backing_bytes, 4u);
  // Plan (depth 1 access, further into free space): 0 and 1 are prefetched, 2 replaces 1 (needed
  // later than 2) just before its use, 1 replaces 0 (never used again): no misses, and only
  // MIN's four fetches.
  auto plan = SimulateCache(trace, sizes, 2, SimPolicy::kPlan);
  EXPECT_EQ(plan[0].hits, 6u);
  EXPECT_EQ(plan[0].misses, 0u);
  EXPECT_EQ(plan[0].backing_bytes, 4u);
}

// Heat: a file pushes out only strictly colder files (here 2, without heat, goes for 1), and a
// file without heat cannot push out one with heat, so the hot pair stays; LRU keeps nothing.
TEST(CacheSimulatorTest, HeatKeepsTheHotFilesWhereLruKeepsNothing) {
  const SimTrace trace = OneEpoch({2, 0, 1, 2, 0, 1});
  const std::vector<uint64_t> sizes = {1, 1, 1};
  SimHeat heat;
  heat.heat_per_byte = {5, 1, 0};
  auto rows = SimulateHeatCache(trace, sizes, 2, heat);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].hits, 2u);
  EXPECT_EQ(rows[0].misses, 4u);
  EXPECT_EQ(rows[0].backing_bytes, 4u);
  EXPECT_EQ(SimulateCache(trace, sizes, 2, SimPolicy::kLru)[0].hits, 0u);

  // `stage --hot --fit` first: the two hot files are staged before the epoch (2 bytes) and every
  // access to them hits.
  heat.stage_hot = true;
  rows = SimulateHeatCache(trace, sizes, 2, heat);
  EXPECT_EQ(rows[0].hits, 4u);
  EXPECT_EQ(rows[0].misses, 2u);
  EXPECT_EQ(rows[0].backing_bytes, 4u);
}

// Files of equal heat do not evict each other in turn (they would all miss, as under LRU).
TEST(CacheSimulatorTest, HeatFilesOfEqualHeatDoNotEvictEachOther) {
  const SimTrace trace = OneEpoch({0, 1, 2, 0, 1, 2});
  SimHeat heat;
  heat.heat_per_byte = {1, 1, 1};
  auto rows = SimulateHeatCache(trace, {1, 1, 1}, 2, heat);
  EXPECT_EQ(rows[0].hits, 2u);
  EXPECT_EQ(rows[0].misses, 4u);
  // Without heat the policy is LRU.
  heat.heat_per_byte.clear();
  EXPECT_EQ(SimulateHeatCache(trace, {1, 1, 1}, 2, heat)[0].hits, 0u);
}

TEST(CacheSimulatorTest, FileLargerThanCapacityIsNeverCached) {
  const SimTrace trace = OneEpoch({0, 0, 1, 1});
  const std::vector<uint64_t> sizes = {10, 1};
  for (SimPolicy p : {SimPolicy::kLru, SimPolicy::kBelady, SimPolicy::kPlan}) {
    auto r = SimulateCache(trace, sizes, 5, p);
    EXPECT_EQ(r[0].accesses, 4u) << SimPolicyName(p);
    // Both reads of file 0 come from the backing store.
    EXPECT_GE(r[0].backing_bytes, 20u) << SimPolicyName(p);
    EXPECT_LE(r[0].hits, 2u) << SimPolicyName(p);
  }
}

SimTrace PlanTrace(const std::string& spec_text, uint64_t n, uint64_t epochs) {
  auto spec = ParsePlanSpec(spec_text);
  EXPECT_TRUE(spec.ok());
  auto plan = Plan::Create(*spec, n);
  EXPECT_TRUE(plan.ok());
  SimTrace trace;
  for (uint64_t e = 0; e < epochs; ++e) {
    auto order = (*plan)->Epoch(e);
    EXPECT_TRUE(order.ok());
    std::vector<uint32_t> acc;
    const uint64_t per_rank = (*order)->RankSize((*plan)->first_rank());
    for (uint64_t p = 0; p < per_rank; ++p) {
      for (uint32_t r = (*plan)->first_rank(); r <= (*plan)->last_rank(); ++r) {
        acc.push_back(static_cast<uint32_t>((*order)->At(r, p)));
      }
    }
    trace.epochs.push_back(e);
    trace.accesses.push_back(std::move(acc));
  }
  return trace;
}

std::vector<uint64_t> MixedSizesOf(uint64_t n) {
  std::vector<uint64_t> sizes;
  for (uint64_t i = 0; i < n; ++i) sizes.push_back(4096 * (1 + (i * 7919) % 13));
  return sizes;
}

TEST(CacheSimulatorTest, PlanBeatsLruAndMinBeatsLruOnShuffledEpochs) {
  const uint64_t n = 2000;
  const SimTrace trace = PlanTrace("torch-distributed:seed=7,world=4", n, 4);
  const std::vector<uint64_t> sizes = MixedSizesOf(n);
  uint64_t total = 0;
  for (uint64_t s : sizes) total += s;
  const uint64_t capacity = total / 2;
  auto lru = SimulateCache(trace, sizes, capacity, SimPolicy::kLru);
  auto belady = SimulateCache(trace, sizes, capacity, SimPolicy::kBelady);
  auto plan = SimulateCache(trace, sizes, capacity, SimPolicy::kPlan);
  ASSERT_EQ(lru.size(), 4u);
  EXPECT_EQ(Total(lru, &SimEpochResult::accesses), 4 * n);
  EXPECT_GT(Total(belady, &SimEpochResult::hits), Total(lru, &SimEpochResult::hits));
  EXPECT_GE(Total(plan, &SimEpochResult::hits), Total(lru, &SimEpochResult::hits));
  EXPECT_GE(Total(plan, &SimEpochResult::hits), Total(belady, &SimEpochResult::hits));
  // Over the whole run the plan reads fewer bytes from the backing store than LRU.
  EXPECT_LT(Total(plan, &SimEpochResult::backing_bytes),
            Total(lru, &SimEpochResult::backing_bytes));
}

TEST(CacheSimulatorTest, CapacityOfTheDatasetReadsNothingFromTheBackingStoreAfterEpochOne) {
  const uint64_t n = 500;
  const SimTrace trace = PlanTrace("torch-distributed:seed=1,world=2", n, 3);
  const std::vector<uint64_t> sizes = MixedSizesOf(n);
  uint64_t total = 0;
  for (uint64_t s : sizes) total += s;
  for (SimPolicy p : {SimPolicy::kLru, SimPolicy::kBelady, SimPolicy::kPlan}) {
    auto r = SimulateCache(trace, sizes, total, p);
    EXPECT_EQ(r[0].backing_bytes, total) << SimPolicyName(p);
    EXPECT_EQ(r[1].backing_bytes, 0u) << SimPolicyName(p);
    EXPECT_EQ(r[2].backing_bytes, 0u) << SimPolicyName(p);
    EXPECT_EQ(r[1].misses, 0u) << SimPolicyName(p);
  }
}

// The most hits any demand-paging policy can get (exhaustive search), for unit sizes: on a miss
// the file is loaded, evicting any one resident file when `capacity` are resident.
uint64_t OptimalHits(const std::vector<uint32_t>& acc, size_t i, uint32_t resident, int capacity) {
  if (i == acc.size()) return 0;
  const uint32_t bit = 1u << acc[i];
  if (resident & bit) return 1 + OptimalHits(acc, i + 1, resident, capacity);
  if (__builtin_popcount(resident) < capacity) {
    return OptimalHits(acc, i + 1, resident | bit, capacity);
  }
  uint64_t best = 0;
  for (uint32_t v = resident; v != 0; v &= v - 1) {
    const uint32_t victim = v & -v;
    best = std::max(best, OptimalHits(acc, i + 1, (resident & ~victim) | bit, capacity));
  }
  return best;
}

// Belady (MIN) with unit sizes is optimal among demand policies: it matches an exhaustive search
// on random small traces, and is never worse than LRU.
TEST(CacheSimulatorTest, BeladyMatchesExhaustiveOptimumWithUnitSizes) {
  uint64_t state = 12345;
  for (int round = 0; round < 60; ++round) {
    std::vector<uint32_t> acc;
    for (int i = 0; i < 12; ++i) {
      state = state * 6364136223846793005ULL + 1442695040888963407ULL;
      acc.push_back(static_cast<uint32_t>((state >> 33) % 5));
    }
    const SimTrace trace = OneEpoch(acc);
    const std::vector<uint64_t> sizes(5, 1);
    const int capacity = 1 + round % 3;
    auto lru = SimulateCache(trace, sizes, capacity, SimPolicy::kLru);
    auto belady = SimulateCache(trace, sizes, capacity, SimPolicy::kBelady);
    EXPECT_EQ(belady[0].hits, OptimalHits(acc, 0, 0, capacity)) << "round " << round;
    EXPECT_GE(belady[0].hits, lru[0].hits) << "round " << round;
  }
}

}  // namespace
}  // namespace clairfs
