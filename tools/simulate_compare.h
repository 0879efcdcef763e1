// SimulateCompare: the cluster simulator's answers beside a live `clairfs bench peers --json`
// run of the same job (issue 20's calibration: PFS bytes, hit ratios and epoch times within 10%).
//
// The bench's modes map onto placements (baseline -> none, peers -> clairfs) and its epochs 1..E
// onto the simulated epochs in order; its setup and end phases have no counterpart (the model has
// no setup phase) and are left out. PFS bytes are compared as shares of each side's dataset (the
// bench counts file bytes, the model 4 KiB blocks). A row is within tolerance when the model's
// figure is within `tolerance` (relative) of the measured one; a measured 0 needs a model 0.
//
// Thread-safety: pure functions. Errors: EINVAL naming what does not match or is missing.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/base/status.h"
#include "planner/cluster/cluster_model.h"

namespace clairfs::cli {

struct CompareRow {
  std::string placement;  // none or clairfs
  uint64_t epoch = 0;     // the bench's (1-based)
  std::string what;       // "pfs_share", "hit_ratio", "time_s"
  double measured = 0;
  double model = 0;
  bool within = false;
};

// `bench`: the bench's JSON. `runs`: the simulated placements (others are ignored);
// `dataset_bytes`: the model's. Checks that the bench ran `nodes` nodes over `files` files for as
// many epochs as were simulated.
Result<std::vector<CompareRow>> CompareWithBench(const nlohmann::json& bench,
                                                 const std::vector<ClusterRunResult>& runs,
                                                 uint32_t nodes, uint64_t files,
                                                 uint64_t dataset_bytes, double tolerance);

}  // namespace clairfs::cli
