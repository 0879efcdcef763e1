// Belady's demand-MIN (see belady.h).
#include "planner/belady.h"

#include <functional>
#include <limits>
#include <set>
#include <string>
#include <utility>

namespace clairfs {

Result<std::vector<uint8_t>> SimulateBeladyHits(const std::vector<uint32_t>& trace,
                                                const std::vector<uint64_t>& sizes,
                                                uint64_t capacity_bytes) {
  constexpr uint64_t kNever = std::numeric_limits<uint64_t>::max();
  for (uint32_t id : trace) {
    if (id >= sizes.size()) {
      return Status::Invalid("Belady trace: file id " + std::to_string(id) + " has no size (" +
                             std::to_string(sizes.size()) + " sizes)");
    }
  }
  // next_use[i]: the position of the next access of trace[i]'s file after i, or kNever.
  std::vector<uint64_t> next_use(trace.size(), kNever);
  std::vector<uint64_t> last_seen(sizes.size(), kNever);
  for (uint64_t i = trace.size(); i-- > 0;) {
    next_use[i] = last_seen[trace[i]];
    last_seen[trace[i]] = i;
  }
  // Cached files ordered by their next use, farthest first; cached_key[f] is f's key while
  // in_cache[f].
  std::set<std::pair<uint64_t, uint32_t>, std::greater<>> by_next_use;
  std::vector<uint64_t> cached_key(sizes.size(), 0);
  std::vector<uint8_t> in_cache(sizes.size(), 0);
  uint64_t used = 0;
  std::vector<uint8_t> hits(trace.size(), 0);
  for (uint64_t i = 0; i < trace.size(); ++i) {
    const uint32_t f = trace[i];
    if (in_cache[f]) {
      hits[i] = 1;
      by_next_use.erase({cached_key[f], f});
      cached_key[f] = next_use[i];
      by_next_use.insert({cached_key[f], f});
      continue;
    }
    if (sizes[f] > capacity_bytes) continue;
    while (used + sizes[f] > capacity_bytes) {
      auto victim = by_next_use.begin();
      used -= sizes[victim->second];
      in_cache[victim->second] = 0;
      by_next_use.erase(victim);
    }
    in_cache[f] = 1;
    used += sizes[f];
    cached_key[f] = next_use[i];
    by_next_use.insert({cached_key[f], f});
  }
  return hits;
}

}  // namespace clairfs
