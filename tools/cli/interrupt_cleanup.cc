// Interrupt cleanup (see interrupt_cleanup.h).
#include "tools/cli/interrupt_cleanup.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "fs/daemon/daemon.h"
#include "tools/cli/subprocess.h"

namespace clairfs {
namespace {

using Clock = std::chrono::steady_clock;

constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};

struct Registry {
  std::mutex mu;
  std::condition_variable changed;                    // a mount command ended
  std::vector<std::pair<std::string, pid_t>> mounts;  // canonical mountpoint, daemon; oldest first
  std::vector<std::string> dirs;
  int mount_commands = 0;  // begun and not ended
  bool installed = false;
  bool cleaning = false;
};

Registry& TheRegistry() {
  static Registry* registry = new Registry;  // never destroyed: cleanup may run during exit
  return *registry;
}

int g_signal_pipe_write = -1;

void OnSignal(int sig) {
  const unsigned char number = static_cast<unsigned char>(sig);
  const int saved = errno;
  (void)!write(g_signal_pipe_write, &number, 1);
  errno = saved;
}

// Once cleanup has begun, a thread of the command stops here for good: the cleanup exits the
// process.
[[noreturn]] void StopForCleanup(std::unique_lock<std::mutex>& lock) {
  Registry& r = TheRegistry();
  while (true) r.changed.wait(lock);
}

// A command returning from main while cleanup runs must not end the process before it is done.
void WaitForCleanupAtExit() {
  Registry& r = TheRegistry();
  std::unique_lock<std::mutex> lock(r.mu);
  if (r.cleaning) StopForCleanup(lock);
}

bool WaitForExit(pid_t pid, Clock::time_point deadline) {
  while (ProcessRunning(pid)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return true;
}

// remove_all, again while the command's threads still create or remove entries below `dir`.
bool RemoveUntilGone(const std::string& dir, Clock::time_point deadline, std::string* error) {
  while (true) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (!std::filesystem::exists(dir)) return true;
    if (Clock::now() > deadline) {
      *error = ec ? ec.message() : "entries keep appearing";
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

[[noreturn]] void CleanUpAndExit(int sig) {
  // The command's threads run on and fail as their mounts go away: what they print from here on
  // is a consequence of the interrupt, not news. Only the cleanup's own report is shown.
  FILE* report = stderr;
  const int saved = dup(STDERR_FILENO);
  const int devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
  if (saved >= 0 && devnull >= 0) {
    fflush(stdout);
    fflush(stderr);
    report = fdopen(saved, "w");
    if (report == nullptr) report = stderr;
    dup2(devnull, STDOUT_FILENO);
    dup2(devnull, STDERR_FILENO);
  }
  Registry& r = TheRegistry();
  std::vector<std::pair<std::string, pid_t>> mounts;
  std::vector<std::string> dirs;
  {
    std::unique_lock<std::mutex> lock(r.mu);
    r.cleaning = true;
    const auto commands_deadline = Clock::now() + std::chrono::seconds(kMountCommandSeconds);
    if (!r.changed.wait_until(lock, commands_deadline, [&] { return r.mount_commands == 0; })) {
      fprintf(report, "clairfs: a mount command is still running after %d s\n",
              kMountCommandSeconds);
    }
    mounts = r.mounts;
    dirs = r.dirs;
  }
  int detached = 0;
  for (auto it = mounts.rbegin(); it != mounts.rend(); ++it) {
    if (!IsMountpoint(it->first)) continue;
    auto run = RunProgram({"fusermount3", "-uz", it->first}, /*capture_stderr=*/true);
    if (run.ok() && run->exit_code == 0) {
      ++detached;
    } else {
      fprintf(report, "clairfs: could not detach %s: %s\n", it->first.c_str(),
              run.ok() ? run->err.c_str() : run.status().message().c_str());
    }
  }
  const auto daemons_deadline = Clock::now() + std::chrono::seconds(kDaemonExitSeconds);
  for (const auto& [mountpoint, pid] : mounts) {
    if (pid > 0 && !WaitForExit(pid, daemons_deadline)) {
      fprintf(report, "clairfs: the daemon of %s (pid %d) has not exited yet\n", mountpoint.c_str(),
              static_cast<int>(pid));
    }
  }
  int removed = 0;
  const auto remove_deadline = Clock::now() + std::chrono::seconds(kRemoveSeconds);
  for (const std::string& dir : dirs) {
    std::string error;
    if (RemoveUntilGone(dir, remove_deadline, &error)) {
      ++removed;
    } else {
      fprintf(report, "clairfs: could not remove %s: %s\n", dir.c_str(), error.c_str());
    }
  }
  fprintf(report,
          "clairfs: interrupted (%s): detached %d mount%s, removed %d temporary director%s\n",
          strsignal(sig), detached, detached == 1 ? "" : "s", removed, removed == 1 ? "y" : "ies");
  fflush(report);
  _exit(128 + sig);
}

// With the registry's lock held.
void InstallLocked(Registry& r) {
  if (r.installed) return;
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) {
    fprintf(stderr, "clairfs: no cleanup on interrupt (pipe: %s)\n", strerror(errno));
    return;
  }
  r.installed = true;
  g_signal_pipe_write = fds[1];
  const int read_fd = fds[0];
  std::thread([read_fd] {
    unsigned char number = 0;
    while (true) {
      const ssize_t n = read(read_fd, &number, 1);
      if (n == 1) CleanUpAndExit(number);
      if (n < 0 && errno == EINTR) continue;
      return;  // the pipe broke: nothing left to wait for
    }
  }).detach();
  std::atexit(WaitForCleanupAtExit);
  struct sigaction sa;
  memset(&sa, 0, sizeof(sa));
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;  // the command's own system calls carry on until the cleanup exits
  for (int sig : kSignals) {
    struct sigaction old;
    // A signal the caller ignores (nohup, a background job of a script) stays ignored.
    if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) {
      sigaction(sig, &sa, nullptr);
    }
  }
}

// IsMountpoint compares canonical paths; a mountpoint is resolved while it is still a plain
// directory (before its mount command).
std::string Canonical(const std::string& path) {
  char resolved[PATH_MAX];
  return realpath(path.c_str(), resolved) != nullptr ? std::string(resolved) : path;
}

std::vector<std::pair<std::string, pid_t>>::iterator FindMount(Registry& r,
                                                               const std::string& mountpoint) {
  auto it = std::find_if(r.mounts.rbegin(), r.mounts.rend(),
                         [&](const auto& m) { return m.first == mountpoint; });
  return it == r.mounts.rend() ? r.mounts.end() : std::next(it).base();
}

}  // namespace

void BeginMountForCleanup(const std::string& given) {
  const std::string mountpoint = Canonical(given);
  Registry& r = TheRegistry();
  std::unique_lock<std::mutex> lock(r.mu);
  if (r.cleaning) StopForCleanup(lock);
  InstallLocked(r);
  ++r.mount_commands;
  r.mounts.emplace_back(mountpoint, -1);
}

void EndMountForCleanup(const std::string& given, bool mounted, pid_t daemon_pid) {
  const std::string mountpoint = Canonical(given);
  Registry& r = TheRegistry();
  std::unique_lock<std::mutex> lock(r.mu);
  --r.mount_commands;
  auto it = FindMount(r, mountpoint);
  if (it != r.mounts.end()) {
    if (mounted) {
      it->second = daemon_pid;
    } else {
      r.mounts.erase(it);
    }
  }
  r.changed.notify_all();
  if (r.cleaning) StopForCleanup(lock);
}

void UnregisterMountForCleanup(const std::string& given) {
  const std::string mountpoint = Canonical(given);
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = FindMount(r, mountpoint);
  if (it != r.mounts.end()) r.mounts.erase(it);
}

void RegisterDirectoryForCleanup(const std::string& dir) {
  Registry& r = TheRegistry();
  std::unique_lock<std::mutex> lock(r.mu);
  if (r.cleaning) StopForCleanup(lock);
  InstallLocked(r);
  r.dirs.push_back(dir);
}

void UnregisterDirectoryForCleanup(const std::string& dir) {
  Registry& r = TheRegistry();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = std::find(r.dirs.begin(), r.dirs.end(), dir);
  if (it != r.dirs.end()) r.dirs.erase(it);
}

}  // namespace clairfs
