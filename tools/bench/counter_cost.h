// What the daemon's read-path accounting costs, timed in process on the real code.
//
// A FileSystem (fs/filesystem.h) is built with no manifest, store or stager: only its counters
// are used. Per READ through a mount without passthrough, the adapter and FileSystem::Read do,
// besides the pread: read_requests.Add, two clock reads (Elapsed) and NoteRead (MountCounters
// adds, then OpenFileStats::OnRead under the open's mutex). The per-READ loop does exactly that,
// on one OpenFile per thread (readers of different files), all threads sharing the one
// FileSystem as a mount's workers share it. Per passthrough open the daemon sees no READ and
// calls NotePassthroughOpen once instead. Per open in either mode, Release merges the open's
// counters into the per-file table (timed too; the open's OnOpen is private to Open and not).
// One clock read (Elapsed) is timed alone, to show how much of a READ's accounting it is.
// Times are CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), so a loaded machine's
// preemption does not inflate them; contention between threads shows only while they run at
// the same moment. The counters are checked afterwards: a result always comes from that many
// real calls.
// Thread-safety: each call builds its own FileSystem and threads. Errors: EIO if the counters
// do not show the calls made (the accounting changed under the benchmark).
#pragma once

#include <cstdint>

#include "planner/base/status.h"

namespace clairfs {

struct CounterCostOptions {
  uint64_t read_calls = 2'000'000;   // per thread
  uint64_t read_bytes = 128 * 1024;  // bytes each READ accounts for
  uint64_t open_calls = 200'000;
  uint64_t distinct_files = 3000;  // paths the opens cycle over (rows of the per-file table)
  uint64_t file_size = 110 * 1024;
};

struct CounterCost {
  double read_ns_1_thread = 0;     // per READ, one reader
  double read_ns_2_threads = 0;    // per READ per thread, two readers of different files
  double passthrough_open_ns = 0;  // NotePassthroughOpen, per passthrough open
  double release_ns = 0;           // Release's merge, per open in either mode
  double elapsed_ns = 0;           // one FileSystem::Elapsed() (a clock read; a READ makes two)
};

Result<CounterCost> MeasureCounterCost(const CounterCostOptions& options);

}  // namespace clairfs
