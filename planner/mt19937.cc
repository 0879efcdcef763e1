// Mt19937: seeding, the twist and skipping (see mt19937.h).
#include "planner/mt19937.h"

namespace clairfs {
namespace {
constexpr int kShift = 397;
constexpr uint32_t kMatrixA = 0x9908b0dfu;
constexpr uint32_t kUpperMask = 0x80000000u;
constexpr uint32_t kLowerMask = 0x7fffffffu;
}  // namespace

void Mt19937::Seed(uint64_t seed) {
  state_[0] = static_cast<uint32_t>(seed & 0xffffffffu);
  for (int i = 1; i < kStateWords; ++i) {
    uint32_t prev = state_[i - 1];
    state_[i] = 1812433253u * (prev ^ (prev >> 30)) + static_cast<uint32_t>(i);
  }
  index_ = kStateWords;
}

void Mt19937::Twist() {
  for (int i = 0; i < kStateWords; ++i) {
    uint32_t y = (state_[i] & kUpperMask) | (state_[(i + 1) % kStateWords] & kLowerMask);
    uint32_t next = state_[(i + kShift) % kStateWords] ^ (y >> 1);
    if (y & 1u) next ^= kMatrixA;
    state_[i] = next;
  }
  index_ = 0;
}

void Mt19937::Discard(uint64_t count) {
  while (count > 0) {
    if (index_ >= kStateWords) Twist();
    uint64_t available = static_cast<uint64_t>(kStateWords - index_);
    uint64_t step = count < available ? count : available;
    index_ += static_cast<int>(step);
    count -= step;
  }
}

}  // namespace clairfs
