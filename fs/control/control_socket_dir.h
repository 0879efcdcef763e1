// Where a mount's control socket lives, chosen so that no other user can take its place or keep
// the daemon from binding it.
//
// Candidate directories for a daemon of uid U, in order:
//   root:   /run/clairfs                              (created 0755)
//   others: $XDG_RUNTIME_DIR/clairfs (when set),     (created 0700)
//           /run/user/U/clairfs,                      (created 0700)
//           /tmp/clairfs-U                            (created 0711: other users may reach the
//                                                      socket of an allow_other mount by name)
// A candidate is used only if, opened with O_NOFOLLOW|O_DIRECTORY, it is a directory owned by U
// with no group or other write bit, and every directory above it is owned by root or U and not
// writable by group or others unless it is sticky (as /tmp is), so nobody else can rename it
// away. A candidate that exists but fails that (another user's directory, a symlink, a file, a
// writable mode) is skipped with a warning naming it and its owner; one that cannot be created
// (no /run/user/U) is skipped quietly. When no candidate is usable, a fresh directory made by
// mkdtemp under /tmp is used (nobody can have prepared it), so a pre-created path never stops a
// mount. The daemon publishes the socket's path in the mount root's "user.clairfs.control"
// attribute; the CLI tries that path, then the same candidates (for the mount's owner), then the
// fallback directories /tmp/clairfs-U-* (root cannot read the attribute of a mount without
// allow_other), applying the same checks to each.
//
// Each mount has two files in the directory, named by ControlFileStem(mountpoint):
//   <stem>.sock  the control socket (0666: anyone may connect; each request is authorised by the
//                caller's credentials)
//   <stem>.lock  0600, holding the daemon's pid; the daemon holds an exclusive flock on it until it
//                exits, so `clairfs umount` can wait for the exit without a control connection.
//
// Thread-safety: functions are thread-safe; DaemonLock is owned by one thread.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

#include "planner/base/status.h"

namespace clairfs {

// 16 hex digits of FNV-1a 64 of the canonical mountpoint.
std::string ControlFileStem(const std::string& canonical_mountpoint);

// The candidate directories for a daemon of `uid`; `xdg_runtime_dir` may be null or empty.
std::vector<std::string> ControlDirCandidates(uid_t uid, const char* xdg_runtime_dir);

// OK if `dir` may hold the control files of a daemon of `uid` (see above); else an error naming
// the directory, what is wrong and its owner. Never creates anything.
Status CheckControlDir(const std::string& dir, uid_t uid);

// The fallback directories of `uid` that exist now: /tmp/clairfs-<uid>-* passing CheckControlDir.
std::vector<std::string> FallbackControlDirs(uid_t uid);

// The daemon's choice: the first usable candidate (created if missing), else a fresh mkdtemp
// directory. Logs a warning for each candidate skipped. Fails only if even mkdtemp fails.
Result<std::string> ChooseControlDir(uid_t uid);

// The daemon's liveness lock: `<dir>/<stem>.lock`, created 0600, exclusively flocked, holding the
// pid. Destroying it unlinks the file and releases the lock; so does the process's exit.
class DaemonLock {
 public:
  static Result<std::unique_ptr<DaemonLock>> Acquire(const std::string& path);
  ~DaemonLock();
  DaemonLock(const DaemonLock&) = delete;
  DaemonLock& operator=(const DaemonLock&) = delete;

 private:
  DaemonLock(std::string path, int fd) : path_(std::move(path)), fd_(fd) {}
  std::string path_;
  int fd_;
};

// For `clairfs umount`: opens the lock file of the daemon of `canonical_mountpoint` (owned by
// `owner`) in `dir` if that directory passes CheckControlDir and a daemon holds the lock now.
// Returns the open fd (the caller closes it) and the pid written in it; -1 fd when there is none.
struct HeldDaemonLock {
  int fd = -1;
  pid_t pid = -1;
};
HeldDaemonLock OpenHeldDaemonLock(const std::string& dir, const std::string& canonical_mountpoint,
                                  uid_t owner);
// True while some process (the daemon) still holds the lock behind `fd`.
bool DaemonLockHeld(int fd);

}  // namespace clairfs
