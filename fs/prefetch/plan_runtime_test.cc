// Tests of PlanRuntime's prefetch decisions, one pass at a time (RunPass, no thread): a real plan
// tracker, manifest, content store and plan policy over a small dataset; a fake staging queue that
// records what the prefetcher queues and withdraws, and a fake clock for the reader's pace.
#include "fs/prefetch/plan_runtime.h"

#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "cache/cache_dir.h"
#include "cache/index_db.h"
#include "planner/plan.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::TempDir;

constexpr uint64_t kBlock = 4096;

// A file's size in whole blocks: what it takes on ext4 and tmpfs (docs/CACHE.md), computed here
// rather than taken from the store, whose reservation is under test.
uint64_t Blocks(uint64_t size) { return (size + kBlock - 1) / kBlock * kBlock; }

// Records the prefetcher's requests; "copies" happen only when the test completes one.
// Locked, for the test that runs the prefetcher's thread; the others read the fields directly.
class FakeQueue : public StagingQueue {
 public:
  bool Prefetch(const std::string& path, const FileIdentity&, StagePriority priority) override {
    std::lock_guard<std::mutex> lock(mu);
    if (!queued.insert(path).second) return false;
    requests.emplace_back(path, priority);
    return true;
  }
  bool CancelUnwaited(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu);
    if (queued.erase(path) == 0) return false;
    cancelled.push_back(path);
    return true;
  }
  size_t RequestsOf(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu);
    return static_cast<size_t>(std::count_if(requests.begin(), requests.end(),
                                             [&](const auto& r) { return r.first == path; }));
  }
  StagerStats stats() override {
    std::lock_guard<std::mutex> lock(mu);
    StagerStats s;
    s.queued = queued.size();
    s.in_flight = in_flight;
    s.files_staged = files_staged;
    return s;
  }

  CopyProgress ProgressOf(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu);
    if (flying.count(path) != 0) return CopyProgress::kInFlight;
    return queued.count(path) != 0 ? CopyProgress::kQueued : CopyProgress::kNone;
  }

  // As the peer tier's queue: files a peer would bring, and the bytes held for home files.
  bool CopiesFromBackingStore(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu);
    return remote.count(path) == 0;
  }
  uint64_t held_bytes() override {
    std::lock_guard<std::mutex> lock(mu);
    return held;
  }
  bool ExpectsPeerAgent() override {
    std::lock_guard<std::mutex> lock(mu);
    return expects_agent;
  }
  bool PeerAgentAttached() override {
    std::lock_guard<std::mutex> lock(mu);
    return agent_attached;
  }

  std::mutex mu;
  std::set<std::string> remote;
  uint64_t held = 0;
  bool expects_agent = false;
  bool agent_attached = false;
  std::set<std::string> queued;  // requested and neither completed nor withdrawn
  std::set<std::string> flying;  // being copied (the test says so; ProgressOf reports it)
  std::vector<std::pair<std::string, StagePriority>> requests;
  std::vector<std::string> cancelled;
  uint64_t in_flight = 0;
  uint64_t files_staged = 0;
};

// The default Env with a monotonic clock the test moves.
class FakeClockEnv : public EnvWrapper {
 public:
  FakeClockEnv() : EnvWrapper(Env::Default()) {}
  uint64_t NowMonotonicNanos() override { return now_ns.load(); }
  void AdvanceMs(uint64_t ms) { now_ns += ms * 1000000; }
  std::atomic<uint64_t> now_ns{1000000000};
};

