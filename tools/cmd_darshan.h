// Children of `clairfs darshan` that live in their own files (cmd_darshan_*.cc) and are added by
// RegisterDarshan in cmd_darshan.cc.
#pragma once

#include <CLI/CLI.hpp>

namespace clairfs::cli {

// Adds `top` under the `darshan` parent command.
void RegisterDarshanTop(CLI::App* darshan);

}  // namespace clairfs::cli
