// RandpermLandings against the scalar definition: every lane's count equals the number of steps
// whose pick z = i + draw % (n - i) is tracked, for random draws and for draws at the edges of the
// float quotient (multiples of n - i and their neighbours, 0, 2^32 - 1), over sizes from the
// smallest usable to 2^30 - 1; and ShuffleTracker's landings never exceed it.
#include "planner/inference/randperm_lanes.h"

#include <random>
#include <vector>

#include <gtest/gtest.h>

#include "planner/inference/mt19937_lanes.h"
#include "planner/inference/shuffle_tracker.h"

namespace clairfs {
namespace {

constexpr int kL = RandpermLandings::kLanes;

uint32_t ScalarPicks(const std::vector<uint32_t>& draws, int lane, uint32_t n, uint32_t prefix,
                     const std::vector<bool>& tracked) {
  uint32_t count = 0;
  for (uint32_t i = 0; i < prefix; ++i) {
    uint32_t z = i + draws[static_cast<size_t>(i) * kL + lane] % (n - i);
    count += tracked[z] ? 1 : 0;
  }
  return count;
}

TEST(RandpermLandings, CountsEqualTheScalarPicksAtEveryEdgeOfTheQuotient) {
  std::mt19937_64 rng(20261202);
  for (uint32_t n :
       {uint32_t{65536 + 2048}, uint32_t{100003}, uint32_t{1281167}, uint32_t{(1u << 30) - 1}}) {
    const uint32_t prefix = 2048;
    // Tracked: many values at or beyond the prefix, dense near it so that picks happen.
    std::vector<uint32_t> values;
    std::vector<bool> tracked(n, false);
    for (int k = 0; k < 4000; ++k) {
      uint32_t v = k < 2000 ? prefix + static_cast<uint32_t>(rng() % 4096)
                            : prefix + static_cast<uint32_t>(rng() % (n - prefix));
      values.push_back(v);
      tracked[v] = true;
    }
    RandpermLandings landings(n, values, prefix);
    ASSERT_TRUE(landings.usable()) << n;
    std::vector<uint32_t> draws(static_cast<size_t>(prefix) * kL);
    for (int round = 0; round < 6; ++round) {
      for (uint32_t i = 0; i < prefix; ++i) {
        const uint64_t d = n - i;
        for (int l = 0; l < kL; ++l) {
          uint64_t draw = rng() & 0xffffffffu;
          if (round >= 1) {
            // A multiple of d (up to 2^32) and its neighbours: where a float quotient errs.
            const uint64_t k = (rng() % (0x100000000ull / d)) + (round >= 3 ? 1 : 0);
            const int64_t nudge = static_cast<int64_t>(rng() % 3) - 1;
            draw = k * d + static_cast<uint64_t>(nudge);
            // Aim some at a tracked position: r = v - i for a tracked v.
            if (round == 5) draw = k * d + (values[rng() % values.size()] - i) % d;
            if (draw > 0xffffffffu) draw = (l & 1) ? 0xffffffffu : 0;
          }
          draws[static_cast<size_t>(i) * kL + l] = static_cast<uint32_t>(draw);
        }
      }
      uint32_t counts[kL];
      landings.Count(draws.data(), counts);
      for (int l = 0; l < kL; ++l) {
        ASSERT_EQ(counts[l], ScalarPicks(draws, l, n, prefix, tracked))
            << "n " << n << " round " << round << " lane " << l;
      }
    }
  }
}

TEST(RandpermLandings, NeverFewerThanTheTrackersLandings) {
  const uint32_t n = 300000, prefix = 2048;
  std::mt19937_64 rng(7);
  std::vector<uint32_t> values;
  for (int k = 0; k < 600; ++k) values.push_back(prefix + static_cast<uint32_t>(rng() % 3000));
  RandpermLandings landings(n, values, prefix);
  ASSERT_TRUE(landings.usable());
  ShuffleTracker tracker(n);
  tracker.Track(values);
  Mt19937Lanes lanes;
  std::vector<uint32_t> draws(static_cast<size_t>(prefix) * kL);
  uint64_t equal = 0, total = 0;
  for (uint32_t base = 0; base < 64 * kL; base += kL) {
    uint32_t seeds[kL];
    for (int l = 0; l < kL; ++l) seeds[l] = base + static_cast<uint32_t>(l);
    lanes.Seed(seeds);
    lanes.Generate(prefix, draws.data());
    uint32_t counts[kL];
    landings.Count(draws.data(), counts);
    for (int l = 0; l < kL; ++l) {
      uint32_t landed = 0;
      size_t i = 0;
      tracker.RunRandpermPrefix(
          prefix, [&] { return draws[kL * i++ + l]; }, [&](uint32_t, uint32_t) { ++landed; });
      ASSERT_LE(landed, counts[l]) << "seed " << seeds[l];
      equal += landed == counts[l] ? 1 : 0;
      ++total;
    }
  }
  // Repeated picks of one position are rare: nearly every lane's count is its landings.
  EXPECT_GT(equal, total * 9 / 10);
}

TEST(RandpermLandings, RefusesWhereTheFloatQuotientOrTheRuleDoesNotHold) {
  EXPECT_FALSE(RandpermLandings(65536 + 2047, {70000 % (65536 + 2047)}, 2048).usable());
  EXPECT_FALSE(RandpermLandings(1u << 30, {5000}, 2048).usable());
  EXPECT_FALSE(RandpermLandings(1281167, {5000, 2047}, 2048).usable());  // tracked below prefix
  EXPECT_TRUE(RandpermLandings(1281167, {5000, 2048}, 2048).usable());
}

}  // namespace
}  // namespace clairfs
