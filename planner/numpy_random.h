// NumPy's legacy RandomState (MT19937) and the permutation NumPy builds from any bit generator.
//
// np.random.RandomState(s) with s in [0, 2^32) seeds MT19937 with the standard init (the same
// stream as torch's generator for the same 32-bit seed). permutation(n) is arange(n) followed by
// shuffle: for i = n-1 down to 1: j = random_interval(i); swap(a[i], a[j]). random_interval(max)
// draws next32() & mask (mask = smallest all-ones value >= max) until the result is <= max, and
// uses next64() instead when max > 2^32 - 1. The same shuffle serves np.random.default_rng
// (PCG64, see pcg64.h); only the bit generator differs.
//
// A bit generator here is any type with `uint32_t Next32()` and `uint64_t Next64()`.
//
// Thread-safety: values with mutable state, one thread at a time. No errors (seed ranges are
// checked by the plan spec parser).
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "planner/index_vector.h"
#include "planner/mt19937.h"

namespace clairfs {

// np.random.RandomState(seed): MT19937, next64 = (first << 32) | second.
class NumpyRandomState {
 public:
  explicit NumpyRandomState(uint32_t seed) : engine_(seed) {}
  uint32_t Next32() { return engine_.Next32(); }
  uint64_t Next64() { return engine_.Next64(); }

 private:
  Mt19937 engine_;
};

// numpy random_interval(bitgen, max): uniform in [0, max] by masked rejection.
template <typename BitGen>
uint64_t NumpyRandomInterval(BitGen& bitgen, uint64_t max) {
  if (max == 0) return 0;
  uint64_t mask = max;
  mask |= mask >> 1;
  mask |= mask >> 2;
  mask |= mask >> 4;
  mask |= mask >> 8;
  mask |= mask >> 16;
  mask |= mask >> 32;
  uint64_t value;
  if (max <= 0xffffffffu) {
    do {
      value = bitgen.Next32() & mask;
    } while (value > max);
  } else {
    do {
      value = bitgen.Next64() & mask;
    } while (value > max);
  }
  return value;
}

template <typename BitGen, typename T>
void NumpyShuffle(std::vector<T>& a, BitGen& bitgen) {
  for (uint64_t i = a.size() > 0 ? a.size() - 1 : 0; i >= 1; --i) {
    uint64_t j = NumpyRandomInterval(bitgen, i);
    std::swap(a[i], a[j]);
  }
}

// bitgen.permutation(n) for RandomState or Generator.
template <typename BitGen>
IndexVector NumpyPermutation(uint64_t n, BitGen& bitgen) {
  IndexVector a = IndexVector::Iota(n);
  if (a.wide()) {
    NumpyShuffle(a.wide_values(), bitgen);
  } else {
    NumpyShuffle(a.narrow(), bitgen);
  }
  return a;
}

// Consumes exactly the draws NumpyPermutation(n, bitgen) would, without building the array
// (rejection sampling makes the draw count data-dependent, so the intervals are still drawn).
template <typename BitGen>
void NumpySkipPermutation(uint64_t n, BitGen& bitgen) {
  for (uint64_t i = n > 0 ? n - 1 : 0; i >= 1; --i) NumpyRandomInterval(bitgen, i);
}

}  // namespace clairfs
