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
