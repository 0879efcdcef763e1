// The table of `clairfs` subcommands. Each entry's function adds one subcommand (and its own
// nested subcommands) to the app; the implementations live in tools/cmd_*.cc, and those of the
// bench instruments (RegisterBench, RegisterPfsEmu) in tools/bench/ (tools/bench/cmd_bench.h).
#pragma once

#include <CLI/CLI.hpp>

#include "tools/bench/cmd_bench.h"

namespace clairfs::cli {

using RegisterFn = void (*)(CLI::App& app);

// Register functions, one per top-level subcommand (defined in cmd_*.cc).
void RegisterMount(CLI::App& app);
void RegisterUmount(CLI::App& app);
void RegisterFsck(CLI::App& app);
void RegisterStatus(CLI::App& app);
void RegisterStats(CLI::App& app);
void RegisterDemo(CLI::App& app);
void RegisterDarshan(CLI::App& app);
void RegisterPlan(CLI::App& app);
void RegisterSimulate(CLI::App& app);
// `plan set` / `plan clear` (cmd_plan_live.cc), children of `plan`.
void RegisterPlanLive(CLI::App* plan);
// `plan detect` (cmd_plan_detect.cc): the plan a recorded trace of opens follows.
void RegisterPlanDetect(CLI::App* plan);
void RegisterStage(CLI::App& app);
void RegisterLs(CLI::App& app);
void RegisterEvict(CLI::App& app);
void RegisterPin(CLI::App& app);  // pin and unpin
void RegisterPeer(CLI::App& app);

// Adds every subcommand in the table to `app`.
void RegisterAllCommands(CLI::App& app);

}  // namespace clairfs::cli
