// CacheDeviceLog: a full or lost cache device is logged in a few lines with counts, never a line
// per file: the condition's first failure, at most one count a minute, its end once copies are
// published again. Unit tests on a fake clock; then through a real store and stager, with the
// fault-injecting Env making the device full (free space 0) or lost (every write EIO), on both
// staging engines where the fault reaches them.
#include "cache/device_log.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cache/stager.h"
#include "cache/testing/fault_env.h"
#include "cache/testing/test_store.h"
#include "tests/devices.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

constexpr uint64_t kSecond = 1'000'000'000;

// The default Env with a clock the test moves.
class ClockEnv : public EnvWrapper {
 public:
  ClockEnv() : EnvWrapper(Env::Default()) {}
  uint64_t NowMonotonicNanos() override { return now_.load(); }
  void Advance(uint64_t ns) { now_ += ns; }

 private:
  std::atomic<uint64_t> now_{1000 * kSecond};
};

struct Lines {
  std::mutex mu;
  std::vector<std::string> lines;
  CacheDeviceLog::Sink sink() {
    return [this](LogLevel, const std::string& line) {
      std::lock_guard<std::mutex> lock(mu);
      lines.push_back(line);
    };
  }
  size_t size() {
    std::lock_guard<std::mutex> lock(mu);
    return lines.size();
  }
  std::string at(size_t i) {
    std::lock_guard<std::mutex> lock(mu);
    return lines.at(i);
  }
};

const Status kNoSpace = Status::Error(ENOSPC, "write to cache: No space left on device");
const Status kIoError = Status::Error(EIO, "write to cache: Input/output error");

TEST(CacheDeviceLog, ClassifiesErrors) {
  EXPECT_EQ(CacheDeviceLog::ConditionOf(kNoSpace), DeviceCondition::kFull);
  EXPECT_EQ(CacheDeviceLog::ConditionOf(Status::Error(EDQUOT, "quota")), DeviceCondition::kFull);
  EXPECT_EQ(CacheDeviceLog::ConditionOf(kIoError), DeviceCondition::kLost);
  EXPECT_EQ(CacheDeviceLog::ConditionOf(Status::Error(EROFS, "ro")), DeviceCondition::kLost);
  EXPECT_EQ(CacheDeviceLog::ConditionOf(Status::Error(ENOENT, "gone")), DeviceCondition::kLost);
}

TEST(CacheDeviceLog, OneLineWhenItBeginsThenAtMostOneCountAMinute) {
  ClockEnv clock;
  Lines lines;
  CacheDeviceLog log("/nvme/cache", &clock, lines.sink());
  for (int i = 0; i < 5000; ++i) log.Failed(kNoSpace);  // a pass over a dataset, within a second
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines.at(0).find("cache device full (/nvme/cache)"), std::string::npos) << lines.at(0);
  EXPECT_NE(lines.at(0).find("No space left on device"), std::string::npos) << lines.at(0);
  EXPECT_EQ(log.failures(DeviceCondition::kFull), 5000u);
  EXPECT_TRUE(log.active(DeviceCondition::kFull));

  // Ten minutes of a failure every second: one count line a minute, no more.
  for (int s = 0; s < 600; ++s) {
    clock.Advance(kSecond);
    log.Failed(kNoSpace);
  }
  EXPECT_EQ(lines.size(), 11u);
  EXPECT_NE(lines.at(1).find("still; 5059 files not staged in the last 60 s, 5060 since it began"),
            std::string::npos)
      << lines.at(1);
  EXPECT_NE(lines.at(2).find("still; 60 files not staged in the last 60 s, 5120 since it began"),
            std::string::npos)
      << lines.at(2);
  EXPECT_EQ(log.failures(DeviceCondition::kFull), 5600u);
  // The other condition is its own.
  EXPECT_FALSE(log.active(DeviceCondition::kLost));
}

