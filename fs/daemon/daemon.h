// The mount daemon: everything `clairfs mount` does after its arguments are parsed.
//
// RunMountDaemon() checks what can be checked before any thread or database exists (backing
// directory, mountpoint, nesting, cache lock), forks (unless foreground) and returns in the
// parent only once the child reports through a pipe that the mount serves requests, or with the
// child's one-line error. The child opens the index, lists or reuses the manifest, recovers and
// validates the cache, starts the stager and the control socket, mounts, and serves until it is
// unmounted or signalled; then it stops staging, closes the index and exits 0.
//
// A stale mount left by a dead daemon (ENOTCONN) on the mountpoint is cleared and mounted over.
#pragma once

#include "fs/daemon/mount_options.h"

namespace clairfs {

// Returns the process exit code for `clairfs mount` (0 mounted, 1 failed, 2 usage).
int RunMountDaemon(MountOptions options);

// Clears a stale FUSE mount (ENOTCONN) at `path`; true if one was found and cleared.
bool ClearStaleMount(const std::string& path);
// True if `path` is the mountpoint of a mounted filesystem.
bool IsMountpoint(const std::string& canonical_path);

}  // namespace clairfs
