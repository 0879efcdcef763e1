// EpochReads (see epoch_reads.h).
#include "planner/cluster/epoch_reads.h"

#include <algorithm>

namespace clairfs {
namespace {

constexpr uint32_t kNoSlot = UINT32_MAX;

}  // namespace

Result<std::shared_ptr<const EpochReads>> EpochReads::Build(Plan* plan, uint64_t epoch,
                                                            uint64_t num_files,
                                                            uint32_t ranks_per_node,
                                                            uint64_t base) {
  auto order = plan->Epoch(epoch);
  if (!order.ok()) return order.status();
  std::shared_ptr<EpochReads> reads(new EpochReads());
  reads->epoch_ = epoch;
  reads->base_ = base;
  reads->num_files_ = num_files;
  reads->world_ = (*order)->world();
  reads->ranks_per_node_ = ranks_per_node;
  reads->order_ = *order;
  const EpochOrder& o = **order;
  for (uint32_t r = 0; r < reads->world_; ++r)
    reads->steps_ = std::max(reads->steps_, o.RankSize(r));
  if (reads->steps_ * reads->world_ >= kNoSlot || num_files >= kNoSlot) {
    return Status::Error(EOVERFLOW,
                         "epoch " + std::to_string(epoch) + " too large for 32-bit read slots");
  }
  reads->first_slot_.assign(num_files, kNoSlot);
  for (uint64_t p = 0; p < reads->steps_; ++p) {
    for (uint32_t r = 0; r < reads->world_; ++r) {
      if (p >= o.RankSize(r)) continue;
      const uint64_t f = o.At(r, p);
      if (f >= num_files) continue;
      const auto slot = static_cast<uint32_t>(p * reads->world_ + r);
      if (reads->first_slot_[f] == kNoSlot) {
        reads->first_slot_[f] = slot;
      } else {
        reads->repeats_.emplace(static_cast<uint32_t>(f), slot);
      }
    }
  }
  return std::shared_ptr<const EpochReads>(std::move(reads));
}

uint64_t EpochReads::FileAt(uint32_t rank, uint64_t step) const {
  if (step >= order_->RankSize(rank)) return kNeverRead;
  const uint64_t f = order_->At(rank, step);
  return f < num_files_ ? f : kNeverRead;
}

uint64_t EpochReads::NodeFileAt(uint32_t node, uint64_t time) const {
  const uint64_t offset = time - base_;
  return FileAt(node * ranks_per_node_ + static_cast<uint32_t>(offset % ranks_per_node_),
                offset / ranks_per_node_);
}

uint64_t EpochReads::TimeOfSlot(uint64_t slot) const {
  return base_ + slot / world_ * ranks_per_node_ + slot % world_ % ranks_per_node_;
}

uint64_t EpochReads::NodeReadAtOrAfter(uint32_t node, uint32_t file, uint64_t from) const {
  const uint32_t first = file < first_slot_.size() ? first_slot_[file] : kNoSlot;
  if (first == kNoSlot) return kNeverRead;
  uint64_t best = kNeverRead;
  auto consider = [&](uint32_t slot) {
    if (slot % world_ / ranks_per_node_ != node) return;
    const uint64_t time = TimeOfSlot(slot);
    if (time >= from) best = std::min(best, time);
  };
  consider(first);
  if (!repeats_.empty()) {
    auto [begin, end] = repeats_.equal_range(file);
    for (auto it = begin; it != end; ++it) consider(it->second);
  }
  return best;
}

uint64_t EpochReads::MemoryBytes() const {
  return first_slot_.capacity() * sizeof(uint32_t) + repeats_.size() * 32 + order_->MemoryBytes();
}

}  // namespace clairfs
