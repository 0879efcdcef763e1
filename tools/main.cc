// Entry point of the `clairfs` binary: builds the CLI from the subcommand table and maps CLI11's
// parse errors to exit code 2 (usage), --help/--version to 0. An unknown command is named as such
// before CLI11 parses (which would print the main help and exit 0 for `clairfs frobnicate --help`).
#include <cstdio>

#include <CLI/CLI.hpp>

#include "tools/cli/cli.h"
#include "tools/commands.h"

#ifndef CLAIRFS_VERSION
#define CLAIRFS_VERSION "unknown"
#endif

#if defined(__SANITIZE_ADDRESS__)
// ASan runs (.ci/sanitize): libfuse keeps its copy of the mount point (strdup in
// fuse_session_mount) until fuse_session_unmount, which a daemon that detached its mount on a stop
// signal must not call: it would unmount whatever is mounted on that path by then. Those 29 bytes
// at exit are libfuse's; every other leak is still reported.
extern "C" const char* __lsan_default_suppressions() { return "leak:fuse_session_mount\n"; }
extern "C" const char* __lsan_default_options() { return "print_suppressions=0"; }
#endif

int main(int argc, char** argv) {
  CLI::App app{
      "clairfs: a read-only FUSE filesystem that stages training datasets from a parallel\n"
      "filesystem onto node-local storage ahead of the reader."};
  app.set_version_flag("--version", std::string("clairfs ") + CLAIRFS_VERSION);
  app.require_subcommand(1);
  clairfs::cli::RegisterAllCommands(app);
  if (auto unknown = clairfs::cli::FindUnknownCommand(&app, argc, argv)) {
    return clairfs::cli::ReportUnknownCommand(*unknown);
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    app.exit(e);
    return clairfs::cli::kExitUsage;
  }
  return clairfs::cli::ExitCode();
}
