// Tests of PlanWatcher without a mount: opens fed as the FUSE threads would (Observe), the
// thread's work run by Step(); the adopted plan, its layout root and its replay, no adoption on
// a random order, and a job without set_epoch recognised when its order repeats.
#include "fs/prefetch/plan_watcher.h"

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "planner/file_tree.h"
#include "planner/plan.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::TempDir;

constexpr int kFiles = 3000;

class PlanWatcherTest : public ::testing::Test {
 protected:
  // Writes an ImageFolder dataset of kFiles empty images under backing/`root` and loads its
  // numbering.
  void MakeDataset(const std::string& root) {
    backing_ = dir_ / "backing";
    const std::string base = root.empty() ? backing_ : backing_ + "/" + root;
    for (int i = 0; i < kFiles; ++i) {
      char name[64];
      snprintf(name, sizeof(name), "/cls_%d/img_%05d.jpg", i % 7, i);
      testing::WriteFile(base + name, "");
    }
    testing::WriteFile(backing_ + "/README.txt", "not a sample");
    LayoutSpec spec;
    spec.root = root;
    auto layout = BuildLayout(PosixFileTreeInstance(), backing_, spec);
    ASSERT_TRUE(layout.ok()) << layout.status().message();
    layout_ = std::move(*layout);
  }

  void StartWatcher(uint32_t uid = Opener::kNoUid) {
    PlanWatcherConfig config;
    config.uid = uid;
    config.backing_root = backing_;
    config.window = 16;
    config.inference.max_seed_plus_epoch = 1 << 12;  // keeps each search well under a second
    config.inference.max_world = 16;
    config.proc_root = dir_ / "no-proc";  // threads unknown to /proc are their own readers
    watcher_ = std::make_unique<PlanWatcher>(config, [this](InferredPlan plan) {
      adopted_.push_back(std::move(plan));
      return Status::Ok();
    });
  }

  // The paths rank `rank` of `spec` reads in `epoch`.
  std::vector<std::string> RankPaths(const std::string& spec_text, uint64_t epoch, uint32_t rank) {
    auto spec = ParsePlanSpec(spec_text);
    EXPECT_TRUE(spec.ok());
    auto plan = Plan::Create(*spec, layout_.size());
    EXPECT_TRUE(plan.ok());
    auto indices = (*plan)->RankIndices(epoch, rank);
    std::vector<std::string> out;
    for (uint64_t i : *indices) out.push_back(layout_.path(i));
    return out;
  }

  // Feeds ranks' opens interleaved (one each in turn, thread 4000000 + rank), stepping the
  // watcher every 8 opens, until it adopts or `count` opens per rank were fed. Returns the fed
  // paths.
  std::vector<std::string> Feed(const std::vector<std::vector<std::string>>& ranks, size_t from,
                                size_t count, uint32_t uid = Opener::kNoUid) {
    std::vector<std::string> fed;
    for (size_t i = from; i < from + count && adopted_.size() == adopted_before_; ++i) {
      for (size_t r = 0; r < ranks.size(); ++r) {
        watcher_->Observe(ranks[r][i], Opener{static_cast<uint32_t>(4000000 + r), uid});
        fed.push_back(ranks[r][i]);
      }
      if (fed.size() % 8 == 0) watcher_->Step();
    }
    watcher_->Step();
    return fed;
  }

  TempDir dir_;
  std::string backing_;
  Layout layout_;
  std::unique_ptr<PlanWatcher> watcher_;
  std::vector<InferredPlan> adopted_;
  size_t adopted_before_ = 0;
};

