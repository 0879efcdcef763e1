// Interrupt cleanup: a tool command that mounts file systems or makes temporary directories
// (`clairfs bench ...`, `clairfs demo`) leaves none of them behind when it is interrupted by
// SIGINT (Ctrl-C), SIGTERM or SIGHUP. The default action of those signals ends the process
// before any destructor runs: interrupting `clairfs bench passthrough` left its mounts, their
// daemons and a work directory of more than a gigabyte behind.
//
// MountStack brackets each mount command with BeginMount/EndMount and unregisters the mount once
// it is unmounted; the owners of temporary directories register them until they remove them.
// The first registration installs handlers for the three signals. A handler only writes the
// signal's number to a pipe (async-signal-safe); a thread reading the pipe does the cleanup,
// while the command's own threads run on until their next registration call, where they stop
// for good (so no mount starts once cleanup has begun):
//   1. it waits (up to kMountCommandSeconds) for a mount command in flight to end, so that a
//      mount being made as the signal came is detached too, not left to appear afterwards;
//   2. detaches every registered mount that is mounted (`fusermount3 -uz`, newest first);
//   3. waits up to kDaemonExitSeconds for their clairfs daemons to exit, so that none still
//      writes into a directory being removed;
//   4. removes the registered directories (again while the command's threads still change them,
//      up to kRemoveSeconds);
//   5. says what it did on stderr and exits with 128 + the signal's number, the status the
//      default action would give. A command that returns from main meanwhile waits for it.
// From step 1 on, the command's own stdout and stderr go to /dev/null: its threads fail as their
// mounts go away, and those errors are the interrupt's doing, not news.
// Commands that register nothing keep the default actions, and a signal the caller ignores
// (nohup, a script's background job) stays ignored.
//
// Thread-safety: every function may be called from any thread (a mutex guards the registry).
// Errors: cleanup is best effort and reports on stderr what it could not undo.
#pragma once

#include <sys/types.h>

#include <string>

namespace clairfs {

inline constexpr int kMountCommandSeconds = 60;
inline constexpr int kDaemonExitSeconds = 10;
inline constexpr int kRemoveSeconds = 5;

// A command that mounts `mountpoint` is about to run.
void BeginMountForCleanup(const std::string& mountpoint);
// It ended: `mounted` whether the mount is up; `daemon_pid` is its clairfs daemon (-1: none or
// unknown).
void EndMountForCleanup(const std::string& mountpoint, bool mounted, pid_t daemon_pid);
// `mountpoint` was unmounted (or detached).
void UnregisterMountForCleanup(const std::string& mountpoint);

// `dir` is a temporary directory this process will remove.
void RegisterDirectoryForCleanup(const std::string& dir);
void UnregisterDirectoryForCleanup(const std::string& dir);

}  // namespace clairfs
