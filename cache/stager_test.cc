// Tests of Stager: byte-exact copies, priority order, de-duplication, Cancel, changed and failing
// backing files, the bandwidth limit, and a prompt Shutdown that leaves no temp files.
#include "cache/stager.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <future>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cache/cache_dir.h"
#include "cache/content_store.h"
#include "cache/index_db.h"
#include "cache/testing/fault_env.h"
#include "cache/testing/test_store.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::RandomBytes;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;
namespace fsys = std::filesystem;

// A FaultInjectionEnv whose Open of a path containing `gate` blocks until Release(), so a test can
// hold the single worker busy and observe the order of what follows.
class GateEnv : public FaultInjectionEnv {
 public:
  void Hold(const std::string& gate) {
    std::lock_guard<std::mutex> lock(mu_);
    gate_ = gate;
    open_ = false;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  // Waits until a call is blocked at the gate.
  bool WaitBlocked() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(10), [&] { return blocked_; });
  }
  Result<int> Open(const std::string& path, int flags, mode_t mode) override {
    Wait(path);
    return FaultInjectionEnv::Open(path, flags, mode);
  }
  // Backing files are opened beneath the root (cache/backing_tree.h).
  Result<int> OpenBeneath(int dir_fd, const std::string& rel, int flags) override {
    Wait(rel);
    return FaultInjectionEnv::OpenBeneath(dir_fd, rel, flags);
  }

 private:
  void Wait(const std::string& path) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!gate_.empty() && path.find(gate_) != std::string::npos) {
      blocked_ = true;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
    }
  }

  std::mutex mu_;
  std::condition_variable cv_;
  std::string gate_;
  bool open_ = true;
  bool blocked_ = false;
};

// A backing tree, a cache on it and helpers to stage.
class StagerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backing_ = tmp_ / "backing";
    testing::MakeDirs(backing_);
    auto cache = testing::OpenTestStore(tmp_ / "cache", &env_);
    ASSERT_TRUE(cache.ok()) << cache.status().message();
    dir_ = std::move(cache->dir);
    index_ = std::move(cache->index);
    store_ = std::move(cache->store);
    env_.ResetCounts();  // tests count the stager's calls, not the cache's opening
  }
  void TearDown() override {
    stager_.reset();
    store_.reset();
    index_.reset();
    dir_.reset();
  }
  // With the GateEnv, kAuto is the thread pool; engine tests below pass kUring or kThreads.
  void StartStager(int threads, uint64_t bandwidth = 0, size_t chunk = 64 * 1024,
                   StageEngine engine = StageEngine::kAuto, int buffers = 0) {
    stager_ = std::make_unique<Stager>(
        StagerOptions{backing_, threads, bandwidth, chunk, engine, buffers}, store_.get(), &env_);
  }
  FileIdentity Identity(const std::string& rel) {
    struct stat st;
    EXPECT_EQ(lstat((backing_ + "/" + rel).c_str(), &st), 0) << rel;
    return IdentityOf(st);
  }
  std::string Add(const std::string& rel, size_t size, uint64_t seed) {
    std::string data = RandomBytes(size, seed);
    WriteFile(backing_ + "/" + rel, data);
    return data;
  }
  size_t TempFiles() {
    size_t n = 0;
    for (const auto& e : fsys::directory_iterator(dir_->tmp_dir())) n += e.is_regular_file();
    return n;
  }

  TempDir tmp_;
  std::string backing_;
  GateEnv env_;
  std::unique_ptr<CacheDir> dir_;
  std::unique_ptr<IndexDb> index_;
  std::unique_ptr<ContentStore> store_;
  std::unique_ptr<Stager> stager_;
};

TEST_F(StagerTest, TreeIsStagedByteExact) {
  const size_t chunk = 64 * 1024;
  std::map<std::string, std::string> files;
  files["empty"] = Add("empty", 0, 1);
  files["one"] = Add("one", 1, 2);
  files["d/below chunk"] = Add("d/below chunk", chunk - 1, 3);
  files["d/above chunk"] = Add("d/above chunk", chunk + 1, 4);
  files["d/e/big.bin"] = Add("d/e/big.bin", 3 * 1024 * 1024 + 5, 5);
  files["d/e/ünïcode"] = Add("d/e/ünïcode", 777, 6);
  env_.SetShortReads(1000);  // the copy loop must cope with short reads
  StartStager(3, 0, chunk);
  std::mutex mu;
  std::map<std::string, Status> outcomes;
  for (const auto& [rel, data] : files) {
    EXPECT_TRUE(
        stager_->Enqueue(rel, Identity(rel), StagePriority::kNormal, [&](const StageOutcome& o) {
          std::lock_guard<std::mutex> lock(mu);
          outcomes[o.path] = o.status;
        }));
  }
  stager_->WaitIdle();
  for (const auto& [rel, data] : files) {
    ASSERT_TRUE(outcomes.count(rel)) << rel;
    EXPECT_TRUE(outcomes[rel].ok()) << rel << ": " << outcomes[rel].message();
    auto copy = store_->Find(rel);
    ASSERT_TRUE(copy.has_value()) << rel;
    EXPECT_EQ(ReadFile(copy->data_path), data) << rel;
    EXPECT_EQ(copy->identity, Identity(rel));
  }
  auto st = stager_->stats();
  EXPECT_EQ(st.files_staged, files.size());
  EXPECT_EQ(st.failures, 0u);
  EXPECT_EQ(st.queued + st.in_flight, 0u);
  EXPECT_EQ(TempFiles(), 0u);
  EXPECT_GT(env_.calls(FaultOp::kPread), (3u * 1024 * 1024) / 1000);
}

