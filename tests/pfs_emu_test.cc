// Integration tests of `clairfs pfs-emu`: real mounts over a synthetic tree in a temporary
// directory. Every mount is owned by a MountGuard declared after the TempDir, so it is unmounted
// (and its daemon killed if it lingers) even when an assertion fails.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <thread>

#include "planner/synthetic_dataset.h"
#include "tests/test_util.h"
#include "tools/bench/dataset_writer.h"
#include "tools/bench/read_workload.h"

namespace clairfs {
namespace {

using testing::ClairfsBin;
using testing::CommandResult;
using testing::DaemonPid;
using testing::IsFuseMounted;
using testing::MountGuard;
using testing::ReadFile;

using testing::TempDir;

using Clock = std::chrono::steady_clock;
double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

class PfsEmuTest : public ::testing::Test {
 protected:
  void SetUp() override {
    SyntheticSpec spec;
    spec.files = 80;
    spec.classes = 4;
    spec.sizes = ParseSyntheticSizes("fixed:64K").value();
    files_ = PlanSyntheticDataset(spec).value();
    SyntheticFile big{"big.bin", 20'000'000};
    auto all = files_;
    all.push_back(big);
    auto written = WriteSyntheticDataset(backing_, all, {});
    ASSERT_TRUE(written.ok()) << written.status().message();
    testing::MakeDirs(mnt_);
  }

