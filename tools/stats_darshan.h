// The Darshan log of a mount's own traffic (`clairfs stats --darshan OUT`), built from the
// control socket's "status" and "stats" replies (fs/status_report.h, fs/stats_report.h).
//
// The daemon is one process, so the log is a one-process log as Darshan writes it for a
// program without MPI: nprocs 1, every record rank 0 (a rank -1 record would be a file shared
// by all ranks, and darshan-parser --perf would take its time from the slowest-rank counters
// that only Darshan's MPI reduction fills). One POSIX record per file read through the mount,
// its cache and backing-store counters summed (the split by source is in the metadata totals
// and in `clairfs stats --json`); names are the mount's path of the file, raw bytes.
//
// What the daemon measures is filled as Darshan's runtime counts it: opens, reads, bytes, the
// highest byte read, consecutive and sequential reads, the size histogram, the four commonest
// access sizes and strides, reads not aligned to the mount's block size, the longest read and
// its size, read and meta (open + release) time, first/last timestamps. What a read-only FUSE
// mount makes impossible is 0, as measured: writes and everything about them, renames. What the
// daemon cannot see is -1, Darshan's "not monitored": seeks, stats, mmaps, fsyncs, fdsyncs,
// FILENOS, DUPS, the memory alignment of the caller's buffers. The fastest/slowest-rank and
// variance counters are 0, as Darshan leaves them in the records of a one-process log.
// Counters are what reaches the daemon: after the kernel page cache, reads split at max_read;
// the metadata says so.
//
// Pure function; thread-safe.
#pragma once

#include <cstdint>

#include <nlohmann/json.hpp>

#include "planner/base/status.h"
#include "planner/darshan/darshan_log.h"

namespace clairfs::cli {

// `status` and `stats` are the replies of the "status" and "stats" ops (stats with every file);
// `jobid` is the batch job's id (0 if none). Errors name what the replies lack.
Result<darshan::DarshanLog> MountDarshanLog(const nlohmann::json& status,
                                            const nlohmann::json& stats, int64_t jobid);

}  // namespace clairfs::cli
