// EpochOrder: the immutable sample order of one epoch, for every rank of the plan.
//
// Two shapes cover every sampler:
//   - Strided (DistributedSampler and every single-rank sampler): a global order of the N
//     samples (a permutation, or the identity when not shuffled) is padded by wrapping around
//     to world * per_rank positions (drop_last keeps only the first world * per_rank), and rank k
//     reads positions k, k + world, k + 2 * world, ... Only the global order is stored, once per
//     epoch, whatever the number of ranks: 4 bytes per sample while N < 2^32, nothing for the
//     identity.
//   - Explicit (list: plans): one stored sequence per rank.
// Values are sample indices; map them to paths with a Layout (or a list plan's own table).
//
// Thread-safety: immutable after construction; share it across threads through shared_ptr.
// Callers check rank bounds (Plan does); At() with a bad rank or position is a programming error.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "planner/index_vector.h"

namespace clairfs {

class EpochOrder {
 public:
  // `global` holds the N-sample order, or is empty with `identity` true for 0..N-1.
  static std::shared_ptr<const EpochOrder> Strided(uint64_t epoch, IndexVector global,
                                                   bool identity, uint64_t num_samples,
                                                   uint32_t world, uint64_t per_rank);
  static std::shared_ptr<const EpochOrder> Explicit(uint64_t epoch,
                                                    std::vector<IndexVector> per_rank);

  uint64_t epoch() const { return epoch_; }
  uint32_t world() const { return world_; }
  // Number of samples rank `rank` reads this epoch.
  uint64_t RankSize(uint32_t rank) const;
  // The sample index rank `rank` reads at `position` (0-based) this epoch.
  uint64_t At(uint32_t rank, uint64_t position) const;
  // The first min(limit, RankSize) indices of `rank`.
  std::vector<uint64_t> RankIndices(uint32_t rank, uint64_t limit = UINT64_MAX) const;
  // Bytes held for this epoch's order.
  uint64_t MemoryBytes() const;

 private:
  EpochOrder() = default;
  uint64_t epoch_ = 0;
  uint32_t world_ = 1;
  // Strided shape.
  IndexVector global_;
  bool identity_ = false;
  uint64_t num_samples_ = 0;
  uint64_t per_rank_ = 0;
  // Explicit shape (used when non-empty).
  bool explicit_ = false;
  std::vector<IndexVector> per_rank_orders_;
};

}  // namespace clairfs