class PlanRuntimeTest : public ::testing::Test {
 protected:
  // Writes a dataset of `sizes.size()` files (cls_<i%3>/img_<i>.jpg), lists it into a manifest and
  // sets order_ to epoch 0 of `spec` in plan order.
  void MakeDataset(const std::vector<uint64_t>& sizes, const std::string& spec) {
    spec_ = spec;
    backing_ = dir_ / "backing";
    for (size_t i = 0; i < sizes.size(); ++i) {
      char name[64];
      snprintf(name, sizeof(name), "cls_%zu/img_%05zu.jpg", i % 3, i);
      testing::WriteFile(backing_ + "/" + name, testing::RandomBytes(sizes[i], i));
    }
    auto cache = CacheDir::Acquire(dir_ / "cache", Env::Default());
    ASSERT_TRUE(cache.ok()) << cache.status().message();
    cache_dir_ = std::move(*cache);
    auto index = IndexDb::Open(cache_dir_->index_dir());
    ASSERT_TRUE(index.ok()) << index.status().message();
    index_ = std::move(*index);
    manifest_ = std::make_unique<Manifest>(index_.get());
    ASSERT_TRUE(manifest_->Rescan(backing_, 1, Env::Default()).ok());
    auto config = ParsePlanTrackerConfig(spec, "imagefolder", "");
    ASSERT_TRUE(config.ok()) << config.status().message();
    config->backing_root = backing_;
    auto tracker = PlanTracker::Create(*config);
    ASSERT_TRUE(tracker.ok()) << tracker.status().message();
    for (const PlannedFile& p : (*tracker)->Upcoming(sizes.size())) {
      order_.push_back((*tracker)->PathOf(p.file));
    }
    ASSERT_EQ(order_.size(), sizes.size());
  }

  // Opens a store of `capacity` bytes evicting by the plan and a runtime over it, no plan yet.
  void OpenRuntime(uint64_t capacity) {
    auto policy = std::make_unique<PlanPolicy>();
    policy_ = policy.get();
    auto store = ContentStore::Open(cache_dir_.get(), index_.get(), Env::Default(),
                                    ContentStoreOptions{capacity, 0, nullptr}, std::move(policy));
    ASSERT_TRUE(store.ok()) << store.status().message();
    store_ = std::move(*store);
    PlanRuntimeDeps deps;
    deps.store = store_.get();
    deps.stager = &queue_;
    deps.manifest = manifest_.get();
    deps.policy = policy_;
    deps.backing_root = backing_;
    deps.env = &clock_;
    deps.on_plan_active = [this](bool active) { active_calls_.push_back(active); };
    runtime_ = std::make_unique<PlanRuntime>(deps);
  }

  // OpenRuntime, then the plan set (`window` positions of reordering).
  void Start(uint64_t capacity, uint64_t window = 16) {
    ASSERT_NO_FATAL_FAILURE(OpenRuntime(capacity));
    auto config = ParsePlanTrackerConfig(spec_, "imagefolder", "");
    ASSERT_TRUE(config.ok()) << config.status().message();
    config->window = window;
    ASSERT_TRUE(runtime_->Set(*config).ok());
    tracker_ = runtime_->tracker();
  }

  // A runtime under --plan auto over the dataset (a narrow search: it runs in a unit test).
  void StartAuto(uint64_t capacity, uint64_t window = 16) {
    ASSERT_NO_FATAL_FAILURE(OpenRuntime(capacity));
    PlanWatcherConfig config;
    config.window = window;
    config.inference.max_seed_plus_epoch = 1 << 12;
    config.inference.max_world = 8;
    config.proc_root = dir_ / "no-proc";
    ASSERT_TRUE(runtime_->SetAuto(config).ok());
  }

  // Waits (at most 60 s) until the runtime has an active plan.
  bool WaitActive() {
    for (int i = 0; i < 6000 && !runtime_->Active(); ++i) usleep(10000);
    return runtime_->Active();
  }

  void MakeDatasetAndStart(const std::vector<uint64_t>& sizes, const std::string& spec,
                           uint64_t capacity, uint64_t window = 16) {
    MakeDataset(sizes, spec);
    Start(capacity, window);
  }

  void TearDown() override {
    runtime_.reset();
    tracker_.reset();
    store_.reset();
    manifest_.reset();
    index_.reset();
    cache_dir_.reset();
  }

  uint64_t SizeOf(const std::string& path) {
    auto node = manifest_->GetByPath(path);
    EXPECT_TRUE(node.ok() && node->has_value()) << path;
    return (*node)->attr.size;
  }

  // The copy of `path` finishes: it is published in the store (evicting as the policy says).
  Status Complete(const std::string& path) {
    auto node = manifest_->GetByPath(path);
    if (!node.ok() || !node->has_value()) return Status::Error(ENOENT, path);
    const FileIdentity identity = (*node)->attr.identity();
    queue_.queued.erase(path);
    auto slot = store_->BeginStaging(path, identity.size);
    if (!slot.ok()) return slot.status();
    const std::string data = testing::ReadFile(backing_ + "/" + path);
    Status st = Env::Default()->PwriteAll(slot->fd, data.data(), data.size(), 0);
    if (!st.ok()) {
      store_->Abort(&*slot);
      return st;
    }
    st = store_->Commit(&*slot, identity);
    if (st.ok()) ++queue_.files_staged;
    return st;
  }