TEST_F(StagerTest, HigherPriorityFirstFifoWithin) {
  Add("blocker", 10, 0);
  for (const char* p : {"low1", "normal1", "high1", "low2", "high2", "normal2", "raised"}) {
    Add(p, 100, p[0]);
  }
  env_.Hold("blocker");
  StartStager(1);
  std::mutex mu;
  std::vector<std::string> order;
  auto record = [&](const StageOutcome& o) {
    std::lock_guard<std::mutex> lock(mu);
    order.push_back(o.path);
  };
  ASSERT_TRUE(stager_->Enqueue("blocker", Identity("blocker"), StagePriority::kLow, record));
  ASSERT_TRUE(env_.WaitBlocked());
  EXPECT_EQ(stager_->stats().in_flight, 1u);
  const std::pair<const char*, StagePriority> requests[] = {
      {"low1", StagePriority::kLow},       {"raised", StagePriority::kLow},
      {"normal1", StagePriority::kNormal}, {"high1", StagePriority::kHigh},
      {"low2", StagePriority::kLow},       {"high2", StagePriority::kHigh},
      {"normal2", StagePriority::kNormal}};
  for (const auto& [p, prio] : requests) {
    ASSERT_TRUE(stager_->Enqueue(p, Identity(p), prio, record)) << p;
  }
  // A re-request at a higher priority raises the queued one (and is not queued twice).
  EXPECT_FALSE(stager_->Enqueue("raised", Identity("raised"), StagePriority::kHigh));
  EXPECT_EQ(stager_->stats().queued, 7u);
  env_.Release();
  stager_->WaitIdle();
  std::vector<std::string> expected = {"blocker", "raised",  "high1", "high2",
                                       "normal1", "normal2", "low1",  "low2"};
  // "raised" keeps its original arrival number, so it goes first among the high requests.
  EXPECT_EQ(order, expected);
}

TEST_F(StagerTest, DuplicatesAreCopiedOnce) {
  Add("blocker", 10, 0);
  std::string data = Add("dup", 200000, 7);
  env_.Hold("blocker");
  StartStager(1);
  ASSERT_TRUE(stager_->Enqueue("blocker", Identity("blocker"), StagePriority::kNormal));
  ASSERT_TRUE(env_.WaitBlocked());
  std::atomic<int> done{0};
  auto count = [&](const StageOutcome& o) {
    EXPECT_TRUE(o.status.ok()) << o.status.message();
    done.fetch_add(1);
  };
  EXPECT_TRUE(stager_->Enqueue("dup", Identity("dup"), StagePriority::kNormal, count));
  EXPECT_FALSE(stager_->Enqueue("dup", Identity("dup"), StagePriority::kNormal, count));
  EXPECT_FALSE(stager_->Enqueue("dup", Identity("dup"), StagePriority::kLow, count));
  env_.Release();
  stager_->WaitIdle();
  EXPECT_EQ(done.load(), 3);
  // Already staged: not queued, the callback runs at once with OK.
  EXPECT_FALSE(stager_->Enqueue("dup", Identity("dup"), StagePriority::kHigh, count));
  EXPECT_EQ(done.load(), 4);
  EXPECT_EQ(stager_->stats().files_staged, 2u);
  ASSERT_TRUE(store_->Find("dup").has_value());
  EXPECT_EQ(ReadFile(store_->Find("dup")->data_path), data);
  // The backing root once, then blocker and dup: backing file and temp copy each.
  EXPECT_EQ(env_.calls(FaultOp::kOpen), 5u);
}

TEST_F(StagerTest, CancelDropsAPendingRequest) {
  Add("blocker", 10, 0);
  Add("a", 100, 1);
  Add("b", 100, 2);
  env_.Hold("blocker");
  StartStager(1);
  ASSERT_TRUE(stager_->Enqueue("blocker", Identity("blocker"), StagePriority::kNormal));
  ASSERT_TRUE(env_.WaitBlocked());
  Status a_status;
  ASSERT_TRUE(stager_->Enqueue("a", Identity("a"), StagePriority::kNormal,
                               [&](const StageOutcome& o) { a_status = o.status; }));
  ASSERT_TRUE(stager_->Enqueue("b", Identity("b"), StagePriority::kNormal));
  stager_->Cancel("a");
  EXPECT_EQ(a_status.code(), ECANCELED);
  stager_->Cancel("blocker");  // in flight: not cancellable, a no-op
  stager_->Cancel("never-queued");
  env_.Release();
  stager_->WaitIdle();
  EXPECT_FALSE(store_->Contains("a"));
  EXPECT_TRUE(store_->Contains("b"));
  EXPECT_TRUE(store_->Contains("blocker"));
}

