// RandpermLandings: randperm's first picks over 16 lanes at once (see randperm_lanes.h).
//
// The error bound behind the float quotient: draw / 2 and 2 / d are each rounded once to a float
// (relative error 2^-24 each) and so is their product; with the half bit dropped, the estimate
// differs from draw / d by at most 3 * 2^-24 * 2^32 / d + 1 / d, below 0.02 for d >= 2^16, so its
// truncation is floor(draw / d) or one off either way, and r = draw - q * d lies in [-d, 2d).
// In 32-bit wrapping arithmetic that range stays apart (r < 0 wraps to >= 2^32 - d > 2d) while
// d < 2^32 / 3, which n < 2^30 keeps.
#include "planner/inference/randperm_lanes.h"

#include <cstring>

#include "planner/inference/simd_clones.h"

namespace clairfs {
namespace {

constexpr int kLaneCount = RandpermLandings::kLanes;
constexpr uint32_t kMinDivisor = uint32_t{1} << 16;
constexpr uint32_t kMaxSamples = uint32_t{1} << 30;

// Vectors of 8 words (one AVX2 register): GCC lowers wider generic vectors' compares and
// broadcasts lane by lane.
#pragma GCC diagnostic ignored "-Wpsabi"
constexpr int kW = 8;
typedef uint32_t U32s __attribute__((vector_size(kW * sizeof(uint32_t))));
typedef int32_t I32s __attribute__((vector_size(kW * sizeof(int32_t))));
typedef float Floats __attribute__((vector_size(kW * sizeof(float))));

CLAIRFS_SIMD_CLONES void CountPicks(const uint32_t* draws, uint32_t prefix, uint32_t n,
                                    const float* inverse_two, const uint32_t* bitmap,
                                    uint32_t* counts_out) {
  I32s counts[kLaneCount / kW] = {};
  for (uint32_t i = 0; i < prefix; ++i) {
    // Signed lanes for the compares (AVX2 compares signed words only): r lies in [-d, 2d),
    // inside int32 for d < 2^30. The product and difference wrap, so they are taken unsigned
    // (signed overflow is undefined) and land on r exactly.
    const I32s d = I32s{} + static_cast<int32_t>(n - i);
    const Floats inverse = Floats{} + inverse_two[i];
    for (int h = 0; h < kLaneCount / kW; ++h) {
      U32s draw;
      memcpy(&draw, draws + static_cast<size_t>(i) * kLaneCount + h * kW, sizeof draw);
      const Floats half = __builtin_convertvector(reinterpret_cast<I32s>(draw >> 1), Floats);
      const I32s q = __builtin_convertvector(half * inverse, I32s);
      I32s r = reinterpret_cast<I32s>(draw - reinterpret_cast<U32s>(q) * reinterpret_cast<U32s>(d));
      r += (r < 0) & d;   // q was one too many
      r -= (r >= d) & d;  // q was one too few
      uint32_t z[kW];
      memcpy(z, &r, sizeof z);
      I32s picked;
      for (int l = 0; l < kW; ++l) {
        const uint32_t at = z[l] + i;
        picked[l] = static_cast<int32_t>((bitmap[at >> 5] >> (at & 31)) & 1u);
      }
      counts[h] += picked;
    }
  }
  memcpy(counts_out, counts, sizeof counts);
}

}  // namespace

RandpermLandings::RandpermLandings(uint32_t n, const std::vector<uint32_t>& tracked,
                                   uint32_t prefix)
    : n_(n), prefix_(prefix) {
  usable_ = n < kMaxSamples && prefix <= n && n - prefix >= kMinDivisor;
  for (uint32_t v : tracked) {
    if (v < prefix) usable_ = false;
  }
  if (!usable_) return;
  bitmap_.assign((static_cast<size_t>(n) + 31) / 32, 0);
  for (uint32_t v : tracked) bitmap_[v >> 5] |= uint32_t{1} << (v & 31);
  inverse_two_.resize(prefix);
  for (uint32_t i = 0; i < prefix; ++i) {
    inverse_two_[i] = static_cast<float>(2.0 / static_cast<double>(n - i));
  }
}

void RandpermLandings::Count(const uint32_t* draws, uint32_t (&counts)[kLanes]) const {
  CountPicks(draws, prefix_, n_, inverse_two_.data(), bitmap_.data(), counts);
}

}  // namespace clairfs