  // What the FUSE open does: tell the plan, then look the copy up (a use for eviction).
  void ReaderOpens(const std::string& path) {
    runtime_->OnOpen(path, Opener{});
    store_->Find(path);
  }

  // The first pass asks for the first 32 files; then, in 125 ms, the reader opens 16 of them
  // (128 per second) while 4 copies are in flight and 16 finish: a copy takes 4 / 128 s, so
  // 2 x 128 x 4/128 = 8 positions are left to the reader.
  void ReaderOpensSixteenWhileFourCopiesAreInFlight() {
    runtime_->RunPass();  // starts measuring
    ASSERT_EQ(Requested(), std::vector<std::string>(order_.begin(), order_.begin() + 32));
    EXPECT_EQ(runtime_->StatusJson()["left_to_reader"], 0u);
    queue_.in_flight = 4;
    for (size_t i = 0; i < 16; ++i) ReaderOpens(order_[i]);
    queue_.files_staged += 16;
    clock_.AdvanceMs(125);
    runtime_->RunPass();
    EXPECT_EQ(runtime_->StatusJson()["left_to_reader"], 8u);
  }

  std::vector<std::string> Requested() const {
    std::vector<std::string> out;
    for (const auto& [path, priority] : queue_.requests) out.push_back(path);
    return out;
  }

  TempDir dir_;
  std::string backing_;
  std::unique_ptr<CacheDir> cache_dir_;
  std::unique_ptr<IndexDb> index_;
  std::unique_ptr<Manifest> manifest_;
  PlanPolicy* policy_ = nullptr;
  std::unique_ptr<ContentStore> store_;
  FakeQueue queue_;
  FakeClockEnv clock_;
  std::vector<bool> active_calls_;
  std::unique_ptr<PlanRuntime> runtime_;
  std::shared_ptr<PlanTracker> tracker_;
  std::string spec_;
  std::vector<std::string> order_;  // epoch 0 in plan order
};

// Sizes of 1 byte to 3 blocks, few of them multiples of a block.
std::vector<uint64_t> UnalignedSizes(size_t n) {
  std::vector<uint64_t> sizes;
  for (size_t i = 0; i < n; ++i) sizes.push_back(1 + (i * 2749) % (3 * kBlock));
  return sizes;
}

// Sizes of 0 to 3 blocks: empty files, exact multiples of a block, and others.
std::vector<uint64_t> MixedSizes(size_t n) {
  std::vector<uint64_t> sizes;
  for (size_t i = 0; i < n; ++i) {
    if (i % 8 == 0) {
      sizes.push_back(0);
    } else if (i % 8 == 1) {
      sizes.push_back(kBlock * (1 + i % 3));
    } else {
      sizes.push_back(1 + (i * 2749) % (3 * kBlock));
    }
  }
  return sizes;
}

TEST_F(PlanRuntimeTest, ACacheOfTheDatasetsBlocksIsFilledInPlanOrder) {
  const std::vector<uint64_t> sizes = MixedSizes(48);
  uint64_t capacity = 0;
  for (uint64_t s : sizes) capacity += Blocks(s);
  MakeDatasetAndStart(sizes, "torch-distributed:seed=7,world=1", capacity);
  runtime_->RunPass();
  // Every file, in plan order, the nearest quarter first.
  EXPECT_EQ(Requested(), order_);
  for (size_t i = 0; i < queue_.requests.size(); ++i) {
    EXPECT_EQ(queue_.requests[i].second,
              i < order_.size() / 4 ? StagePriority::kHigh : StagePriority::kNormal)
        << i;
  }
  // All of them fit: the last one evicts nothing.
  for (const std::string& path : order_) ASSERT_TRUE(Complete(path).ok()) << path;
  EXPECT_EQ(store_->stats().evictions, 0u);
  EXPECT_EQ(store_->stats().files, order_.size());
  EXPECT_LE(store_->stats().used_bytes, capacity);
  // Nothing left to do: a further pass queues and withdraws nothing.
  runtime_->RunPass();
  EXPECT_EQ(queue_.requests.size(), order_.size());
  EXPECT_TRUE(queue_.cancelled.empty());
  EXPECT_EQ(tracker_->StatusJson()["lead_files"], order_.size());
}