TEST_F(PlanWatcherTest, AdoptsTheDistributedPlanOfTwoInterleavedRanksAndHandsOverTheTrace) {
  MakeDataset("");
  StartWatcher();
  const std::string spec = "torch-distributed:seed=1234,world=4";
  std::vector<std::vector<std::string>> ranks = {RankPaths(spec, 0, 2), RankPaths(spec, 0, 3)};
  // Opens of files outside the dataset are ignored.
  watcher_->Observe("README.txt", Opener{4000000});
  std::vector<std::string> fed = Feed(ranks, 0, 200);
  ASSERT_EQ(adopted_.size(), 1u) << watcher_->StatusJson().dump();
  const InferredPlan& plan = adopted_[0];
  EXPECT_EQ(plan.config.spec.text, "torch-distributed:seed=1234,world=4,ranks=2-3");
  EXPECT_TRUE(plan.config.spec.set_epoch);
  EXPECT_EQ(plan.config.layout.root, "");
  EXPECT_EQ(plan.config.window, 16u);
  EXPECT_EQ(plan.replay, fed);
  EXPECT_LT(fed.size(), 200u) << "adopted only after every open was fed";
  nlohmann::json status = watcher_->StatusJson();
  EXPECT_EQ(status["state"], "adopted");
  EXPECT_EQ(status["readers"], 2u);
  EXPECT_EQ(status["adopted"], plan.config.spec.text);
  EXPECT_NE(status["summary"].get<std::string>().find("set_epoch continues it"), std::string::npos)
      << status.dump();
  // Once adopted, opens are not queued any more.
  watcher_->Observe(ranks[0][150], Opener{4000000});
  EXPECT_FALSE(watcher_->Step());
}

// --plan-uid: a watcher bound to one user sees only their opens; another user's opens of another
// plan's order, interleaved with theirs, neither steer the search nor slow it down, and the
// adopted plan follows that user only.
TEST_F(PlanWatcherTest, BoundToAUserItSeesOnlyThatUsersOpens) {
  MakeDataset("");
  StartWatcher(/*uid=*/1000);
  const std::string spec = "torch-distributed:seed=99,world=2";
  std::vector<std::string> mine = RankPaths(spec, 0, 1);
  std::vector<std::string> theirs = RankPaths("torch-distributed:seed=1500,world=1", 0, 0);
  for (size_t i = 0; i < 200 && adopted_.empty(); ++i) {
    // The other user first, and four times as fast.
    for (size_t k = 0; k < 4; ++k) watcher_->Observe(theirs[4 * i + k], Opener{9000, 1001});
    watcher_->Observe(mine[i], Opener{4000000, 1000});
    if (i % 4 == 3) watcher_->Step();
  }
  watcher_->Step();
  ASSERT_EQ(adopted_.size(), 1u) << watcher_->StatusJson().dump();
  EXPECT_EQ(adopted_[0].config.spec.text, "torch-distributed:seed=99,world=2,ranks=1-1");
  EXPECT_EQ(adopted_[0].config.uid, 1000u);
  for (const std::string& path : adopted_[0].replay) {
    EXPECT_NE(std::find(mine.begin(), mine.end(), path), mine.end()) << path;
  }
  nlohmann::json status = watcher_->StatusJson();
  EXPECT_EQ(status["readers"], 1u);
  EXPECT_EQ(status["uid"], 1000u);
}

TEST_F(PlanWatcherTest, TheLayoutRootIsInferredFromTheOpenedPaths) {
  MakeDataset("data/train");
  StartWatcher();
  const std::string spec = "torch-distributed:seed=7,world=1";
  Feed({RankPaths(spec, 0, 0)}, 0, 300);
  ASSERT_EQ(adopted_.size(), 1u) << watcher_->StatusJson().dump();
  EXPECT_EQ(adopted_[0].config.layout.root, "data/train");
  EXPECT_EQ(adopted_[0].config.spec.text, "torch-distributed:seed=7,world=1");
  EXPECT_EQ(watcher_->StatusJson()["layout_root"], "data/train");
}

TEST_F(PlanWatcherTest, ARandomOrderIsNeverAdopted) {
  MakeDataset("");
  StartWatcher();
  std::vector<std::string> order;
  for (uint64_t i = 0; i < layout_.size(); ++i) order.push_back(layout_.path(i));
  std::mt19937_64 rng(99);
  std::shuffle(order.begin(), order.end(), rng);
  Feed({order}, 0, 600);
  EXPECT_TRUE(adopted_.empty());
  nlohmann::json status = watcher_->StatusJson();
  EXPECT_NE(status["state"], "adopted");
  EXPECT_GT(status["searches"].get<uint64_t>(), 0u) << status.dump();
  EXPECT_EQ(status["adopted"], nullptr);
}

