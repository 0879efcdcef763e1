// Page-cache probes for the benchmark instruments: how much a workload adds to the page cache.
//
// CachedBytes is the "Cached:" line of /proc/meminfo: every file page in RAM, a FUSE file's
// pages included, so it also moves with what other processes read or write meanwhile.
// DropPages asks the kernel to drop a file's clean, unmapped pages (posix_fadvise
// POSIX_FADV_DONTNEED); dirty or mapped pages stay. ResidentBytes is the memory a file's pages in
// RAM take, whole pages as Cached counts them (a 110 KiB file takes 28 x 4 KiB), found with
// mincore(2) on a PROT_READ mapping of it (mapping faults no page in).
// Thread-safety: independent calls. Errors: Status values naming the file.
#pragma once

#include <cstdint>
#include <string>

#include "planner/base/status.h"

namespace clairfs {

Result<uint64_t> CachedBytes();
Status DropPages(const std::string& path);
Result<uint64_t> ResidentBytes(const std::string& path);

}  // namespace clairfs
