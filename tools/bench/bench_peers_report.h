// Reporting for `clairfs bench peers`, over the result object the measurement builds: the target
// ratios of issue 19 and the text table.
//
// Result object (what cmd_bench_peers.cc produces): top-level fields describe the run (files,
// dataset_bytes, nodes, epochs, threads, cache_percent, capacity_bytes, open_latency_ms,
// bandwidth_mbps, work_ms, seed, load averages); "modes" is an array of {"mode": "baseline" or
// "peers", "phases": [...], "job": {...}, "steady_seconds", "peer_report": [...]}. Each phase is
// one row of the table: "setup" (mounts, and with peers the agents' start until all attached),
// the epochs "1".."E" (the readers' wall time, from their common start to the last node's last
// file) and "end" (after the last epoch's reads until staging is idle and the agents have exited).
// A phase has: seconds, pfs_bytes and pfs_opens (deltas of the emulator's counters over the
// phase), bytes_read and bytes_verified and bytes_expected (readers), bytes_from_local,
// bytes_from_peers, bytes_from_pfs (the daemons' read counters: reads served from copies this node
// staged from the PFS, from copies pulled from peers, and from the PFS on a miss), hits, misses,
// cpu {daemons, agents, readers, total} in CPU-seconds. "job" sums every phase.
//
// Thread-safety: pure functions of their arguments. Errors: none (missing modes give null targets).
#pragma once

#include <nlohmann/json.hpp>

namespace clairfs {

// The targets, each null when a mode it needs was not run: "pfs_from_epoch2" (peers: PFS bytes of
// each epoch >= 2 in percent of the dataset, the largest; target <= 5), "pfs_job" (peers: PFS
// bytes over all phases / dataset bytes; target <= 1.15; the baseline's beside it),
// "steady_speedup" (baseline steady epoch time / peers'; target >= 2), "verified" (every byte read
// was checked; target: all). Each has "met".
nlohmann::json PeersTargets(const nlohmann::json& result);

// Prints the table and the targets on stdout.
void PrintPeersTable(const nlohmann::json& result);

}  // namespace clairfs
