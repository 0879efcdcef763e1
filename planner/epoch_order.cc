// EpochOrder (see epoch_order.h).
#include "planner/epoch_order.h"

#include <algorithm>
#include <utility>

namespace clairfs {

std::shared_ptr<const EpochOrder> EpochOrder::Strided(uint64_t epoch, IndexVector global,
                                                      bool identity, uint64_t num_samples,
                                                      uint32_t world, uint64_t per_rank) {
  std::shared_ptr<EpochOrder> order(new EpochOrder());
  order->epoch_ = epoch;
  order->global_ = std::move(global);
  order->identity_ = identity;
  order->num_samples_ = num_samples;
  order->world_ = world;
  order->per_rank_ = per_rank;
  return order;
}

std::shared_ptr<const EpochOrder> EpochOrder::Explicit(uint64_t epoch,
                                                       std::vector<IndexVector> per_rank) {
  std::shared_ptr<EpochOrder> order(new EpochOrder());
  order->epoch_ = epoch;
  order->explicit_ = true;
  order->world_ = static_cast<uint32_t>(per_rank.size());
  order->per_rank_orders_ = std::move(per_rank);
  return order;
}

uint64_t EpochOrder::RankSize(uint32_t rank) const {
  if (explicit_) return per_rank_orders_[rank].size();
  return per_rank_;
}

uint64_t EpochOrder::At(uint32_t rank, uint64_t position) const {
  if (explicit_) return per_rank_orders_[rank][position];
  // Position in the padded global order; padding repeats the order from its start.
  uint64_t global_position = (rank + position * world_) % num_samples_;
  return identity_ ? global_position : global_[global_position];
}

std::vector<uint64_t> EpochOrder::RankIndices(uint32_t rank, uint64_t limit) const {
  uint64_t count = std::min(limit, RankSize(rank));
  std::vector<uint64_t> out;
  out.reserve(count);
  for (uint64_t i = 0; i < count; ++i) out.push_back(At(rank, i));
  return out;
}

uint64_t EpochOrder::MemoryBytes() const {
  uint64_t bytes = global_.MemoryBytes();
  for (const IndexVector& v : per_rank_orders_) bytes += v.MemoryBytes();
  return bytes;
}

}  // namespace clairfs
