// ShuffleTracker: where chosen values end up in a shuffle, without building the permutation.
//
// The matcher needs the positions of a few observed samples under many candidate permutations.
// Both shuffles the planner reproduces move one pair of positions per step, so following only the
// tracked values costs two bit tests per step (a bitmap of the positions that hold a tracked value,
// n bits: 160 KB for 1.28M samples, which stays in cache) instead of a write into an n-word array:
//
//   - torch's legacy randperm (torch_randperm.h) is a forward Fisher-Yates: step i swaps
//     positions i and z = i + random() % (n - i), after which position i is final. The first P
//     positions need exactly P draws: RunRandpermPrefix reports each tracked value that lands at
//     a position < P. The modulo uses precomputed multipliers (Lemire's fastmod), not a divide.
//   - NumPy's shuffle runs from the end (i = n-1 down to 1, j = random_interval(i)), so position 0
//     is final only after the last draw: every candidate costs all n-1 intervals (about 1.4
//     32-bit draws each, masked rejection), RunNumpyShuffle, which reports every tracked value.
//
// Values and n must be below 2^32 (the caller refuses larger datasets). Thread-safety: one thread
// at a time per instance. No errors.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "planner/numpy_random.h"

namespace clairfs {

class ShuffleTracker {
 public:
  explicit ShuffleTracker(uint32_t n);

  uint32_t n() const { return n_; }
  // The values to follow (each < n, duplicates ignored); replaces the earlier set.
  void Track(const std::vector<uint32_t>& values);
  const std::vector<uint32_t>& tracked() const { return values_; }

  // torch legacy randperm(n): runs steps 0 .. prefix-1 (prefix <= n) with `draw()` giving each
  // step's 32-bit random(), and calls landed(position, value) for each tracked value that lands
  // at a position < prefix, in position order.
  template <typename Draw, typename Landed>
  void RunRandpermPrefix(uint32_t prefix, Draw&& draw, Landed&& landed);

  // NumPy's permutation(n) with `bitgen` (NumpyRandomState or Pcg64): calls landed(position,
  // value) for every tracked value, in the order they settle (from the end). Stops early, and
  // returns false, once more than `most_far` tracked values have settled at positions >=
  // `far_from` (a candidate that cannot explain the opens any more); else returns true.
  template <typename BitGen, typename Landed>
  bool RunNumpyShuffle(BitGen& bitgen, Landed&& landed, uint32_t far_from = UINT32_MAX,
                       uint64_t most_far = UINT64_MAX);

 private:
  bool Holds(uint32_t position) const { return (bits_[position >> 6] >> (position & 63)) & 1u; }
  void Set(uint32_t position) { bits_[position >> 6] |= uint64_t{1} << (position & 63); }
  void Clear(uint32_t position) { bits_[position >> 6] &= ~(uint64_t{1} << (position & 63)); }
  // Index in live_ of the tracked value now at `position` (which Holds).
  size_t Find(uint32_t position) const;
  // The smallest position >= from that holds a tracked value (UINT32_MAX if none).
  uint32_t NextHeld(uint32_t from) const;
  // Before a run: puts every tracked value back at its own position if the last run moved any.
  void Reset();
  void GrowMultipliers(uint32_t prefix);

  uint32_t n_;
  std::vector<uint64_t> bits_;
  std::vector<uint32_t> values_;
  std::vector<std::pair<uint32_t, uint32_t>> live_;  // (position, value) of tracked values
  bool dirty_ = false;
  std::vector<uint64_t> multipliers_;  // fastmod multiplier of n - i, for i < size()
};

// a % d for 32-bit a and d >= 1, with m = UINT64_MAX / d + 1 (Lemire, Kaser and Kurz 2019).
inline uint32_t FastMod32(uint32_t a, uint64_t m, uint32_t d) {
  uint64_t low = m * a;
  return static_cast<uint32_t>((static_cast<unsigned __int128>(low) * d) >> 64);
}

template <typename Draw, typename Landed>
void ShuffleTracker::RunRandpermPrefix(uint32_t prefix, Draw&& draw, Landed&& landed) {
  Reset();
  if (prefix > n_) prefix = n_;
  GrowMultipliers(prefix);
  // torch draws n-1 times: the last position is final without a draw.
  const uint32_t steps = prefix < n_ ? prefix : n_ - 1;
  const uint64_t* m = multipliers_.data();
  // Position i holds a tracked value only at the smallest live position; checking that with one
  // compare instead of a bit test keeps the common step to a multiply, a bit test and a branch.
  uint32_t next_held = NextHeld(0);
  for (uint32_t i = 0; i < steps; ++i) {
    const uint32_t d = n_ - i;
    const uint32_t z = i + FastMod32(draw(), m[i], d);
    if (Holds(z) | (i == next_held)) [[unlikely]] {
      dirty_ = true;
      if (Holds(z)) {
        size_t k = Find(z);
        landed(i, live_[k].second);
        if (z != i && i == next_held) {
          size_t u = Find(i);
          live_[u].first = z;  // the value at i moves to z
          Clear(i);
        } else {
          Clear(z);
        }
        live_[k] = live_.back();
        live_.pop_back();
      } else {
        size_t u = Find(i);
        live_[u].first = z;
        Clear(i);
        Set(z);
      }
      next_held = NextHeld(i + 1);
    }
  }
  if (steps < prefix && Holds(steps)) {  // position n-1
    dirty_ = true;
    size_t k = Find(steps);
    landed(steps, live_[k].second);
    Clear(steps);
    live_[k] = live_.back();
    live_.pop_back();
  }
}

template <typename BitGen, typename Landed>
bool ShuffleTracker::RunNumpyShuffle(BitGen& bitgen, Landed&& landed, uint32_t far_from,
                                     uint64_t most_far) {
  Reset();
  dirty_ = true;
  uint64_t far = 0;
  for (uint32_t i = n_ > 0 ? n_ - 1 : 0; i >= 1; --i) {
    const uint32_t j = static_cast<uint32_t>(NumpyRandomInterval(bitgen, i));
    const bool hi = Holds(i), hj = Holds(j);
    if (hi | hj) [[unlikely]] {
      // Position i is final after this step.
      if (hj) {
        size_t k = Find(j);
        landed(i, live_[k].second);
        if (i >= far_from && ++far > most_far) return false;
        if (j != i && hi) {
          size_t u = Find(i);
          live_[u].first = j;
          Clear(i);
        } else {
          Clear(j);
        }
        live_[k] = live_.back();
        live_.pop_back();
      } else {
        size_t u = Find(i);
        live_[u].first = j;
        Clear(i);
        Set(j);
      }
    }
  }
  for (const auto& [position, value] : live_) {
    landed(position, value);  // only position 0 can be left
    Clear(position);
  }
  live_.clear();
  return true;
}

}  // namespace clairfs