// The prefetcher's thread runs no pass while nothing a pass reads changes (a cache that holds the
// whole plan, no reader): before, it walked the window every 3 ms, a quarter of a CPU on an idle
// mount. A change (here an eviction) brings a pass that queues the copy again.
TEST_F(PlanRuntimeTest, TheThreadSkipsPassesWhileNothingChangesAndResumesOnAChange) {
  MakeDatasetAndStart(std::vector<uint64_t>(32, kBlock), "torch-distributed:seed=11,world=1",
                      64 * kBlock);
  runtime_->RunPass();
  ASSERT_EQ(Requested(), order_);
  for (const std::string& path : order_) ASSERT_TRUE(Complete(path).ok()) << path;
  runtime_->Start();
  usleep(300000);  // the passes that see the last copies published
  const uint64_t settled = runtime_->passes();
  usleep(600000);
  EXPECT_LE(runtime_->passes() - settled, 1u);
  EXPECT_GE(runtime_->StatusJson().value("prefetch_passes", uint64_t{0}), settled);

  ASSERT_TRUE(store_->Evict(order_[3], /*force=*/true).ok());
  bool requeued = false;
  for (int i = 0; i < 100 && !requeued; ++i) {
    usleep(10000);
    requeued = queue_.RequestsOf(order_[3]) == 2;
  }
  EXPECT_TRUE(requeued);
  runtime_->Stop();
}

TEST_F(PlanRuntimeTest, StagesAheadInPlanOrderWithinTheCapacity) {
  MakeDataset(UnalignedSizes(48), "torch-distributed:seed=8,world=1");
  // Room for the first 10 files in plan order, one byte short of the 11th.
  uint64_t capacity = 0;
  for (size_t i = 0; i < 10; ++i) capacity += Blocks(SizeOf(order_[i]));
  const uint64_t eleventh = Blocks(SizeOf(order_[10]));
  ASSERT_GT(eleventh, 0u);
  Start(capacity + eleventh - 1);
  runtime_->RunPass();
  EXPECT_EQ(Requested(), std::vector<std::string>(order_.begin(), order_.begin() + 10));
}

TEST_F(PlanRuntimeTest, EvictsTheFarthestNextUseAndNothingInsideTheWindow) {
  // 64 files of one block; room for 16.
  MakeDatasetAndStart(std::vector<uint64_t>(64, kBlock), "torch-distributed:seed=9,world=1",
                      16 * kBlock);
  runtime_->RunPass();
  ASSERT_EQ(Requested(), std::vector<std::string>(order_.begin(), order_.begin() + 16));
  for (const std::string& path : Requested()) ASSERT_TRUE(Complete(path).ok());
  // The reader is at position 15: the next file to stage is order_[16], which needs room.
  for (size_t i = 0; i < 15; ++i) ReaderOpens(order_[i]);
  runtime_->RunPass();
  ASSERT_EQ(queue_.queued, std::set<std::string>{order_[16]});
  // The expected victim: the cached file whose next planned use is farthest.
  std::string farthest;
  uint64_t farthest_use = 0;
  for (size_t i = 0; i < 16; ++i) {
    const uint64_t use = tracker_->NextUse(order_[i]);
    if (use >= farthest_use) {
      farthest_use = use;
      farthest = order_[i];
    }
  }
  ASSERT_GT(farthest_use, tracker_->ProtectUntil());
  ASSERT_TRUE(Complete(order_[16]).ok());
  EXPECT_EQ(store_->stats().evictions, 1u);
  EXPECT_FALSE(store_->Contains(farthest)) << farthest;
  // order_[15], needed next, is inside the window.
  EXPECT_TRUE(store_->Contains(order_[15]));
  EXPECT_TRUE(store_->Contains(order_[16]));
}

