// How the daemon's memory allocator is set up: a fixed threshold above which allocations are
// separate mappings, given back to the system when freed.
//
// glibc's malloc serves an allocation of at least the "mmap threshold" (128 KiB at first) with
// its own mapping, but each time such a mapping is freed it raises the threshold to that size (up
// to 32 MiB) and the heap's trim threshold to twice that. In the daemon a single large reply
// buffer or index block thus moved every later buffer below its size (the 1 MiB of each new FUSE
// worker thread, which libfuse starts and ends as the load changes, and the stager's copy
// buffers) into the arenas, and let each arena keep up to twice its size free without trimming.
// Under a soak of 600,000 opens of 5,000 files by 8 readers with admin churn, the daemon's RSS
// stayed between 42 and 75 MiB with 28 MB in use; with the threshold fixed at 256 KiB, between 33
// and 40 MiB. Over 5,000,000 opens of the same load it stayed between 33 and 54 MiB, with no
// trend after the first million (docs/RELIABILITY.md, "Load and soak"). Setting it also fixes the
// trim threshold (128 KiB).
//
// Thread-safety: call once, before the daemon starts any thread. No errors: a libc without
// mallopt, or one that refuses, keeps its defaults.
#pragma once

#include <cstddef>

namespace clairfs {

inline constexpr size_t kDaemonMmapThresholdBytes = 256 << 10;

void ConfigureDaemonAllocator();

}  // namespace clairfs