TEST(CacheDeviceLog, EndsOnceCopiesArePublishedForAMinuteWithTheCount) {
  ClockEnv clock;
  Lines lines;
  CacheDeviceLog log("/nvme/cache", &clock, lines.sink());
  for (int i = 0; i < 30; ++i) log.Failed(kIoError);
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_NE(lines.at(0).find("cache device lost (/nvme/cache)"), std::string::npos) << lines.at(0);
  // A copy published right after does not end it (no line per flap)...
  clock.Advance(kSecond);
  log.Published();
  log.Failed(kIoError);
  log.Published();
  EXPECT_EQ(lines.size(), 1u);
  EXPECT_TRUE(log.active(DeviceCondition::kLost));
  // ...a minute of publishes without a failure does, with the count.
  clock.Advance(61 * kSecond);
  log.Published();
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines.at(1).find("over, copies are published again; 31 files were not staged"),
            std::string::npos)
      << lines.at(1);
  EXPECT_FALSE(log.active(DeviceCondition::kLost));
  // A new failure begins a new condition.
  log.Failed(kIoError);
  EXPECT_EQ(lines.size(), 3u);
  EXPECT_EQ(log.failures(DeviceCondition::kLost), 1u);
}

TEST(CacheDeviceLog, FlushReportsAConditionStillOn) {
  ClockEnv clock;
  Lines lines;
  {
    CacheDeviceLog log("/nvme/cache", &clock, lines.sink());
    log.Failed(kNoSpace);
    log.Failed(kNoSpace);
    clock.Advance(3 * kSecond);
    log.Failed(kNoSpace);
  }  // destroyed: the store closing at unmount
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_NE(lines.at(1).find("still full when the cache was closed; 3 files not staged"),
            std::string::npos)
      << lines.at(1);
}

// Staging through a real store and stager while the device is full or lost: the log shows one
// line for all the files, and the failures are all counted.
class DeviceFaultTest : public ::testing::TestWithParam<StageEngine> {
 protected:
  void SetUp() override {
    saved_level_ = GetLogLevel();
    SetLogLevel(LogLevel::kInfo);
    backing_ = tmp_ / "backing";
    for (int i = 0; i < kFiles; ++i) {
      testing::WriteFile(backing_ + "/f" + std::to_string(i), testing::RandomBytes(5000, i));
    }
  }
  void TearDown() override { SetLogLevel(saved_level_); }

  // Stages every file, capturing what is logged meanwhile.
  std::string StageAll(testing::OpenStore* cache) {
    StagerOptions options;
    options.backing_root = backing_;
    options.threads = 4;
    options.engine = GetParam();
    ::testing::internal::CaptureStderr();
    {
      Stager stager(options, cache->store.get(), &env_);
      for (int i = 0; i < kFiles; ++i) {
        const std::string rel = "f" + std::to_string(i);
        struct stat st;
        EXPECT_EQ(lstat((backing_ + "/" + rel).c_str(), &st), 0);
        stager.Enqueue(rel, IdentityOf(st), StagePriority::kNormal);
      }
      stager.WaitIdle();
      stats_ = stager.stats();
    }
    return ::testing::internal::GetCapturedStderr();
  }

  static size_t Count(const std::string& text, const std::string& what) {
    size_t n = 0;
    for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
    return n;
  }
  // Lines logged, but for the one-time notice that io_uring is unavailable (then the thread pool
  // stages, which is fine here).
  static size_t LinesLogged(const std::string& text) {
    size_t n = 0, start = 0;
    for (size_t end = text.find('\n'); end != std::string::npos; end = text.find('\n', start)) {
      if (text.substr(start, end - start).find("io_uring unavailable") == std::string::npos) ++n;
      start = end + 1;
    }
    return n;
  }

  static constexpr int kFiles = 300;
  testing::TempDir tmp_;
  std::string backing_;
  FaultInjectionEnv env_;
  StagerStats stats_;
  LogLevel saved_level_ = LogLevel::kInfo;
};

TEST_P(DeviceFaultTest, AFullDeviceIsLoggedOnceWithTheCount) {
  auto cache = testing::OpenTestStore(tmp_ / "cache", &env_);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  env_.SetFreeBytes(0);  // full of someone else's data: nothing of ours to evict
  const std::string log = StageAll(&*cache);
  EXPECT_EQ(stats_.files_staged, 0u);
  EXPECT_EQ(stats_.skipped, static_cast<uint64_t>(kFiles));
  EXPECT_EQ(Count(log, "cache device full"), 1u) << log;
  EXPECT_NE(log.find("0 B free"), std::string::npos) << log;
  EXPECT_EQ(LinesLogged(log), 1u) << log;  // and nothing else, no line per file
  EXPECT_EQ(cache->store->device_log().failures(DeviceCondition::kFull),
            static_cast<uint64_t>(kFiles));

  // Room again: copies are published; the count comes with the end (a minute later) or at close.
  env_.SetFreeBytes(std::nullopt);
  ::testing::internal::CaptureStderr();
  cache->store.reset();
  const std::string closed = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(closed.find("still full when the cache was closed; 300 files not staged"),
            std::string::npos)
      << closed;
}

