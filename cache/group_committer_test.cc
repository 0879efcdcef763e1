// Tests of GroupCommitter: copies submitted while a group is being published form the next group
// (one directory sync for all of them), lingering gathers copies that arrive soon after, each
// copy's outcome reaches its own callback (one failure fails that copy only), and the destructor
// publishes what is still queued.
#include "cache/group_committer.h"

#include <atomic>
#include <condition_variable>
#include <future>
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

// Holds every SyncDir until Release(), and says when one is waiting.
class HoldSyncDirEnv : public FaultInjectionEnv {
 public:
  void Hold() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = false;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = true;
    cv_.notify_all();
  }
  bool WaitHeld() {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, std::chrono::seconds(20), [&] { return held_ > 0; });
  }
  Status SyncDir(const std::string& dir) override {
    {
      std::unique_lock<std::mutex> lock(mu_);
      ++held_;
      cv_.notify_all();
      cv_.wait(lock, [&] { return open_; });
      --held_;
    }
    return FaultInjectionEnv::SyncDir(dir);
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  int held_ = 0;
};

class GroupCommitterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto cache = testing::OpenTestStore(tmp_ / "cache", &env_);
    ASSERT_TRUE(cache.ok()) << cache.status().message();
    dir_ = std::move(cache->dir);
    index_ = std::move(cache->index);
    store_ = std::move(cache->store);
  }
  void TearDown() override {
    committer_.reset();
    store_.reset();
    index_.reset();
    dir_.reset();
  }
  // A written, fsynced slot for `path` holding `data`.
  StagingSlot Written(const std::string& path, const std::string& data) {
    auto slot = store_->BeginStaging(path, data.size());
    EXPECT_TRUE(slot.ok()) << slot.status().message();
    if (!slot.ok()) return StagingSlot{};
    EXPECT_TRUE(env_.PwriteAll(slot->fd, data.data(), data.size(), 0).ok());
    EXPECT_TRUE(store_->SyncData(&*slot).ok());
    return std::move(*slot);
  }
  static FileIdentity IdentityFor(const std::string& data) {
    return FileIdentity{data.size(), 1, 2, 3};
  }

  TempDir tmp_;
  HoldSyncDirEnv env_;
  std::unique_ptr<CacheDir> dir_;
  std::unique_ptr<IndexDb> index_;
  std::unique_ptr<ContentStore> store_;
  std::unique_ptr<GroupCommitter> committer_;
};

TEST_F(GroupCommitterTest, CopiesArrivingDuringAGroupFormTheNextGroup) {
  committer_ = std::make_unique<GroupCommitter>(store_.get(), GroupCommitterOptions{});
  const int n = 24;
  std::vector<std::string> data(n);
  std::vector<StagingSlot> slots(n);
  for (int i = 0; i < n; ++i) {
    data[i] = RandomBytes(3000 + 100 * i, i);
    slots[i] = Written("f" + std::to_string(i), data[i]);
  }
  env_.ResetCounts();
  env_.Hold();
  std::vector<Status> out(n, Status::Error(EINVAL, "no outcome"));
  std::atomic<int> pending{n};
  std::promise<void> all_done;
  auto submit = [&](int i) {
    committer_->Submit(&slots[i], IdentityFor(data[i]), [&, i](const Status& st) {
      out[i] = st;
      if (pending.fetch_sub(1) == 1) all_done.set_value();
    });
  };
  // The first copy's group stops at its directory sync; the others queue up meanwhile.
  submit(0);
  ASSERT_TRUE(env_.WaitHeld());
  for (int i = 1; i < n; ++i) submit(i);
  env_.Release();
  all_done.get_future().wait();
  for (int i = 0; i < n; ++i) EXPECT_TRUE(out[i].ok()) << i << ": " << out[i].message();
  EXPECT_EQ(committer_->copies(), static_cast<uint64_t>(n));
  EXPECT_EQ(committer_->groups(), 2u);
  EXPECT_EQ(env_.calls(FaultOp::kSyncDir), 2u);
  for (int i = 0; i < n; ++i) {
    auto copy = store_->Find("f" + std::to_string(i));
    ASSERT_TRUE(copy.has_value()) << i;
    EXPECT_EQ(ReadFile(copy->data_path), data[i]);
  }
}

