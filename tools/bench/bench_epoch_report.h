// Reporting for `clairfs bench epoch`, over the result object the measurement builds: the ratios
// the issues' targets are about, the invariants `--quick` checks, the text table, the CSV and the
// gnuplot chart.
//
// Result object (what cmd_bench_epoch.cc produces): top-level fields describe the run (files,
// epochs, threads, work_ms, open_latency_ms, bandwidth_mbps, ...); "configs" is an array of
// configurations with "name", "policy" ("pfs-direct", "lru", "plan", "heat", "local-direct"),
// "implemented", "capacity_percent" (null for direct reads) and, when implemented, "epochs" (per
// epoch: seconds, bytes, bytes_expected, hits, misses, hit_ratio, backing_bytes and, for clairfs,
// belady_hits / belady_hit_ratio of demand-MIN on the recorded trace, used_bytes and the mount's
// eviction policy) plus totals "hits", "belady_hits", "accesses", "capacity_bytes" and the
// steady-state medians "steady_seconds", "steady_hit_ratio", "steady_belady_hit_ratio". Steady =
// epochs >= 2 (all epochs if there is only one). Heat configurations also carry "prolog": what
// the `darshan import` + `stage --hot --fit --wait` before epoch 1 did (import_seconds,
// stage_seconds, heat_files, heat_logs, files_staged, bytes_staged, used_bytes, eviction); its
// staging is not in epoch 1's figures.
//
// Thread-safety: pure functions of their arguments (the writers touch only the named files).
// Errors: the writers return EIO naming the file, or gnuplot's error.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "planner/base/status.h"

namespace clairfs {

// The target ratios (issues #3 and #5), each null when a configuration it needs was not run:
// "plan_vs_min_50" (plan hit ratio minus MIN's on the plan run's recorded trace at a 50% cache,
// in points, over all epochs and steady; target >= -1), "lru_over_plan_50" (steady epoch time
// LRU / plan at 50%; target >= 1.5), "plan_backing_from_epoch2" (per plan cache >= 100%: bytes
// from the backing store in epochs >= 2; target 0), "pfs_over_plan_150" (steady epoch time PFS
// directly / plan at 150%; target >= 5) and "plan_over_local_150" (plan / local disk at 150%;
// target <= 2, or <= 1.1 with per-sample work). Each has "met".
nlohmann::json EpochTargets(const nlohmann::json& result);

// Invariants that hold whatever the machine's speed (never timings), as an array of {"check",
// "ok", "detail"}: every byte expected was read; no clairfs configuration used more than its
// capacity; no backing-store bytes from epoch 2 at a 150% cache (LRU, plan and heat); plan hits
// >= LRU hits at 50%; LRU hits <= MIN hits; the plan was never dropped; every heat mount had the
// imported heat and evicted by it; with world 1 (every epoch reads every file, so the LRU run's
// logs give every file heat), the heat prolog at 150% staged every file and epoch 1 read nothing
// from the backing store. Checks whose configurations were not run are left out.
nlohmann::json EpochInvariants(const nlohmann::json& result);

// Prints the table, the targets and (if present in `result`) the invariants on stdout.
void PrintEpochTable(const nlohmann::json& result);

// One CSV row per implemented configuration and epoch (bytes_staged_untimed: staged after the
// readers finished the epoch, before the remount; 0 for direct reads).
Status WriteEpochCsv(const nlohmann::json& result, const std::string& path);

// Writes BASE.dat (epoch time per implemented configuration) and BASE.gp, then runs gnuplot to
// render `png` (BASE = `png` without its .png suffix).
Status WriteEpochChart(const nlohmann::json& result, const std::string& png);

}  // namespace clairfs
