// Integration tests of the FUSE-over-io_uring transport (fs/fuse_uring_transport.h) on real
// mounts: byte-exact reads (with and without passthrough) whose requests the status counters
// prove came over the ring, concurrent readers, kill -9 and remount, and the fallback to
// /dev/fuse when the kernel does not offer the ring (auto) or the mount failing (on).
//
// The kernel offers the ring only when the fuse module parameter enable_uring is Y. Each test
// sets the value it needs through UringParameter, which restores the previous value when the
// test ends (it is declared before the mounts, so it is restored after they are unmounted).
// The parameter is machine-wide, so ctest runs these tests alone (RUN_SERIAL in
// tests/CMakeLists.txt). Tests skip, saying why, when the parameter cannot be written (not root,
// no fuse module parameter). A killed test binary cannot restore it: check
// /sys/module/fuse/parameters/enable_uring after an aborted run.
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <thread>

#include <gtest/gtest.h>

#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

constexpr const char* kParameter = "/sys/module/fuse/parameters/enable_uring";

// Sets enable_uring for the life of the object and restores the previous value.
class UringParameter {
 public:
  explicit UringParameter(bool enable) {
    std::ifstream in(kParameter);
    if (!(in >> previous_)) {
      error_ = std::string(kParameter) + " is not readable (fuse without io_uring support?)";
      return;
    }
    if (!Write(enable ? "Y" : "N")) {
      error_ = std::string("cannot write ") + kParameter + " (needs root)";
      return;
    }
    set_ = true;
  }
  ~UringParameter() {
    if (set_) Write(previous_);
  }
  UringParameter(const UringParameter&) = delete;
  UringParameter& operator=(const UringParameter&) = delete;
  // Empty when the parameter was set.
  const std::string& error() const { return error_; }

 private:
  static bool Write(const std::string& value) {
    std::ofstream out(kParameter);
    out << value << "\n";
    out.flush();
    return static_cast<bool>(out);
  }
  std::string previous_;
  std::string error_;
  bool set_ = false;
};

nlohmann::json Transport(ClairfsMount& m) {
  return m.Status().value("fuse_transport", nlohmann::json::object());
}

uint64_t RingRequests(ClairfsMount& m) { return Transport(m).value("ring_requests", uint64_t{0}); }

class FuseUringTest : public MountDirsTest {};

#define SKIP_WITHOUT(param) \
  if (!(param).error().empty()) GTEST_SKIP() << "enable_uring: " << (param).error()

