// Mt19937: the 32-bit Mersenne Twister exactly as PyTorch's CPU generator and NumPy's legacy
// RandomState use it.
//
// Both libraries seed with the standard MT19937 initialisation (state[0] = seed, state[i] =
// 1812433253 * (state[i-1] ^ (state[i-1] >> 30)) + i) and produce the standard tempered output,
// so the stream equals std::mt19937(uint32_t(seed)). We implement it ourselves rather than use
// std::mt19937 so that the 64-bit compositions and the skipping used by the planner are explicit
// and obviously identical on every standard library.
//
// Seeding semantics (torch `Generator.manual_seed`): the seed is a uint64 (negative Python seeds
// are reinterpreted as two's complement before they get here) and only its low 32 bits are used.
//
// Thread-safety: a value type with mutable state; one thread at a time per instance. No errors.
#pragma once

#include <array>
#include <cstdint>

namespace clairfs {

class Mt19937 {
 public:
  static constexpr int kStateWords = 624;

  explicit Mt19937(uint64_t seed = 5489) { Seed(seed); }

  // torch manual_seed / numpy mt19937_seed: only the low 32 bits of `seed` matter.
  void Seed(uint64_t seed);

  // One tempered 32-bit output (torch `random()`, numpy `next32`).
  uint32_t Next32() {
    if (index_ >= kStateWords) Twist();
    uint32_t y = state_[index_++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
  }

  // torch `random64()` and numpy legacy `next64`: (first << 32) | second.
  uint64_t Next64() {
    uint64_t hi = Next32();
    uint64_t lo = Next32();
    return (hi << 32) | lo;
  }

  // Advances the stream by `count` 32-bit outputs without tempering them.
  void Discard(uint64_t count);

 private:
  void Twist();

  std::array<uint32_t, kStateWords> state_{};
  int index_ = kStateWords;
};

}  // namespace clairfs
