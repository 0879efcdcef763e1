// SimulateCluster: replays a job's global plan over a model of a cluster (docs/SIMULATOR.md): N
// nodes, each serving ranks_per_node ranks with a cache of node_capacity bytes under the mount's
// plan policy, all sharing one PFS (bandwidth and opens per second), each with its own link and
// NVMe, under one placement across nodes. Time-stepped: each step every rank reads one file; a
// step lasts max(work, the slowest node's data time) (model.sync kStep), or each node steps on
// its own clock and the nodes meet at epoch ends (kEpoch); what readers leave of the PFS and the
// links is staging credit for the next step, so a staged copy can be late.
//
// Inputs: `plan` covers every rank of its world (no ranks=), world = nodes x ranks_per_node;
// `sizes` are bytes by file (the caller rounds them to blocks). Epochs [first_epoch, first_epoch +
// epochs) are generated one at a time (two loaded: the current and the next).
// Output: per epoch the reads by source, bytes, time and stall, summed over the nodes.
// Memory: docs/SIMULATOR.md, "Memory and time". Thread-safety: not thread-safe (the Plan's epoch
// cache); one run per Plan at a time. Errors: EINVAL for a model or plan the simulator cannot
// run (one message naming it), the plan's own errors.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "planner/base/status.h"
#include "planner/cluster/cluster_model.h"
#include "planner/plan.h"

namespace clairfs {

// EINVAL unless the plan covers every rank of a world of nodes x ranks_per_node.
Status CheckClusterPlan(const Plan& plan, const ClusterModel& model);

// Called after every step with the steps done and the steps of the run (for a progress meter).
using ClusterProgress = std::function<void(uint64_t done, uint64_t total)>;

Result<ClusterRunResult> SimulateCluster(Plan* plan, uint64_t first_epoch, uint64_t epochs,
                                         const std::vector<uint64_t>& sizes,
                                         const ClusterModel& model, ClusterPlacement placement,
                                         const ClusterProgress& progress = {});

}  // namespace clairfs
