// SimulateCompare: the cluster simulator's answers beside live `clairfs bench peers --json` runs
// of the same job (issue 20's calibration: PFS bytes, hit ratios and epoch times within 10%).
//
// The bench's modes map onto placements (baseline -> none, peers -> clairfs) and its epochs 1..E
// onto the simulated epochs in order; its setup and end phases are not compared (the model's
// setup, --setup-s, has no reads). PFS bytes are compared as shares of each side's dataset (the
// bench counts file bytes, the model 4 KiB blocks). With several runs of the bench, each figure is
// compared with the runs' median (the middle one; the mean of the two middle ones for an even
// count), and their lowest and highest are kept as the live spread. A row is within tolerance when
// the model's figure is within `tolerance` (relative) of the median; a median of 0 needs a model 0.
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
  std::string placement;     // none or clairfs
  uint64_t epoch = 0;        // the bench's (1-based)
  std::string what;          // "pfs_share", "hit_ratio", "time_s"
  double measured = 0;       // the median over the runs
  double measured_low = 0;   // the lowest of the runs
  double measured_high = 0;  // the highest of the runs
  double model = 0;
  bool within = false;
};

// The middle of `values` (the mean of the two middle ones for an even count); 0 for none.
double MedianOf(std::vector<double> values);

// `benches`: one or more runs of the bench (JSON). `runs`: the simulated placements (others are
// ignored); `dataset_bytes`: the model's. Checks that every bench ran `nodes` nodes over `files`
// files, that all have the same modes and epochs, and as many epochs as were simulated.
Result<std::vector<CompareRow>> CompareWithBench(const std::vector<nlohmann::json>& benches,
                                                 const std::vector<ClusterRunResult>& runs,
                                                 uint32_t nodes, uint64_t files,
                                                 uint64_t dataset_bytes, double tolerance);

// One epoch's misses of one cause, live beside the model (not judged: a diagnostic of which
// mechanism a miss of the calibration lacks).
struct CauseRow {
  std::string placement;  // none or clairfs
  uint64_t epoch = 0;     // the bench's (1-based)
  std::string cause;      // copy_in_flight, copy_queued, left_to_reader, not_staged_ahead
  double measured = 0;    // the median over the runs, summed over the nodes
  double measured_low = 0;
  double measured_high = 0;
  double model = 0;
};

// The bench's miss causes (`miss_causes` of each epoch phase, from 4cdd74b on) beside the model's
// (ClusterEpochResult::MissesByCause), for each placement and epoch that every bench run has
// them for; none for runs made before the daemons counted causes. Call after CompareWithBench
// has checked that the runs match.
std::vector<CauseRow> CompareMissCauses(const std::vector<nlohmann::json>& benches,
                                        const std::vector<ClusterRunResult>& runs);

// The median over `benches` of the measured setup phase's seconds of the bench mode that maps onto
// `placement` (peers for clairfs; baseline for none and nopfs, which have no agents to wait for);
// EINVAL if a bench lacks it.
Result<double> BenchSetupSeconds(const std::vector<nlohmann::json>& benches,
                                 ClusterPlacement placement);

}  // namespace clairfs::cli
