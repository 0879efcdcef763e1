// Tests of UringCopier driven directly through its hooks: byte-exact copies of many sizes, the
// bound on files in flight and on buffers, a large file's chunks in flight at once, a file changed
// mid-copy (identity check after the last chunk), a vanished file among good ones, and a stop
// with copies in flight that leaves no temp files. Skipped (with the reason) where the kernel
// offers no io_uring.
#include "cache/uring_copier.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "cache/cache_dir.h"
#include "cache/content_store.h"
#include "cache/index_db.h"
#include "cache/testing/test_store.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::RandomBytes;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;
namespace fsys = std::filesystem;

constexpr size_t kChunk = 64 * 1024;

class UringCopierTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backing_ = tmp_ / "backing";
    testing::MakeDirs(backing_);
    auto cache = testing::OpenTestStore(tmp_ / "cache", Env::Default());
    ASSERT_TRUE(cache.ok()) << cache.status().message();
    dir_ = std::move(cache->dir);
    index_ = std::move(cache->index);
    store_ = std::move(cache->store);
  }
  void TearDown() override {
    Stop();
    copier_.reset();
    store_.reset();
    index_.reset();
    dir_.reset();
  }

  // Starts a copier whose `next` pops jobs_ and whose `done` records outcomes.
  bool Start(int max_files, int buffers, uint64_t flush_every = UringCopierOptions{}.flush_every) {
    UringCopierOptions options;
    auto tree = BackingTree::Open(backing_, Env::Default());
    if (!tree.ok()) return false;
    options.backing = std::move(*tree);
    options.max_files = max_files;
    options.buffers = buffers;
    options.chunk_size = kChunk;
    options.flush_every = flush_every;
    options.commit_threads = 2;
    CopierHooks hooks;
    hooks.next = [this](CopyJob* job, uint64_t*) {
      std::lock_guard<std::mutex> lock(mu_);
      if (stop_) return CopierHooks::Next::kStopping;
      if (jobs_.empty()) return CopierHooks::Next::kNone;
      *job = jobs_.front();
      jobs_.pop_front();
      ++started_;
      int now = started_ - static_cast<int>(results_.size());
      max_concurrent_ = std::max(max_concurrent_, now);
      return CopierHooks::Next::kJob;
    };
    hooks.take_tokens = [this](size_t, uint64_t* wait_ns) {
      if (on_chunk_) on_chunk_();
      if (tokens_forever_) {
        *wait_ns = 1000000;
        return false;
      }
      return true;
    };
    hooks.done = [this](const CopyJob& job, CopyResult result, uint64_t, const Status& status) {
      std::lock_guard<std::mutex> lock(mu_);
      results_[job.path] = {result, status};
      cv_.notify_all();
    };
    auto copier = UringCopier::Create(options, store_.get(), std::move(hooks));
    if (!copier.ok()) {
      unavailable_ = copier.status().message();
      return false;
    }
    copier_ = std::move(*copier);
    runner_ = std::thread([this] { copier_->Run(); });
    return true;
  }
  void Stop() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stop_ = true;
    }
    if (copier_) copier_->RequestStop();
    if (runner_.joinable()) runner_.join();
  }
  // Queues `rel` with its current identity; `then_unlink` removes it before the copier can look.
  void Submit(const std::string& rel, bool then_unlink = false) {
    struct stat st;
    ASSERT_EQ(lstat((backing_ + "/" + rel).c_str(), &st), 0) << rel;
    if (then_unlink) {
      ASSERT_EQ(unlink((backing_ + "/" + rel).c_str()), 0);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      jobs_.push_back(CopyJob{rel, IdentityOf(st)});
    }
    copier_->Wake();
  }
  void WaitFor(size_t n) {
    std::unique_lock<std::mutex> lock(mu_);
    ASSERT_TRUE(cv_.wait_for(lock, std::chrono::seconds(60), [&] { return results_.size() >= n; }))
        << results_.size() << " of " << n << " done";
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
  std::unique_ptr<CacheDir> dir_;
  std::unique_ptr<IndexDb> index_;
  std::unique_ptr<ContentStore> store_;
  std::unique_ptr<UringCopier> copier_;
  std::thread runner_;
  std::string unavailable_;
  std::function<void()> on_chunk_;  // runs on the ring thread before each chunk's read
  std::atomic<bool> tokens_forever_{false};

  std::mutex mu_;  // guards jobs_, stop_, started_, max_concurrent_, results_
  std::condition_variable cv_;
  std::deque<CopyJob> jobs_;
  bool stop_ = false;
  int started_ = 0;
  int max_concurrent_ = 0;
  std::map<std::string, std::pair<CopyResult, Status>> results_;
};

