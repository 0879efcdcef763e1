// The PFS emulator's process: checks, daemonising, mounting, serving, unmounting.
//
// RunPfsEmulator() checks that the backing directory can be opened and that the mountpoint is an
// empty directory, then (without options.foreground) forks before any thread exists. The child
// starts a new session, mounts, and proves the mount serves requests by stat'ing it through the
// kernel from a probe thread while the session loop runs; only then does it tell the parent "ok"
// through a pipe and detach from the terminal's stdio. The parent returns 0 on "ok"; otherwise it
// prints one line "clairfs pfs-emu: <why>" (with libfuse's own message, which the child routes
// into the pipe) and returns 1 after the child has exited, so nothing stays mounted.
// The daemon serves until `fusermount3 -u MOUNTPOINT` (then exits 0) or SIGINT/SIGTERM/SIGHUP
// (unmounts, exits 0). With foreground, the same runs in this process and errors go to stderr.
//
// Thread-safety: call once per process, from the main thread, before any thread is created.
#pragma once

#include "tools/bench/pfs_emu_options.h"

namespace clairfs {

// Returns the process exit code (0 served and unmounted / daemon started, 1 failed).
int RunPfsEmulator(const PfsEmuOptions& options);

}  // namespace clairfs
