// Read workloads shared by the benchmark instruments and the integration tests: read a list of
// files with N threads (optionally verifying synthetic content), list a tree, and time a burst
// of concurrent opens.
//
// Files are read with read(2) into a 1 MiB buffer per thread, each thread taking files
// round-robin from a shared counter. Times come from CLOCK_MONOTONIC (steady_clock).
// Thread-safety: each call is independent and starts and joins its own threads.
// Errors: ReadFiles returns the first failing open/read (or verification) as a Status naming
// the path, and the other threads stop at their next file; CheckFiles keeps going and counts.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "planner/base/status.h"
#include "planner/synthetic_dataset.h"

namespace clairfs {

struct ReadResult {
  static constexpr size_t kMaxErrors = 20;
  uint64_t files = 0;  // files attempted
  uint64_t bytes = 0;  // bytes read
  double seconds = 0;
  uint64_t failed_files = 0;
  std::vector<std::string> errors;  // the first kMaxErrors messages, each naming its path
};

// Reads `path` (the synthetic file `file`) to its end, adding the bytes read to *bytes on success.
// With `verify`, checks every byte against its synthetic content and the size against file.size
// (EILSEQ); with `drop_pages`, drops its pages from the page cache afterwards, so a later read
// of it is not served from there. Errors name the path, with the failing call's errno.
Status ReadSyntheticFile(const std::string& path, const SyntheticFile& file, bool verify,
                         bool drop_pages, char* buf, size_t buf_size, uint64_t* bytes);

// Reads root/<relpath> for every file. With `verify`, checks every byte against the synthetic
// content of its relpath and its size against files[i].size. Stops at the first failure and
// returns it (EILSEQ for wrong content, else the errno of the failing call).
Result<ReadResult> ReadFiles(const std::string& root, const std::vector<SyntheticFile>& files,
                             int threads, bool verify);

// Reads and verifies every file, continuing past failures (counted in failed_files, the first
// few kept in errors). `progress` (may be empty) is called after each file with the running
// totals, never concurrently.
ReadResult CheckFiles(const std::string& root, const std::vector<SyntheticFile>& files, int threads,
                      const std::function<void(uint64_t, uint64_t)>& progress);

// Lists every directory under `root` (readdir, recursively, as a loader indexing its dataset
// does: through a FUSE mount, READDIRPLUS); returns how many entries it saw.
Result<uint64_t> ListTree(const std::string& root);

struct OpenBurstResult {
  double wall_seconds = 0;     // from the first thread's start to the last open's return
  double slowest_seconds = 0;  // the longest single open
};

// Opens every path at the same moment (one thread each, released together by a latch), then
// closes them. An open that fails makes the result an error naming it.
Result<OpenBurstResult> TimeConcurrentOpens(const std::vector<std::string>& paths);

}  // namespace clairfs
