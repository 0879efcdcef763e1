// `clairfs umount`: unmounts a clairfs mount and waits for its daemon to flush and exit.
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>
#include <thread>

#include "fs/daemon.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/control_client.h"
#include "tools/subprocess.h"

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

int Umount(const UmountArgs& a) {
  auto canonical = CanonicalMountpoint(a.mountpoint);
  std::string mp = canonical.ok() ? *canonical : a.mountpoint;
  if (!canonical.ok() && canonical.status().code() != ENOTCONN) {
    return Fail("umount", canonical.status());
  }
  if (canonical.ok() && !IsMountpoint(mp)) {
    return Fail("umount", Status::Error(EINVAL, mp + " is not mounted"));
  }
  pid_t daemon_pid = -1;
  if (canonical.ok()) {
    if (auto client = ControlClient::Connect(mp, 5000); client.ok()) {
      if (auto status = client->Call({{"op", "status"}}); status.ok()) {
        daemon_pid = status->value("pid", -1);
      }
    }
  }
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
  if (daemon_pid > 0 && !a.lazy) {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(a.timeout);
    while (ProcessRunning(daemon_pid)) {
      if (std::chrono::steady_clock::now() > deadline) {
        return Fail(
            "umount",
            Status::Error(ETIMEDOUT, "unmounted " + mp + ", but the daemon (pid " +
                                         std::to_string(daemon_pid) + ") has not exited yet"));
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
  cmd->add_option("--timeout", args->timeout, "Seconds to wait for the daemon to exit (60)");
  cmd->callback([args]() { SetExitCode(Umount(*args)); });
}

}  // namespace clairfs::cli