TEST_F(GroupCommitterTest, LingerGathersCopiesThatArriveSoonAfter) {
  GroupCommitterOptions options;
  options.linger_ns = 2'000'000'000;  // far longer than the test needs: the full group ends it
  options.max_batch = 3;
  committer_ = std::make_unique<GroupCommitter>(store_.get(), options);
  std::vector<std::string> data = {RandomBytes(100, 1), RandomBytes(200, 2), RandomBytes(300, 3)};
  std::vector<StagingSlot> slots;
  for (int i = 0; i < 3; ++i) slots.push_back(Written("f" + std::to_string(i), data[i]));
  std::promise<void> all_done;
  std::atomic<int> pending{3};
  std::vector<Status> out(3);
  auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 3; ++i) {
    committer_->Submit(&slots[i], IdentityFor(data[i]), [&, i](const Status& st) {
      out[i] = st;
      if (pending.fetch_sub(1) == 1) all_done.set_value();
    });
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  all_done.get_future().wait();
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  for (const Status& st : out) EXPECT_TRUE(st.ok()) << st.message();
  EXPECT_EQ(committer_->groups(), 1u);
  EXPECT_LT(seconds, 1.5);  // a full group does not wait out the linger
}

TEST_F(GroupCommitterTest, EachCopyGetsItsOwnOutcome) {
  committer_ = std::make_unique<GroupCommitter>(store_.get(), GroupCommitterOptions{});
  std::vector<std::string> data = {RandomBytes(100, 1), RandomBytes(200, 2), RandomBytes(300, 3)};
  std::vector<StagingSlot> slots;
  for (int i = 0; i < 3; ++i) slots.push_back(Written("f" + std::to_string(i), data[i]));
  // The middle copy's rename fails; its neighbours in the group are published.
  env_.FailPath(FaultOp::kRename, slots[1].temp_path, EIO);
  env_.Hold();
  std::vector<Status> out(3);
  std::atomic<int> pending{3};
  std::promise<void> all_done;
  for (int i = 0; i < 3; ++i) {
    committer_->Submit(&slots[i], IdentityFor(data[i]), [&, i](const Status& st) {
      out[i] = st;
      if (pending.fetch_sub(1) == 1) all_done.set_value();
    });
  }
  env_.Release();
  all_done.get_future().wait();
  EXPECT_TRUE(out[0].ok()) << out[0].message();
  EXPECT_EQ(out[1].code(), EIO) << out[1].message();
  EXPECT_TRUE(out[2].ok()) << out[2].message();
  EXPECT_TRUE(store_->Contains("f0"));
  EXPECT_FALSE(store_->Contains("f1"));
  EXPECT_TRUE(store_->Contains("f2"));
  EXPECT_EQ(store_->stats().reserved_bytes, 0u);
}

TEST_F(GroupCommitterTest, DestructorPublishesWhatIsQueued) {
  committer_ = std::make_unique<GroupCommitter>(store_.get(), GroupCommitterOptions{});
  std::vector<std::string> data;
  std::vector<StagingSlot> slots;
  for (int i = 0; i < 5; ++i) {
    data.push_back(RandomBytes(1000 + i, i));
    slots.push_back(Written("f" + std::to_string(i), data[i]));
  }
  env_.Hold();
  std::atomic<int> ok{0};
  for (int i = 0; i < 5; ++i) {
    committer_->Submit(&slots[i], IdentityFor(data[i]), [&](const Status& st) {
      if (st.ok()) ok.fetch_add(1);
    });
  }
  ASSERT_TRUE(env_.WaitHeld());
  std::thread release([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    env_.Release();
  });
  committer_.reset();
  release.join();
  EXPECT_EQ(ok.load(), 5);
  for (int i = 0; i < 5; ++i) EXPECT_TRUE(store_->Contains("f" + std::to_string(i)));
}

}  // namespace
}  // namespace clairfs
