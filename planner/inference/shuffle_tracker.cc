// ShuffleTracker: following tracked values through torch's and NumPy's shuffles (see the header).
#include "planner/inference/shuffle_tracker.h"

#include <algorithm>

namespace clairfs {

ShuffleTracker::ShuffleTracker(uint32_t n) : n_(n), bits_((uint64_t{n} + 63) / 64, 0) {}

void ShuffleTracker::Track(const std::vector<uint32_t>& values) {
  for (const auto& [position, value] : live_) Clear(position);
  live_.clear();
  values_ = values;
  std::sort(values_.begin(), values_.end());
  values_.erase(std::unique(values_.begin(), values_.end()), values_.end());
  dirty_ = true;
  Reset();
}

void ShuffleTracker::Reset() {
  if (!dirty_) return;
  for (const auto& [position, value] : live_) Clear(position);
  live_.clear();
  live_.reserve(values_.size());
  for (uint32_t v : values_) {
    live_.emplace_back(v, v);
    Set(v);
  }
  dirty_ = false;
}

size_t ShuffleTracker::Find(uint32_t position) const {
  for (size_t k = 0; k < live_.size(); ++k) {
    if (live_[k].first == position) return k;
  }
  return live_.size();  // unreachable while bits_ and live_ agree
}

uint32_t ShuffleTracker::NextHeld(uint32_t from) const {
  uint32_t best = UINT32_MAX;
  for (const auto& [position, value] : live_) {
    if (position >= from && position < best) best = position;
  }
  return best;
}

void ShuffleTracker::GrowMultipliers(uint32_t prefix) {
  size_t have = multipliers_.size();
  if (prefix <= have) return;
  multipliers_.resize(prefix);
  for (size_t i = have; i < prefix; ++i) {
    uint64_t d = n_ - i;
    multipliers_[i] = UINT64_MAX / d + 1;
  }
}

}  // namespace clairfs
