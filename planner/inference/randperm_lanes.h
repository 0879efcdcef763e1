// RandpermLandings: for Mt19937Lanes::kLanes candidate streams at once, how many tracked values
// the first steps of torch's randperm(n) pick, in SIMD: stage 1 of the search (plan_inference.cc)
// asks it of every seed + epoch.
//
// Step i of the forward Fisher-Yates (ShuffleTracker::RunRandpermPrefix) swaps positions i and
// z = i + draw % (n - i). While every tracked value sits at or beyond the prefix, a tracked value
// moves only to land (z holds it; it lands at i, the untracked value at i takes its place), so
// the values that land in the first P steps are the distinct tracked positions among z_0..z_P-1.
// Count returns that many picks with repeats counted: never fewer than ShuffleTracker's landings,
// and equal unless two steps pick the same tracked position, so a caller that needs at least h
// landings drops a lane with Count < h and confirms the others with ShuffleTracker.
//
// The modulo runs on 16 lanes as floats (q = (draw / 2) * (2 / d) is within 1 of draw / d when
// d >= 2^16, then corrected exactly), which holds while Usable(prefix): n - prefix >= 2^16,
// n < 2^30, and no tracked value below the prefix. Otherwise the caller uses ShuffleTracker.
//
// Thread-safety: Count is const (one instance may serve several threads). No errors.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/inference/mt19937_lanes.h"

namespace clairfs {

class RandpermLandings {
 public:
  static constexpr int kLanes = Mt19937Lanes::kLanes;

  // `tracked`: values (= their starting positions) to watch, each < n; `prefix`: the steps
  // Count covers.
  RandpermLandings(uint32_t n, const std::vector<uint32_t>& tracked, uint32_t prefix);

  // Whether Count is exact for this n, prefix and tracked set (see above).
  bool usable() const { return usable_; }

  // `draws`: prefix rows of kLanes words, as Mt19937Lanes::Generate writes them. counts[l]: the
  // steps of lane l that pick a tracked position. Only when usable().
  void Count(const uint32_t* draws, uint32_t (&counts)[kLanes]) const;

 private:
  uint32_t n_;
  uint32_t prefix_;
  bool usable_ = false;
  std::vector<uint32_t> bitmap_;    // bit v: v is tracked (n bits)
  std::vector<float> inverse_two_;  // 2 / (n - i), for step i < prefix
};

}  // namespace clairfs
