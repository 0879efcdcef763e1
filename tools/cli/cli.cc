// Shared CLI plumbing: --log-level on every subcommand, exit codes, error printing.
#include "tools/cli/cli.h"

#include <limits.h>
#include <unistd.h>

#include <cstdio>

#include "planner/base/log.h"
#include "planner/base/name_escape.h"
#include "planner/base/units.h"

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

std::string WithAbsoluteListFile(const std::string& spec) {
  if (spec.rfind("list:", 0) != 0 || spec.size() <= 5 || spec[5] == '/') return spec;
  char cwd[PATH_MAX];
  if (getcwd(cwd, sizeof(cwd)) == nullptr) return spec;  // then the daemon's error names it
  return "list:" + std::string(cwd) + "/" + spec.substr(5);
}

CLI::Validator Count(uint64_t min, uint64_t max) {
  return CLI::Validator(
      [min, max](std::string& value) -> std::string {
        auto n = ParseCount(value, min, max);
        if (!n.ok()) return n.status().message();
        value = std::to_string(*n);  // CLI11 reads "010" as octal
        return std::string();
      },
      "", "COUNT");
}

std::optional<UnknownCommand> FindUnknownCommand(CLI::App* app, int argc, const char* const* argv) {
  CLI::App* group = app;
  std::string path = "clairfs";
  for (int i = 1; i < argc; ++i) {
    const std::string token = argv[i];
    if (token == "--") break;
    if (token.size() > 1 && token[0] == '-') {
      // An option of the group; skip its value when it takes one and it is not "--opt=value".
      if (token.find('=') == std::string::npos) {
        const CLI::Option* option = group->get_option_no_throw(token);
        if (option != nullptr && option->get_type_size_max() > 0) ++i;
      }
      continue;
    }
    auto subcommands = group->get_subcommands([](CLI::App*) { return true; });
    if (subcommands.empty()) break;  // a command's own arguments
    CLI::App* next = nullptr;
    for (CLI::App* sub : subcommands) {
      if (sub->check_name(token)) next = sub;
    }
    if (next == nullptr) return UnknownCommand{group, path, token};
    group = next;
    path += " " + token;
  }
  return std::nullopt;
}

int ReportUnknownCommand(const UnknownCommand& unknown) {
  std::string names;
  for (CLI::App* sub : unknown.group->get_subcommands([](CLI::App*) { return true; })) {
    names += (names.empty() ? "" : ", ") + sub->get_name();
  }
  fprintf(stderr, "%s: unknown command '%s'\ncommands: %s\nrun '%s --help' for what each does\n",
          unknown.path.c_str(), SanitizeText(unknown.name).c_str(), names.c_str(),
          unknown.path.c_str());
  return kExitUsage;
}

}  // namespace clairfs::cli