TEST_F(PlanRuntimeTest, WithdrawsRequestsTheReaderOvertook) {
  // Room for half the dataset, so that the next epoch's uses are out of reach.
  MakeDatasetAndStart(std::vector<uint64_t>(64, kBlock), "torch-distributed:seed=10,world=1",
                      32 * kBlock);
  runtime_->RunPass();
  ASSERT_EQ(Requested(), std::vector<std::string>(order_.begin(), order_.begin() + 32));
  for (size_t i = 0; i < 10; ++i) ReaderOpens(order_[i]);
  runtime_->RunPass();
  EXPECT_EQ(std::set<std::string>(queue_.cancelled.begin(), queue_.cancelled.end()),
            std::set<std::string>(order_.begin(), order_.begin() + 10));
  EXPECT_EQ(queue_.cancelled.size(), 10u);
  EXPECT_EQ(queue_.queued, std::set<std::string>(order_.begin() + 10, order_.begin() + 42));
  EXPECT_EQ(queue_.requests.size(), 42u);  // nothing asked twice
}

TEST_F(PlanRuntimeTest, LeavesToTheReaderTheFilesItReachesBeforeACopyFinishes) {
  MakeDatasetAndStart(std::vector<uint64_t>(64, kBlock), "torch-distributed:seed=11,world=1",
                      32 * kBlock);
  ASSERT_NO_FATAL_FAILURE(ReaderOpensSixteenWhileFourCopiesAreInFlight());
  // Positions 16..23 are the reader's: their waiting requests are withdrawn, the rest stay.
  std::set<std::string> withdrawn(queue_.cancelled.begin(), queue_.cancelled.end());
  EXPECT_EQ(withdrawn, std::set<std::string>(order_.begin(), order_.begin() + 24));
  EXPECT_EQ(queue_.queued, std::set<std::string>(order_.begin() + 24, order_.begin() + 48));
  // An interval in which nothing was in flight or copied halves the copy-time estimate (the
  // reader's pace stays 128 per second), so the reader is left 4 positions and the prefetcher
  // asks again for the files beyond them.
  queue_.in_flight = 0;
  for (size_t i = 16; i < 32; ++i) ReaderOpens(order_[i]);
  clock_.AdvanceMs(125);
  runtime_->RunPass();
  EXPECT_EQ(runtime_->StatusJson()["left_to_reader"], 4u);
  EXPECT_EQ(queue_.queued, std::set<std::string>(order_.begin() + 36, order_.end()));
  // The reader stops (between epochs, at a checkpoint): its pace halves with each pass's sample
  // until nothing is left to it, and the files it was left are asked for (the thread keeps
  // passing while anything is left to the reader, however unchanged the mount).
  for (int i = 0; i < 8 && runtime_->StatusJson()["left_to_reader"] != 0u; ++i) {
    clock_.AdvanceMs(125);
    runtime_->RunPass();
  }
  EXPECT_EQ(runtime_->StatusJson()["left_to_reader"], 0u);
  EXPECT_EQ(queue_.queued, std::set<std::string>(order_.begin() + 32, order_.end()));
}

TEST_F(PlanRuntimeTest, MissCausesFollowThePrefetchersLastPass) {
  MakeDatasetAndStart(std::vector<uint64_t>(64, kBlock), "torch-distributed:seed=11,world=1",
                      32 * kBlock);
  ASSERT_NO_FATAL_FAILURE(ReaderOpensSixteenWhileFourCopiesAreInFlight());
  // Positions 16..23 were left to the reader, 24..47 are queued, 48.. are past the window.
  EXPECT_EQ(runtime_->OnMiss(order_[16]), MissCause::kLeftToReader);
  EXPECT_EQ(runtime_->OnMiss(order_[23]), MissCause::kLeftToReader);
  EXPECT_EQ(runtime_->OnMiss(order_[24]), MissCause::kCopyQueued);
  queue_.queued.erase(order_[25]);
  queue_.flying.insert(order_[25]);
  EXPECT_EQ(runtime_->OnMiss(order_[25]), MissCause::kCopyInFlight);
  EXPECT_EQ(runtime_->OnMiss(order_[48]), MissCause::kNotStagedAhead);
  EXPECT_EQ(runtime_->OnMiss("cls_0/not_in_the_dataset.jpg"), MissCause::kUnplanned);
  // The next pass leaves other files to the reader: the earlier ones are not counted as left.
  for (size_t i = 16; i < 24; ++i) ReaderOpens(order_[i]);
  clock_.AdvanceMs(125);
  runtime_->RunPass();
  EXPECT_EQ(runtime_->OnMiss(order_[17]), MissCause::kNotStagedAhead);
  // Without a plan nothing is planned, but a copy under way is still one.
  runtime_->Clear();
  EXPECT_EQ(runtime_->OnMiss(order_[60]), MissCause::kUnplanned);
  EXPECT_EQ(runtime_->OnMiss(order_[25]), MissCause::kCopyInFlight);
}

