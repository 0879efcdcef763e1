// Shared plumbing for the `clairfs` subcommands: exit codes, common options, output helpers.
//
// Each subcommand lives in its own tools/cmd_*.cc file and exposes one Register* function that
// adds itself to the CLI11 app (see commands.cc for the table). A subcommand's callback returns
// its exit code through SetExitCode(). Exit codes: 0 done, 1 operation failed, 2 usage error.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "planner/base/status.h"

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

// "list:FILE" with FILE made absolute against the current directory: a daemon reads it from "/",
// where a relative FILE would name another file. Other specs as given.
std::string WithAbsoluteListFile(const std::string& spec);

// A transform for integer options (`->transform(Count(1, 1024))`): a plain decimal number from
// `min` to `max`, else a usage error naming the flag. CLI11 alone takes "-1" for an unsigned
// option as 18446744073709551615 and "010" as 8; this hands it the canonical decimal.
CLI::Validator Count(uint64_t min, uint64_t max);

// Where argv (as main gets it) names a command that is not there: the group that lacks it
// ("clairfs", "clairfs plan") and the name. Options of the groups on the way are skipped with
// their values; parsing stops at the first command that has no subcommands. Empty if every
// command named exists (or none is named).
struct UnknownCommand {
  CLI::App* group = nullptr;
  std::string path;  // "clairfs plan"
  std::string name;  // what was typed
};
std::optional<UnknownCommand> FindUnknownCommand(CLI::App* app, int argc, const char* const* argv);
// Prints "<path>: unknown command '<name>'" and the group's commands on stderr; returns
// kExitUsage.
int ReportUnknownCommand(const UnknownCommand& unknown);

}  // namespace clairfs::cli
