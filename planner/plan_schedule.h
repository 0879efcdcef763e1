// PlanSchedule: the node's view of a plan for two consecutive epochs, as dense per-file arrays,
// so "when is file f needed next?" and "is file f planned near rank k's cursor?" cost a few
// array reads.
//
// Files are numbered densely (the layout's sample index, or a list plan's own path table). Time
// is the node's position in the plan: a use at position p of an epoch (every rank served reads
// its p-th sample at about the same time) has time base(epoch) + p, where each epoch's base is
// the previous one's plus its per-rank length plus one. For each loaded epoch the schedule keeps,
// per file, the sorted list of its uses as slots p * ranks + (rank - first_rank) (CSR: offsets[N +
// 1] and slots[], uint32 while the slot count fits, else the epoch is refused with EOVERFLOW).
// Memory per loaded epoch: 4 * (N + 1) + 4 * uses bytes, plus the shared EpochOrder (4 bytes per
// sample); two epochs are loaded at a time (the current and the next).
//
// Thread-safety: not thread-safe; the owner (fs/prefetch PlanTracker) locks. BuildEpochUses is a
// pure function meant to run without that lock. Errors: Status values from the Plan (EINVAL
// epoch/rank).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "planner/base/status.h"
#include "planner/epoch_order.h"
#include "planner/plan.h"

namespace clairfs {

inline constexpr uint64_t kNoPlannedUse = UINT64_MAX;

// One epoch's uses by the ranks this node serves.
struct EpochUses {
  uint64_t epoch = 0;
  uint64_t rank_length = 0;  // positions per rank (the longest rank served)
  uint32_t ranks = 1;        // ranks served
  uint32_t first_rank = 0;
  std::shared_ptr<const EpochOrder> order;
  std::vector<uint32_t> offsets;  // file f's slots are slots[offsets[f] .. offsets[f + 1])
  std::vector<uint32_t> slots;    // position * ranks + (rank - first_rank), ascending per file

  uint64_t MemoryBytes() const;
  // The file rank `rank` reads at `position`, or UINT64_MAX past the rank's end.
  uint64_t FileAt(uint32_t rank, uint64_t position) const;
  // The first position >= `from` at which any served rank reads `file`, or kNoPlannedUse.
  uint64_t FirstUseAtOrAfter(uint32_t file, uint64_t from) const;
};

// Builds the uses of `epoch` for ranks [plan.first_rank(), plan.last_rank()] over `num_files`
// files. Sample indices >= num_files (a list plan naming paths missing from the tree) are kept out.
Result<std::shared_ptr<const EpochUses>> BuildEpochUses(Plan* plan, uint64_t epoch,
                                                        uint64_t num_files);

class PlanSchedule {
 public:
  // `current` must be loaded; `next` may be null (the plan ends after `current`).
  PlanSchedule(std::shared_ptr<const EpochUses> current, std::shared_ptr<const EpochUses> next);

  const EpochUses& current() const { return *current_; }
  const EpochUses* next() const { return next_.get(); }
  // Time of position `position` in the current epoch (next = false) or the next one.
  uint64_t TimeOf(bool next, uint64_t position) const {
    return (next ? next_base_ : current_base_) + position;
  }
  // The earliest use of `file` at or after time `from` in the loaded epochs, else kNoPlannedUse.
  uint64_t NextUse(uint32_t file, uint64_t from) const;
  // Moves to the next epoch: `next` becomes current and `after` (may be null) the next.
  void Advance(std::shared_ptr<const EpochUses> after);
  uint64_t MemoryBytes() const;

 private:
  uint64_t current_base_ = 0;
  uint64_t next_base_ = 0;
  std::shared_ptr<const EpochUses> current_;
  std::shared_ptr<const EpochUses> next_;
};

}  // namespace clairfs
