// torch.randperm reproductions against torch 1.13.1 values, draw counts, and the inside-out
// variant of torch >= 2.6/2.7.
#include "planner/torch_randperm.h"

#include <algorithm>
#include <vector>

#include <gtest/gtest.h>

namespace clairfs {
namespace {

std::vector<uint64_t> Perm(uint64_t n, uint64_t seed,
                           RandpermAlgorithm algorithm = RandpermAlgorithm::kLegacy) {
  TorchGenerator g(seed);
  return Randperm(n, g, algorithm).ToVector();
}

// Values from torch 1.13.1: torch.randperm(n, generator=torch.Generator().manual_seed(seed)).
TEST(TorchRandperm, MatchesTorch) {
  EXPECT_EQ(Perm(10, 5489), (std::vector<uint64_t>{2, 7, 8, 4, 0, 6, 1, 9, 3, 5}));
  EXPECT_EQ(Perm(8, 7), (std::vector<uint64_t>{7, 0, 3, 4, 1, 5, 2, 6}));
  // 2^40 + 7 seeds like 7; -1 arrives as 2^64 - 1.
  EXPECT_EQ(Perm(8, (uint64_t{1} << 40) + 7), Perm(8, 7));
  EXPECT_EQ(Perm(5, static_cast<uint64_t>(-1)), (std::vector<uint64_t>{1, 3, 4, 2, 0}));
}

TEST(TorchRandperm, TinySizes) {
  EXPECT_EQ(Perm(0, 1), std::vector<uint64_t>{});
  EXPECT_EQ(Perm(1, 1), std::vector<uint64_t>{0});
}

TEST(TorchRandperm, LegacyUsesExactlyNMinusOneDraws) {
  for (uint64_t n : {1ull, 2ull, 10ull, 1000ull}) {
    TorchGenerator a(3), b(3);
    Randperm(n, a);
    SkipRandperm(n, b);
    EXPECT_EQ(a.Random(), b.Random()) << n;
    TorchGenerator c(3);
    c.Discard(n - 1);
    TorchGenerator d(3);
    Randperm(n, d);
    EXPECT_EQ(c.Random(), d.Random()) << n;
  }
}

// Expected values computed in Python from the raw MT19937 stream of seed 5489 with the
// documented torch >= 2.7 inside-out loop (z = random64() % (i + 1); r[i] = r[z]; r[z] = i).
TEST(TorchRandperm, InsideOutVariant) {
  EXPECT_EQ(Perm(10, 5489, RandpermAlgorithm::kInsideOut),
            (std::vector<uint64_t>{7, 4, 6, 5, 3, 1, 2, 8, 9, 0}));
  TorchGenerator a(5489), b(5489);
  Randperm(1000, a, RandpermAlgorithm::kInsideOut);
  SkipRandperm(1000, b, RandpermAlgorithm::kInsideOut);
  EXPECT_EQ(a.Random(), b.Random());
  std::vector<uint64_t> p = Perm(1000, 1, RandpermAlgorithm::kInsideOut);
  std::sort(p.begin(), p.end());
  for (uint64_t i = 0; i < p.size(); ++i) ASSERT_EQ(p[i], i);
}

TEST(TorchRandperm, AlgorithmChoiceFollowsTorchVersionAndSize) {
  EXPECT_EQ(RandpermAlgorithmFor(kTorchInsideOutThreshold - 1, true), RandpermAlgorithm::kLegacy);
  EXPECT_EQ(RandpermAlgorithmFor(kTorchInsideOutThreshold, true), RandpermAlgorithm::kInsideOut);
  EXPECT_EQ(RandpermAlgorithmFor(kTorchInsideOutThreshold, false), RandpermAlgorithm::kLegacy);
  EXPECT_EQ(kTorchInsideOutThreshold, uint64_t{UINT32_MAX} / 20);
}

}  // namespace
}  // namespace clairfs