TEST_F(FuseUringTest, ServesReadsOverTheRingWithAndWithoutPassthrough) {
  UringParameter param(true);
  SKIP_WITHOUT(param);
  auto files = MakeFiles(backing_, 30, 200000, 1);
  for (const char* passthrough : {"off", "on"}) {
    SCOPED_TRACE(std::string("--passthrough ") + passthrough);
    ClairfsMount m(backing_, mnt_, cache_);
    auto r = m.Mount({"--fuse-uring", "on", "--passthrough", passthrough, "--sched", "batch"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    nlohmann::json t = Transport(m);
    ASSERT_EQ(t.value("state", ""), "io_uring") << t.dump();
    EXPECT_EQ(t.value("queues", 0), get_nprocs_conf());
    EXPECT_EQ(t.value("threads_per_queue", 0), 2);
    // The ring threads serve requests: they run the request threads' policy (--sched batch).
    int ring_threads = 0;
    for (const auto& entry :
         std::filesystem::directory_iterator("/proc/" + std::to_string(m.pid()) + "/task")) {
      std::string comm = ReadFile(entry.path().string() + "/comm");
      if (comm != "clairfs-ring\n") continue;
      ++ring_threads;
      EXPECT_EQ(sched_getscheduler(std::stoi(entry.path().filename().string())), SCHED_BATCH);
    }
    EXPECT_EQ(ring_threads, 2 * get_nprocs_conf());
    const uint64_t before = RingRequests(m);
    for (const auto& [rel, content] : files) {
      EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
      struct stat st;
      ASSERT_EQ(stat((mnt_ + "/" + rel).c_str(), &st), 0);
      EXPECT_EQ(static_cast<size_t>(st.st_size), content.size());
    }
    // At least the OPEN and RELEASE of every file came over the ring.
    EXPECT_GE(RingRequests(m) - before, 2 * files.size());
    t = Transport(m);
    EXPECT_EQ(t.value("ring_unanswered", uint64_t{1}), 0u) << t.dump();
    if (std::string(passthrough) == "on") {
      EXPECT_EQ(m.Status()["passthrough"].value("state", ""), "on");
    }
    EXPECT_EQ(m.Umount().exit_code, 0);
    EXPECT_FALSE(IsFuseMounted(mnt_));
  }
}

TEST_F(FuseUringTest, ConcurrentReadersOnEveryCpu) {
  UringParameter param(true);
  SKIP_WITHOUT(param);
  auto files = MakeFiles(backing_, 48, 120000, 2);
  ClairfsMount m(backing_, mnt_, cache_);
  // One thread per queue: 8 readers contend for each CPU's single entry.
  auto r = m.Mount({"--fuse-uring", "on", "--fuse-uring-threads", "1"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Transport(m).value("threads_per_queue", 0), 1);
  std::vector<std::pair<std::string, std::string>> list(files.begin(), files.end());
  std::atomic<int> wrong{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 8; ++t) {
    readers.emplace_back([&, t] {
      for (int round = 0; round < 3; ++round) {
        for (size_t i = static_cast<size_t>(t); i < list.size(); i += 3) {
          if (ReadFile(mnt_ + "/" + list[i].first) != list[i].second) ++wrong;
        }
      }
    });
  }
  for (auto& th : readers) th.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(Transport(m).value("ring_unanswered", uint64_t{1}), 0u);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST_F(FuseUringTest, KillNineThenRemount) {
  UringParameter param(true);
  SKIP_WITHOUT(param);
  auto files = MakeFiles(backing_, 10, 100000, 3);
  {
    ClairfsMount m(backing_, mnt_, cache_);
    auto r = m.Mount({"--fuse-uring", "on"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    for (const auto& [rel, content] : files) ASSERT_EQ(ReadFile(mnt_ + "/" + rel), content);
    ASSERT_GT(m.pid(), 0);
    ASSERT_EQ(kill(m.pid(), SIGKILL), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }  // the guard unmounts the dead mount
  ASSERT_FALSE(IsFuseMounted(mnt_));
  ClairfsMount m(backing_, mnt_, cache_);
  auto r = m.Mount({"--fuse-uring", "on"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& [rel, content] : files) EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
  EXPECT_GT(RingRequests(m), 0u);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// The kernel keeps a connection's ring once it was set up, whatever enable_uring says later
// (Linux 6.18 has the fix; earlier kernels refuse the ring's commands, and the reads below
// would time out). The admin can thus turn the parameter off without breaking live mounts.
TEST_F(FuseUringTest, LiveRingMountKeepsServingAfterTheParameterGoesBackToN) {
  UringParameter param(true);
  SKIP_WITHOUT(param);
  auto files = MakeFiles(backing_, 12, 80000, 6);
  ClairfsMount m(backing_, mnt_, cache_);
  auto r = m.Mount({"--fuse-uring", "on"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Transport(m).value("state", ""), "io_uring");
  UringParameter off(false);
  ASSERT_TRUE(off.error().empty()) << off.error();
  const uint64_t before = RingRequests(m);
  for (const auto& [rel, content] : files) {
    // In a child with a deadline: on a kernel that refuses the commands the read would hang.
    CommandResult c = testing::Run({"cmp", backing_ + "/" + rel, mnt_ + "/" + rel}, 20);
    EXPECT_EQ(c.exit_code, 0) << rel << ": " << c.err;
  }
  EXPECT_GE(RingRequests(m) - before, 2 * files.size());
  EXPECT_EQ(Transport(m).value("ring_unanswered", uint64_t{1}), 0u);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// A request served over the ring waits on its ring thread, not on a backing-call thread: a
// SIGTERM while a backing open hangs must still end the connection by the stop deadline (3 s),
// so its reader gets an error rather than waiting for the backing store (20 s here). Until the
// daemon joined the ring threads before letting go of the connection, the reader waited 20 s.
TEST_F(FuseUringTest, ASignalWhileARingRequestHangsEndsItsReadersWaitByTheDeadline) {
  UringParameter param(true);
  SKIP_WITHOUT(param);
  WriteFile(backing_ + "/hung", "bytes behind a hung open");
  const std::string pfs = dir_ / "pfs";
  MakeDirs(pfs);
  MountGuard pfs_guard(pfs);
  CommandResult emu =
      testing::Run({ClairfsBin(), "pfs-emu", backing_, pfs, "--open-latency", "20000"});
  ASSERT_EQ(emu.exit_code, 0) << emu.err;
  ClairfsMount m(pfs, mnt_, cache_);
  auto r = m.Mount({"--fuse-uring", "on", "--no-read-through"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(Transport(m).value("state", ""), "io_uring");
  const pid_t daemon = m.pid();
  ASSERT_GT(daemon, 0);
  const auto start = std::chrono::steady_clock::now();
  auto reader = std::async(std::launch::async, [&] {
    int fd = open((mnt_ + "/hung").c_str(), O_RDONLY | O_CLOEXEC);
    const int err = fd < 0 ? errno : 0;
    if (fd >= 0) close(fd);
    return err;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // the open is in the daemon
  ASSERT_EQ(kill(daemon, SIGTERM), 0);
  ASSERT_EQ(reader.wait_for(std::chrono::seconds(10)), std::future_status::ready)
      << "the reader still waits on the hung backing store";
  EXPECT_NE(reader.get(), 0);
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count(), 8.0);
}

TEST_F(FuseUringTest, AutoFallsBackToDevFuseAndOnFailsWhenNotOffered) {
  UringParameter param(false);
  SKIP_WITHOUT(param);
  auto files = MakeFiles(backing_, 6, 50000, 4);
  {
    ClairfsMount m(backing_, mnt_, cache_);
    auto r = m.Mount({"--fuse-uring", "on"});
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find("enable_uring"), std::string::npos) << r.err;
    EXPECT_FALSE(IsFuseMounted(mnt_));
  }
  ClairfsMount m(backing_, mnt_, cache_);
  auto r = m.Mount();  // auto is the default
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json t = Transport(m);
  EXPECT_EQ(t.value("state", ""), "dev_fuse");
  EXPECT_NE(t.value("reason", "").find("enable_uring"), std::string::npos) << t.dump();
  for (const auto& [rel, content] : files) EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
  EXPECT_EQ(RingRequests(m), 0u);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST_F(FuseUringTest, OffNeverAsksEvenWhenOffered) {
  UringParameter param(true);
  SKIP_WITHOUT(param);
  auto files = MakeFiles(backing_, 4, 50000, 5);
  ClairfsMount m(backing_, mnt_, cache_);
  auto r = m.Mount({"--fuse-uring", "off"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Transport(m).value("state", ""), "dev_fuse");
  for (const auto& [rel, content] : files) EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
  EXPECT_EQ(RingRequests(m), 0u);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

}  // namespace
}  // namespace clairfs::testing
