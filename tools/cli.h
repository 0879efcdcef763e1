// Shared plumbing for the `clairfs` subcommands: exit codes, common options, output helpers.
//
// Each subcommand lives in its own tools/cmd_*.cc file and exposes one Register* function that
// adds itself to the CLI11 app (see commands.cc for the table). A subcommand's callback returns
// its exit code through SetExitCode(). Exit codes: 0 done, 1 operation failed, 2 usage error.
#pragma once

#include <string>

#include <CLI/CLI.hpp>

#include "planner/status.h"

namespace clairfs::cli {

constexpr int kExitOk = 0;
constexpr int kExitFailed = 1;
constexpr int kExitUsage = 2;

// Adds a subcommand with `--log-level` (every subcommand has it) and help text.
CLI::App* AddCommand(CLI::App* parent, const std::string& name, const std::string& description);

void SetExitCode(int code);
int ExitCode();

// Prints "clairfs <command>: <message>" on stderr and returns kExitFailed, or kExitUsage if the
// status is EINVAL (bad input the user can fix).
int Fail(const std::string& command, const Status& status);
// Prints "clairfs <command>: <message>" on stderr and returns kExitUsage.
int UsageError(const std::string& command, const std::string& message);

// True if stderr is a terminal (progress lines are shown only then).
bool StderrIsTerminal();

}  // namespace clairfs::cli
