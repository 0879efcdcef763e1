// NumPy reproductions against values printed by numpy 1.24.2: RandomState and default_rng
// permutations, SeedSequence pools and states, PCG64 raw outputs and next32 buffering, and the
// masked-rejection random_interval (32- and 64-bit paths) with scripted draws.
#include "planner/numpy_random.h"

#include <vector>

#include <gtest/gtest.h>

#include "planner/pcg64.h"

namespace clairfs {
namespace {

// Expected values from numpy 1.24.2 under /usr/bin/python3.
TEST(NumpyRandomState, PermutationMatchesNumpy) {
  NumpyRandomState rs(5);
  EXPECT_EQ(NumpyPermutation(10, rs).ToVector(),
            (std::vector<uint64_t>{9, 5, 2, 4, 7, 1, 0, 8, 6, 3}));
  NumpyRandomState max_seed(4294967295u);
  EXPECT_EQ(NumpyPermutation(6, max_seed).ToVector(), (std::vector<uint64_t>{1, 4, 5, 0, 2, 3}));
  NumpyRandomState zero(0);
  EXPECT_EQ(NumpyPermutation(6, zero).ToVector(), (std::vector<uint64_t>{5, 2, 1, 3, 0, 4}));
}

TEST(NumpyRng, PermutationMatchesNumpy) {
  Pcg64 five({5});
  EXPECT_EQ(NumpyPermutation(10, five).ToVector(),
            (std::vector<uint64_t>{7, 6, 1, 3, 2, 4, 0, 9, 5, 8}));
  Pcg64 zero({});
  EXPECT_EQ(NumpyPermutation(6, zero).ToVector(), (std::vector<uint64_t>{3, 2, 5, 4, 0, 1}));
  Pcg64 big({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu});  // 2^128 - 1
  EXPECT_EQ(NumpyPermutation(6, big).ToVector(), (std::vector<uint64_t>{4, 2, 5, 3, 0, 1}));
  Pcg64 huge({12345, 0, 0, 0, 0, 0, 256});  // 2^200 + 12345
  EXPECT_EQ(NumpyPermutation(10, huge).ToVector(),
            (std::vector<uint64_t>{4, 8, 0, 3, 1, 9, 2, 7, 5, 6}));
}

TEST(Pcg64, RawOutputsAndNext32Buffering) {
  // np.random.PCG64(5).random_raw(2)
  Pcg64 a({5});
  EXPECT_EQ(a.Next64(), 14849682912918955432ull);
  EXPECT_EQ(a.Next64(), 14903876974979881461ull);
  Pcg64 b({5});
  EXPECT_EQ(b.Next32(), static_cast<uint32_t>(14849682912918955432ull));
  EXPECT_EQ(b.Next32(), static_cast<uint32_t>(14849682912918955432ull >> 32));
  EXPECT_EQ(b.Next32(), static_cast<uint32_t>(14903876974979881461ull));
  // A high half is buffered now; next64 ignores it and returns the third raw output.
  EXPECT_EQ(b.Next64(), 9506078739185184192ull);
}

TEST(SeedSequence, PoolAndStateMatchNumpy) {
  SeedSequence zero({0});
  EXPECT_EQ(zero.pool(), (std::vector<uint32_t>{0xfe40eb07, 0x4f363a36, 0x4eb2009d, 0xc89a7aa7}));
  EXPECT_EQ(zero.GenerateState32(4),
            (std::vector<uint32_t>{0xb0f478be, 0xdb2cd7e7, 0x2c71ba49, 0xabf4641a}));
  SeedSequence big({0xffffffffu, 0xffffffffu, 0xffffffffu, 0xffffffffu});
  EXPECT_EQ(big.pool(), (std::vector<uint32_t>{0x8673250c, 0xd17e1b30, 0x876fe47f, 0xfad58090}));
  SeedSequence huge({12345, 0, 0, 0, 0, 0, 256});
  EXPECT_EQ(huge.pool(), (std::vector<uint32_t>{0x5e10c966, 0x0639f92e, 0xb0652b81, 0x6dfac273}));
  EXPECT_EQ(huge.GenerateState64(2),
            (std::vector<uint64_t>{0x480128f237eb5a28ull, 0x18bce3f69452ba76ull}));
}

// A bit generator that replays fixed values and counts calls.
struct ScriptedBitGen {
  std::vector<uint64_t> values;
  size_t next = 0;
  int calls32 = 0, calls64 = 0;
  uint32_t Next32() {
    ++calls32;
    return static_cast<uint32_t>(values[next++]);
  }
  uint64_t Next64() {
    ++calls64;
    return values[next++];
  }
};

TEST(NumpyRandomInterval, MaskedRejection) {
  // max = 5: mask 7; 6 and 7 are rejected, 5 accepted.
  ScriptedBitGen gen{{0xfffffff6u, 0x7u, 0x5u}};
  EXPECT_EQ(NumpyRandomInterval(gen, 5), 5u);
  EXPECT_EQ(gen.calls32, 3);
  ScriptedBitGen zero{{}};
  EXPECT_EQ(NumpyRandomInterval(zero, 0), 0u);
  EXPECT_EQ(zero.calls32, 0);
}

TEST(NumpyRandomInterval, Uses64BitDrawsAbove32Bits) {
  uint64_t max = (uint64_t{1} << 32) + 10;  // mask 2^33 - 1
  ScriptedBitGen gen{{(uint64_t{1} << 33) - 1, (uint64_t{1} << 32) + 3}};
  EXPECT_EQ(NumpyRandomInterval(gen, max), (uint64_t{1} << 32) + 3);
  EXPECT_EQ(gen.calls64, 2);
  EXPECT_EQ(gen.calls32, 0);
  ScriptedBitGen at_limit{{0xffffffffu}};
  EXPECT_EQ(NumpyRandomInterval(at_limit, 0xffffffffu), 0xffffffffu);
  EXPECT_EQ(at_limit.calls32, 1);
}

TEST(NumpyPermutation, SkipConsumesTheSameDraws) {
  for (uint64_t n : {1ull, 2ull, 17ull, 1000ull}) {
    NumpyRandomState a(9), b(9);
    NumpyPermutation(n, a);
    NumpySkipPermutation(n, b);
    EXPECT_EQ(a.Next32(), b.Next32()) << n;
    Pcg64 c({9}), d({9});
    NumpyPermutation(n, c);
    NumpySkipPermutation(n, d);
    EXPECT_EQ(c.Next32(), d.Next32()) << n;
  }
}

}  // namespace
}  // namespace clairfs
