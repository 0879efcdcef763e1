// EpochReads: one epoch of a job's global plan as the cluster simulator reads it: which file each
// rank reads at each step, and when a node reads a file next, for every node at once.
//
// Time is node time: the step p of an epoch with base b gives rank r (on node r / G, G ranks per
// node) the time b + p * G + r % G, so each node's reads are numbered as the single-node
// simulator numbers them (for each position, each served rank). Per file the epoch keeps the
// slot (p * world + r) of its first read, 4 bytes, and the few repeated reads (DistributedSampler
// pads an epoch with its first samples) in a side table; the order itself is the plan's shared
// EpochOrder. Memory: about 8 bytes per sample for any number of nodes.
//
// Thread-safety: immutable after Build; share it freely. Errors: the plan's (EINVAL epoch),
// EOVERFLOW when steps x world does not fit 32 bits.
#pragma once

#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

#include "planner/base/status.h"
#include "planner/epoch_order.h"
#include "planner/plan.h"

namespace clairfs {

inline constexpr uint64_t kNeverRead = UINT64_MAX;

class EpochReads {
 public:
  // The epoch `epoch` of `plan` (every rank of its world) over `num_files` files, starting at
  // node time `base`.
  static Result<std::shared_ptr<const EpochReads>> Build(Plan* plan, uint64_t epoch,
                                                         uint64_t num_files,
                                                         uint32_t ranks_per_node, uint64_t base);

  uint64_t epoch() const { return epoch_; }
  // Steps of the epoch: the longest rank's reads.
  uint64_t steps() const { return steps_; }
  uint64_t base() const { return base_; }
  // One past the node time of the epoch's last step.
  uint64_t end() const { return base_ + steps_ * ranks_per_node_; }
  const EpochOrder& order() const { return *order_; }
  // The file rank `rank` reads at `step`, or kNeverRead past the rank's end or for a file out of
  // range.
  uint64_t FileAt(uint32_t rank, uint64_t step) const;
  // The file node `node` reads at node time `time` (base <= time < end), or kNeverRead.
  uint64_t NodeFileAt(uint32_t node, uint64_t time) const;
  // The earliest node time >= `from` at which `node` reads `file` in this epoch, or kNeverRead.
  uint64_t NodeReadAtOrAfter(uint32_t node, uint32_t file, uint64_t from) const;
  uint64_t MemoryBytes() const;

 private:
  EpochReads() = default;
  uint64_t TimeOfSlot(uint64_t slot) const;

  uint64_t epoch_ = 0;
  uint64_t steps_ = 0;
  uint64_t base_ = 0;
  uint64_t num_files_ = 0;
  uint32_t world_ = 1;
  uint32_t ranks_per_node_ = 1;
  std::shared_ptr<const EpochOrder> order_;
  std::vector<uint32_t> first_slot_;                     // file -> slot of its first read
  std::unordered_multimap<uint32_t, uint32_t> repeats_;  // file -> slots of later reads
};

}  // namespace clairfs
