// MT19937 against the C++ standard's reference values and std::mt19937, seeding semantics, and
// torch's random_() composition (values from torch 1.13.1).
#include "planner/mt19937.h"

#include <random>

#include <gtest/gtest.h>

#include "planner/torch_randperm.h"

namespace clairfs {
namespace {

TEST(Mt19937, KnownOutputsForDefaultSeed5489) {
  Mt19937 mt(5489);
  EXPECT_EQ(mt.Next32(), 3499211612u);
  EXPECT_EQ(mt.Next32(), 581869302u);
  EXPECT_EQ(mt.Next32(), 3890346734u);
  EXPECT_EQ(mt.Next32(), 3586334585u);
  EXPECT_EQ(mt.Next32(), 545404204u);
  // The C++ standard fixes the 10000th output of a default-seeded mt19937.
  Mt19937 again(5489);
  uint32_t value = 0;
  for (int i = 0; i < 10000; ++i) value = again.Next32();
  EXPECT_EQ(value, 4123659995u);
}

TEST(Mt19937, EqualsStdMt19937ForManySeeds) {
  for (uint32_t seed : {0u, 1u, 42u, 0x7fffffffu, 0xffffffffu}) {
    std::mt19937 reference(seed);
    Mt19937 mt(seed);
    for (int i = 0; i < 2000; ++i) ASSERT_EQ(mt.Next32(), reference()) << seed << " " << i;
  }
}

TEST(Mt19937, OnlyLow32BitsOfTheSeedMatter) {
  Mt19937 a(7), b((uint64_t{1} << 40) + 7), c(static_cast<uint64_t>(-1)), d(0xffffffffu);
  for (int i = 0; i < 100; ++i) {
    uint32_t va = a.Next32();
    EXPECT_EQ(va, b.Next32());
    EXPECT_EQ(c.Next32(), d.Next32());
  }
}

TEST(Mt19937, Next64IsFirstHighThenLow) {
  Mt19937 a(5489), b(5489);
  uint64_t hi = a.Next32(), lo = a.Next32();
  EXPECT_EQ(b.Next64(), (hi << 32) | lo);
}

TEST(Mt19937, DiscardEqualsDrawing) {
  for (uint64_t skip : {0ull, 1ull, 623ull, 624ull, 625ull, 5000ull}) {
    Mt19937 a(99), b(99);
    a.Discard(skip);
    for (uint64_t i = 0; i < skip; ++i) b.Next32();
    EXPECT_EQ(a.Next32(), b.Next32()) << skip;
  }
}

TEST(TorchGenerator, RandomInt64MatchesTorchRandom_) {
  // torch.empty((), dtype=torch.int64).random_(generator=manual_seed(42)), twice.
  TorchGenerator g(42);
  EXPECT_EQ(g.RandomInt64(), 6909045637428952499ll);
  EXPECT_EQ(g.RandomInt64(), 8314211556539077902ll);
}

}  // namespace
}  // namespace clairfs
