// Shared CLI plumbing: --log-level on every subcommand, exit codes, error printing.
#include "tools/cli.h"

#include <unistd.h>

#include <cstdio>

#include "planner/log.h"

namespace clairfs::cli {
namespace {
int g_exit_code = kExitOk;
}  // namespace

CLI::App* AddCommand(CLI::App* parent, const std::string& name, const std::string& description) {
  CLI::App* sub = parent->add_subcommand(name, description);
  sub->add_option_function<std::string>(
         "--log-level",
         [](const std::string& value) {
           LogLevel level;
           if (!ParseLogLevel(value, &level)) {
             throw CLI::ValidationError("--log-level", "expected error, warn, info or debug");
           }
           SetLogLevel(level);
         },
         "Log verbosity on stderr: error, warn, info (default) or debug")
      ->type_name("LEVEL");
  return sub;
}

void SetExitCode(int code) { g_exit_code = code; }
int ExitCode() { return g_exit_code; }

int Fail(const std::string& command, const Status& status) {
  fprintf(stderr, "clairfs %s: %s\n", command.c_str(), status.message().c_str());
  return status.code() == EINVAL ? kExitUsage : kExitFailed;
}

int UsageError(const std::string& command, const std::string& message) {
  fprintf(stderr, "clairfs %s: %s\n", command.c_str(), message.c_str());
  return kExitUsage;
}

bool StderrIsTerminal() { return isatty(STDERR_FILENO) == 1; }

}  // namespace clairfs::cli
