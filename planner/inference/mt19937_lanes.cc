// Mt19937Lanes: MT19937 over kLanes seeds at once (see mt19937_lanes.h).
#include "planner/inference/mt19937_lanes.h"

namespace clairfs {
namespace {
constexpr int kN = Mt19937Lanes::kStateWords;
constexpr int kL = Mt19937Lanes::kLanes;
constexpr int kShift = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu;
constexpr uint32_t kUpperMask = 0x80000000u;
constexpr uint32_t kLowerMask = 0x7fffffffu;

}  // namespace

__attribute__((target_clones("avx2", "default"))) void Mt19937Lanes::Seed(
    const uint32_t (&seeds)[kLanes]) {
  for (int l = 0; l < kL; ++l) state_[l] = seeds[l];
  for (int i = 1; i < kN; ++i) {
    const uint32_t* prev = &state_[(i - 1) * kL];
    uint32_t* cur = &state_[i * kL];
    for (int l = 0; l < kL; ++l) {
      cur[l] = 1812433253u * (prev[l] ^ (prev[l] >> 30)) + static_cast<uint32_t>(i);
    }
  }
  index_ = kN;
  twisted_ = kN;
}

// The twist runs in place, word by word in order (word i reads words i, i+1 and i+397 modulo
// 624, whichever of them are already new), as Mt19937::Twist does: twisting the block in pieces,
// in order, is the same computation.
__attribute__((target_clones("avx2", "default"))) void Mt19937Lanes::TwistPrefix(int words) {
  for (int i = twisted_; i < words; ++i) {
    uint32_t* cur = &state_[i * kL];
    const uint32_t* next = &state_[((i + 1) % kN) * kL];
    const uint32_t* far = &state_[((i + kShift) % kN) * kL];
    for (int l = 0; l < kL; ++l) {
      uint32_t y = (cur[l] & kUpperMask) | (next[l] & kLowerMask);
      cur[l] = far[l] ^ (y >> 1) ^ (static_cast<uint32_t>(-(y & 1u)) & kMatrixA);
    }
  }
  twisted_ = words;
}

__attribute__((target_clones("avx2", "default"))) void Mt19937Lanes::Generate(size_t count,
                                                                            uint32_t* out) {
  while (count > 0) {
    if (index_ >= kN) {
      index_ = 0;
      twisted_ = 0;
    }
    int take = kN - index_;
    if (static_cast<size_t>(take) > count) take = static_cast<int>(count);
    TwistPrefix(index_ + take);
    for (int i = index_; i < index_ + take; ++i) {
      const uint32_t* src = &state_[i * kL];
      for (int l = 0; l < kL; ++l) {
        uint32_t y = src[l];
        y ^= y >> 11;
        y ^= (y << 7) & 0x9d2c5680u;
        y ^= (y << 15) & 0xefc60000u;
        y ^= y >> 18;
        out[l] = y;
      }
      out += kL;
    }
    index_ += take;
    count -= static_cast<size_t>(take);
  }
}

}  // namespace clairfs
