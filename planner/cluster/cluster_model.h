// ClusterModel: the parameters of a simulated cluster (nodes, caches, the shared PFS, links,
// per-sample work), the placements across nodes, and the per-epoch results the cluster simulator
// reports (docs/SIMULATOR.md has the model these numbers mean).
//
// Bandwidths and rates are per second; an unlimited one is +infinity (kUnlimited). Thread-safety:
// values.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

#include "planner/base/status.h"

namespace clairfs {

inline constexpr double kUnlimited = std::numeric_limits<double>::infinity();

// Which copies the nodes keep for the whole job, and where a miss may come from.
enum class ClusterPlacement {
  kNone,     // every node alone with its own plan; misses from the PFS
  kNoPfs,    // NoPFS: each node holds its most frequently read files; misses from any holder
  kClairfs,  // the peer tier: homes by first reader (planner/placement); misses from the home
};
const char* ClusterPlacementName(ClusterPlacement placement);
// "none", "nopfs", "clairfs" (EINVAL otherwise).
Result<ClusterPlacement> ParseClusterPlacement(std::string_view text);

// How the nodes' readers keep pace with each other (docs/SIMULATOR.md, "Shape of a run").
enum class ClusterSync {
  kStep,   // every rank reads its p-th file together: synchronous training's iterations
  kEpoch,  // each node reads at its own pace; all wait for each other at an epoch's end
};
const char* ClusterSyncName(ClusterSync sync);
// "step", "epoch" (EINVAL otherwise).
Result<ClusterSync> ParseClusterSync(std::string_view text);

struct ClusterModel {
  uint32_t nodes = 1;
  uint32_t ranks_per_node = 1;           // rank r runs on node r / ranks_per_node
  uint64_t node_capacity = 0;            // bytes of copies per node (> 0)
  double pfs_bandwidth = kUnlimited;     // bytes/s over all nodes
  double pfs_open_latency = 0;           // seconds per open a reader waits for
  double pfs_metadata_ops = kUnlimited;  // opens/s over all nodes
  double net_bandwidth = kUnlimited;     // bytes/s into each node
  double nvme_bandwidth = kUnlimited;    // bytes/s of local reads per node
  double work = 0;                       // seconds of compute per sample
  double copy_time = 0;  // seconds a node's stager spends per copy it publishes, one at a time
  // Calibration to a live run (docs/SIMULATOR.md, "Setup, CPU and transfers"); each default
  // leaves the model as it was without it.
  double setup_time = 0;      // seconds the stagers run before the first read (the mounts' start)
  double mount_time = 0;      // seconds each node's mount takes, one after another, in the setup
  double cores = kUnlimited;  // CPU cores all nodes share; unlimited: CPU costs no time
  double reader_share = 1;    // of the cores, the readers' while stagers wait for CPU (0, 1]
  double open_cpu = 0;        // CPU-seconds per reader open (hit or miss), on the shared cores
  double copy_cpu = 0;        // CPU-seconds per copy staged from the PFS
  double digest_cpu = 0;      // more per PFS copy on a mount with a peer key (clairfs only)
  double transfer_cpu = 0;    // CPU-seconds per copy moved from a peer (both agents, the publish)
  double transfer_time = 0;   // seconds from asking a peer for a copy to its publish
  uint64_t transfers_in_flight = 0;  // a node's peer transfers at once; 0: unlimited
  // The live agent's wants queue (docs/SIMULATOR.md, "Setup, CPU and transfers"); 0: off.
  // Seconds a transfer holds its in-flight slot: the agent frees it when the bytes are in (the
  // live `received.ms_mean.filling`), before its daemon queues and publishes the copy, which
  // arrives transfer_time after the asking. 0: the slot is held until the copy arrives.
  double transfer_slot_time = 0;
  // clairfs: a want whose home has no copy is refused after this many seconds, holding a slot,
  // and is then staged from the PFS by the asker (the live "not from a peer"). 0: the home stages
  // the file from the PFS for the asker and keeps it, as before.
  double refusal_time = 0;
  // clairfs: seconds each of the agent's daemon calls takes, the agent making them one at a time
  // (docs/SIMULATOR.md, "The wants queue: the agent's daemon calls"). A transfer costs its asker's
  // agent 2 calls and its home's 1, a refusal 1 each: per step of S seconds an agent makes S /
  // agent_call_time calls. A free agent takes a want at once and owes its calls; one still owing
  // takes none. 0: calls take no time.
  double agent_call_time = 0;
  // Seconds from the stager starting a PFS copy to its publish (the live copy's time in flight:
  // open, read, write, fsync, rename, index entry, behind the other copies at the PFS and the
  // CPU). A reader that reaches the file first misses and reads it from the PFS while the copy
  // goes on, as the live stager's copy that loses that race does; 0: a copy is there at once.
  double pfs_copy_time = 0;
  // A PFS copy the reader would reach within this many seconds is left to the reader (the live
  // prefetcher's "twice a copy's time"); 0: none. Copies from peers are exempt (docs/PEERS.md).
  double leave_to_reader = 0;
  // Instead of a fixed leave_to_reader, each node leaves what its reader reaches within twice the
  // copy time its stager measures, as the live prefetcher does (Little's law over 50 ms samples):
  // pfs_copy_time while the node has PFS copies in flight, halved for each 50 ms with none, so a
  // node whose files come from peers leaves (almost) nothing (docs/SIMULATOR.md).
  bool leave_as_measured = false;
  // clairfs: a want the agent cannot take yet (its transfers in flight or its daemon calls are
  // spent) waits in the node's queue, in the order made, while the stager goes on to the PFS
  // copies behind it, as the live prefetcher queues its whole window and the agent takes wants as
  // it can. Off: the stager stops at such a want.
  bool queued_wants = false;
  // The live peer window (docs/PEERS.md): clairfs's copies from peers may go beyond the prefetch
  // depth, evicting copies of later use, not only into free space. Off: every copy as from the PFS.
  bool peer_window = false;
  // Files each rank's reader has in flight at once (a DataLoader's workers, the bench's reader
  // threads): the open latencies of its misses overlap, each costing latency / reader_threads.
  uint32_t reader_threads = 1;
  ClusterSync sync = ClusterSync::kStep;
};

// Checks what the simulator cannot run: no nodes or ranks, no capacity, negative or NaN
// figures. The plan's world is checked against nodes x ranks_per_node where the plan is known.
Status CheckClusterModel(const ClusterModel& model);

// One epoch of one placement, summed over the nodes.
struct ClusterEpochResult {
  uint64_t epoch = 0;           // absolute
  uint64_t reads = 0;           // opens by the readers
  uint64_t local_hits = 0;      // reads served from a copy on the reader's node
  uint64_t peer_reads = 0;      // reads served from another node's copy
  uint64_t pfs_reads = 0;       // reads served from the PFS (misses)
  uint64_t local_bytes = 0;     // bytes of local hits
  uint64_t pfs_bytes = 0;       // bytes read from the PFS: misses and staging
  uint64_t pfs_opens = 0;       // opens at the PFS: misses and staging
  uint64_t peer_bytes = 0;      // bytes moved between nodes: peer reads and staging from peers
  uint64_t staged_files = 0;    // copies staged ahead (from the PFS or a peer)
  uint64_t late_transfers = 0;  // reads that found their peer copy still in flight (misses)
  uint64_t late_copies = 0;     // reads that found their PFS copy still in flight (misses)
  uint64_t refused_wants = 0;   // wants the home had no copy for (model.refusal_time only)
  // Misses by cause, as a live mount's status counts them (docs/ADMIN.md, "Why opens miss"):
  // late_transfers, late_copies and unrefused_wants are its copy_in_flight, left_to_reader its
  // left_to_reader, staging_behind (the stager had not reached the file, out of credit, where a
  // live one would have its copy queued) its copy_queued; the rest are not_staged_ahead.
  uint64_t left_to_reader = 0;
  uint64_t staging_behind = 0;
  uint64_t unrefused_wants = 0;  // reads that found their want not refused yet (copy_in_flight)
  double time = 0;               // seconds: the sum of the epoch's steps
  double stall = 0;              // seconds the readers waited beyond the per-sample work

