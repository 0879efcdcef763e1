// Mt19937Lanes: kLanes independent MT19937 streams stepped together, for searching many seeds.
//
// Each lane is exactly Mt19937 (planner/mt19937.h) seeded with its own 32-bit seed: the same
// outputs in the same order. The state is stored lane-minor (word i of every lane side by side)
// so that seeding, the twist and the tempering are plain loops over lanes that the compiler turns
// into SIMD; the hot functions are built twice (AVX2 and the baseline, `target_clones`) and the
// loader picks the one the CPU runs. Seeding is a serial chain of 623 multiplies per lane, so
// running kLanes chains at once hides the multiply latency.
//
// Thread-safety: a value with mutable state, one thread at a time. No errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace clairfs {

class Mt19937Lanes {
 public:
  static constexpr int kLanes = 16;
  static constexpr int kStateWords = 624;

  // Seeds lane l with seeds[l] (low 32 bits), as Mt19937::Seed does.
  void Seed(const uint32_t (&seeds)[kLanes]);

  // Writes the next `count` tempered outputs of every lane: out[i * kLanes + l] is lane l's
  // i-th output from here. `out` must hold count * kLanes words.
  void Generate(size_t count, uint32_t* out);

 private:
  // Twists the first `words` state words (the rest are twisted before they are used).
  void TwistPrefix(int words);

  alignas(64) uint32_t state_[kStateWords * kLanes];
  int index_ = kStateWords;    // next word of the current block to temper
  int twisted_ = kStateWords;  // words of the current block already twisted
};

}  // namespace clairfs
