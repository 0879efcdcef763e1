// Reliability matrix, row "Cache device faults" (docs/RELIABILITY.md). Real mounts whose cache
// sits on a device that fails under them while readers verify every byte and `clairfs stage
// --wait` keeps staging:
//   full_tmpfs       a 4 MiB tmpfs, the dataset (about 96 MB) 24x larger
//   full_ext4        a 64 MiB loop-mounted ext4 (smaller ones: the test of findings 2 and 3)
//   filled_by_other  a 48 MiB ext4 that another process fills to ENOSPC while the mount stages,
//                    then empties
//   removed_umount   the ext4 unmounted under the running mount (umount -l)
//   removed_dead     the ext4 dies (EXT4_IOC_SHUTDOWN: every call on it fails with EIO)
//   removed_rm       the cache directory deleted (rm -rf) under the running mount
//   immutable        chattr -R +i on the cache directory (ext4), later cleared
// Each must serve 0 wrong bytes, hang no reader, keep the daemon serving and unmount cleanly;
// where the cache survives, fsck --verify must find no copy that differs from its backing file.
// Read errors are counted, not refused: with passthrough the kernel reads a staged copy itself,
// so a copy on a dead device fails its reader with EIO (docs/RELIABILITY.md); fsck runs that
// fail are counted too.
//
// Trials: CLAIRFS_RELIABILITY_TRIALS rounds over all the scenarios (unset: 1, the CI form;
// "full": 10). Summary line: RELIABILITY row=cache_device ...
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <functional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/devices.h"
#include "tests/mount_helpers.h"
#include "tests/reliability.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

using Seconds = std::chrono::duration<double>;

// What one scenario saw.
struct FaultRun {
  uint64_t reads = 0, wrong_bytes = 0, read_errors = 0;
  int hung = 0;
  double max_call = 0;
  bool daemon_survived = true, umounted = true;
  uint64_t fsck_findings = 0;  // copies that differ from their backing file
  int fsck_failed = 0;         // fsck runs that did not complete
  std::string errors_text, problem;
};

// How a scenario breaks the device, and whether the cache is still there afterwards.
struct Fault {
  std::function<void()> apply;    // the fault, in the middle of the run
  std::function<void()> recover;  // undone (if it can be) before the last stretch of reads
  bool cache_survives = true;     // fsck --verify afterwards
};

class CacheDeviceReliabilityTest : public MountDirsTest {
 protected:
  void SetUp() override {
    MountDirsTest::SetUp();
    seed_ = ReliabilitySeed();
    // About 96 MB in 150 files: more than every device below.
    files_ = MakeFiles(backing_, 150, 1280 * 1024, seed_);
    for (const auto& [rel, content] : files_) names_.push_back(rel);
  }

  // Mounts with its cache at `cache`, reads and stages for `before` s, applies the fault, reads
  // on for `during` s, recovers, reads `after` s more, then checks the daemon and unmounts.
  FaultRun Run(const std::string& cache, const Fault& fault, uint64_t seed, double before = 1.0,
               double during = 1.5, double after = 1.0) {
    FaultRun run;
    ClairfsMount m(backing_, mnt_, cache);
    CommandResult mounted = m.Mount({"--stage-threads", "4"});
    if (mounted.exit_code != 0) {
      ADD_FAILURE() << "mount failed: " << mounted.err;
      run.umounted = false;
      return run;
    }
    const pid_t daemon = m.pid();
    VerifyingReaders::Options options;
    options.threads = 3;
    options.bound_seconds = 5;
    options.seed = seed;
    options.files = names_;
    VerifyingReaders readers(mnt_, options, VerifyingReaders::Exact(&files_));
    std::atomic<bool> stop{false};
    std::thread stager([&] {
      std::mt19937_64 rng(seed);
      while (!stop) {
        testing::Run({ClairfsBin(), "stage", mnt_, "--wait"}, 60);
        if (rng() % 2 == 0) testing::Run({ClairfsBin(), "evict", mnt_, "--all"}, 60);
      }
    });
    readers.Start();
    std::this_thread::sleep_for(Seconds(before));
    fault.apply();
    std::this_thread::sleep_for(Seconds(during));
    if (fault.recover) fault.recover();
    std::this_thread::sleep_for(Seconds(after));
    readers.Stop([&] { kill(daemon, SIGKILL); });
    stop = true;
    stager.join();
    run.reads = readers.reads();
    run.wrong_bytes = readers.wrong_bytes();
    run.read_errors = readers.errors();
    run.hung = readers.hung();
    run.max_call = readers.max_call_seconds();
    run.errors_text = readers.ErrorsText();
    run.problem = readers.first_wrong();
    run.daemon_survived = kill(daemon, 0) == 0 && m.Status().contains("pid");
    CommandResult unmounted = m.Umount();
    run.umounted = unmounted.exit_code == 0;
    if (!run.umounted) run.problem += " umount: " + unmounted.err;
    if (fault.cache_survives && run.umounted) {
      const FsckVerdict fsck = FsckVerify(cache, backing_);
      if (!fsck.ran) {
        ++run.fsck_failed;
        run.problem += " fsck: " + fsck.output;
      }
      run.fsck_findings += fsck.mismatched;
    }
    return run;
  }

