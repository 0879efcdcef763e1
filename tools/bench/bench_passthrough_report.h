// The table `clairfs bench passthrough` prints (without --json): its result object, read by key
// (see cmd_bench_passthrough.cc for what each figure is). Thread-safety: prints to stdout.
#pragma once

#include <nlohmann/json.hpp>

namespace clairfs::cli {

void PrintPassthroughTable(const nlohmann::json& result);

}  // namespace clairfs::cli
