// ListPlan: an explicit access order read from a file (the `list:FILE` plan spec).
//
// Format, one item per line:
//   # epoch N      starts absolute epoch N (strictly increasing; lines before the first
//                  `# epoch` line belong to epoch 0)
//   # rank K       starts rank K's order inside the current epoch; without any `# rank` line an
//                  epoch's order belongs to rank 0
//   # anything     any other line starting with '#' is a comment
//   PATH           a file relative to the backing root (no empty, '.' or '..' components, no
//                  NUL byte)
// Empty lines are ignored. A rank may appear once per epoch; ranks with no lines in an epoch
// read nothing in it. The plan's world is one more than the highest rank mentioned; ranks go up
// to kMaxListPlanRank, because every epoch keeps one (possibly empty) sequence per rank.
// Paths are numbered in order of first appearance; those numbers are the plan's sample indices
// and paths() maps them back.
//
// Errors: EINVAL with "<file>:<line>: ..." for malformed lines, duplicate epochs or ranks, paths
// before `# rank` lines in an epoch that has them, or a file without any path.
// Thread-safety: immutable after parsing.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "planner/base/status.h"
#include "planner/epoch_order.h"

namespace clairfs {

constexpr uint64_t kMaxListPlanRank = 65535;

class ListPlan {
 public:
  static Result<ListPlan> Parse(std::string_view content, std::string_view source);

  const std::vector<std::string>& paths() const { return paths_; }
  uint32_t world() const { return world_; }
  // Epoch numbers present in the file, ascending.
  std::vector<uint64_t> epochs() const;
  bool HasEpoch(uint64_t epoch) const { return epochs_.count(epoch) != 0; }
  // The order of `epoch` (which must be present) for every rank 0 .. world-1.
  std::shared_ptr<const EpochOrder> Epoch(uint64_t epoch) const;

 private:
  std::vector<std::string> paths_;
  uint32_t world_ = 1;
  std::map<uint64_t, std::map<uint32_t, std::vector<uint64_t>>> epochs_;
};

}  // namespace clairfs
