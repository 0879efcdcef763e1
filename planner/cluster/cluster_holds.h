// ClusterHolds: the files each node keeps for the whole job under a placement
// (docs/SIMULATOR.md, "Placements"):
//   none     nothing;
//   nopfs    NoPFS: the files the node reads most often over the job's epochs, ties broken by
//            the node's earlier first access (NoPFS's own std::sort leaves ties unspecified;
//            docs/SIMULATOR.md), while they fit the hold budget (a counting pass over every
//            epoch first; no de-duplication across nodes);
//   clairfs  the peer tier's: Placement::ByFirstReader over the first epoch (ByHash for a world
//            of one rank), each node's home files in first-read order,
//            HoldWithin the hold budget (planner/placement, as the live agent and daemon do).
// The hold budget is HoldBudget(node capacity). Sizes are the simulator's (4 KiB blocks).
//
// Memory: 4 bytes per held file, plus for clairfs the Placement (4 bytes per file) and for nopfs,
// while choosing, 4 bytes per read of the job and 8 per read of one node. Thread-safety: pure.
// Errors: the plan's, and Placement's.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "planner/base/status.h"
#include "planner/cluster/cluster_model.h"
#include "planner/placement/placement.h"
#include "planner/plan.h"

namespace clairfs {

struct ClusterHolds {
  std::vector<std::vector<uint32_t>> per_node;  // node -> the files it holds, in hold order
  std::optional<Placement> placement;           // clairfs: every file's home
};

// `plan` covers every rank of a world of nodes x ranks_per_node; `first_epoch` and `epochs` are
// the simulated ones.
Result<ClusterHolds> ChooseClusterHolds(ClusterPlacement placement, Plan* plan,
                                        uint64_t first_epoch, uint64_t epochs,
                                        const std::vector<uint64_t>& sizes,
                                        const ClusterModel& model);

}  // namespace clairfs