TEST_F(StagerTest, ProgressOfSaysWhereEachCopyStands) {
  Add("blocker", 10, 0);
  Add("a", 100, 1);
  env_.Hold("blocker");
  StartStager(1);
  EXPECT_EQ(stager_->ProgressOf("blocker"), CopyProgress::kNone);
  ASSERT_TRUE(stager_->Enqueue("blocker", Identity("blocker"), StagePriority::kNormal));
  ASSERT_TRUE(env_.WaitBlocked());
  ASSERT_TRUE(stager_->Enqueue("a", Identity("a"), StagePriority::kNormal));
  EXPECT_EQ(stager_->ProgressOf("blocker"), CopyProgress::kInFlight);
  EXPECT_EQ(stager_->ProgressOf("a"), CopyProgress::kQueued);
  EXPECT_EQ(stager_->ProgressOf("never-queued"), CopyProgress::kNone);
  env_.Release();
  stager_->WaitIdle();
  // Published: no copy is under way any more.
  EXPECT_TRUE(store_->Contains("a"));
  EXPECT_EQ(stager_->ProgressOf("a"), CopyProgress::kNone);
  EXPECT_EQ(stager_->ProgressOf("blocker"), CopyProgress::kNone);
}

TEST_F(StagerTest, CancelUnwaitedKeepsRequestsSomeoneWaitsFor) {
  Add("blocker", 10, 0);
  Add("unwaited", 100, 1);
  Add("waited", 100, 2);
  env_.Hold("blocker");
  StartStager(1);
  ASSERT_TRUE(stager_->Enqueue("blocker", Identity("blocker"), StagePriority::kNormal));
  ASSERT_TRUE(env_.WaitBlocked());
  ASSERT_TRUE(stager_->Enqueue("unwaited", Identity("unwaited"), StagePriority::kNormal));
  ASSERT_TRUE(stager_->Enqueue("waited", Identity("waited"), StagePriority::kNormal));
  // A second request for "waited" brings a caller that waits for it.
  Status waited_status = Status::Error(EINPROGRESS, "not delivered");
  EXPECT_FALSE(stager_->Enqueue("waited", Identity("waited"), StagePriority::kNormal,
                                [&](const StageOutcome& o) { waited_status = o.status; }));
  EXPECT_TRUE(stager_->CancelUnwaited("unwaited"));
  EXPECT_FALSE(stager_->CancelUnwaited("waited"));
  EXPECT_FALSE(stager_->CancelUnwaited("blocker"));  // in flight
  EXPECT_FALSE(stager_->CancelUnwaited("never-queued"));
  env_.Release();
  stager_->WaitIdle();
  EXPECT_FALSE(store_->Contains("unwaited"));
  EXPECT_TRUE(store_->Contains("waited"));
  EXPECT_TRUE(waited_status.ok()) << waited_status.message();
  EXPECT_TRUE(store_->Contains("blocker"));
}

TEST_F(StagerTest, ChangedBackingFileIsSkippedAndNotPublished) {
  Add("changed", 5000, 1);
  FileIdentity listed = Identity("changed");
  // Changed after listing (same size, new content and mtime).
  std::this_thread::sleep_for(std::chrono::milliseconds(5));
  WriteFile(backing_ + "/changed", RandomBytes(5000, 2));
  StartStager(1);
  Status outcome;
  stager_->Enqueue("changed", listed, StagePriority::kNormal,
                   [&](const StageOutcome& o) { outcome = o.status; });
  stager_->WaitIdle();
  EXPECT_EQ(outcome.code(), ESTALE) << outcome.message();
  EXPECT_FALSE(store_->Contains("changed"));
  EXPECT_EQ(stager_->stats().skipped, 1u);
  EXPECT_EQ(TempFiles(), 0u);
}

// Changes the backing file during the copy (on its first read).
class ChangeOnReadEnv : public FaultInjectionEnv {
 public:
  std::string victim;
  Result<size_t> Pread(int fd, void* buf, size_t size, off_t offset) override {
    if (!victim.empty()) {
      std::string path = victim;
      victim.clear();
      FILE* f = fopen(path.c_str(), "a");
      if (f) {
        fputs("grown", f);
        fclose(f);
      }
    }
    return FaultInjectionEnv::Pread(fd, buf, size, offset);
  }
};

TEST_F(StagerTest, BackingFileChangedDuringCopyIsNotPublished) {
  Add("moving", 300000, 1);
  ChangeOnReadEnv env;
  env.victim = backing_ + "/moving";
  Stager stager(StagerOptions{backing_, 1, 0, 64 * 1024}, store_.get(), &env);
  Status outcome;
  stager.Enqueue("moving", Identity("moving"), StagePriority::kNormal,
                 [&](const StageOutcome& o) { outcome = o.status; });
  stager.WaitIdle();
  EXPECT_EQ(outcome.code(), ESTALE) << outcome.message();
  EXPECT_FALSE(store_->Contains("moving"));
  EXPECT_EQ(TempFiles(), 0u);
  EXPECT_EQ(store_->stats().reserved_bytes, 0u);
}

