// `clairfs simulate --nodes N`: the cluster model (docs/SIMULATOR.md). `clairfs simulate`
// registers these flags and hands over here when --nodes is given; this file parses what is
// particular to a cluster, loads the dataset's sizes, runs planner/cluster for each placement and
// prints the table or JSON.
//
// Contract: reads the backing tree (walk + one stat per file) or nothing; writes only stdout (and
// a progress line on a terminal). Exit codes as `clairfs simulate`: 0 ok, 1 the tree could not be
// read, 2 bad arguments (one line naming what is wrong).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace clairfs::cli {

// The dataset and plan flags `clairfs simulate` parses for the single-node and the cluster run
// alike, as given.
struct SimulateDatasetArgs {
  std::string backing;
  uint64_t files = 0;
  std::string sizes;
  uint64_t seed = 0;
  std::string layout = "imagefolder";
  std::string layout_root;
  std::string plan;
  std::string capacity;  // the single node's; the cluster run refuses it
  uint64_t epochs = 0;
  bool json = false;
};

// What `clairfs simulate --nodes` parsed, as given; the cluster run checks and converts it.
struct ClusterSimulateArgs : SimulateDatasetArgs {
  std::string policy;  // only "plan" (or empty)
  bool heat = false;   // --heat or --stage-hot given: refused
  // The cluster's own.
  uint32_t nodes = 0;
  uint32_t ranks_per_node = 0;  // 0: world / nodes
  std::string node_capacity;
  std::string pfs_bandwidth;
  std::string pfs_open_latency = "1";
  std::string pfs_metadata_ops = "100000";
  std::string net_bandwidth = "12500";
  std::string nvme_bandwidth = "3000";
  std::string work_ms = "0";
  std::string copy_ms = "0";
  // Calibration to a live run (docs/SIMULATOR.md, "Setup, CPU and transfers").
  std::string setup_s = "0";  // seconds, or "bench": each mode's measured setup (with --compare)
  std::string mount_s = "0";  // seconds per mount, one after another, or "bench" (with --compare)
  std::string cores = "unlimited";
  std::string reader_share = "1";
  std::string open_cpu_ms = "0";
  std::string copy_cpu_ms = "0";
  std::string digest_cpu_ms = "0";
  std::string transfer_cpu_ms = "0";
  std::string transfer_ms = "0";
  uint64_t transfers_in_flight = 0;    // 0: unlimited
  std::string transfer_slot_ms = "0";  // 0: a slot is held until the copy arrives
  std::string refusal_ms = "0";        // 0: a home without a copy stages it for the asker
  std::string agent_call_ms = "0";     // 0: the agent's daemon calls take no time
  std::string leave_to_reader_ms = "0";
  std::string pfs_copy_ms = "0";  // 0: a PFS copy is there as soon as it is paid for
  bool peer_window = false;
  bool queued_wants = false;
  uint32_t reader_threads = 1;
  std::string sync = "step";  // step: lockstep, as synchronous training; epoch: as the bench
  std::string placement = "all";
  // `clairfs bench peers --json` outputs to print beside the model (their medians).
  std::vector<std::string> compare;
};

int RunSimulateCluster(const ClusterSimulateArgs& args);

}  // namespace clairfs::cli