TEST_F(PlanRuntimeTest, FilesAPeerBringsAreAskedForInsideTheReadersLead) {
  MakeDatasetAndStart(std::vector<uint64_t>(64, kBlock), "torch-distributed:seed=11,world=1",
                      32 * kBlock);
  // Every other file in plan order comes from a peer.
  for (size_t i = 1; i < order_.size(); i += 2) queue_.remote.insert(order_[i]);
  // 8 positions are left to the reader, but only the files the PFS would copy; a peer's copy
  // that loses the race costs the PFS nothing, so those stay asked for.
  ASSERT_NO_FATAL_FAILURE(ReaderOpensSixteenWhileFourCopiesAreInFlight());
  std::set<std::string> withdrawn(queue_.cancelled.begin(), queue_.cancelled.end());
  std::set<std::string> expected_withdrawn(order_.begin(), order_.begin() + 16);
  for (size_t i = 16; i < 24; i += 2) expected_withdrawn.insert(order_[i]);
  EXPECT_EQ(withdrawn, expected_withdrawn);
  for (size_t i = 17; i < 24; i += 2) EXPECT_EQ(queue_.queued.count(order_[i]), 1u) << i;
}

TEST_F(PlanRuntimeTest, FilesAPeerBringsFillTheRoomTheHoldsLeaveBeyondTheDepth) {
  // 64 files of one block, room for 32: the prefetch depth is 4 blocks.
  MakeDatasetAndStart(std::vector<uint64_t>(64, kBlock), "torch-distributed:seed=12,world=1",
                      32 * kBlock);
  runtime_->RunPass();
  for (const std::string& path : Requested()) ASSERT_TRUE(Complete(path).ok());
  for (size_t i = 0; i < 16; ++i) ReaderOpens(order_[i]);
  // The cache is full: beyond the depth only free space may be filled, so nothing new.
  const size_t before = queue_.requests.size();
  runtime_->RunPass();
  EXPECT_EQ(queue_.requests.size(), before);
  // Files a peer brings, with 8 blocks held for home files: they may fill the other 24 blocks
  // (16 of them the cached files the reader opens next), evicting copies of later use.
  for (const std::string& path : order_) queue_.remote.insert(path);
  queue_.held = 8 * kBlock;
  runtime_->RunPass();
  const std::vector<std::string> requested = Requested();
  ASSERT_EQ(requested.size(), before + 8);
  EXPECT_EQ(
      std::vector<std::string>(requested.begin() + static_cast<long>(before), requested.end()),
      std::vector<std::string>(order_.begin() + 32, order_.begin() + 40));
}

// A distributed job on a mount that expects a peer agent: until the agent attaches, only the
// node's first-epoch shard is staged (the next epoch's files are other nodes' shards, which a peer
// brings); once an agent has attached the window crosses into the next epoch, and stays free
// after the agent leaves.
TEST_F(PlanRuntimeTest, BeforeAPeerAgentAttachesOnlyTheFirstEpochIsStaged) {
  // Rank 0 of 2 reads 16 of the 32 files per epoch; room for all 32.
  MakeDatasetAndStart(std::vector<uint64_t>(32, kBlock),
                      "torch-distributed:seed=13,world=2,ranks=0-0", 32 * kBlock);
  const std::vector<std::string> first_epoch(order_.begin(), order_.begin() + 16);
  queue_.expects_agent = true;
  runtime_->RunPass();
  EXPECT_EQ(Requested(), first_epoch);
  EXPECT_TRUE(runtime_->StatusJson()["awaiting_peer_agents"].get<bool>());
  runtime_->RunPass();
  EXPECT_EQ(Requested(), first_epoch);

  queue_.agent_attached = true;
  runtime_->RunPass();
  EXPECT_GT(Requested().size(), first_epoch.size());
  EXPECT_FALSE(runtime_->StatusJson()["awaiting_peer_agents"].get<bool>());
  for (const std::string& path : Requested()) ASSERT_TRUE(Complete(path).ok());
  queue_.agent_attached = false;  // the agent left: the plan goes on without the rule
  runtime_->RunPass();
  EXPECT_FALSE(runtime_->StatusJson()["awaiting_peer_agents"].get<bool>());
}

