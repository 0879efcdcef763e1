// UserFuseNamespace: lets integration tests mount clairfs as a user other than root.
//
// libfuse opens /dev/fuse itself before it falls back to fusermount3, so a user mount needs a
// /dev/fuse that other users may open; on machines where it is 0600 (this one), the test makes
// a private mount namespace (unshare --mount, held by a sleeping process) in which a 0666 node of
// the same device is bound over /dev/fuse, and runs the commands of the test there (nsenter), as
// any uid (setpriv). Nothing changes for the rest of the machine. Mounts made inside are visible
// only there; Track() them and the destructor detaches them and waits for their daemons (killing
// any left after 10 s). Only one test at a time may use this (they share the owner's
// /tmp/clairfs-<uid>): the constructor takes an exclusive lock for the test's lifetime.
//
// The owner must have a passwd entry (fusermount3 asks for the user name): use 65534 (nobody).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <string>
#include <thread>
#include <vector>

#include "tests/test_util.h"

namespace clairfs::testing {

class UserFuseNamespace {
 public:
  UserFuseNamespace() {
    lock_fd_ = open("/tmp/clairfs-test-user-mounts.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0600);
    if (lock_fd_ < 0 || flock(lock_fd_, LOCK_EX) != 0) {
      error_ = "cannot take /tmp/clairfs-test-user-mounts.lock";
      return;
    }
    if (geteuid() != 0) {
      error_ = "needs root";
      return;
    }
    if (Run({"sh", "-c", "command -v unshare && command -v nsenter && command -v setpriv"})
            .exit_code != 0) {
      error_ = "needs unshare, nsenter and setpriv (util-linux)";
      return;
    }
    chmod(dir_.path().c_str(), 0755);
    node_ = dir_ / "fuse";
    struct stat fuse;
    if (stat("/dev/fuse", &fuse) != 0 || mknod(node_.c_str(), S_IFCHR | 0666, fuse.st_rdev) != 0 ||
        chmod(node_.c_str(), 0666)) {
      error_ = "cannot make a fuse device node";
      return;
    }
    holder_ = fork();
    if (holder_ == 0) {
      execlp("unshare", "unshare", "--mount", "--propagation", "private", "sleep", "3600",
             static_cast<char*>(nullptr));
      _exit(127);
    }
    // Wait until the holder runs in its own namespace.
    const std::string mine = Link("/proc/self/ns/mnt");
    for (int i = 0; i < 200 && Link("/proc/" + std::to_string(holder_) + "/ns/mnt") == mine; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    if (Link("/proc/" + std::to_string(holder_) + "/ns/mnt") == mine) {
      error_ = "unshare did not make a mount namespace";
      return;
    }
    CommandResult bind = Run(Inside(0, {"mount", "--bind", node_, "/dev/fuse"}));
    if (bind.exit_code != 0) {
      error_ = "cannot bind the fuse node: " + bind.err;
      return;
    }
    ok_ = true;
  }

  ~UserFuseNamespace() {
    for (const std::string& mnt : tracked_) {
      pid_t pid = DaemonPid(mnt);
      Run(Inside(0, {"fusermount3", "-uz", mnt}), 30);
      for (int i = 0; pid > 0 && i < 200 && kill(pid, 0) == 0; ++i) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
      if (pid > 0 && kill(pid, 0) == 0) kill(pid, SIGKILL);
    }
    if (holder_ > 0) {
      kill(holder_, SIGKILL);
      waitpid(holder_, nullptr, 0);
    }
    if (lock_fd_ >= 0) close(lock_fd_);  // releases the lock
  }
  UserFuseNamespace(const UserFuseNamespace&) = delete;
  UserFuseNamespace& operator=(const UserFuseNamespace&) = delete;

  bool ok() const { return ok_; }
  const std::string& error() const { return error_; }
  void Track(const std::string& mountpoint) { tracked_.push_back(mountpoint); }

  // `argv` as run inside the namespace by `uid` (gid = uid, no supplementary groups; root as is),
  // without XDG_RUNTIME_DIR.
  std::vector<std::string> Inside(uid_t uid, const std::vector<std::string>& argv) const {
    std::vector<std::string> out = {"nsenter", "-t", std::to_string(holder_), "-m"};
    if (uid != 0) {
      out.insert(out.end(), {"setpriv", "--reuid=" + std::to_string(uid),
                             "--regid=" + std::to_string(uid), "--clear-groups"});
    }
    out.insert(out.end(), {"env", "-u", "XDG_RUNTIME_DIR"});
    out.insert(out.end(), argv.begin(), argv.end());
    return out;
  }
  CommandResult Clairfs(uid_t uid, const std::vector<std::string>& args, int timeout = 120) const {
    std::vector<std::string> argv = {ClairfsBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return Run(Inside(uid, argv), timeout);
  }

 private:
  static std::string Link(const std::string& path) {
    char buf[256];
    ssize_t n = readlink(path.c_str(), buf, sizeof(buf));
    return n > 0 ? std::string(buf, static_cast<size_t>(n)) : "";
  }

  int lock_fd_ = -1;
  TempDir dir_;
  std::string node_;
  pid_t holder_ = -1;
  bool ok_ = false;
  std::string error_;
  std::vector<std::string> tracked_;
};

}  // namespace clairfs::testing
