// `clairfs umount`: unmounts a clairfs mount and waits for its daemon to flush and exit.
//
// The wait needs no control connection (other users may hold every connection they are allowed,
// or the daemon may be too busy to answer): before unmounting, the command opens the daemon's
// liveness lock (fs/control_socket_dir.h), found in the mount owner's control directories and
// fallback directories (or the directory the mount root's "user.clairfs.control" names), and
// afterwards waits until the daemon
// no longer holds it, which happens only when the process exits. Without a lock (a daemon of an
// older version) it falls back to the pid from `status`.
#include <signal.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "fs/control/control_socket_dir.h"
#include "fs/daemon/daemon.h"
#include "tools/cli/cli.h"
#include "tools/cli/control_client.h"
#include "tools/cli/subprocess.h"
#include "tools/commands.h"

namespace clairfs::cli {
namespace {

struct UmountArgs {
  std::string mountpoint;
  bool lazy = false;
  int timeout = 60;
};

// Runs fusermount3 and returns its exit status and stderr.
int RunFusermount(const std::string& flags, const std::string& mountpoint, std::string* err) {
  int pipefd[2];
  if (pipe(pipefd) != 0) return -1;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(pipefd[1], STDERR_FILENO);
    close(pipefd[0]);
    close(pipefd[1]);
    execlp("fusermount3", "fusermount3", flags.c_str(), mountpoint.c_str(),
           static_cast<char*>(nullptr));
    _exit(127);
  }
  close(pipefd[1]);
  char buf[4096];
  ssize_t n;
  while ((n = read(pipefd[0], buf, sizeof(buf))) > 0) err->append(buf, static_cast<size_t>(n));
  close(pipefd[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// The daemon's listing of the mount for the kernel (fs/list_ahead.h): absent (never ran, or no
// daemon answers), running, or done. Its open directory makes an unmount fail as busy while it
// runs.
enum class ListAheadState { kAbsent, kRunning, kDone };

ListAheadState QueryListAhead(const std::string& mountpoint) {
  auto client = ControlClient::Connect(mountpoint, 5000);
  if (!client.ok()) return ListAheadState::kAbsent;
  auto status = client->Call({{"op", "status"}});
  if (!status.ok()) return ListAheadState::kAbsent;
  const nlohmann::json ahead = status->value("list_ahead", nlohmann::json());
  if (!ahead.is_object()) return ListAheadState::kAbsent;
  return ahead.value("done", false) ? ListAheadState::kDone : ListAheadState::kRunning;
}

// Runs fusermount3 -u. A mount found busy while the daemon's listing ran (or had just ended) is
// tried once more after the listing ended, which it does on its own within its bound of names
// (at most `timeout` seconds are waited).
int UnmountAfterListAhead(const std::string& mountpoint, int timeout, std::string* err) {
  int rc = RunFusermount("-u", mountpoint, err);
  if (rc == 0 || err->find("busy") == std::string::npos) return rc;
  ListAheadState state = QueryListAhead(mountpoint);
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout);
  while (state == ListAheadState::kRunning && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    state = QueryListAhead(mountpoint);
  }
  if (state != ListAheadState::kDone) return rc;
  err->clear();
  return RunFusermount("-u", mountpoint, err);
}

// The daemon's liveness lock, looked for without talking to the daemon first: the attribute that
// names a directory nobody could predict (mkdtemp) is read only when the usual places have none.
HeldDaemonLock FindDaemonLock(const std::string& mountpoint) {
  auto owner = ClairfsMountOwner(mountpoint);
  if (!owner.ok()) return {};
  const char* xdg = getuid() == *owner ? getenv("XDG_RUNTIME_DIR") : nullptr;
  std::vector<std::string> dirs = ControlDirCandidates(*owner, xdg);
  for (const std::string& dir : FallbackControlDirs(*owner)) dirs.push_back(dir);
  for (const std::string& dir : dirs) {
    HeldDaemonLock lock = OpenHeldDaemonLock(dir, mountpoint, *owner);
    if (lock.fd >= 0) return lock;
  }
  char value[4096];
  ssize_t n = getxattr(mountpoint.c_str(), "user.clairfs.control", value, sizeof(value));
  if (n <= 0) return {};
  std::string socket(value, static_cast<size_t>(n));
  const size_t slash = socket.rfind('/');
  if (slash == std::string::npos || slash == 0) return {};
  return OpenHeldDaemonLock(socket.substr(0, slash), mountpoint, *owner);
}

int Umount(const UmountArgs& a) {
  auto canonical = CanonicalMountpoint(a.mountpoint);
  std::string mp = canonical.ok() ? *canonical : a.mountpoint;
  if (!canonical.ok() && canonical.status().code() != ENOTCONN) {
    return Fail("umount", canonical.status());
  }
  if (canonical.ok() && !IsMountpoint(mp)) {
    return Fail("umount", Status::Error(EINVAL, mp + " is not mounted"));
  }
  HeldDaemonLock lock;
  pid_t daemon_pid = -1;
  if (canonical.ok()) {
    lock = FindDaemonLock(mp);
    daemon_pid = lock.pid;
    if (lock.fd < 0) {
      if (auto client = ControlClient::Connect(mp, 5000); client.ok()) {
        if (auto status = client->Call({{"op", "status"}}); status.ok()) {
          const nlohmann::json pid = status->value("pid", nlohmann::json(-1));
          if (pid.is_number_integer()) daemon_pid = pid.get<pid_t>();
        }
      }
    }
  }
  struct CloseAtReturn {
    int fd;
    ~CloseAtReturn() {
      if (fd >= 0) close(fd);
    }
  } close_lock{lock.fd};
  std::string err;
  int rc = a.lazy ? RunFusermount("-uz", mp, &err) : UnmountAfterListAhead(mp, a.timeout, &err);
  if (rc != 0) {
    if (err.find("busy") != std::string::npos) {
      return Fail("umount", Status::Error(EBUSY, mp +
                                                     " is busy: processes still use it (see "
                                                     "`fuser -vm " +
                                                     mp + "`); --lazy detaches it now"));
    }
    while (!err.empty() && err.back() == '\n') err.pop_back();
    return Fail("umount", Status::Error(EIO, "fusermount3 failed: " + err));
  }
  // The daemon flushes its index and exits once the kernel closes the session.
  if ((lock.fd >= 0 || daemon_pid > 0) && !a.lazy) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(a.timeout);
    while (lock.fd >= 0 ? DaemonLockHeld(lock.fd) : ProcessRunning(daemon_pid)) {
      if (std::chrono::steady_clock::now() > deadline) {
        return Fail(
            "umount",
            Status::Error(ETIMEDOUT, "unmounted " + mp + ", but the daemon (pid " +
                                         std::to_string(daemon_pid) + ") has not exited after " +
                                         std::to_string(a.timeout) + " s"));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
  return kExitOk;
}

}  // namespace

void RegisterUmount(CLI::App& app) {
  auto args = std::make_shared<UmountArgs>();
  CLI::App* cmd = AddCommand(&app, "umount",
                             "Unmount a clairfs mount. Waits until the daemon has flushed its "
                             "index and exited.");
  cmd->add_option("MOUNTPOINT", args->mountpoint, "The mountpoint")->required();
  cmd->add_flag("--lazy", args->lazy,
                "Detach now even if files are open; the daemon exits when they are closed");
  cmd->add_option("--timeout", args->timeout,
                  "Seconds to wait for the daemon to exit, 1 or more (60); checked before "
                  "anything is unmounted")
      ->check(CLI::Range(1, 7 * 86400));
  cmd->callback([args]() { SetExitCode(Umount(*args)); });
}

}  // namespace clairfs::cli
