// A daemon asked to stop (SIGTERM) while a reader's open waits on a backing store that hangs: the
// mount is detached at once (new opens and listings do not queue behind the hung one), and the
// hung reader gets an error within the stop deadline instead of waiting for the backing store
// (fs/daemon.cc, kStopGraceSeconds = 3).
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <future>
#include <string>

#include <gtest/gtest.h>

#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(StopTest, ASignalDetachesAtOnceAndNoReaderWaitsOnAHungBackingStore) {
  TempDir dir;
  const std::string data = dir / "data", pfs = dir / "pfs", mnt = dir / "mnt";
  WriteFile(data + "/hung", "bytes behind a hung open");
  WriteFile(data + "/other", "other");
  MakeDirs(pfs);
  MakeDirs(mnt);
  MountGuard pfs_guard(pfs);
  // Every open of the emulated PFS takes 20 s: longer than any deadline below.
  CommandResult emu = testing::Run({ClairfsBin(), "pfs-emu", data, pfs, "--open-latency", "20000"});
  ASSERT_EQ(emu.exit_code, 0) << emu.err;
  ClairfsMount mount(pfs, mnt, dir / "cache");
  // /dev/fuse: the io_uring form of this is FuseUringTest's (it sets the kernel's parameter).
  ASSERT_EQ(mount.Mount({"--fuse-uring", "off", "--no-read-through"}).exit_code, 0);
  const pid_t daemon = DaemonPid(mnt);
  ASSERT_GT(daemon, 0);

  auto start = std::chrono::steady_clock::now();
  auto reader = std::async(std::launch::async, [&] {
    int fd = open((mnt + "/hung").c_str(), O_RDONLY);
    const int err = fd < 0 ? errno : 0;
    if (fd >= 0) close(fd);
    return std::make_pair(err, SecondsSince(start));
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the open is in the daemon
  ASSERT_EQ(kill(daemon, SIGTERM), 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  // New requests: the mountpoint is the empty directory again, at once.
  auto listed = std::chrono::steady_clock::now();
  CommandResult ls = testing::Run({"ls", "-A", mnt}, 10);
  EXPECT_LT(SecondsSince(listed), 1.0);
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_EQ(ls.out, "");
  EXPECT_FALSE(IsFuseMounted(mnt));

  // The reader of the hung file: an error within the deadline (3 s) plus slack, not 20 s.
  ASSERT_EQ(reader.wait_for(std::chrono::seconds(8)), std::future_status::ready)
      << "the reader still waits on the hung backing store";
  auto [err, seconds] = reader.get();
  EXPECT_NE(err, 0);
  EXPECT_LT(seconds, 7.0);
  std::string log = ReadFile(dir / "cache" + "/daemon.log");
  EXPECT_NE(log.find("stopping (Terminated): detaching"), std::string::npos) << log;
  EXPECT_NE(log.find("ending the FUSE connection and exiting now"), std::string::npos) << log;
}

TEST(StopTest, AQuietStopNeedsNoDeadline) {
  TempDir dir;
  const std::string data = dir / "data", mnt = dir / "mnt";
  WriteFile(data + "/a", "a");
  MakeDirs(mnt);
  ClairfsMount mount(data, mnt, dir / "cache");
  ASSERT_EQ(mount.Mount().exit_code, 0);
  EXPECT_EQ(ReadFile(mnt + "/a"), "a");
  const pid_t daemon = DaemonPid(mnt);
  ASSERT_GT(daemon, 0);
  ASSERT_EQ(kill(daemon, SIGTERM), 0);
  for (int i = 0; i < 100 && kill(daemon, 0) == 0; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_NE(kill(daemon, 0), 0) << "the daemon did not exit within 5 s";
  EXPECT_FALSE(IsFuseMounted(mnt));
  std::string log = ReadFile(dir / "cache" + "/daemon.log");
  EXPECT_EQ(log.find("still stopping after"), std::string::npos) << log;
}

}  // namespace
}  // namespace clairfs::testing