// Records the thread engine's writeback hints.
class WriteBackEnv : public FaultInjectionEnv {
 public:
  struct Call {
    off_t offset;
    off_t len;
    bool wait;
  };
  void WriteBack(int fd, off_t offset, off_t len, bool wait) override {
    {
      std::lock_guard<std::mutex> lock(mu);
      calls.push_back(Call{offset, len, wait});
    }
    FaultInjectionEnv::WriteBack(fd, offset, len, wait);
  }
  std::mutex mu;
  std::vector<Call> calls;
};

// A large copy is written back chunk by chunk while copying, and waited for every flush_every
// bytes, so that its final fsync has little left to write; the last chunk is left to the fsync.
TEST_F(StagerTest, ThreadEngineWritesBackWhileCopying) {
  const size_t chunk = 64 * 1024;
  std::string data = Add("big", 16 * chunk, 7);
  WriteBackEnv env;
  StagerOptions options{backing_, 1, 0, chunk, StageEngine::kThreads};
  options.flush_every = 4 * chunk;
  Stager stager(options, store_.get(), &env);
  Status outcome = Status::Error(EINVAL, "no callback");
  stager.Enqueue("big", Identity("big"), StagePriority::kNormal,
                 [&](const StageOutcome& o) { outcome = o.status; });
  stager.WaitIdle();
  ASSERT_TRUE(outcome.ok()) << outcome.message();
  auto copy = store_->Find("big");
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(ReadFile(copy->data_path), data);
  std::vector<std::pair<off_t, off_t>> started, waited;
  for (const auto& c : env.calls) (c.wait ? waited : started).emplace_back(c.offset, c.len);
  ASSERT_EQ(started.size(), 15u);
  for (size_t i = 0; i < started.size(); ++i) {
    EXPECT_EQ(started[i], std::make_pair(static_cast<off_t>(i * chunk), static_cast<off_t>(chunk)));
  }
  const off_t window = static_cast<off_t>(4 * chunk);
  EXPECT_EQ(waited, (std::vector<std::pair<off_t, off_t>>{
                        {0, window}, {window, window}, {2 * window, window}}));
}

TEST_F(StagerTest, FailingFilesDoNotStopTheOthers) {
  std::map<std::string, std::string> good;
  for (int i = 0; i < 6; ++i) {
    std::string p = "ok" + std::to_string(i);
    good[p] = Add(p, 10000 + i, i);
  }
  Add("bad-read", 10000, 10);
  Add("vanished", 10000, 11);
  FileIdentity vanished = Identity("vanished");
  ASSERT_EQ(unlink((backing_ + "/vanished").c_str()), 0);
  env_.FailPath(FaultOp::kPread, "bad-read", EIO);
  StartStager(2);
  std::mutex mu;
  std::map<std::string, Status> outcomes;
  auto record = [&](const StageOutcome& o) {
    std::lock_guard<std::mutex> lock(mu);
    outcomes[o.path] = o.status;
  };
  stager_->Enqueue("bad-read", Identity("bad-read"), StagePriority::kHigh, record);
  stager_->Enqueue("vanished", vanished, StagePriority::kHigh, record);
  for (const auto& [p, data] : good) {
    stager_->Enqueue(p, Identity(p), StagePriority::kNormal, record);
  }
  stager_->WaitIdle();
  EXPECT_EQ(outcomes["bad-read"].code(), EIO) << outcomes["bad-read"].message();
  EXPECT_EQ(outcomes["vanished"].code(), ENOENT) << outcomes["vanished"].message();
  for (const auto& [p, data] : good) {
    EXPECT_TRUE(outcomes[p].ok()) << p;
    ASSERT_TRUE(store_->Find(p).has_value()) << p;
    EXPECT_EQ(ReadFile(store_->Find(p)->data_path), data);
  }
  EXPECT_FALSE(store_->Contains("bad-read"));
  EXPECT_FALSE(store_->Contains("vanished"));
  EXPECT_EQ(stager_->stats().failures, 1u);
  EXPECT_EQ(stager_->stats().skipped, 1u);
  EXPECT_EQ(TempFiles(), 0u);
}

TEST_F(StagerTest, EnospcWhileWritingDropsTheCopy) {
  Add("x", 300000, 1);
  Add("y", 3000, 2);
  env_.FailNth(FaultOp::kPwrite, 2, ENOSPC);
  StartStager(1);
  Status outcome;
  stager_->Enqueue("x", Identity("x"), StagePriority::kHigh,
                   [&](const StageOutcome& o) { outcome = o.status; });
  stager_->Enqueue("y", Identity("y"), StagePriority::kNormal);
  stager_->WaitIdle();
  EXPECT_EQ(outcome.code(), ENOSPC) << outcome.message();
  EXPECT_FALSE(store_->Contains("x"));
  EXPECT_TRUE(store_->Contains("y"));
  EXPECT_EQ(TempFiles(), 0u);
  EXPECT_EQ(store_->stats().reserved_bytes, 0u);
  EXPECT_EQ(stager_->stats().failures, 1u);
}