TEST_F(PlanWatcherTest, TheSameSeedAfterADropMeansTheJobNeverCallsSetEpoch) {
  MakeDataset("");
  StartWatcher();
  const std::string spec = "torch-distributed:seed=321,world=2";
  std::vector<std::vector<std::string>> ranks = {RankPaths(spec, 0, 0), RankPaths(spec, 0, 1)};
  Feed(ranks, 0, 200);
  ASSERT_EQ(adopted_.size(), 1u) << watcher_->StatusJson().dump();
  EXPECT_TRUE(adopted_[0].config.spec.set_epoch);
  // Epoch 1 repeats epoch 0's order; the tracker dropped the plan after its first opens, which
  // it hands back as unexplained.
  std::vector<std::pair<std::string, uint32_t>> unexplained;
  for (size_t i = 0; i < 20; ++i) {
    unexplained.emplace_back(ranks[0][i], 4000000);
    unexplained.emplace_back(ranks[1][i], 4000001);
  }
  watcher_->Resume(unexplained);
  adopted_before_ = 1;
  Feed(ranks, 20, 200);
  ASSERT_EQ(adopted_.size(), 2u) << watcher_->StatusJson().dump();
  EXPECT_EQ(adopted_[1].config.spec.text, "torch-distributed:seed=321,world=2,set_epoch=0");
  EXPECT_EQ(adopted_[1].replay.front(), ranks[0][0]);
  EXPECT_NE(watcher_->StatusJson()["summary"].get<std::string>().find("no set_epoch"),
            std::string::npos);
}

TEST_F(PlanWatcherTest, AfterAnEpochWithoutAPlanTheNextEpochIsSearchedFromItsStart) {
  MakeDataset("");
  StartWatcher();
  // A first epoch in random order, then a job whose epochs follow seed 55 (a new run).
  std::vector<std::string> order;
  for (uint64_t i = 0; i < layout_.size(); ++i) order.push_back(layout_.path(i));
  std::mt19937_64 rng(5);
  std::shuffle(order.begin(), order.end(), rng);
  Feed({order}, 0, order.size());
  ASSERT_TRUE(adopted_.empty());
  EXPECT_EQ(watcher_->StatusJson()["state"], "waiting_for_epoch") << watcher_->StatusJson().dump();
  Feed({RankPaths("torch-distributed:seed=55,world=1", 0, 0)}, 0, 400);
  ASSERT_EQ(adopted_.size(), 1u) << watcher_->StatusJson().dump();
  EXPECT_EQ(adopted_[0].config.spec.text, "torch-distributed:seed=55,world=1");
}

TEST_F(PlanWatcherTest, StopEndsASearchUnderWayAtOnce) {
  MakeDataset("");
  PlanWatcherConfig config;
  config.backing_root = backing_;
  config.window = 16;
  config.proc_root = dir_ / "no-proc";  // the default search: seed + epoch up to 2^20, seconds
  PlanWatcher watcher(config, [](InferredPlan) { return Status::Ok(); });
  watcher.Start();
  std::vector<std::string> order;
  for (uint64_t i = 0; i < layout_.size(); ++i) order.push_back(layout_.path(i));
  std::mt19937_64 rng(3);
  std::shuffle(order.begin(), order.end(), rng);
  for (int i = 0; i < 64; ++i) watcher.Observe(order[i], Opener{4000000});
  // Until the first search has begun (it holds no plan: it runs through the whole space).
  for (int i = 0; i < 500 && watcher.StatusJson()["trace_opens"] == 0u; ++i) usleep(10000);
  usleep(300000);
  const auto start = std::chrono::steady_clock::now();
  watcher.Stop();
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
  EXPECT_NE(watcher.StatusJson()["state"], "adopted");
}

}  // namespace
}  // namespace clairfs