  // Mounts the emulator with `flags`; the guard unmounts it when the test ends. Call it inside
  // ASSERT_NO_FATAL_FAILURE so that a failed mount stops the test.
  void Mount(const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {ClairfsBin(), "pfs-emu", backing_, mnt_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    guard_ = std::make_unique<MountGuard>(mnt_);
    CommandResult r = testing::Run(argv, 60);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(IsFuseMounted(mnt_));
    pid_t pid = DaemonPid(mnt_);
    ASSERT_GT(pid, 0);
    guard_->set_pid(pid);
  }

  std::string InMount(const std::string& relpath) const { return mnt_ + "/" + relpath; }

  TempDir tmp_;
  const std::string backing_ = tmp_ / "data";
  const std::string mnt_ = tmp_ / "mnt";
  std::vector<SyntheticFile> files_;
  std::unique_ptr<MountGuard> guard_;  // after tmp_: destroyed (unmounts) first
};

TEST_F(PfsEmuTest, ServesTheBackingTreeByteForByte) {
  ASSERT_NO_FATAL_FAILURE(Mount({}));
  auto verified = ReadFiles(mnt_, files_, 4, /*verify=*/true);
  ASSERT_TRUE(verified.ok()) << verified.status().message();
  EXPECT_EQ(verified->bytes, TotalSize(files_));
  EXPECT_EQ(ReadFile(InMount("big.bin")), ReadFile(backing_ + "/big.bin"));
  // Same tree: names, types and sizes (listed relative to each root).
  CommandResult ls_mnt = testing::Shell("cd '" + mnt_ + "' && find . -printf '%p %y %s\\n' | sort");
  CommandResult ls_backing =
      testing::Shell("cd '" + backing_ + "' && find . -printf '%p %y %s\\n' | sort");
  ASSERT_EQ(ls_mnt.exit_code, 0) << ls_mnt.err;
  EXPECT_NE(ls_mnt.out.find("./class_0003/img_00000079.jpg f 65536"), std::string::npos);
  // Directory sizes differ by filesystem; compare files and names only.
  auto strip_dir_sizes = [](const std::string& listing) {
    std::string out, line;
    for (char c : listing) {
      if (c != '\n') {
        line += c;
        continue;
      }
      if (line.find(" d ") != std::string::npos) line.resize(line.find(" d ") + 2);
      out += line + "\n";
      line.clear();
    }
    return out;
  };
  EXPECT_EQ(strip_dir_sizes(ls_mnt.out), strip_dir_sizes(ls_backing.out));
}

// The counters a bench charges to the PFS: files opened and bytes read since the mount, as JSON in
// the root's user.pfs_emu.counters; other names and other inodes have no such attribute.
TEST_F(PfsEmuTest, CountsOpensAndBytesReadInTheRootsXattr) {
  ASSERT_NO_FATAL_FAILURE(Mount({}));
  auto counters = [&] {
    char buf[256];
    const ssize_t n = getxattr(mnt_.c_str(), "user.pfs_emu.counters", buf, sizeof(buf));
    EXPECT_GT(n, 0) << strerror(errno);
    return std::string(buf, n > 0 ? static_cast<size_t>(n) : 0);
  };
  EXPECT_EQ(counters(), "{\"opens\":0,\"bytes_read\":0}");
  auto read = ReadFiles(mnt_, files_, 2, /*verify=*/true);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_EQ(counters(), "{\"opens\":" + std::to_string(files_.size()) +
                            ",\"bytes_read\":" + std::to_string(TotalSize(files_)) + "}");
  EXPECT_EQ(getxattr(mnt_.c_str(), "user.other", nullptr, 0), -1);
  EXPECT_EQ(errno, ENODATA);
  EXPECT_EQ(getxattr(InMount("big.bin").c_str(), "user.pfs_emu.counters", nullptr, 0), -1);
  EXPECT_EQ(errno, ENODATA);
}

TEST_F(PfsEmuTest, EveryMutationIsEROFS) {
  ASSERT_NO_FATAL_FAILURE(Mount({}));
  const std::string existing = InMount(files_[0].relpath);
  errno = 0;
  EXPECT_LT(open(existing.c_str(), O_WRONLY), 0);
  EXPECT_EQ(errno, EROFS);
  errno = 0;
  EXPECT_LT(open(InMount("new.bin").c_str(), O_WRONLY | O_CREAT, 0644), 0);
  EXPECT_EQ(errno, EROFS);
  errno = 0;
  EXPECT_NE(mkdir(InMount("newdir").c_str(), 0755), 0);
  EXPECT_EQ(errno, EROFS);
  errno = 0;
  EXPECT_NE(unlink(existing.c_str()), 0);
  EXPECT_EQ(errno, EROFS);
  errno = 0;
  EXPECT_NE(rename(existing.c_str(), InMount("moved.jpg").c_str()), 0);
  EXPECT_EQ(errno, EROFS);
  errno = 0;
  EXPECT_NE(truncate(existing.c_str(), 0), 0);
  EXPECT_EQ(errno, EROFS);
  errno = 0;
  EXPECT_NE(chmod(existing.c_str(), 0600), 0);
  EXPECT_EQ(errno, EROFS);
  // And nothing changed underneath.
  EXPECT_TRUE(ReadFiles(backing_, files_, 1, true).ok());
}

TEST_F(PfsEmuTest, InjectedErrorsReachTheReaderAsThatErrno) {
  ASSERT_NO_FATAL_FAILURE(Mount({"--fail", "class_0001/*:EIO", "--fail",
                                 "read:class_0002/*:ENODATA", "--fail", "*img_00000003.jpg:13"}));
  auto open_errno = [&](const std::string& relpath) {
    int fd = open(InMount(relpath).c_str(), O_RDONLY);
    if (fd >= 0) {
      close(fd);
      return 0;
    }
    return errno;
  };
  EXPECT_EQ(open_errno("class_0001/img_00000020.jpg"), EIO);
  EXPECT_EQ(open_errno("class_0000/img_00000003.jpg"), EACCES);
  EXPECT_EQ(open_errno("class_0000/img_00000004.jpg"), 0);
  EXPECT_EQ(open_errno("class_0003/img_00000079.jpg"), 0);

  // A read: rule lets open succeed and fails every read.
  int fd = open(InMount("class_0002/img_00000040.jpg").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0) << strerror(errno);
  char buf[4096];
  errno = 0;
  EXPECT_LT(read(fd, buf, sizeof(buf)), 0);
  EXPECT_EQ(errno, ENODATA);
  close(fd);
  // Unmatched files still read correctly.
  std::vector<SyntheticFile> fine(files_.begin(), files_.begin() + 3);
  EXPECT_TRUE(ReadFiles(mnt_, fine, 1, true).ok());
}

// A per-file hang: opens (or reads) of the matching files wait, the others answer at once, even
// while a slow open is in flight.
TEST_F(PfsEmuTest, SlowRulesDelayOnlyTheMatchingFiles) {
  ASSERT_NO_FATAL_FAILURE(
      Mount({"--slow", "class_0001/*:1500", "--slow", "read:class_0002/*:300"}));
  auto slow_open = std::async(std::launch::async, [&] {
    auto start = Clock::now();
    int fd = open(InMount(files_[20].relpath).c_str(), O_RDONLY);  // class_0001
    if (fd >= 0) close(fd);
    return std::make_pair(fd >= 0, SecondsSince(start));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  auto start = Clock::now();
  int fd = open(InMount(files_[0].relpath).c_str(), O_RDONLY);  // class_0000
  ASSERT_GE(fd, 0);
  close(fd);
  EXPECT_LT(SecondsSince(start), 0.5);
  auto [opened, seconds] = slow_open.get();
  EXPECT_TRUE(opened);
  EXPECT_GE(seconds, 1.5 * 0.95);
  fd = open(InMount(files_[40].relpath).c_str(), O_RDONLY);  // class_0002
  ASSERT_GE(fd, 0);
  char buf[4096];
  start = Clock::now();
  EXPECT_EQ(pread(fd, buf, sizeof(buf), 0), static_cast<ssize_t>(sizeof(buf)));
  EXPECT_GE(SecondsSince(start), 0.3 * 0.95);
  close(fd);
}

TEST_F(PfsEmuTest, ConcurrentOpensOverlapTheirLatency) {
  constexpr double kLatency = 0.020;
  ASSERT_NO_FATAL_FAILURE(Mount({"--open-latency", "20"}));
  std::vector<std::string> paths;
  for (size_t i = 0; i < 64; ++i) paths.push_back(InMount(files_[i].relpath));
  auto burst = TimeConcurrentOpens(paths);
  ASSERT_TRUE(burst.ok()) << burst.status().message();
  // Every open pays the latency...
  EXPECT_GE(burst->slowest_seconds, kLatency * 0.95);
  // ...but they overlap: far below 64 x 20 ms = 1.28 s (8x the latency allows a loaded machine).
  EXPECT_LT(burst->wall_seconds, 8 * kLatency) << "wall " << burst->wall_seconds << " s";
}

TEST_F(PfsEmuTest, AggregateBandwidthCapIsHonoured) {
  ASSERT_NO_FATAL_FAILURE(Mount({"--bandwidth", "20"}));
  auto start = Clock::now();
  // Two readers of 10 MB each share the 20 MB/s cap: 20 MB take about 1 s.
  std::vector<SyntheticFile> big = {{"big.bin", 20'000'000}};
  auto read = ReadFiles(mnt_, big, 1, true);
  ASSERT_TRUE(read.ok()) << read.status().message();
  double elapsed = SecondsSince(start);
  EXPECT_GE(elapsed, 0.8) << "20 MB at 20 MB/s";
  EXPECT_EQ(read->bytes, 20'000'000u);
}

TEST_F(PfsEmuTest, AggregateCapIsSharedAcrossFiles) {
  ASSERT_NO_FATAL_FAILURE(Mount({"--bandwidth", "10"}));
  // 40 files of 64 KiB = 2.6 MB from 4 threads at 10 MB/s in total: >= 0.2 s (less the burst).
  std::vector<SyntheticFile> some(files_.begin(), files_.begin() + 40);
  auto start = Clock::now();
  auto read = ReadFiles(mnt_, some, 4, true);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_GE(SecondsSince(start), 0.8 * (40 * 65536) / 10e6);
}

TEST_F(PfsEmuTest, StreamBandwidthCapIsHonoured) {
  ASSERT_NO_FATAL_FAILURE(Mount({"--stream-bandwidth", "20"}));
  std::vector<SyntheticFile> big = {{"big.bin", 20'000'000}};
  auto start = Clock::now();
  auto read = ReadFiles(mnt_, big, 1, true);
  ASSERT_TRUE(read.ok()) << read.status().message();
  EXPECT_GE(SecondsSince(start), 0.8);
}

TEST_F(PfsEmuTest, StatLatencyAppliesToEveryStat) {
  ASSERT_NO_FATAL_FAILURE(Mount({"--stat-latency", "20"}));
  const std::string path = InMount(files_[5].relpath);
  struct stat st;
  ASSERT_EQ(stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_size, static_cast<off_t>(files_[5].size));
  // Zero attribute and entry timeouts: the kernel asks again every time, so repeated stats of
  // the same file are all slow (each costs a lookup per path component plus a getattr).
  for (int i = 0; i < 10; ++i) {
    auto start = Clock::now();
    ASSERT_EQ(stat(path.c_str(), &st), 0);
    EXPECT_GE(SecondsSince(start), 0.020 * 0.95) << "stat " << i;
  }
}

TEST_F(PfsEmuTest, ReadLatencyAppliesToEachReadRequest) {
  ASSERT_NO_FATAL_FAILURE(Mount({"--read-latency", "20"}));
  int fd = open(InMount(files_[0].relpath).c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  char buf[4096];
  for (int i = 0; i < 5; ++i) {
    auto start = Clock::now();
    // Direct I/O: each 4 KiB read is its own request, never served from the page cache.
    ASSERT_EQ(pread(fd, buf, sizeof(buf), i * 4096), static_cast<ssize_t>(sizeof(buf)));
    EXPECT_GE(SecondsSince(start), 0.020 * 0.95) << "read " << i;
  }
  close(fd);
}

TEST_F(PfsEmuTest, UnmountEndsTheDaemon) {
  ASSERT_NO_FATAL_FAILURE(Mount({}));
  pid_t pid = DaemonPid(mnt_);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(testing::Run({"fusermount3", "-u", mnt_}).exit_code, 0);
  // Gone = no such process, or a zombie waiting for init (this VM's init reaps slowly).
  auto exited = [pid] {
    if (kill(pid, 0) != 0) return true;
    std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    size_t paren = stat.rfind(')');
    return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z';
  };
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = exited();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(gone) << "daemon " << pid << " still running after unmount";
  EXPECT_FALSE(IsFuseMounted(mnt_));
}

TEST_F(PfsEmuTest, TerminationSignalUnmounts) {
  ASSERT_NO_FATAL_FAILURE(Mount({}));
  pid_t pid = DaemonPid(mnt_);
  ASSERT_GT(pid, 0);
  ASSERT_EQ(kill(pid, SIGTERM), 0);
  for (int i = 0; i < 100 && IsFuseMounted(mnt_); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(IsFuseMounted(mnt_));
}

TEST_F(PfsEmuTest, ForegroundServesUntilUnmountedThenExitsZero) {
  guard_ = std::make_unique<MountGuard>(mnt_);
  CommandResult served;
  std::thread daemon([&] {
    served = testing::Run({ClairfsBin(), "pfs-emu", backing_, mnt_, "--foreground"}, 60);
  });
  bool mounted = false;
  for (int i = 0; i < 200 && !mounted; ++i) {
    mounted = IsFuseMounted(mnt_);
    if (!mounted) std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  if (mounted) {
    std::vector<SyntheticFile> some(files_.begin(), files_.begin() + 5);
    EXPECT_TRUE(ReadFiles(mnt_, some, 1, true).ok());
    EXPECT_EQ(testing::Run({"fusermount3", "-u", mnt_}).exit_code, 0);
  }
  daemon.join();  // Run() returns when the foreground daemon exits (or after its timeout)
  ASSERT_TRUE(mounted);
  EXPECT_EQ(served.exit_code, 0) << served.err;
}

// Each failure prints exactly one line naming the problem and leaves no mount and no daemon.
TEST_F(PfsEmuTest, FailuresPrintOneLineAndLeaveNothingMounted) {
  testing::WriteFile(tmp_ / "full/existing", "x");
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string message;
    std::string mountpoint;
  } cases[] = {
      {{tmp_ / "missing", mnt_}, 1, "backing directory", mnt_},
      // Each --fail takes exactly one value, so options may come before the positionals.
      {{"--fail", "x:EIO", tmp_ / "missing", mnt_}, 1, "backing directory", mnt_},
      {{backing_ + "/big.bin", mnt_}, 1, "is not a directory", mnt_},
      {{backing_, tmp_ / "full"}, 1, "not an empty directory", tmp_ / "full"},
      {{backing_, tmp_ / "nowhere"}, 1, "not an empty directory", tmp_ / "nowhere"},
      {{backing_, mnt_, "--fail", "x:EWHAT"}, 2, "invalid errno", mnt_},
      {{backing_, mnt_, "--open-latency", "soon"}, 2, "invalid latency", mnt_},
  };
  for (const auto& c : cases) {
    std::vector<std::string> argv = {ClairfsBin(), "pfs-emu"};
    argv.insert(argv.end(), c.args.begin(), c.args.end());
    MountGuard guard(c.mountpoint);
    CommandResult r = testing::Run(argv, 60);
    EXPECT_EQ(r.exit_code, c.exit_code) << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_FALSE(IsFuseMounted(c.mountpoint));
    EXPECT_EQ(DaemonPid(c.mountpoint), -1);
  }
}

}  // namespace
}  // namespace clairfs
