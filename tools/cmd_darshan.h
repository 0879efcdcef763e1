// Children of `clairfs darshan` that live in their own files (cmd_darshan_*.cc). RegisterDarshan
// (cmd_darshan.cc) creates the `darshan` parent and calls each of these with it; a new child
// (e.g. `import`) adds its Register function here and one call there.
#pragma once

#include <CLI/CLI.hpp>

namespace clairfs::cli {

// Adds `top` under the `darshan` parent command.
void RegisterDarshanTop(CLI::App* darshan);
// Adds `import` (cmd_darshan_import.cc).
void RegisterDarshanImport(CLI::App* darshan);

}  // namespace clairfs::cli
