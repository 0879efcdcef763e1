// Mounts driven by tools (see bench_mounts.h).
#include "tools/bench/bench_mounts.h"

#include <signal.h>
#include <sys/xattr.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "fs/daemon/daemon.h"
#include "tools/bench/pfs_emu_options.h"
#include "tools/cli/control_client.h"
#include "tools/cli/interrupt_cleanup.h"
#include "tools/cli/subprocess.h"

namespace clairfs {

Status MountStack::Run(const std::vector<std::string>& argv, const std::string& mountpoint,
                       bool is_clairfs) {
  BeginMountForCleanup(mountpoint);  // an interrupt while it mounts detaches it too
  auto r = RunProgram(argv, /*capture_stderr=*/true);
  if (!r.ok() || r->exit_code != 0) {
    EndMountForCleanup(mountpoint, /*mounted=*/false, -1);
    if (!r.ok()) return r.status();
    return Status::Error(EIO, "mounting " + mountpoint + " failed: " + r->err);
  }
  Mounted m{mountpoint, is_clairfs, -1};
  if (is_clairfs) {
    auto status = MountStatus(mountpoint);
    if (status.ok()) m.daemon_pid = status->value("pid", -1);
  }
  EndMountForCleanup(mountpoint, /*mounted=*/true, m.daemon_pid);
  mounts_.push_back(m);
  return Status::Ok();
}

namespace {

// Waits until `pid` no longer exists; false after `seconds`.
bool WaitForExit(pid_t pid, int seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(seconds);
  while (ProcessRunning(pid)) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return true;
}

}  // namespace

Status MountStack::MountClairfs(const std::string& backing, const std::string& mountpoint,
                                const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {self_, "mount", backing, mountpoint};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return Run(argv, mountpoint, true);
}

Status MountStack::MountEmulator(const std::string& backing, const std::string& mountpoint,
                                 const std::vector<std::string>& flags) {
  std::vector<std::string> argv = {self_, "pfs-emu", backing, mountpoint};
  argv.insert(argv.end(), flags.begin(), flags.end());
  return Run(argv, mountpoint, false);
}

Status MountStack::Pop() {
  const Mounted m = mounts_.back();
  mounts_.pop_back();
  const std::string& mp = m.mountpoint;
  struct Unregister {
    const std::string& mountpoint;
    ~Unregister() { UnregisterMountForCleanup(mountpoint); }
  } unregister{mp};  // once unmounted, or detached after a failure
  Result<SubprocessResult> r = m.is_clairfs ? RunProgram({self_, "umount", mp}, true)
                                            : RunProgram({"fusermount3", "-u", mp}, true);
  if (r.ok() && r->exit_code != 0 && m.daemon_pid > 0 && !IsMountpoint(mp) &&
      WaitForExit(m.daemon_pid, 120)) {
    return Status::Ok();  // unmounted; the daemon only took longer than umount waits to exit
  }
  if (!r.ok() || r->exit_code != 0) {
    (void)RunProgram({"fusermount3", "-uz", mp}, true);
    if (!r.ok()) return r.status();
    return Status::Error(EIO, "unmounting " + mp + " failed: " + r->err);
  }
  return Status::Ok();
}

Status MountStack::PopAll() {
  Status first;
  while (!mounts_.empty()) {
    Status st = Pop();
    if (first.ok() && !st.ok()) first = st;
  }
  return first;
}

Status RunClairfsCommand(const std::string& self, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {self};
  argv.insert(argv.end(), args.begin(), args.end());
  auto r = RunProgram(argv, /*capture_stderr=*/true);
  if (!r.ok()) return r.status();
  if (r->exit_code != 0) {
    return Status::Error(EIO, "clairfs " + (args.empty() ? std::string() : args[0]) + " exited " +
                                  std::to_string(r->exit_code) + ": " + r->err);
  }
  return Status::Ok();
}

Result<nlohmann::json> MountStatus(const std::string& mountpoint) {
  auto client = cli::ControlClient::Connect(mountpoint);
  if (!client.ok()) return client.status();
  return client->Call({{"op", "status"}});
}

Result<PfsEmuCounters> ReadEmulatorCounters(const std::string& mountpoint) {
  char buf[256];
  const ssize_t n = getxattr(mountpoint.c_str(), kPfsEmuCountersXattr, buf, sizeof(buf));
  if (n < 0)
    return Status::FromErrno(errno, "reading the PFS emulator's counters at " + mountpoint);
  auto j = nlohmann::json::parse(std::string(buf, static_cast<size_t>(n)), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    return Status::Error(EPROTO, "the PFS emulator at " + mountpoint + " answered bad counters");
  }
  return PfsEmuCounters{j.value("opens", uint64_t{0}), j.value("bytes_read", uint64_t{0})};
}

Status WaitStagingIdle(const std::string& mountpoint, int timeout_seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  while (true) {
    auto s = MountStatus(mountpoint);
    if (!s.ok()) return s.status();
    if ((*s)["staging"].value("queued", 1) == 0 && (*s)["staging"].value("in_flight", 1) == 0) {
      return Status::Ok();
    }
    if (std::chrono::steady_clock::now() > deadline) {
      return Status::Error(ETIMEDOUT, "staging on " + mountpoint + " did not finish in " +
                                          std::to_string(timeout_seconds) + " s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

}  // namespace clairfs