TEST_F(StagerTest, BandwidthLimitIsHonoured) {
  const uint64_t rate = 2000000;  // 2 MB/s
  for (int i = 0; i < 4; ++i) Add("f" + std::to_string(i), 250000, i);
  StartStager(2, rate, 64 * 1024);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 4; ++i) {
    std::string p = "f" + std::to_string(i);
    stager_->Enqueue(p, Identity(p), StagePriority::kNormal);
  }
  stager_->WaitIdle();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // 1 MB at 2 MB/s, less the bucket's burst (rate/10) it may start with: at least 0.4 s.
  EXPECT_GE(seconds, 0.4);
  EXPECT_EQ(stager_->stats().files_staged, 4u);
}

// Stress for the WaitIdle race: every outcome must have been delivered when WaitIdle returns.
TEST_F(StagerTest, WaitIdleReturnsOnlyAfterEveryCallback) {
  for (int i = 0; i < 40; ++i) Add("s" + std::to_string(i), 100 + i, i);
  StartStager(4);
  for (int round = 0; round < 15; ++round) {
    std::atomic<int> delivered{0};
    for (int i = 0; i < 40; ++i) {
      std::string p = "s" + std::to_string(i);
      stager_->Enqueue(p, Identity(p), StagePriority::kNormal, [&](const StageOutcome&) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        delivered.fetch_add(1);
      });
    }
    stager_->WaitIdle();
    ASSERT_EQ(delivered.load(), 40) << "round " << round;
    for (int i = 0; i < 40; ++i) ASSERT_TRUE(store_->Evict("s" + std::to_string(i)).ok());
  }
}

