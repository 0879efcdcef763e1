// The `clairfs bench` family: instruments that measure clairfs side by side with alternatives.
//
// RegisterBench creates the `bench` parent and calls one Register function per child below; each
// child lives in its own tools/bench/cmd_bench_*.cc file. RegisterBench and RegisterPfsEmu are the
// two entries the bench library gives the command table (tools/commands.cc). To add a child (epoch,
// smallfile, bigfile, stage, heat, soak), declare its Register function here and call it from
// cmd_bench.cc.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "planner/base/status.h"

namespace clairfs::cli {

// `clairfs bench ...` (cmd_bench.cc) and `clairfs pfs-emu` (cmd_pfs_emu.cc).
void RegisterBench(CLI::App& app);
void RegisterPfsEmu(CLI::App& app);

// `clairfs bench make-dataset`: writes a deterministic, verifiable synthetic dataset.
void RegisterBenchMakeDataset(CLI::App& bench);
// `clairfs bench verify-dataset`: checks every byte of such a dataset (e.g. through a mount).
void RegisterBenchVerifyDataset(CLI::App& bench);
// `clairfs bench pfs-emu-overhead`: the PFS emulator's own cost and its latency overlap.
void RegisterBenchPfsEmuOverhead(CLI::App& bench);
// `clairfs bench stage`: the staging engine vs cp -r and rsync -a from the emulated PFS.
void RegisterBenchStage(CLI::App& bench);
// `clairfs bench smallfile`: small staged files through a mount vs the staged copies.
void RegisterBenchSmallfile(CLI::App& bench);
// `clairfs bench bigfile`: sequential and random reads of a big staged file.
void RegisterBenchBigfile(CLI::App& bench);
// `clairfs bench passthrough`: staged files with kernel passthrough on and off vs the copies.
void RegisterBenchPassthrough(CLI::App& bench);
// `clairfs bench manifest`: daemon memory, fds, mount time and stat rate at N entries.
void RegisterBenchManifest(CLI::App& bench);
// `clairfs bench epoch`: training epochs over the emulated PFS, clairfs caches and local disk.
void RegisterBenchEpoch(CLI::App& bench);
// `clairfs bench heat`: one pass with the cache staged by heat per byte vs largest-first vs none.
void RegisterBenchHeat(CLI::App& bench);
// `clairfs bench soak`: a long verified read load (with admin churn) and the daemon's RSS and fds.
void RegisterBenchSoak(CLI::App& bench);
// `clairfs bench peers`: a multi-node job over one emulated PFS, without and with peer agents.
void RegisterBenchPeers(CLI::App& bench);
// `clairfs bench infer`: how soon a --plan auto mount adopts its reader's plan.
void RegisterBenchInfer(CLI::App& bench);

// Reports a bench's measurement the same way for every child: on failure the one-line error of
// Fail(command, measured); else `result` as one JSON line with `json`, or `print_table(result)`.
// Returns the exit code (kExitOk or Fail's).
int ReportBench(const char* command, const Status& measured, const nlohmann::json& result,
                bool json, void (*print_table)(const nlohmann::json&));

}  // namespace clairfs::cli
