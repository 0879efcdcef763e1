// ShuffleTracker against the planner's full permutations: torch randperm prefixes (values below
// and above the prefix, values moved before they land, the last position) and NumPy shuffles
// (RandomState and default_rng).
#include "planner/inference/shuffle_tracker.h"

#include <map>
#include <vector>

#include <gtest/gtest.h>

#include "planner/pcg64.h"
#include "planner/torch_randperm.h"

namespace clairfs {
namespace {

TEST(ShuffleTracker, RandpermPrefixFindsExactlyTheTrackedValues) {
  for (uint32_t n : {2u, 3u, 10u, 1000u, 100003u}) {
    for (uint64_t seed : {0ull, 1ull, 42ull, 4294967295ull}) {
      TorchGenerator full_gen(seed);
      std::vector<uint64_t> perm = Randperm(n, full_gen).ToVector();
      // Track every 7th value and the extremes.
      std::vector<uint32_t> values;
      for (uint32_t v = 0; v < n; v += 7) values.push_back(v);
      values.push_back(n - 1);
      ShuffleTracker tracker(n);
      tracker.Track(values);
      for (uint32_t prefix : {1u, n / 2, n - 1, n}) {
        if (prefix == 0) continue;
        std::map<uint32_t, uint32_t> expected;  // position -> value
        for (uint32_t p = 0; p < prefix; ++p) {
          if (perm[p] % 7 == 0 || perm[p] == n - 1) expected[p] = static_cast<uint32_t>(perm[p]);
        }
        std::map<uint32_t, uint32_t> got;
        TorchGenerator gen(seed);
        tracker.RunRandpermPrefix(
            prefix, [&] { return gen.Random(); }, [&](uint32_t p, uint32_t v) { got[p] = v; });
        ASSERT_EQ(got, expected) << "n " << n << " seed " << seed << " prefix " << prefix;
      }
    }
  }
}

TEST(ShuffleTracker, NumpyShuffleFindsEveryTrackedValue) {
  for (uint32_t n : {2u, 17u, 5000u}) {
    for (uint32_t seed : {0u, 5u, 3407u}) {
      NumpyRandomState a(seed), b(seed);
      std::vector<uint64_t> perm = NumpyPermutation(n, a).ToVector();
      Pcg64 c(std::vector<uint32_t>{seed}), d(std::vector<uint32_t>{seed});
      std::vector<uint64_t> perm_rng = NumpyPermutation(n, c).ToVector();
      std::vector<uint32_t> values = {0, n - 1, n / 2, n / 3};
      ShuffleTracker tracker(n);
      tracker.Track(values);
      for (int which = 0; which < 2; ++which) {
        const std::vector<uint64_t>& order = which == 0 ? perm : perm_rng;
        std::map<uint32_t, uint32_t> expected, got;
        for (uint32_t p = 0; p < n; ++p) {
          for (uint32_t v : values) {
            if (order[p] == v) expected[p] = v;
          }
        }
        auto record = [&](uint32_t p, uint32_t v) { got[p] = v; };
        if (which == 0) {
          tracker.RunNumpyShuffle(b, record);
        } else {
          tracker.RunNumpyShuffle(d, record);
        }
        EXPECT_EQ(got, expected) << "n " << n << " seed " << seed << " rng " << which;
      }
    }
  }
}

TEST(ShuffleTracker, NumpyShuffleStopsOnceTooManySettleFar) {
  const uint32_t n = 100000;
  ShuffleTracker tracker(n);
  std::vector<uint32_t> values;
  for (uint32_t v = 0; v < 50; ++v) values.push_back(v * 1000);
  tracker.Track(values);
  NumpyRandomState rs(1);
  int reported = 0;
  EXPECT_FALSE(tracker.RunNumpyShuffle(
      rs, [&](uint32_t, uint32_t) { ++reported; }, 1000, 3));
  EXPECT_LT(reported, 50);
  // The next run starts from the tracked values again and reports all of them.
  NumpyRandomState again(1);
  reported = 0;
  EXPECT_TRUE(tracker.RunNumpyShuffle(again, [&](uint32_t, uint32_t) { ++reported; }));
  EXPECT_EQ(reported, 50);
}

TEST(ShuffleTracker, FastModIsTheModulo) {
  for (uint32_t d : {1u, 2u, 3u, 7u, 1281167u, 4294967295u, 2147483648u}) {
    uint64_t m = UINT64_MAX / d + 1;
    for (uint32_t a : {0u, 1u, 2u, 12345u, 2147483647u, 4294967294u, 4294967295u}) {
      EXPECT_EQ(FastMod32(a, m, d), a % d) << a << " % " << d;
    }
  }
}

}  // namespace
}  // namespace clairfs
