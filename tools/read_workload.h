// Read workloads shared by the benchmark instruments and the integration tests: read a list of
// files with N threads (optionally verifying synthetic content), and time a burst of concurrent
// opens.
//
// Files are read with read(2) into a 1 MiB buffer per thread, each thread taking files
// round-robin from a shared counter. Times come from CLOCK_MONOTONIC (steady_clock).
// Thread-safety: each call is independent and starts and joins its own threads.
// Errors: the first failing open/read (or verification) is returned as a Status naming the path;
// the other threads stop at their next file.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/status.h"
#include "planner/synthetic_dataset.h"

namespace clairfs {

struct ReadResult {
  uint64_t files = 0;
  uint64_t bytes = 0;
  double seconds = 0;
};

// Reads root/<relpath> for every file. With `verify`, checks every byte against the synthetic
// content of its relpath and its size against files[i].size.
Result<ReadResult> ReadFiles(const std::string& root, const std::vector<SyntheticFile>& files,
                             int threads, bool verify);

struct OpenBurstResult {
  double wall_seconds = 0;     // from the first thread's start to the last open's return
  double slowest_seconds = 0;  // the longest single open
};

// Opens every path at the same moment (one thread each, released together by a latch), then
// closes them. An open that fails makes the result an error naming it.
Result<OpenBurstResult> TimeConcurrentOpens(const std::vector<std::string>& paths);

}  // namespace clairfs