// No agent ever comes: the next epoch is staged once the reader is in it.
TEST_F(PlanRuntimeTest, WithoutAPeerAgentTheNextEpochIsStagedWhenTheReaderEntersIt) {
  MakeDatasetAndStart(std::vector<uint64_t>(32, kBlock),
                      "torch-distributed:seed=14,world=2,ranks=1-1", 32 * kBlock);
  queue_.expects_agent = true;
  runtime_->RunPass();
  ASSERT_EQ(Requested(), std::vector<std::string>(order_.begin(), order_.begin() + 16));
  for (const std::string& path : Requested()) ASSERT_TRUE(Complete(path).ok());
  for (size_t i = 0; i < 16; ++i) ReaderOpens(order_[i]);
  runtime_->RunPass();
  EXPECT_FALSE(runtime_->StatusJson()["awaiting_peer_agents"].get<bool>());
  std::set<std::string> requested;
  for (const std::string& path : Requested()) requested.insert(path);
  for (size_t i = 16; i < order_.size(); ++i) EXPECT_EQ(requested.count(order_[i]), 1u) << i;
}

// A plan that serves its whole world (no other node reads the rest) is never held back, nor is
// a plan of part of the world on a mount without a peer key (no agent can attach).
TEST_F(PlanRuntimeTest, APlanOfTheWholeWorldIsNotHeldBackForPeerAgents) {
  MakeDatasetAndStart(std::vector<uint64_t>(16, kBlock), "torch-distributed:seed=15,world=2",
                      64 * kBlock);
  queue_.expects_agent = true;
  runtime_->RunPass();
  EXPECT_FALSE(runtime_->StatusJson()["awaiting_peer_agents"].get<bool>());
  EXPECT_EQ(Requested().size(), order_.size());  // every file, once
}

TEST_F(PlanRuntimeTest, AMountWithoutAPeerKeyStagesPastTheFirstEpoch) {
  MakeDatasetAndStart(std::vector<uint64_t>(32, kBlock),
                      "torch-distributed:seed=13,world=2,ranks=0-0", 32 * kBlock);
  runtime_->RunPass();
  EXPECT_FALSE(runtime_->StatusJson()["awaiting_peer_agents"].get<bool>());
  EXPECT_GT(Requested().size(), 16u);  // rank 0's 16 files of epoch 0, and more of epoch 1
}

TEST_F(PlanRuntimeTest, AMismatchedReaderGetsThePlanDroppedAndItsRequestsWithdrawn) {
  MakeDatasetAndStart(std::vector<uint64_t>(64, kBlock), "torch-distributed:seed=12,world=1",
                      64 * kBlock, /*window=*/8);
  runtime_->RunPass();
  ASSERT_EQ(Requested(), order_);
  ASSERT_TRUE(Complete(order_[60]).ok());
  ASSERT_TRUE(Complete(order_[61]).ok());
  // The reader goes backwards through the dataset: nothing it opens is in its window.
  for (size_t i = order_.size(); i-- > 0 && !tracker_->dropped();) ReaderOpens(order_[i]);
  ASSERT_TRUE(tracker_->dropped());
  // Until the prefetcher handles the drop, cached files keep their plan keys.
  ASSERT_NE(policy_->KeyOf(order_[60]), std::optional<uint64_t>(UINT64_MAX));
  EXPECT_FALSE(runtime_->Active());
  const size_t requested = queue_.requests.size();
  runtime_->RunPass();
  // Every request still waiting is withdrawn, eviction is plain LRU again, heat is told.
  EXPECT_TRUE(queue_.queued.empty());
  EXPECT_EQ(queue_.cancelled.size(), requested - 2);
  EXPECT_EQ(policy_->KeyOf(order_[60]), std::optional<uint64_t>(UINT64_MAX));
  EXPECT_EQ(policy_->KeyOf(order_[61]), std::optional<uint64_t>(UINT64_MAX));
  EXPECT_EQ(active_calls_, (std::vector<bool>{true, false}));
  // The prefetcher has stopped.
  clock_.AdvanceMs(100);
  runtime_->RunPass();
  EXPECT_EQ(queue_.requests.size(), requested);
  EXPECT_EQ(active_calls_.size(), 2u);
}

