// The probe's timed client workloads, run the same way against a mount and against the backing
// directory (the reference).
//
// - ReadFiles: `threads` threads open+read+close `paths` (thread t takes every threads-th
//   path), reading each file to EOF with a 1 MiB buffer; optionally verifies every byte
//   against FileByte(). Returns the wall time in seconds.
// - StatLoop / OpenCloseLoop: `count` stat() / open()+close() of one path on the calling
//   thread (pinned to CPU 0 when `pin`); returns the mean time per call in microseconds.
// Any failed call is an error naming the path (nothing is retried).
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "planner/base/status.h"

namespace clairfs::probe {

Result<double> ReadFiles(const std::vector<std::string>& paths, int threads, size_t file_size,
                         bool verify);
Result<double> StatLoop(const std::string& path, int count, bool pin);
// Drops the page cache of each of `paths` (open, POSIX_FADV_DONTNEED, close).
Status DropPages(const std::vector<std::string>& paths);
Result<double> OpenCloseLoop(const std::string& path, int count, bool pin);

}  // namespace clairfs::probe
