// Mt19937Lanes: MT19937 over kLanes seeds at once (see mt19937_lanes.h).
//
// One state word of all 16 lanes is one GCC vector of 16 uint32 (64 bytes, a row of state_): the
// compiler lowers each operation to two AVX2 instructions in the avx2 clone and to four SSE2 ones
// in the baseline clone, with no aliasing question left for it to answer.
#include "planner/inference/mt19937_lanes.h"

#include <cstring>

#include "planner/inference/simd_clones.h"

namespace clairfs {
namespace {
constexpr int kN = Mt19937Lanes::kStateWords;
constexpr int kL = Mt19937Lanes::kLanes;
constexpr int kShift = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu;
constexpr uint32_t kUpperMask = 0x80000000u;
constexpr uint32_t kLowerMask = 0x7fffffffu;

// Load and Store pass a Row by value: GCC notes that the ABI of such a function differs with and
// without AVX-512, which only matters across translation units; these are internal and inlined.
#pragma GCC diagnostic ignored "-Wpsabi"
typedef uint32_t Row __attribute__((vector_size(kL * sizeof(uint32_t))));
static_assert(sizeof(Row) == kL * sizeof(uint32_t));

inline Row Load(const uint32_t* p) {
  Row r;
  memcpy(&r, p, sizeof r);
  return r;
}
inline void Store(uint32_t* p, Row r) { memcpy(p, &r, sizeof r); }

}  // namespace

CLAIRFS_SIMD_CLONES void Mt19937Lanes::Seed(const uint32_t (&seeds)[kLanes]) {
  Row prev = Load(seeds);
  Store(&state_[0], prev);
  for (int i = 1; i < kN; ++i) {
    prev = 1812433253u * (prev ^ (prev >> 30)) + static_cast<uint32_t>(i);
    Store(&state_[i * kL], prev);
  }
  index_ = kN;
  twisted_ = kN;
}

// The twist runs in place, word by word in order (word i reads words i, i+1 and i+397 modulo
// 624, whichever of them are already new), as Mt19937::Twist does: twisting the block in pieces,
// in order, is the same computation.
CLAIRFS_SIMD_CLONES void Mt19937Lanes::TwistPrefix(int words) {
  for (int i = twisted_; i < words; ++i) {
    Row cur = Load(&state_[i * kL]);
    Row next = Load(&state_[((i + 1) % kN) * kL]);
    Row far = Load(&state_[((i + kShift) % kN) * kL]);
    Row y = (cur & kUpperMask) | (next & kLowerMask);
    Row odd = -(y & 1u);  // all ones where y is odd
    Store(&state_[i * kL], far ^ (y >> 1) ^ (odd & kMatrixA));
  }
  twisted_ = words;
}

CLAIRFS_SIMD_CLONES void Mt19937Lanes::Generate(size_t count, uint32_t* out) {
  while (count > 0) {
    if (index_ >= kN) {
      index_ = 0;
      twisted_ = 0;
    }
    int take = kN - index_;
    if (static_cast<size_t>(take) > count) take = static_cast<int>(count);
    TwistPrefix(index_ + take);
    for (int i = index_; i < index_ + take; ++i) {
      Row y = Load(&state_[i * kL]);
      y ^= y >> 11;
      y ^= (y << 7) & 0x9d2c5680u;
      y ^= (y << 15) & 0xefc60000u;
      y ^= y >> 18;
      Store(out, y);
      out += kL;
    }
    index_ += take;
    count -= static_cast<size_t>(take);
  }
}

}  // namespace clairfs
