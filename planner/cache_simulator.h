// CacheSimulator: replays a node's planned file order against a cache of a given capacity under
// one eviction policy, without mounting, and counts per epoch hits, misses and backing-store
// bytes (what `clairfs simulate` prints to size node-local storage).
//
// Policies:
//   lru     read-through: on a miss the file is read from the backing store and cached, evicting
//           the least recently used files until it fits.
//   belady  demand-paging MIN (reference): on a miss the file is loaded and the cached files whose
//           next use is farthest are evicted until it fits; no prefetch.
//   plan    the mount's plan policy: before each access, files are prefetched in plan order up
//           to 1/8 of the capacity ahead (further only into free space), evicting only files
//           whose next use is later than the prefetched file's (files never used again first, in
//           LRU order); staging is assumed to keep up.
//           A file read while not cached is a miss served from the backing store, not cached.
//   heat    the mount's Darshan heat policy (no plan, heat imported): read-through as lru, but
//           the victims are the coldest files per byte (least recently used among equals), and a
//           missed file may only push out strictly colder ones (files without heat: other files
//           without heat, LRU); if that does not make room it is not cached. Optionally
//           `clairfs stage --hot --fit` first: hottest per byte first, each if it fits (its bytes
//           count in the first epoch's backing bytes).
// Backing bytes count every byte read from the backing store: misses and prefetches. A file
// larger than the capacity is never cached. The trace is the node's order: for each position,
// each served rank in order.
//
// Thread-safety: pure functions. Errors: none (inputs are checked by the caller).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clairfs {

enum class SimPolicy { kLru, kBelady, kPlan };
const char* SimPolicyName(SimPolicy policy);

struct SimEpochResult {
  uint64_t epoch = 0;
  uint64_t accesses = 0;
  uint64_t hits = 0;
  uint64_t misses = 0;
  uint64_t backing_bytes = 0;  // bytes read from the backing store during this epoch
};

struct SimTrace {
  std::vector<uint64_t> epochs;                 // absolute epoch numbers
  std::vector<std::vector<uint32_t>> accesses;  // per epoch, file indices in node order
};

// Replays `trace` over files of `sizes` (bytes, indexed by file) with `capacity` bytes.
std::vector<SimEpochResult> SimulateCache(const SimTrace& trace, const std::vector<uint64_t>& sizes,
                                          uint64_t capacity, SimPolicy policy);

// The heat policy's inputs: heat per byte by file index (missing or 0: no heat).
struct SimHeat {
  std::vector<double> heat_per_byte;
  bool stage_hot = false;  // `clairfs stage --hot --fit` before the first epoch
};
std::vector<SimEpochResult> SimulateHeatCache(const SimTrace& trace,
                                              const std::vector<uint64_t>& sizes, uint64_t capacity,
                                              const SimHeat& heat);

}  // namespace clairfs