TEST_P(DeviceFaultTest, ALostDeviceIsLoggedOnceWithTheCount) {
  auto cache = testing::OpenTestStore(tmp_ / "cache", &env_);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  // The thread pool writes through the Env: every copy's write fails there. The io_uring engine
  // writes past the Env, so its copies go to a real device (an ext4 mounted on CACHE/tmp) that
  // dies (every call EIO from then on) right after the first copy's temp file is created: that
  // copy's writes fail on the ring, the later copies' temp files cannot be created.
  std::unique_ptr<testing::LoopExt4Device> device;
  if (GetParam() == StageEngine::kUring) {
    device = std::make_unique<testing::LoopExt4Device>(tmp_ / "tmp.img", tmp_ / "cache/tmp", 16);
    if (!device->error().empty()) {
      if (device->missing_tool() && testing::InCi()) FAIL() << device->error();
      GTEST_SKIP() << device->error();
    }
    ASSERT_EQ(rmdir((tmp_ / "cache/tmp/lost+found").c_str()), 0);
    env_.AfterOpen("/cache/tmp/", [&] { EXPECT_TRUE(device->Shutdown()); });
  } else {
    env_.FailPath(FaultOp::kPwrite, "/cache/tmp/", EIO);  // every copy's write
  }
  const std::string log = StageAll(&*cache);
  EXPECT_EQ(stats_.files_staged, 0u);
  EXPECT_EQ(stats_.failures, static_cast<uint64_t>(kFiles));
  EXPECT_EQ(Count(log, "cache device lost"), 1u) << log;
  EXPECT_EQ(LinesLogged(log), 1u) << log;
  EXPECT_EQ(cache->store->device_log().failures(DeviceCondition::kLost),
            static_cast<uint64_t>(kFiles));
  // The temp files of the failed copies are gone, and nothing was published.
  EXPECT_TRUE(cache->store->Paths().empty());
  cache->store.reset();  // closed before the device is unmounted
}

TEST_P(DeviceFaultTest, ALostIndexOrDirectoryIsTheDeviceLostToo) {
  auto cache = testing::OpenTestStore(tmp_ / "cache", &env_);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  env_.FailPath(FaultOp::kStatVfs, "/cache", EIO);  // the device no longer answers
  const std::string log = StageAll(&*cache);
  EXPECT_EQ(stats_.files_staged, 0u);
  EXPECT_EQ(Count(log, "cache device lost"), 1u) << log;
  EXPECT_EQ(LinesLogged(log), 1u) << log;
  EXPECT_EQ(cache->store->device_log().failures(DeviceCondition::kLost),
            static_cast<uint64_t>(kFiles));
}

INSTANTIATE_TEST_SUITE_P(Engines, DeviceFaultTest,
                         ::testing::Values(StageEngine::kThreads, StageEngine::kUring),
                         [](const ::testing::TestParamInfo<StageEngine>& info) {
                           return info.param == StageEngine::kThreads ? "Threads" : "Uring";
                         });

TEST(ContentStoreDevice, AFreeSpaceFloorAboveTheDeviceIsRefusedAtOpen) {
  testing::TempDir tmp;
  FaultInjectionEnv env;
  ContentStoreOptions options;
  options.min_free = uint64_t{999} << 50;  // --min-free 999P
  auto cache = testing::OpenTestStore(tmp / "cache", &env, options);
  ASSERT_FALSE(cache.ok());
  EXPECT_EQ(cache.status().code(), EINVAL);
  EXPECT_NE(cache.status().message().find("--min-free"), std::string::npos)
      << cache.status().message();
  EXPECT_NE(cache.status().message().find("999.0 PiB"), std::string::npos)
      << cache.status().message();
  options.min_free = 1 << 20;
  EXPECT_TRUE(testing::OpenTestStore(tmp / "cache2", &env, options).ok());
}

}  // namespace
}  // namespace clairfs