TEST_F(PlanRuntimeTest, AutoAdoptsTheInferredPlanWithCursorsWhereTheReadersAre) {
  // Epoch 0 of seed 77, world 2, both ranks on this node; the runtime is given no plan.
  const std::string spec = "torch-distributed:seed=77,world=2";
  MakeDataset(std::vector<uint64_t>(2000, 1), spec);
  StartAuto(/*capacity=*/0);
  EXPECT_FALSE(runtime_->Active());
  EXPECT_EQ(runtime_->StatusJson()["spec"], "auto");
  // The layout as the watcher numbers it: from a tracker of the same dataset.
  std::vector<std::string> r0, r1;
  {
    auto config = ParsePlanTrackerConfig(spec, "imagefolder", "");
    config->backing_root = backing_;
    auto t = PlanTracker::Create(*config);
    ASSERT_TRUE(t.ok());
    auto plan = Plan::Create(config->spec, (*t)->num_files());
    auto rank0 = (*plan)->RankIndices(0, 0);
    auto rank1 = (*plan)->RankIndices(0, 1);
    ASSERT_TRUE(rank0.ok() && rank1.ok());
    for (uint64_t i : *rank0) r0.push_back((*t)->PathOf(static_cast<uint32_t>(i)));
    for (uint64_t i : *rank1) r1.push_back((*t)->PathOf(static_cast<uint32_t>(i)));
  }
  size_t opened = 0;
  for (; opened < 300 && !runtime_->Active(); ++opened) {
    runtime_->OnOpen(r0[opened], Opener{101});
    runtime_->OnOpen(r1[opened], Opener{102});
    if (opened % 4 == 3) usleep(20000);  // the watcher's thread searches meanwhile
  }
  ASSERT_TRUE(WaitActive()) << runtime_->StatusJson().dump();
  nlohmann::json status = runtime_->StatusJson();
  EXPECT_EQ(status["spec"], spec) << status.dump();
  EXPECT_EQ(status["inference"]["state"], "adopted");
  EXPECT_EQ(status["eviction"], "plan");
  // The replay put each rank's cursor where its reader is (opens after the snapshot the watcher
  // took may be missing from it, within the window).
  auto tracker = runtime_->tracker();
  EXPECT_GE(tracker->Cursor(0).second + 16, opened);
  EXPECT_GE(tracker->Cursor(1).second + 16, opened);
  // The rest of the epoch follows the plan; then epoch 1 of a job that never calls set_epoch
  // repeats epoch 0's order: the plan is dropped and the same seed is found again.
  for (size_t i = opened; i < r0.size(); ++i) {
    EXPECT_TRUE(runtime_->OnOpen(r0[i], Opener{101})) << i;
    EXPECT_TRUE(runtime_->OnOpen(r1[i], Opener{102})) << i;
  }
  EXPECT_EQ(tracker->StatusJson()["mismatches"], 0u);
  for (size_t i = 0; i < r0.size() && !tracker->dropped(); ++i) {
    runtime_->OnOpen(r0[i], Opener{101});
    runtime_->OnOpen(r1[i], Opener{102});
    opened = i + 1;
  }
  ASSERT_TRUE(tracker->dropped());
  // What the plan could not explain: the new epoch's first opens (a chance match aside).
  EXPECT_GE(tracker->RecentMismatches().size(), 16u);
  runtime_->RunPass();  // handles the drop: the watcher searches again
  EXPECT_FALSE(runtime_->Active());
  for (size_t i = opened; i < 300 && !runtime_->Active(); ++i) {
    runtime_->OnOpen(r0[i], Opener{101});
    runtime_->OnOpen(r1[i], Opener{102});
    opened = i + 1;
    if (i % 4 == 3) usleep(20000);
  }
  ASSERT_TRUE(WaitActive()) << runtime_->StatusJson().dump();
  EXPECT_EQ(runtime_->StatusJson()["spec"], spec + ",set_epoch=0");
  // Opens that reached the watcher after its trace was handed over are holes the tracker skips.
  for (size_t i = opened; i < r0.size(); ++i) {
    EXPECT_TRUE(runtime_->OnOpen(r0[i], Opener{101})) << i;
    EXPECT_TRUE(runtime_->OnOpen(r1[i], Opener{102})) << i;
  }
}

}  // namespace
}  // namespace clairfs