  // The local misses by cause, in a live status's terms (see the fields above).
  struct MissCauses {
    uint64_t copy_in_flight = 0;
    uint64_t copy_queued = 0;
    uint64_t left_to_reader = 0;
    uint64_t not_staged_ahead = 0;
  };
  MissCauses MissesByCause() const {
    MissCauses c;
    c.copy_in_flight = late_transfers + late_copies + unrefused_wants;
    c.copy_queued = staging_behind;
    c.left_to_reader = left_to_reader;
    const uint64_t misses = reads - local_hits;
    const uint64_t known = c.copy_in_flight + c.copy_queued + c.left_to_reader;
    c.not_staged_ahead = misses > known ? misses - known : 0;
    return c;
  }
  double LocalHitRatio() const {
    return reads ? static_cast<double>(local_hits) / static_cast<double>(reads) : 0.0;
  }
};

struct ClusterRunResult {
  ClusterPlacement placement = ClusterPlacement::kNone;
  ClusterEpochResult setup;  // the staging before the first read (model.setup_time; no reads)
  std::vector<ClusterEpochResult> epochs;
  uint64_t held_files = 0;  // files the nodes chose to hold (over all nodes)
  uint64_t held_bytes = 0;
  uint64_t max_node_bytes = 0;        // the most bytes of copies any node had at any moment
  uint64_t files_with_held_copy = 0;  // distinct files some node held a copy of at the end
  uint64_t held_copies_at_end = 0;    // held files whose copy is on their node at the end

  ClusterEpochResult Total() const;
};

}  // namespace clairfs
