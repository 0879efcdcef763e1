// Integration tests of interrupted commands: a `clairfs bench` run interrupted by SIGINT (Ctrl-C)
// or SIGTERM while its mounts are up (tools/interrupt_cleanup.h), and a `clairfs mount`
// interrupted while its daemon starts (fs/daemon.cc), exit with 128 + the signal and leave no
// mount, no daemon and no work directory behind. The test's TempDir and MountGuards detach
// anything left, so a failure here does not leave a mount behind either.
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

// Mountpoints (from /proc/self/mountinfo) below `dir`.
int MountsUnder(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  int count = 0;
  for (std::string line; std::getline(in, line);) {
    std::istringstream fields(line);
    std::string id, parent, devno, root, mountpoint;
    fields >> id >> parent >> devno >> root >> mountpoint;
    if (mountpoint.rfind(dir + "/", 0) == 0) ++count;
  }
  return count;
}

// Processes whose command line mentions `text`.
int ProcessesMentioning(const std::string& text) {
  int count = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc")) {
    const std::string name = entry.path().filename();
    if (name.find_first_not_of("0123456789") != std::string::npos) continue;
    std::string cmdline = ReadFile(entry.path().string() + "/cmdline");
    for (char& c : cmdline) c = c == '\0' ? ' ' : c;
    if (cmdline.find(text) != std::string::npos) ++count;
  }
  return count;
}

// Whether process `pid` has a handler for `sig` (its SigCgt mask in /proc).
bool CatchesSignal(pid_t pid, int sig) {
  std::istringstream status(ReadFile("/proc/" + std::to_string(pid) + "/status"));
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("SigCgt:", 0) != 0) continue;
    const unsigned long long mask = std::stoull(line.substr(7), nullptr, 16);
    return (mask >> (sig - 1)) & 1;
  }
  return false;
}

class InterruptTest : public ::testing::TestWithParam<int> {};

TEST_P(InterruptTest, ABenchInterruptedWhileMountedLeavesNothingBehind) {
  const int sig = GetParam();
  TempDir tmp;
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // As from a terminal: a harness that runs tests in the background ignores SIGINT.
    signal(SIGINT, SIG_DFL);
    setenv("TMPDIR", tmp.path().c_str(), 1);
    freopen("/dev/null", "w", stdout);
    execl(ClairfsBin().c_str(), "clairfs", "bench", "passthrough", "--quick",
          static_cast<char*>(nullptr));
    _exit(127);
  }
  // Interrupted once its first mount is up (the big file's read-through mount).
  bool mounted = false;
  for (int i = 0; i < 1200 && !mounted; ++i) {
    mounted = MountsUnder(tmp.path()) > 0;
    if (!mounted) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  kill(pid, sig);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(mounted) << "the bench never mounted";
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + sig);
  EXPECT_EQ(MountsUnder(tmp.path()), 0);
  // The daemons exit once their mounts are gone (the cleanup waits for them).
  EXPECT_EQ(ProcessesMentioning(tmp.path() + "/clairfs-bench-"), 0);
  EXPECT_TRUE(std::filesystem::is_empty(tmp.path())) << "work directory left in " << tmp.path();
}

// `clairfs mount` interrupted while its daemon starts (here: listing a tree behind an emulated
// PFS whose every lookup takes 50 ms, several seconds in all) exits with 128 + the signal at once,
// not after the listing, and leaves nothing mounted and no daemon; the cache is free for the next
// mount. Before, the daemon finished its startup after the command had died and served a mount
// nobody knew of.
TEST(MountInterruptTest, AMountInterruptedDuringStartupLeavesNothingMounted) {
  TempDir dir;
  const std::string data = dir / "data", pfs = dir / "pfs", mnt = dir / "mnt",
                    cache = dir / "cache";
  for (int i = 0; i < 300; ++i) {
    WriteFile(data + "/d" + std::to_string(i % 5) + "/f" + std::to_string(i), "x");
  }
  MakeDirs(pfs);
  MakeDirs(mnt);
  MountGuard pfs_guard(pfs);
  CommandResult emu = testing::Run({ClairfsBin(), "pfs-emu", data, pfs, "--stat-latency", "50"});
  ASSERT_EQ(emu.exit_code, 0) << emu.err;
  MountGuard mnt_guard(mnt);

  int err_pipe[2];
  ASSERT_EQ(pipe2(err_pipe, O_CLOEXEC), 0);  // only the command's stderr, not inherited further
  const pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    // As from a terminal: a harness that runs tests in the background ignores SIGINT.
    signal(SIGINT, SIG_DFL);
    dup2(err_pipe[1], STDERR_FILENO);
    close(err_pipe[0]);
    freopen("/dev/null", "w", stdout);
    execl(ClairfsBin().c_str(), "clairfs", "mount", pfs.c_str(), mnt.c_str(), "--cache",
          cache.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  close(err_pipe[1]);
  // Interrupt once the command catches SIGINT, which it does from the daemon's fork on: before
  // that the signal's default action ends it, as it should, but that is not what this tests (a
  // fixed sleep lost that race on a loaded machine).
  const auto started = std::chrono::steady_clock::now();
  while (!CatchesSignal(pid, SIGINT) &&
         std::chrono::steady_clock::now() - started < std::chrono::seconds(20)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ASSERT_TRUE(CatchesSignal(pid, SIGINT)) << "the command never caught SIGINT";
  std::this_thread::sleep_for(std::chrono::milliseconds(100));  // the daemon is listing
  ASSERT_FALSE(IsFuseMounted(mnt)) << "the listing was over already: nothing to interrupt";
  kill(pid, SIGINT);
  const auto interrupted = std::chrono::steady_clock::now();
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  EXPECT_LT(std::chrono::steady_clock::now() - interrupted, std::chrono::seconds(3))
      << "the command waited for the daemon's startup";
  std::string err;
  char buf[4096];
  for (ssize_t n; (n = read(err_pipe[0], buf, sizeof(buf))) > 0;) err.append(buf, n);
  close(err_pipe[0]);
  ASSERT_TRUE(WIFEXITED(status)) << status;
  EXPECT_EQ(WEXITSTATUS(status), 128 + SIGINT) << err;
  EXPECT_NE(err.find("interrupted"), std::string::npos) << err;
  EXPECT_FALSE(IsFuseMounted(mnt));
  EXPECT_EQ(ProcessesMentioning("clairfs mount " + pfs), 0);

  // The cache's lock went with the daemon: the next mount comes up (over a PFS without delays).
  ASSERT_EQ(testing::Run({"fusermount3", "-u", pfs}).exit_code, 0);
  emu = testing::Run({ClairfsBin(), "pfs-emu", data, pfs});
  ASSERT_EQ(emu.exit_code, 0) << emu.err;
  CommandResult again = testing::Run({ClairfsBin(), "mount", pfs, mnt, "--cache", cache});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_TRUE(IsFuseMounted(mnt));
  CommandResult down = testing::Run({ClairfsBin(), "umount", mnt});
  EXPECT_EQ(down.exit_code, 0) << down.err;
}

INSTANTIATE_TEST_SUITE_P(Signals, InterruptTest, ::testing::Values(SIGINT, SIGTERM),
                         [](const auto& info) {
                           return info.param == SIGINT ? "SIGINT" : "SIGTERM";
                         });

}  // namespace
}  // namespace clairfs::testing