  // Skips (or, under CI, fails when a package is missing) if the device could not be made.
  bool DeviceReady(const LoopExt4Device& device) {
    if (device.error().empty()) return true;
    if (device.missing_tool() && InCi()) {
      ADD_FAILURE() << device.error() << " (CI installs it: .ci/install-deps)";
    } else {
      skipped_ = device.error();
    }
    return false;
  }

  uint64_t seed_ = 0;
  std::map<std::string, std::string> files_;
  std::vector<std::string> names_;
  std::string skipped_;
};

// Finding 1 of the row, fixed: a cache device that dies under staged copies the daemon reads
// itself (passthrough off) costs no reader an error. The first open or read of a dead copy falls
// back to the listed backing file, later opens skip the copies, and status counts the fallbacks.
TEST_F(CacheDeviceReliabilityTest, ADeadDeviceIsReadAroundThroughTheBackingStore) {
  const std::string dev = dir_ / "dev-dead";
  MakeDirs(dev);
  LoopExt4Device ext4(dir_ / "dead-read.img", dev, 64);
  if (!DeviceReady(ext4)) GTEST_SKIP() << skipped_;
  ClairfsMount m(backing_, mnt_, dev + "/cache");
  ASSERT_EQ(m.Mount({"--passthrough", "off"}).exit_code, 0);
  std::vector<std::string> stage = {ClairfsBin(), "stage", mnt_};
  stage.insert(stage.end(), names_.begin(), names_.begin() + 20);
  stage.push_back("--wait");
  CommandResult staged = testing::Run(stage);
  ASSERT_EQ(staged.exit_code, 0) << staged.err;
  ASSERT_TRUE(ext4.Shutdown());
  for (int i = 0; i < 20; ++i) {
    const std::string& rel = names_[static_cast<size_t>(i)];
    EXPECT_EQ(ReadFile(mnt_ + "/" + rel), files_[rel]) << rel;
  }
  EXPECT_GE(m.Status().value("copy_read_fallbacks", uint64_t{0}), 1u);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// Finding 1 with passthrough (the default): the kernel reads staged copies itself and holds them
// between opens, so the daemon reads none of them; its device probe (cache/device_probe.h) notices
// the death within a second, and from then on every open is served from the backing store.
TEST_F(CacheDeviceReliabilityTest, ADeadDeviceUnderPassthroughIsReadAroundOnceTheProbeSeesIt) {
  const std::string dev = dir_ / "dev-dead-pt";
  MakeDirs(dev);
  LoopExt4Device ext4(dir_ / "dead-pt.img", dev, 64);
  if (!DeviceReady(ext4)) GTEST_SKIP() << skipped_;
  ClairfsMount m(backing_, mnt_, dev + "/cache");
  ASSERT_EQ(m.Mount().exit_code, 0);
  std::vector<std::string> stage = {ClairfsBin(), "stage", mnt_};
  stage.insert(stage.end(), names_.begin(), names_.begin() + 20);
  stage.push_back("--wait");
  CommandResult staged = testing::Run(stage);
  ASSERT_EQ(staged.exit_code, 0) << staged.err;
  // Read once through the kernel: with passthrough on, the copies are now held by the kernel.
  for (int i = 0; i < 20; ++i) ReadFile(mnt_ + "/" + names_[static_cast<size_t>(i)]);
  ASSERT_TRUE(ext4.Shutdown());
  std::this_thread::sleep_for(std::chrono::milliseconds(2500));  // two probe intervals and more
  for (int i = 0; i < 20; ++i) {
    const std::string& rel = names_[static_cast<size_t>(i)];
    EXPECT_EQ(ReadFile(mnt_ + "/" + rel), files_[rel]) << rel;
  }
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// Findings 2 and 3 of the row, fixed: a 16 MiB cache device (11 MiB free) mounts and stages,
// since the index's buffers and preallocations are sized for its device; an index that meets
// EPERM (the cache made immutable) fails the evict that met it, serves on, and the daemon stops
// cleanly afterwards, since RocksDB's messages go to the daemon's log and not to a LOG file whose
// failed write made RocksDB abort the process.
TEST_F(CacheDeviceReliabilityTest, ASmallOrImmutableCacheDeviceNeverStopsTheDaemon) {
  const std::string dev = dir_ / "dev-small";
  MakeDirs(dev);
  LoopExt4Device ext4(dir_ / "small.img", dev, 16);
  if (!DeviceReady(ext4)) GTEST_SKIP() << skipped_;
  const std::string cache = dev + "/cache";
  ClairfsMount m(backing_, mnt_, cache);
  CommandResult mounted = m.Mount({"--capacity", "6M"});
  ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
  std::vector<std::string> stage = {ClairfsBin(), "stage", mnt_};
  stage.insert(stage.end(), names_.begin(), names_.begin() + 4);
  stage.push_back("--wait");
  CommandResult staged = testing::Run(stage);
  ASSERT_EQ(staged.exit_code, 0) << staged.err;

  ASSERT_EQ(testing::Run({"chattr", "-R", "+i", cache}).exit_code, 0);
  CommandResult evicted = testing::Run({ClairfsBin(), "evict", mnt_, names_[0]});
  EXPECT_NE(evicted.exit_code, 0);
  EXPECT_NE(evicted.err.find("Operation not permitted"), std::string::npos) << evicted.err;
  for (size_t i = 0; i < 8; ++i) EXPECT_EQ(ReadFile(mnt_ + "/" + names_[i]), files_[names_[i]]);
  ASSERT_EQ(testing::Run({"chattr", "-R", "-i", cache}).exit_code, 0);

  CommandResult unmounted = m.Umount();
  EXPECT_EQ(unmounted.exit_code, 0) << unmounted.err;
  const std::string log = ReadFile(cache + "/daemon.log");
  EXPECT_EQ(log.find("Assertion"), std::string::npos) << log;
  EXPECT_NE(log.find("stopped: "), std::string::npos) << log;
  const FsckVerdict fsck = FsckVerify(cache, backing_);
  EXPECT_TRUE(fsck.ran) << fsck.output;
  EXPECT_EQ(fsck.mismatched, 0u);
}

TEST_F(CacheDeviceReliabilityTest, FullRemovedImmutableAndFilledDevicesServeNoWrongByte) {
  const int trials = ReliabilityTrials(1, 10);
  const auto test_start = std::chrono::steady_clock::now();
  std::mt19937_64 rng(seed_);
  std::map<std::string, FaultRun> totals;
  std::vector<std::string> order;
  auto add = [&](const std::string& name, const FaultRun& run) {
    if (!totals.count(name)) order.push_back(name);
    FaultRun& t = totals[name];
    t.reads += run.reads;
    t.wrong_bytes += run.wrong_bytes;
    t.read_errors += run.read_errors;
    t.hung += run.hung;
    t.max_call = std::max(t.max_call, run.max_call);
    t.daemon_survived = t.daemon_survived && run.daemon_survived;
    t.umounted = t.umounted && run.umounted;
    t.fsck_findings += run.fsck_findings;
    t.fsck_failed += run.fsck_failed;
    if (run.read_errors > 0) t.errors_text = run.errors_text;
    if (t.problem.empty()) t.problem = run.problem;
  };
  const auto nothing = [] {};

  for (int trial = 0; trial < trials && skipped_.empty(); ++trial) {
    const std::string dev = dir_ / ("dev" + std::to_string(trial));
    {
      TmpfsDevice tmpfs(dev, "4m");
      ASSERT_TRUE(tmpfs.error().empty()) << tmpfs.error();
      add("full_tmpfs", Run(dev + "/cache", {nothing, nullptr, true}, rng()));
    }
    {
      LoopExt4Device ext4(dir_ / "full.img", dev, 64);
      if (!DeviceReady(ext4)) break;
      add("full_ext4", Run(dev + "/cache", {nothing, nullptr, true}, rng()));
    }
    {
      LoopExt4Device ext4(dir_ / "filled.img", dev, 48);
      if (!DeviceReady(ext4)) break;
      const std::string filler = dev + "/someone-elses-file";
      add("filled_by_other", Run(dev + "/cache",
                                 {[&] {
                                    // Another process writes until the device is full (dd ends on
                                    // ENOSPC).
                                    Shell("dd if=/dev/zero of=" + filler + " bs=1M 2>/dev/null",
                                          60);
                                  },
                                  [&] { unlink(filler.c_str()); }, true},
                                 rng()));
    }
    {
      LoopExt4Device ext4(dir_ / "umounted.img", dev, 48);
      if (!DeviceReady(ext4)) break;
      add("removed_umount",
          Run(dev + "/cache", {[&] { EXPECT_TRUE(ext4.LazyUnmount()); }, nullptr, false}, rng()));
    }
    {
      LoopExt4Device ext4(dir_ / "dead.img", dev, 48);
      if (!DeviceReady(ext4)) break;
      add("removed_dead",
          Run(dev + "/cache", {[&] { EXPECT_TRUE(ext4.Shutdown()); }, nullptr, false}, rng()));
    }
    {
      const std::string cache = dir_ / ("rmcache" + std::to_string(trial));
      add("removed_rm", Run(cache, {[&] { Shell("rm -rf " + cache); }, nullptr, false}, rng()));
    }
    {
      LoopExt4Device ext4(dir_ / "immutable.img", dev, 48);
      if (!DeviceReady(ext4)) break;
      const std::string cache = dev + "/cache";
      add("immutable", Run(cache,
                           {[&] {
                              EXPECT_EQ(testing::Run({"chattr", "-R", "+i", cache}).exit_code, 0);
                            },
                            [&] {
                              testing::Run({"chattr", "-R", "-i", cache});
                            },
                            true},
                           rng()));
    }
  }
  if (!skipped_.empty()) GTEST_SKIP() << skipped_;

  ReliabilitySummary summary("cache_device", seed_);
  summary.Set("trials", trials);
  uint64_t wrong = 0, errors = 0, findings = 0;
  int hung = 0, crashed = 0, failed_umounts = 0, fsck_failed = 0;
  double max_call = 0;
  for (const auto& name : order) {
    const FaultRun& t = totals[name];
    summary.Set(
        name, "reads:" + std::to_string(t.reads) + "/wrong:" + std::to_string(t.wrong_bytes) +
                  "/errors:" + t.errors_text + "/hung:" + std::to_string(t.hung) +
                  "/fsck:" + std::to_string(t.fsck_findings) +
                  (t.fsck_failed ? "/fsck_failed:" + std::to_string(t.fsck_failed) : "") +
                  (t.daemon_survived ? "" : "/daemon_died") + (t.umounted ? "" : "/umount_failed"));
    wrong += t.wrong_bytes;
    errors += t.read_errors;
    findings += t.fsck_findings;
    fsck_failed += t.fsck_failed;
    hung += t.hung;
    crashed += t.daemon_survived ? 0 : 1;
    failed_umounts += t.umounted ? 0 : 1;
    max_call = std::max(max_call, t.max_call);
    EXPECT_EQ(t.wrong_bytes, 0u) << name << ": " << t.problem;
    EXPECT_EQ(t.hung, 0) << name;
    EXPECT_TRUE(t.daemon_survived) << name << ": the daemon died";
    EXPECT_TRUE(t.umounted) << name << ": " << t.problem;
    EXPECT_EQ(t.fsck_findings, 0u) << name << ": " << t.problem;
  }
  summary.Set("wrong_bytes", wrong);
  summary.Set("read_errors", errors);
  summary.Set("hung_readers", hung);
  summary.Set("daemon_deaths", crashed);
  summary.Set("failed_umounts", failed_umounts);
  summary.Set("fsck_findings", findings);
  summary.Set("fsck_failed", fsck_failed);
  summary.SetMs("max_read_call_ms", max_call);
  summary.SetMs("wall_ms", SecondsSince(test_start));
  summary.Print();
}

}  // namespace
}  // namespace clairfs::testing
