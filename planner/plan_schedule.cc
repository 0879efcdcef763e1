// PlanSchedule and BuildEpochUses (see plan_schedule.h).
#include "planner/plan_schedule.h"

#include <algorithm>

namespace clairfs {

uint64_t EpochUses::MemoryBytes() const {
  return offsets.capacity() * sizeof(uint32_t) + slots.capacity() * sizeof(uint32_t) +
         (order ? order->MemoryBytes() : 0);
}

uint64_t EpochUses::FileAt(uint32_t rank, uint64_t position) const {
  if (position >= order->RankSize(rank)) return UINT64_MAX;
  return order->At(rank, position);
}

uint64_t EpochUses::FirstUseAtOrAfter(uint32_t file, uint64_t from) const {
  if (file + 1 >= offsets.size()) return kNoPlannedUse;
  auto begin = slots.begin() + offsets[file];
  auto end = slots.begin() + offsets[file + 1];
  // Slots ascend with the position, so the first slot whose position is >= from is found by
  // searching for the first slot >= from * ranks.
  const uint64_t key = from * ranks;
  if (key > UINT32_MAX) return kNoPlannedUse;
  auto it = std::lower_bound(begin, end, static_cast<uint32_t>(key));
  if (it == end) return kNoPlannedUse;
  return *it / ranks;
}

Result<std::shared_ptr<const EpochUses>> BuildEpochUses(Plan* plan, uint64_t epoch,
                                                        uint64_t num_files) {
  auto order = plan->Epoch(epoch);
  if (!order.ok()) return order.status();
  auto uses = std::make_shared<EpochUses>();
  uses->epoch = epoch;
  uses->first_rank = plan->first_rank();
  uses->ranks = plan->last_rank() - plan->first_rank() + 1;
  uses->order = *order;
  const EpochOrder& o = **order;
  for (uint32_t r = 0; r < uses->ranks; ++r) {
    uses->rank_length = std::max(uses->rank_length, o.RankSize(uses->first_rank + r));
  }
  if (uses->rank_length * uses->ranks >= UINT32_MAX || num_files >= UINT32_MAX) {
    return Status::Error(EOVERFLOW, "plan epoch too large for 32-bit use slots");
  }
  // Counting sort by file: count, prefix sums, then fill in slot order (ascending per file).
  uses->offsets.assign(num_files + 1, 0);
  for (uint64_t p = 0; p < uses->rank_length; ++p) {
    for (uint32_t r = 0; r < uses->ranks; ++r) {
      uint64_t f = uses->FileAt(uses->first_rank + r, p);
      if (f < num_files) ++uses->offsets[f + 1];
    }
  }
  for (uint64_t f = 0; f < num_files; ++f) uses->offsets[f + 1] += uses->offsets[f];
  uses->slots.resize(uses->offsets[num_files]);
  std::vector<uint32_t> fill(uses->offsets.begin(), uses->offsets.end() - 1);
  for (uint64_t p = 0; p < uses->rank_length; ++p) {
    for (uint32_t r = 0; r < uses->ranks; ++r) {
      uint64_t f = uses->FileAt(uses->first_rank + r, p);
      if (f < num_files) uses->slots[fill[f]++] = static_cast<uint32_t>(p * uses->ranks + r);
    }
  }
  return std::shared_ptr<const EpochUses>(std::move(uses));
}

PlanSchedule::PlanSchedule(std::shared_ptr<const EpochUses> current,
                           std::shared_ptr<const EpochUses> next)
    : current_(std::move(current)), next_(std::move(next)) {
  next_base_ = current_->rank_length + 1;
}

uint64_t PlanSchedule::NextUse(uint32_t file, uint64_t from) const {
  if (from < next_base_) {
    uint64_t p = current_->FirstUseAtOrAfter(file, from > current_base_ ? from - current_base_ : 0);
    if (p != kNoPlannedUse) return current_base_ + p;
  }
  if (!next_) return kNoPlannedUse;
  uint64_t p = next_->FirstUseAtOrAfter(file, from > next_base_ ? from - next_base_ : 0);
  return p == kNoPlannedUse ? kNoPlannedUse : next_base_ + p;
}

void PlanSchedule::Advance(std::shared_ptr<const EpochUses> after) {
  if (!next_) return;  // the plan has ended: stay on the last epoch
  current_base_ = next_base_;
  next_base_ = current_base_ + next_->rank_length + 1;
  current_ = std::move(next_);
  next_ = std::move(after);
}

uint64_t PlanSchedule::MemoryBytes() const {
  // The two epochs may share one EpochOrder only if the plan repeats it; count both.
  return current_->MemoryBytes() + (next_ ? next_->MemoryBytes() : 0);
}

}  // namespace clairfs