#define START_OR_SKIP(files, buffers) \
  if (!Start(files, buffers)) GTEST_SKIP() << "no io_uring: " << unavailable_

TEST_F(UringCopierTest, ManySizesAreCopiedByteExactWithinTheBounds) {
  std::map<std::string, std::string> files;
  const size_t sizes[] = {0,          1,    kChunk - 1,          kChunk,          kChunk + 1,
                          2 * kChunk, 4096, 3 * 1024 * 1024 + 7, 5 * 1024 * 1024, 110 * 1000};
  for (int d = 0; d < 3; ++d) testing::MakeDirs(backing_ + "/d" + std::to_string(d));
  int i = 0;
  for (size_t size : sizes) {
    for (int copy = 0; copy < 4; ++copy, ++i) {
      std::string rel = "d" + std::to_string(i % 3) + "/f" + std::to_string(i);
      files[rel] = Add(rel, size, static_cast<uint64_t>(i));
    }
  }
  START_OR_SKIP(8, 3);
  for (const auto& [rel, data] : files) Submit(rel);
  WaitFor(files.size());
  for (const auto& [rel, data] : files) {
    ASSERT_EQ(results_[rel].first, CopyResult::kStaged) << rel << results_[rel].second.message();
    auto copy = store_->Find(rel);
    ASSERT_TRUE(copy.has_value()) << rel;
    EXPECT_EQ(ReadFile(copy->data_path), data) << rel;
    EXPECT_EQ(copy->identity.size, data.size());
  }
  EXPECT_LE(max_concurrent_, 8);
  EXPECT_GT(copier_->peak_buffers_in_use(), 0);
  EXPECT_LE(copier_->peak_buffers_in_use(), 3);
  EXPECT_EQ(copier_->buffers_in_use(), 0);
  EXPECT_EQ(TempFiles(), 0u);
}

// One large file alone takes several buffers at once (file_depth chunks in flight, 8 by default)
// and, past `flush_every`, has background fdatasyncs of what is written; its copy is exact.
TEST_F(UringCopierTest, LargeFileHasSeveralChunksInFlightAndIsCopiedByteExact) {
  std::string big = Add("big", 80 * kChunk + 7, 1);
  if (!Start(2, 12, /*flush_every=*/1 << 20)) GTEST_SKIP() << "no io_uring: " << unavailable_;
  Submit("big");
  WaitFor(1);
  ASSERT_EQ(results_["big"].first, CopyResult::kStaged) << results_["big"].second.message();
  EXPECT_EQ(ReadFile(store_->Find("big")->data_path), big);
  EXPECT_EQ(copier_->peak_buffers_in_use(), 8);
  EXPECT_EQ(copier_->buffers_in_use(), 0);
  EXPECT_EQ(TempFiles(), 0u);
}

