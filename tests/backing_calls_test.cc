// Hung backing-store opens must not tie up the daemon's request threads (docs/RELIABILITY.md,
// backing store faults, finding 3; fs/fuse/backing_calls.h). Real mounts over `clairfs pfs-emu`
// whose opens of some files hang: with the fewest request threads allowed (4) and three times as
// many readers waiting on hung opens, other readers' lookups, listings and reads of staged files
// are answered within 2 s each; a daemon stopped while calls hang leaves no reader waiting past
// the stop tests' bound; and a reader interrupted while its call waits for a thread gets EINTR
// without the backing store being asked. Every mount here uses /dev/fuse (`--fuse-uring off`):
// requests that arrive over io_uring are answered on their ring threads, never by the pool (the
// README's --backing-threads), so these properties are the /dev/fuse transport's.
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <pthread.h>
#include <algorithm>
#include <chrono>
#include <future>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

constexpr int kRequestThreads = 4;                 // the fewest --request-threads allows
constexpr int kHungOpeners = 3 * kRequestThreads;  // readers waiting on hung opens
constexpr double kBoundSeconds = 2.0;              // for each call of the other readers

// Opens and reads `path` whole; the errno of the first failure (0: none), the bytes and seconds.
struct ReadResult {
  int error = 0;
  std::string bytes;
  double seconds = 0;
};
ReadResult OpenAndRead(const std::string& path) {
  ReadResult r;
  const auto start = Clock::now();
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) {
    r.error = errno;
  } else {
    char buf[65536];
    for (;;) {
      ssize_t n = read(fd, buf, sizeof(buf));
      if (n < 0) {
        r.error = errno;
        break;
      }
      if (n == 0) break;
      r.bytes.append(buf, static_cast<size_t>(n));
    }
    close(fd);
  }
  r.seconds = SecondsSince(start);
  return r;
}

class BackingCallsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    data_ = dir_ / "data";
    pfs_ = dir_ / "pfs";
    mnt_ = dir_ / "mnt";
    for (int i = 0; i < kHungOpeners; ++i) {
      const std::string name = "hung/h" + std::to_string(i) + ".bin";
      contents_[name] = RandomBytes(3000 + 17 * i, 100 + i);
    }
    // Staged before the test: read while the others hang.
    for (int i = 0; i < 8; ++i) {
      contents_["staged/s" + std::to_string(i) + ".bin"] = RandomBytes(20000 + i, 200 + i);
    }
    // Never looked up or listed before the hang: LOOKUP and READDIR reach the daemon then.
    for (int d = 0; d < 10; ++d) {
      for (int i = 0; i < 3; ++i) {
        contents_["d" + std::to_string(d) + "/f" + std::to_string(i) + ".bin"] = "x";
      }
    }
    for (const auto& [rel, bytes] : contents_) WriteFile(data_ + "/" + rel, bytes);
    MakeDirs(pfs_);
    MakeDirs(mnt_);
  }

  // Mounts the emulator with `flags` (its guard unmounts it last).
  void MountEmulator(const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {ClairfsBin(), "pfs-emu", data_, pfs_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    CommandResult r = testing::Run(argv, 60);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    pfs_guard_.set_pid(DaemonPid(pfs_));
  }

  TempDir dir_;
  std::string data_, pfs_, mnt_;
  std::map<std::string, std::string> contents_;
  MountGuard pfs_guard_{dir_ / "pfs"};  // declared before every clairfs mount: unmounted last
};

