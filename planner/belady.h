// Belady's demand-MIN over whole files with a byte capacity: the hit ratio an ideal cache that
// knows the future would reach on a trace, the yardstick for measured hit ratios.
//
// On each access: a cached file is a hit; otherwise the file is loaded (a miss), evicting first
// the cached files whose next use is farthest in the future (never-used-again first) until it
// fits. A file larger than the capacity is never cached. Loading is on demand only (no
// prefetch, no bypass), as in clairfs read-through.
//
// Cost: O(T log F) time and O(T + F) memory for T accesses of F distinct files.
// Thread-safety: a pure function. Errors: EINVAL for a trace id without a size.
#pragma once

#include <cstdint>
#include <vector>

#include "planner/base/status.h"

namespace clairfs {

// One entry per access of `trace` (file ids indexing `sizes`): 1 for a hit, 0 for a miss.
Result<std::vector<uint8_t>> SimulateBeladyHits(const std::vector<uint32_t>& trace,
                                                const std::vector<uint64_t>& sizes,
                                                uint64_t capacity_bytes);

}  // namespace clairfs