TEST_F(UringCopierTest, FileTruncatedMidCopyIsNotPublishedOthersAre) {
  Add("victim", 5 * kChunk, 1);
  std::string good = Add("good", 3 * kChunk, 2);
  std::atomic<int> chunks{0};
  // The third chunk of any file truncates the victim: its read sees EOF early or its identity
  // check after the copy fails; either way it must not be published.
  on_chunk_ = [&] {
    if (chunks.fetch_add(1) == 2) {
      ASSERT_EQ(truncate((backing_ + "/victim").c_str(), kChunk), 0);
    }
  };
  START_OR_SKIP(1, 1);
  Submit("victim");
  Submit("good");
  Add("vanished", 100, 3);
  Submit("vanished", /*then_unlink=*/true);
  WaitFor(3);
  EXPECT_EQ(results_["victim"].first, CopyResult::kSkipped);
  EXPECT_EQ(results_["victim"].second.code(), ESTALE) << results_["victim"].second.message();
  EXPECT_FALSE(store_->Contains("victim"));
  EXPECT_EQ(results_["vanished"].first, CopyResult::kSkipped);
  EXPECT_EQ(results_["vanished"].second.code(), ENOENT);
  ASSERT_TRUE(store_->Find("good").has_value());
  EXPECT_EQ(ReadFile(store_->Find("good")->data_path), good);
  EXPECT_EQ(TempFiles(), 0u);
  EXPECT_EQ(store_->stats().reserved_bytes, 0u);
}

// The settle rule's check after the copy (stager.h): a job whose source's ctime is at or after
// its unsettled_from_ns is copied but not published (kUnsettled, EAGAIN), leaving no temp file and
// nothing reserved; one whose source is older than that is published.
TEST_F(UringCopierTest, ACopyOfAnUnsettledFileIsNotPublished) {
  Add("fresh", 3 * kChunk + 5, 1);
  const std::string settled = Add("settled", 2 * kChunk, 2);
  START_OR_SKIP(2, 2);
  struct stat st;
  ASSERT_EQ(lstat((backing_ + "/fresh").c_str(), &st), 0);
  CopyJob fresh{"fresh", IdentityOf(st)};
  fresh.unsettled_from_ns = IdentityOf(st).ctime_ns - 1'000'000'000;  // settle: 1 s
  ASSERT_EQ(lstat((backing_ + "/settled").c_str(), &st), 0);
  CopyJob old{"settled", IdentityOf(st)};
  old.unsettled_from_ns = IdentityOf(st).ctime_ns + 1;  // the copy began a settle after it
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(fresh);
    jobs_.push_back(old);
  }
  copier_->Wake();
  WaitFor(2);
  EXPECT_EQ(results_["fresh"].first, CopyResult::kUnsettled);
  EXPECT_EQ(results_["fresh"].second.code(), EAGAIN) << results_["fresh"].second.message();
  EXPECT_FALSE(store_->Contains("fresh"));
  ASSERT_EQ(results_["settled"].first, CopyResult::kStaged) << results_["settled"].second.message();
  EXPECT_EQ(ReadFile(store_->Find("settled")->data_path), settled);
  EXPECT_EQ(TempFiles(), 0u);
  EXPECT_EQ(store_->stats().reserved_bytes, 0u);
}

TEST_F(UringCopierTest, StopWithCopiesInFlightAbortsThemAndLeavesNoTemps) {
  for (int i = 0; i < 30; ++i) Add("f" + std::to_string(i), 4 * kChunk, i);
  tokens_forever_ = true;  // every copy stalls before its first chunk
  START_OR_SKIP(16, 4);
  for (int i = 0; i < 30; ++i) Submit("f" + std::to_string(i));
  for (int i = 0; i < 500 && TempFiles() < 16; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_EQ(TempFiles(), 16u);  // 16 reserved slots, no more
  auto start = std::chrono::steady_clock::now();
  Stop();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0);
  EXPECT_EQ(results_.size(), 16u);  // the 14 never started are the owner's to cancel
  for (const auto& [rel, r] : results_) EXPECT_EQ(r.second.code(), ESHUTDOWN) << rel;
  EXPECT_EQ(TempFiles(), 0u);
  EXPECT_EQ(store_->stats().files, 0u);
  EXPECT_EQ(store_->stats().reserved_bytes, 0u);
}

}  // namespace
}  // namespace clairfs