TEST_F(BackingCallsTest, HungOpensBeyondTheRequestThreadsStallNoOtherReader) {
  constexpr int kHangMs = 8000;
  ASSERT_NO_FATAL_FAILURE(MountEmulator({"--slow", "hung/*:" + std::to_string(kHangMs)}));
  ClairfsMount mount(pfs_, mnt_, dir_ / "cache");
  // No list-ahead: the kernel learns the names through LOOKUPs that reach the daemon.
  ASSERT_EQ(mount
                .Mount({"--fuse-uring", "off", "--no-read-through", "--list-ahead", "off",
                        "--request-threads", std::to_string(kRequestThreads)})
                .exit_code,
            0);
  CommandResult staged = testing::Run({ClairfsBin(), "stage", mnt_, "staged", "--wait"}, 60);
  ASSERT_EQ(staged.exit_code, 0) << staged.err;

  const auto start = Clock::now();
  std::vector<std::future<ReadResult>> hung;
  for (int i = 0; i < kHungOpeners; ++i) {
    hung.push_back(
        std::async(std::launch::async, OpenAndRead, mnt_ + "/hung/h" + std::to_string(i) + ".bin"));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // every open waits in the daemon

  // Meanwhile: lookups (stat of names never looked up), listings (directories never listed) and
  // reads of staged files (an OPEN each), one after another, each within the bound.
  double longest = 0;
  std::string slowest;
  auto timed = [&](const std::string& what, const std::function<bool()>& call) {
    const auto t = Clock::now();
    const bool ok = call();
    const double s = SecondsSince(t);
    EXPECT_TRUE(ok) << what;
    EXPECT_LT(s, kBoundSeconds) << what << " took " << s << " s while opens hang";
    if (s > longest) {
      longest = s;
      slowest = what;
    }
  };
  int calls = 0;
  for (int round = 0; round < 10 && SecondsSince(start) < kHangMs / 1000.0 - 2; ++round) {
    const std::string dir = mnt_ + "/d" + std::to_string(round);
    timed("stat " + dir + "/f0.bin", [&] {
      struct stat st;
      return stat((dir + "/f0.bin").c_str(), &st) == 0 && st.st_size == 1;
    });
    timed("ls " + dir, [&] {
      CommandResult ls = testing::Run({"ls", dir}, 30);
      return ls.exit_code == 0 && ls.out == "f0.bin\nf1.bin\nf2.bin\n";
    });
    const std::string rel = "staged/s" + std::to_string(round % 8) + ".bin";
    timed("read " + rel, [&] {
      ReadResult r = OpenAndRead(mnt_ + "/" + rel);
      return r.error == 0 && r.bytes == contents_[rel];
    });
    calls += 3;
  }
  EXPECT_GE(calls, 9);
  // The hung opens were all in flight on backing-call threads, none on a request thread.
  nlohmann::json status = mount.Status();
  const nlohmann::json calls_json = status.value("backing_calls", nlohmann::json::object());
  EXPECT_EQ(calls_json.value("state", ""), "on") << status.dump();
  EXPECT_GE(calls_json.value("in_flight", 0), kHungOpeners) << status.dump();
  EXPECT_GE(calls_json.value("threads", 0), kHungOpeners) << status.dump();
  EXPECT_GE(status.value("lookups", 0), 10) << status.dump();  // the stats reached the daemon

  // The hung readers get their bytes once the backing store answers, not much later.
  for (int i = 0; i < kHungOpeners; ++i) {
    ASSERT_EQ(hung[i].wait_for(std::chrono::seconds(30)), std::future_status::ready);
    ReadResult r = hung[i].get();
    const std::string rel = "hung/h" + std::to_string(i) + ".bin";
    EXPECT_EQ(r.error, 0) << rel;
    EXPECT_TRUE(r.bytes == contents_[rel]) << rel;
    EXPECT_LT(r.seconds, kHangMs / 1000.0 + 4) << rel;
  }
  status = mount.Status();
  const nlohmann::json after = status.value("backing_calls", nlohmann::json::object());
  EXPECT_GE(after.value("deferred", 0), kHungOpeners) << status.dump();
  EXPECT_GE(after.value("max_in_flight", 0), kHungOpeners) << status.dump();
  EXPECT_EQ(after.value("queued", -1), 0) << status.dump();
  EXPECT_EQ(after.value("cancelled", -1), 0) << status.dump();
  RecordProperty("calls", calls);
  RecordProperty("longest_call_ms", static_cast<int>(longest * 1000));
  std::printf(
      "[ figures  ] %d calls of other readers while %d opens hung on %d request threads: "
      "longest %.3f s (%s)\n",
      calls, kHungOpeners, kRequestThreads, longest, slowest.c_str());
  EXPECT_EQ(mount.Umount().exit_code, 0);
}

TEST_F(BackingCallsTest, AStopWhileCallsHangAndQueueLeavesNoReaderWaiting) {
  // Every open of the emulated PFS takes 20 s: longer than any bound below. Four backing-call
  // threads: eight of the twelve calls wait in the pool's queue when the daemon is stopped.
  ASSERT_NO_FATAL_FAILURE(MountEmulator({"--open-latency", "20000"}));
  ClairfsMount mount(pfs_, mnt_, dir_ / "cache");
  ASSERT_EQ(mount
                .Mount({"--fuse-uring", "off", "--no-read-through", "--request-threads",
                        std::to_string(kRequestThreads), "--backing-threads", "4"})
                .exit_code,
            0);
  const pid_t daemon = DaemonPid(mnt_);
  ASSERT_GT(daemon, 0);
  const auto start = Clock::now();
  std::vector<std::future<ReadResult>> hung;
  for (int i = 0; i < kHungOpeners; ++i) {
    hung.push_back(
        std::async(std::launch::async, OpenAndRead, mnt_ + "/hung/h" + std::to_string(i) + ".bin"));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(800));
  nlohmann::json status = mount.Status();
  const nlohmann::json calls = status.value("backing_calls", nlohmann::json::object());
  EXPECT_EQ(calls.value("threads", 0), 4) << status.dump();
  EXPECT_EQ(calls.value("queued", 0), kHungOpeners - 4) << status.dump();

  const auto stopped = Clock::now();
  ASSERT_EQ(kill(daemon, SIGTERM), 0);
  // The queued calls are answered at once; the four running ones by the stop deadline (3 s).
  std::vector<double> answered;
  for (int i = 0; i < kHungOpeners; ++i) {
    ASSERT_EQ(hung[i].wait_for(std::chrono::seconds(8)), std::future_status::ready)
        << "a reader still waits on the hung backing store";
    ReadResult r = hung[i].get();
    EXPECT_NE(r.error, 0);
    // When this reader got its answer (its own clock: the futures are collected in order).
    answered.push_back(std::chrono::duration<double>(start - stopped).count() + r.seconds);
  }
  std::sort(answered.begin(), answered.end());
  EXPECT_LT(answered.back(), 7.0);  // the bound of StopTest
  // At least the queued calls were answered well before the deadline.
  EXPECT_LT(answered[kHungOpeners - 4 - 1], 1.5);
  std::printf(
      "[ figures  ] stop while %d calls hung (4 running, %d queued): answered within "
      "%.3f s (queued: %.3f s) of SIGTERM, %.3f s after the first open\n",
      kHungOpeners, kHungOpeners - 4, answered.back(), answered[kHungOpeners - 4 - 1],
      SecondsSince(start));
  // (The daemon's threads still in the emulator's open leave when it answers, 20 s after the
  // opens: the kernel waits for a FUSE request it sent, even at exit; its readers do not.)
  EXPECT_FALSE(IsFuseMounted(mnt_));
  std::string log = ReadFile(dir_ / "cache" + "/daemon.log");
  EXPECT_NE(log.find("stopping (Terminated): detaching"), std::string::npos) << log;
}

// The emulator's count of opens (user.pfs_emu.counters on its root); -1 if unreadable.
long EmulatorOpens(const std::string& pfs) {
  char buf[256];
  const ssize_t n = getxattr(pfs.c_str(), "user.pfs_emu.counters", buf, sizeof(buf));
  if (n <= 0) return -1;
  auto counters = nlohmann::json::parse(std::string(buf, static_cast<size_t>(n)), nullptr, false);
  return counters.is_object() ? counters.value("opens", -1L) : -1;
}

void IgnoreSignal(int) {}

TEST_F(BackingCallsTest, AReaderInterruptedWhileItsCallWaitsForAThreadGetsEintr) {
  // Opens of hung/* take 4 s; one backing-call thread: the second open waits in the pool's queue.
  constexpr int kHangMs = 4000;
  ASSERT_NO_FATAL_FAILURE(MountEmulator({"--slow", "hung/*:" + std::to_string(kHangMs)}));
  ClairfsMount mount(pfs_, mnt_, dir_ / "cache");
  ASSERT_EQ(
      mount.Mount({"--fuse-uring", "off", "--no-read-through", "--backing-threads", "1"}).exit_code,
      0);
  ASSERT_EQ(EmulatorOpens(pfs_), 0);
  // A handler without SA_RESTART: the signal interrupts the waiting open (the kernel then sends
  // the daemon an INTERRUPT for it) instead of ending the process.
  struct sigaction sa {
  }, old{};
  sa.sa_handler = IgnoreSignal;
  sigemptyset(&sa.sa_mask);
  ASSERT_EQ(sigaction(SIGUSR1, &sa, &old), 0);

  auto first = std::async(std::launch::async, OpenAndRead, mnt_ + "/hung/h0.bin");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // holds the one thread
  std::promise<pthread_t> waiter_id;
  ReadResult second;
  std::thread waiter([&] {
    waiter_id.set_value(pthread_self());
    second = OpenAndRead(mnt_ + "/hung/h1.bin");
  });
  const pthread_t waiter_thread = waiter_id.get_future().get();
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // its OPEN waits in the queue
  nlohmann::json status = mount.Status();
  EXPECT_EQ(status["backing_calls"].value("queued", 0), 1) << status.dump();
  ASSERT_EQ(pthread_kill(waiter_thread, SIGUSR1), 0);
  waiter.join();
  ASSERT_EQ(first.wait_for(std::chrono::seconds(30)), std::future_status::ready);
  const ReadResult r = first.get();
  sigaction(SIGUSR1, &old, nullptr);

  EXPECT_EQ(r.error, 0);
  EXPECT_TRUE(r.bytes == contents_["hung/h0.bin"]);
  // The interrupted open is answered EINTR when the thread frees, and never reaches the backing
  // store: the emulator saw the first open only.
  EXPECT_EQ(second.error, EINTR) << strerror(second.error);
  EXPECT_LT(second.seconds, kHangMs / 1000.0 + 3);
  EXPECT_EQ(EmulatorOpens(pfs_), 1);
  EXPECT_EQ(mount.Umount().exit_code, 0);
}

}  // namespace
}  // namespace clairfs::testing