TEST_F(StagerTest, ShutdownWithWorkPendingIsPromptAndLeavesNoTemps) {
  for (int i = 0; i < 20; ++i) Add("f" + std::to_string(i), 1 << 20, i);
  // 1 kB/s: one 256 KiB chunk takes minutes.
  StartStager(2, 1000, 256 * 1024);
  std::atomic<int> shut{0};
  for (int i = 0; i < 20; ++i) {
    std::string p = "f" + std::to_string(i);
    stager_->Enqueue(p, Identity(p), StagePriority::kNormal, [&](const StageOutcome& o) {
      if (o.status.code() == ESHUTDOWN) shut.fetch_add(1);
    });
  }
  for (int i = 0; i < 100 && stager_->stats().in_flight < 2; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(stager_->stats().in_flight, 2u);
  auto start = std::chrono::steady_clock::now();
  auto done = std::async(std::launch::async, [&] { stager_->Shutdown(); });
  ASSERT_EQ(done.wait_for(std::chrono::seconds(5)), std::future_status::ready)
      << "Shutdown did not return within 5 s";
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_EQ(shut.load(), 20);  // 18 queued + 2 in flight, all told why
  EXPECT_EQ(TempFiles(), 0u);
  EXPECT_EQ(store_->stats().files, 0u);
  EXPECT_EQ(store_->stats().reserved_bytes, 0u);
  // After Shutdown, a request is refused at once, and its callback may call back into the stager.
  Status late;
  EXPECT_FALSE(
      stager_->Enqueue("f0", Identity("f0"), StagePriority::kHigh, [&](const StageOutcome& o) {
        late = o.status;
        (void)stager_->stats();
      }));
  EXPECT_EQ(late.code(), ESHUTDOWN);
}

// The same behaviour from both engines: io_uring (where the kernel offers it) and the thread pool
// forced by StagerOptions::engine. The GateEnv injects nothing here (io_uring cannot see it).
class StagerEngineTest : public StagerTest, public ::testing::WithParamInterface<StageEngine> {
 protected:
  void Start(int threads, uint64_t bandwidth = 0, int buffers = 0) {
    StartStager(threads, bandwidth, 64 * 1024, GetParam(), buffers);
  }
  // Enqueues `blocker` (4 MiB at 20 MB/s: ~0.2 s) alone, so what follows queues behind it.
  void HoldTheOnlySlot() {
    Add("blocker", 4 << 20, 99);
    stager_->Enqueue("blocker", Identity("blocker"), StagePriority::kHigh);
    for (int i = 0; i < 500 && stager_->stats().in_flight == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_EQ(stager_->stats().in_flight, 1u);
  }
};

TEST_P(StagerEngineTest, EngineIsTheOneAskedFor) {
  Add("a", 10, 1);
  Start(2);
  UringCopierOptions probe;
  probe.backing = *BackingTree::Open(backing_, Env::Default());
  bool uring_available = UringCopier::Create(probe, store_.get(), {}).ok();
  EXPECT_EQ(stager_->stats().uring, GetParam() == StageEngine::kUring && uring_available);
  stager_->Enqueue("a", Identity("a"), StagePriority::kNormal);
  stager_->WaitIdle();
  EXPECT_TRUE(store_->Contains("a"));
}

TEST_P(StagerEngineTest, TreeOfManySizesIsStagedByteExact) {
  const size_t chunk = 64 * 1024;
  std::map<std::string, std::string> files;
  const size_t sizes[] = {0, 1, chunk - 1, chunk, chunk + 1, 3 * chunk, 110 * 1000, 3 << 20};
  testing::MakeDirs(backing_ + "/d/e");
  int i = 0;
  for (size_t size : sizes) {
    for (const char* dir : {"", "d/", "d/e/"}) {
      std::string rel = std::string(dir) + "f" + std::to_string(i);
      files[rel] = Add(rel, size, static_cast<uint64_t>(i));
      ++i;
    }
  }
  Start(6, 0, 2);
  std::atomic<int> ok{0};
  for (const auto& [rel, data] : files) {
    stager_->Enqueue(rel, Identity(rel), StagePriority::kNormal, [&](const StageOutcome& o) {
      if (o.status.ok()) ok.fetch_add(1);
    });
  }
  stager_->WaitIdle();
  EXPECT_EQ(ok.load(), static_cast<int>(files.size()));
  for (const auto& [rel, data] : files) {
    auto copy = store_->Find(rel);
    ASSERT_TRUE(copy.has_value()) << rel;
    EXPECT_EQ(ReadFile(copy->data_path), data) << rel;
  }
  StagerStats s = stager_->stats();
  EXPECT_EQ(s.files_staged, files.size());
  if (s.uring) {
    EXPECT_EQ(s.buffer_count, 2u);
    EXPECT_GT(s.peak_buffers_in_use, 0u);
    EXPECT_LE(s.peak_buffers_in_use, 2u);
    EXPECT_EQ(s.buffers_in_use, 0u);
  }
  EXPECT_EQ(TempFiles(), 0u);
}

TEST_P(StagerEngineTest, HigherPriorityFirstAndCancelBehindABusySlot) {
  Start(1, 20000000);
  HoldTheOnlySlot();
  std::mutex mu;
  std::vector<std::string> order;
  Status cancelled;
  auto record = [&](const StageOutcome& o) {
    std::lock_guard<std::mutex> lock(mu);
    if (o.status.code() == ECANCELED) cancelled = o.status;
    if (o.status.ok()) order.push_back(o.path);
  };
  for (const char* p : {"low", "normal1", "high", "normal2", "gone"}) Add(p, 1000, 1);
  stager_->Enqueue("low", Identity("low"), StagePriority::kLow, record);
  stager_->Enqueue("normal1", Identity("normal1"), StagePriority::kNormal, record);
  stager_->Enqueue("gone", Identity("gone"), StagePriority::kHigh, record);
  stager_->Enqueue("high", Identity("high"), StagePriority::kHigh, record);
  stager_->Enqueue("normal2", Identity("normal2"), StagePriority::kNormal, record);
  stager_->Cancel("gone");
  stager_->WaitIdle();
  EXPECT_EQ(order, (std::vector<std::string>{"high", "normal1", "normal2", "low"}));
  EXPECT_EQ(cancelled.code(), ECANCELED);
  EXPECT_FALSE(store_->Contains("gone"));
  EXPECT_TRUE(store_->Contains("blocker"));
}

TEST_P(StagerEngineTest, VanishedAndChangedFilesDoNotStopTheOthers) {
  std::map<std::string, std::string> good;
  for (int i = 0; i < 12; ++i)
    good["ok" + std::to_string(i)] = Add("ok" + std::to_string(i), 5000 * i, i);
  Add("vanished", 1000, 20);
  FileIdentity vanished = Identity("vanished");
  ASSERT_EQ(unlink((backing_ + "/vanished").c_str()), 0);
  Add("changed", 1000, 21);
  FileIdentity changed = Identity("changed");
  changed.size += 1;
  Start(4);
  std::mutex mu;
  std::map<std::string, Status> outcomes;
  auto record = [&](const StageOutcome& o) {
    std::lock_guard<std::mutex> lock(mu);
    outcomes[o.path] = o.status;
  };
  stager_->Enqueue("vanished", vanished, StagePriority::kHigh, record);
  stager_->Enqueue("changed", changed, StagePriority::kHigh, record);
  for (const auto& [p, data] : good)
    stager_->Enqueue(p, Identity(p), StagePriority::kNormal, record);
  stager_->WaitIdle();
  EXPECT_EQ(outcomes["vanished"].code(), ENOENT) << outcomes["vanished"].message();
  EXPECT_EQ(outcomes["changed"].code(), ESTALE) << outcomes["changed"].message();
  for (const auto& [p, data] : good) {
    EXPECT_TRUE(outcomes[p].ok()) << p << ": " << outcomes[p].message();
    ASSERT_TRUE(store_->Find(p).has_value()) << p;
    EXPECT_EQ(ReadFile(store_->Find(p)->data_path), data);
  }
  EXPECT_EQ(stager_->stats().skipped, 2u);
  EXPECT_EQ(stager_->stats().failures, 0u);
  EXPECT_EQ(TempFiles(), 0u);
}

TEST_P(StagerEngineTest, ShutdownWithManyInFlightIsPromptAndLeavesNoTemps) {
  for (int i = 0; i < 40; ++i) Add("f" + std::to_string(i), 1 << 20, i);
  Start(16, 1000);  // 1 kB/s: no copy can finish
  std::atomic<int> shut{0};
  for (int i = 0; i < 40; ++i) {
    std::string p = "f" + std::to_string(i);
    stager_->Enqueue(p, Identity(p), StagePriority::kNormal, [&](const StageOutcome& o) {
      if (o.status.code() == ESHUTDOWN) shut.fetch_add(1);
    });
  }
  for (int i = 0; i < 500 && stager_->stats().in_flight < 16; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(stager_->stats().in_flight, 16u);
  auto start = std::chrono::steady_clock::now();
  auto done = std::async(std::launch::async, [&] { stager_->Shutdown(); });
  ASSERT_EQ(done.wait_for(std::chrono::seconds(5)), std::future_status::ready);
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_EQ(shut.load(), 40);
  EXPECT_EQ(TempFiles(), 0u);
  EXPECT_EQ(store_->stats().files, 0u);
  EXPECT_EQ(store_->stats().reserved_bytes, 0u);
}

// A copy that takes more than its reservation (st_blocks beyond its rounded size, as ext4 gives a
// large file that needs an extent block) and finds no room for the rest without evicting is not
// published: skipped, not failed, by both engines, leaving nothing reserved and no temp file.
TEST_P(StagerEngineTest, ACopyThatOutgrowsItsReservationWithoutRoomIsSkipped) {
  // The store's Env (the committer's fstat) reports one block more than a copy has.
  class InflatingEnv : public EnvWrapper {
   public:
    InflatingEnv() : EnvWrapper(Env::Default()) {}
    Status Fstat(int fd, struct stat* st) override {
      Status s = EnvWrapper::Fstat(fd, st);
      if (s.ok()) st->st_blocks += 4096 / 512;
      return s;
    }
  } inflating;
  store_.reset();
  auto store = ContentStore::Open(dir_.get(), index_.get(), &inflating,
                                  ContentStoreOptions{4096, 0, nullptr}, NewLruPolicy());
  ASSERT_TRUE(store.ok()) << store.status().message();
  store_ = std::move(*store);
  Add("a", 4000, 1);
  Start(2);
  // Its one block is reserved; at publish it has two, and there is no room for the second.
  Status a;
  stager_->Enqueue(
      "a", Identity("a"), StagePriority::kHigh, [&](const StageOutcome& o) { a = o.status; },
      /*may_evict=*/false);
  stager_->WaitIdle();
  EXPECT_EQ(a.code(), ENOSPC) << a.message();
  EXPECT_FALSE(store_->Contains("a"));
  EXPECT_EQ(stager_->stats().skipped, 1u);
  EXPECT_EQ(stager_->stats().failures, 0u);
  EXPECT_EQ(stager_->stats().files_staged, 0u);
  EXPECT_EQ(store_->stats().reserved_bytes, 0u);
  EXPECT_EQ(TempFiles(), 0u);
  stager_.reset();  // before `inflating` goes
  store_.reset();
}

// The default Env with a realtime clock a test can move forward (the settle rule's clock).
class AheadClockEnv : public EnvWrapper {
 public:
  AheadClockEnv() : EnvWrapper(Env::Default()) {}
  uint64_t NowRealtimeNanos() override {
    return EnvWrapper::NowRealtimeNanos() + static_cast<uint64_t>(ahead_ns.load());
  }
  std::atomic<int64_t> ahead_ns{0};
};

// The torn copy of docs/RELIABILITY.md (backing store faults, finding 1): a write sets ctime when
// it begins, so a copy made while it runs sees one identity before and after. A file whose ctime
// is within the settle time of the copy's start is therefore not published; it waits, with its
// callback, and is staged once the settle time has passed on the (injected) clock. Neither a
// failure nor a skip; nothing else waits.
TEST_P(StagerEngineTest, AFileChangedWithinTheSettleTimeIsStagedOnlyOnceItHasSettled) {
  AheadClockEnv clock;
  StagerOptions options{backing_, 2, 0, 64 * 1024, GetParam()};
  options.settle_ns = 10'000'000'000;  // 10 s: the real clock never gets there in this test
  auto stager = std::make_unique<Stager>(options, store_.get(), &clock);
  const std::string data = Add("fresh", 200000, 1);  // its ctime: now
  std::atomic<bool> done{false};
  Status outcome;
  std::mutex mu;
  std::condition_variable cv;
  ASSERT_TRUE(stager->Enqueue("fresh", Identity("fresh"), StagePriority::kNormal,
                              [&](const StageOutcome& o) {
                                std::lock_guard<std::mutex> lock(mu);
                                outcome = o.status;
                                done = true;
                                cv.notify_all();
                              }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  StagerStats s = stager->stats();
  EXPECT_FALSE(store_->Contains("fresh"));
  EXPECT_FALSE(done.load());
  EXPECT_EQ(s.deferred, 1u);
  EXPECT_EQ(s.queued, 1u);  // still waiting to be staged: WaitIdle and `stage --wait` wait
  EXPECT_EQ(s.in_flight, 0u);
  EXPECT_EQ(s.deferred_unsettled, 1u);
  EXPECT_EQ(s.failures, 0u);
  EXPECT_EQ(s.skipped, 0u);
  EXPECT_EQ(TempFiles(), 0u);
  // A second request for it joins the waiting one.
  EXPECT_FALSE(stager->Enqueue("fresh", Identity("fresh"), StagePriority::kHigh));
  clock.ahead_ns = 11'000'000'000;  // the settle time has passed
  {
    std::unique_lock<std::mutex> lock(mu);
    ASSERT_TRUE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return done.load(); }));
  }
  stager->WaitIdle();
  EXPECT_TRUE(outcome.ok()) << outcome.message();
  auto copy = store_->Find("fresh");
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(ReadFile(copy->data_path), data);
  s = stager->stats();
  EXPECT_EQ(s.files_staged, 1u);
  EXPECT_EQ(s.deferred, 0u);
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.deferred_unsettled, 1u);
  EXPECT_EQ(s.failures, 0u);
  EXPECT_EQ(s.skipped, 0u);
  stager.reset();  // before `clock` goes
}

// The same with the real clock and a short settle: the copy is published no sooner than the
// settle time after the file's ctime, and (with no other work) not much later either.
TEST_P(StagerEngineTest, AShortSettleDelaysAFreshFileByAboutTheSettleTime) {
  StagerOptions options{backing_, 2, 0, 64 * 1024, GetParam()};
  options.settle_ns = 500'000'000;
  stager_ = std::make_unique<Stager>(options, store_.get(), &env_);
  const std::string data = Add("fresh", 70000, 2);
  const FileIdentity identity = Identity("fresh");
  std::atomic<int64_t> staged_at{0};
  stager_->Enqueue("fresh", identity, StagePriority::kNormal, [&](const StageOutcome& o) {
    EXPECT_TRUE(o.status.ok()) << o.status.message();
    staged_at = static_cast<int64_t>(Env::Default()->NowRealtimeNanos());
  });
  stager_->WaitIdle();
  ASSERT_TRUE(store_->Contains("fresh"));
  EXPECT_EQ(ReadFile(store_->Find("fresh")->data_path), data);
  const double after_ctime = static_cast<double>(staged_at.load() - identity.ctime_ns) / 1e9;
  EXPECT_GE(after_ctime, 0.5);
  EXPECT_LT(after_ctime, 5.0);
  EXPECT_EQ(stager_->stats().deferred_unsettled, 1u);
  EXPECT_EQ(stager_->stats().files_staged, 1u);
}

// Deferred requests are requests like the others: cancelled, withdrawn if nobody waits, told
// ESHUTDOWN when the mount goes away.
TEST_P(StagerEngineTest, DeferredRequestsCanBeCancelledAndEndAtShutdown) {
  AheadClockEnv clock;
  StagerOptions options{backing_, 1, 0, 64 * 1024, GetParam()};
  options.settle_ns = 10'000'000'000;
  auto stager = std::make_unique<Stager>(options, store_.get(), &clock);
  for (const char* p : {"cancelled", "unwaited", "waited", "shut"}) Add(p, 1000, 3);
  std::mutex mu;
  std::map<std::string, Status> outcomes;
  auto record = [&](const StageOutcome& o) {
    std::lock_guard<std::mutex> lock(mu);
    outcomes[o.path] = o.status;
  };
  stager->Enqueue("cancelled", Identity("cancelled"), StagePriority::kNormal, record);
  stager->Prefetch("unwaited", Identity("unwaited"), StagePriority::kNormal);
  stager->Enqueue("waited", Identity("waited"), StagePriority::kNormal, record);
  stager->Enqueue("shut", Identity("shut"), StagePriority::kNormal, record);
  for (int i = 0; i < 500 && stager->stats().deferred < 4; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  ASSERT_EQ(stager->stats().deferred, 4u);
  stager->Cancel("cancelled");
  EXPECT_TRUE(stager->CancelUnwaited("unwaited"));
  EXPECT_FALSE(stager->CancelUnwaited("waited"));
  EXPECT_EQ(stager->stats().deferred, 2u);
  {
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(outcomes["cancelled"].code(), ECANCELED);
  }
  stager->Shutdown();
  std::lock_guard<std::mutex> lock(mu);
  EXPECT_EQ(outcomes["waited"].code(), ESHUTDOWN);
  EXPECT_EQ(outcomes["shut"].code(), ESHUTDOWN);
  EXPECT_EQ(store_->stats().files, 0u);
  EXPECT_EQ(TempFiles(), 0u);
  stager.reset();
}

INSTANTIATE_TEST_SUITE_P(BothEngines, StagerEngineTest,
                         ::testing::Values(StageEngine::kUring, StageEngine::kThreads),
                         [](const ::testing::TestParamInfo<StageEngine>& info) {
                           return info.param == StageEngine::kUring ? "Uring" : "Threads";
                         });

}  // namespace
}  // namespace clairfs
