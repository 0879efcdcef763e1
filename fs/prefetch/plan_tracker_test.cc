// Tests of PlanTracker: cursors under reordering, unplanned opens, mismatch detection within 2%
// of an epoch, epoch rollover, next uses; and the memory of plan state at ImageNet scale.
#include "fs/prefetch/plan_tracker.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>

#include "planner/plan.h"
#include "planner/plan_schedule.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::TempDir;

void MakeDataset(const TempDir& dir, int n) {
  for (int i = 0; i < n; ++i) {
    char name[64];
    snprintf(name, sizeof(name), "cls_%d/img_%05d.jpg", i % 3, i);
    testing::WriteFile(dir / name, "x");
  }
}

std::shared_ptr<PlanTracker> MakeTracker(const TempDir& dir, const std::string& spec,
                                         uint64_t window = 16, uint32_t uid = Opener::kNoUid) {
  auto parsed = ParsePlanTrackerConfig(spec, "imagefolder", "");
  EXPECT_TRUE(parsed.ok()) << parsed.status().message();
  if (!parsed.ok()) return nullptr;
  PlanTrackerConfig config = *parsed;
  config.backing_root = dir.path();
  config.window = window;
  config.uid = uid;
  auto t = PlanTracker::Create(config);
  EXPECT_TRUE(t.ok()) << t.status().message();
  return t.ok() ? *t : nullptr;
}

// The paths rank `rank` reads in `epoch` under `spec` over the tracker's files.
std::vector<std::string> PlannedPaths(PlanTracker* t, const std::string& spec_text, uint64_t epoch,
                                      uint32_t rank) {
  auto spec = ParsePlanSpec(spec_text);
  auto plan = Plan::Create(*spec, t->num_files());
  auto indices = (*plan)->RankIndices(epoch, rank);
  std::vector<std::string> out;
  for (uint64_t i : *indices) out.push_back(t->PathOf(static_cast<uint32_t>(i)));
  return out;
}

TEST(PlanTrackerTest, ReorderedOpensWithinTheWindowAdvanceTheCursor) {
  TempDir dir;
  MakeDataset(dir, 300);
  const std::string spec = "torch-distributed:seed=5,world=2";
  auto t = MakeTracker(dir, spec, 16);
  auto r0 = PlannedPaths(t.get(), spec, 0, 0);
  auto r1 = PlannedPaths(t.get(), spec, 0, 1);
  ASSERT_EQ(r0.size(), 150u);
  // Each rank's opens arrive in blocks of 8 reversed (two DataLoader workers' batches racing).
  for (size_t block = 0; block < r0.size(); block += 8) {
    for (size_t i = std::min(block + 8, r0.size()); i-- > block;) {
      EXPECT_TRUE(t->OnOpen(r0[i]));
      EXPECT_TRUE(t->OnOpen(r1[i]));
    }
    EXPECT_EQ(t->Cursor(0).second, std::min(block + 8, r0.size()) % r0.size());
  }
  // Both ranks finished epoch 0 and are in epoch 1 at position 0.
  EXPECT_EQ(t->Cursor(0), (std::pair<uint64_t, uint64_t>{1, 0}));
  EXPECT_EQ(t->Cursor(1), (std::pair<uint64_t, uint64_t>{1, 0}));
  auto status = t->StatusJson();
  EXPECT_EQ(status["mismatches"], 0u);
  EXPECT_FALSE(status["dropped"].get<bool>());
}

// On a no-open mount the files the kernel's page cache serves never reach the daemon: a reader
// whose last files of an epoch go unseen still moves into the next epoch, and the plan holds.
TEST(PlanTrackerTest, UnseenFilesAtAnEpochsEndDoNotStrandTheCursor) {
  TempDir dir;
  MakeDataset(dir, 2000);
  const std::string spec = "torch-distributed:seed=3,world=1";
  auto t = MakeTracker(dir, spec, 64);
  auto e0 = PlannedPaths(t.get(), spec, 0, 0);
  auto e1 = PlannedPaths(t.get(), spec, 1, 0);
  // Epoch 0 with every third file unseen, and its last 5 files unseen.
  for (size_t i = 0; i + 5 < e0.size(); ++i) {
    if (i % 3 != 2) {
      EXPECT_TRUE(t->OnOpen(e0[i])) << i;
    }
  }
  EXPECT_EQ(t->Cursor(0).first, 0u);
  // The next epoch's first files: within the window that runs on past the epoch's end.
  for (size_t i = 0; i < 40; ++i) {
    if (i % 3 != 2) {
      EXPECT_TRUE(t->OnOpen(e1[i])) << i;
    }
  }
  EXPECT_EQ(t->Cursor(0).first, 1u);
  auto status = t->StatusJson();
  EXPECT_FALSE(status["dropped"].get<bool>());
  // A file of the next epoch beyond the window is not taken as the epoch's start.
  auto fresh = MakeTracker(dir, spec, 64);
  for (size_t i = 0; i + 100 < e0.size(); ++i) EXPECT_TRUE(fresh->OnOpen(e0[i]));
  (void)fresh->OnOpen(e1[0]);
  EXPECT_EQ(fresh->Cursor(0).first, 0u);
}

TEST(PlanTrackerTest, UnplannedOpensDoNotDisturbTheCursor) {
  TempDir dir;
  MakeDataset(dir, 100);
  testing::WriteFile(dir / "README.txt", "not a sample");
  const std::string spec = "torch-distributed:seed=1,world=1";
  auto t = MakeTracker(dir, spec);
  auto r0 = PlannedPaths(t.get(), spec, 0, 0);
  for (int i = 0; i < 10; ++i) EXPECT_TRUE(t->OnOpen(r0[i]));
  for (int i = 0; i < 50; ++i) EXPECT_FALSE(t->OnOpen("README.txt"));
  EXPECT_FALSE(t->OnOpen("cls_0/missing.jpg"));
  EXPECT_EQ(t->Cursor(0).second, 10u);
  EXPECT_EQ(t->StatusJson()["mismatches"], 0u);
  EXPECT_TRUE(t->PlanActive());
}

TEST(PlanTrackerTest, AWrongSeedIsDetectedWithinTwoPercentOfAnEpoch) {
  TempDir dir;
  MakeDataset(dir, 3000);
  auto t = MakeTracker(dir, "torch-distributed:seed=42,world=1", 64);
  auto wrong = PlannedPaths(t.get(), "torch-distributed:seed=43,world=1", 0, 0);
  size_t opens = 0;
  while (opens < wrong.size() && t->PlanActive()) t->OnOpen(wrong[opens++]);
  EXPECT_FALSE(t->PlanActive());
  EXPECT_LE(opens, 3000u * 2 / 100);
  auto status = t->StatusJson();
  EXPECT_TRUE(status["dropped"].get<bool>());
  EXPECT_NE(status["dropped_reason"].get<std::string>().find("does not follow"), std::string::npos);
  // After the drop the tracker claims nothing: read-through takes over.
  EXPECT_FALSE(t->OnOpen(wrong[opens]));
  EXPECT_TRUE(t->Upcoming(10).empty());
}

// --plan-uid: a plan bound to one user follows only their opens. Another user reading another
// order (which drops an unbound plan within 2% of an epoch) moves no cursor and counts nothing.
TEST(PlanTrackerTest, APlanBoundToAUserIgnoresEveryOtherUsersOpens) {
  TempDir dir;
  MakeDataset(dir, 3000);
  const std::string spec = "torch-distributed:seed=42,world=1";
  auto t = MakeTracker(dir, spec, 64, /*uid=*/1000);
  auto right = PlannedPaths(t.get(), spec, 0, 0);
  auto theirs = PlannedPaths(t.get(), "torch-distributed:seed=43,world=1", 0, 0);
  for (size_t i = 0; i < 1000; ++i) {
    EXPECT_FALSE(t->OnOpen(theirs[i], Opener{77, 1001})) << i;
    EXPECT_FALSE(t->OnOpen(theirs[i], Opener{78})) << i;  // no uid known: not the user's either
    if (i < 500) {
      EXPECT_TRUE(t->OnOpen(right[i], Opener{5, 1000})) << i;
    }
  }
  EXPECT_TRUE(t->PlanActive());
  EXPECT_EQ(t->Cursor(0).second, 500u);
  auto status = t->StatusJson();
  EXPECT_EQ(status["mismatches"], 0u);
  EXPECT_EQ(status["dataset_opens"], 500u);
  EXPECT_EQ(status["uid"], 1000u);
  // The same opens of the other order from the user it follows drop it.
  size_t opens = 0;
  while (opens < theirs.size() && t->PlanActive()) t->OnOpen(theirs[opens++], Opener{5, 1000});
  EXPECT_FALSE(t->PlanActive());
  EXPECT_TRUE(MakeTracker(dir, spec)->StatusJson()["uid"].is_null());
}

TEST(PlanTrackerTest, TheRightSeedIsNotDropped) {
  TempDir dir;
  MakeDataset(dir, 3000);
  const std::string spec = "torch-distributed:seed=42,world=1";
  auto t = MakeTracker(dir, spec, 64);
  auto right = PlannedPaths(t.get(), spec, 0, 0);
  // Heavily reordered within the window (blocks of 32 reversed).
  for (size_t block = 0; block < right.size(); block += 32) {
    for (size_t i = std::min(block + 32, right.size()); i-- > block;) t->OnOpen(right[i]);
  }
  EXPECT_TRUE(t->PlanActive());
  EXPECT_EQ(t->StatusJson()["mismatches"], 0u);
}

TEST(PlanTrackerTest, EpochRolloverAndNextUses) {
  TempDir dir;
  MakeDataset(dir, 60);
  const std::string spec = "torch-distributed:seed=9,world=2,epochs=4";
  auto t = MakeTracker(dir, spec);
  for (uint64_t epoch = 0; epoch < 3; ++epoch) {
    auto r0 = PlannedPaths(t.get(), spec, epoch, 0);
    auto r1 = PlannedPaths(t.get(), spec, epoch, 1);
    // The first file of rank 0 is needed now; after it is read, its next use is next epoch.
    EXPECT_TRUE(t->OnOpen(r0[0]));
    const uint64_t next = t->NextUse(r0[0]);
    ASSERT_NE(next, kNoPlannedUse);
    for (size_t i = 1; i < r0.size(); ++i) {
      EXPECT_TRUE(t->OnOpen(r0[i]));
      EXPECT_TRUE(t->OnOpen(r1[i - 1]));
    }
    EXPECT_FALSE(t->NeedsAdvance());  // rank 1 still has one file of this epoch
    EXPECT_EQ(t->Cursor(0).first, epoch + 1);
    EXPECT_TRUE(t->OnOpen(r1.back()));
    EXPECT_TRUE(t->NeedsAdvance());
    ASSERT_TRUE(t->AdvanceEpoch().ok());
    EXPECT_FALSE(t->NeedsAdvance());
    EXPECT_EQ(t->StatusJson()["epoch"], epoch + 1);
    // Upcoming starts with what both ranks read first in the new epoch.
    auto upcoming = t->Upcoming(2);
    ASSERT_EQ(upcoming.size(), 2u);
    EXPECT_EQ(t->PathOf(upcoming[0].file), PlannedPaths(t.get(), spec, epoch + 1, 0)[0]);
    EXPECT_EQ(t->PathOf(upcoming[1].file), PlannedPaths(t.get(), spec, epoch + 1, 1)[0]);
    EXPECT_EQ(upcoming[0].time, upcoming[1].time);
  }
  // Epoch 3 is the last: nothing is planned after it.
  EXPECT_EQ(t->StatusJson()["epoch"], 3u);
  auto last = PlannedPaths(t.get(), spec, 3, 0);
  EXPECT_TRUE(t->OnOpen(last[0]));
  EXPECT_EQ(t->NextUse(last[0]), kNoPlannedUse);
}

// Plan state of an ImageNet-1k epoch (1,281,167 samples) served as 8 ranks on one node: two
// loaded epochs of uses, consumed flags, last matches and the path index. Prints the figures for
// docs/PLANNER.md.
TEST(PlanTrackerTest, ImageNetScalePlanStateMemory) {
  const uint64_t n = 1281167;
  auto spec = ParsePlanSpec("torch-distributed:seed=42,world=8");
  auto plan = Plan::Create(*spec, n);
  ASSERT_TRUE(plan.ok());
  auto start = std::chrono::steady_clock::now();
  auto e0 = BuildEpochUses(plan->get(), 0, n);
  auto e1 = BuildEpochUses(plan->get(), 1, n);
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_TRUE(e0.ok() && e1.ok());
  PlanSchedule schedule(*e0, *e1);
  uint64_t bytes = schedule.MemoryBytes();
  bytes += 2 * n;                 // consumed flags, 8 ranks x n / 8 positions, two epochs
  bytes += n * sizeof(uint64_t);  // last match per file
  // Path index: unordered_map<string_view, uint32_t> node (next pointer, key, value, hash) plus a
  // bucket pointer per file.
  bytes += n * (sizeof(void*) + sizeof(std::string_view) + 8 + sizeof(size_t)) + n * sizeof(void*);
  printf(
      "plan state for %llu samples x 8 ranks: %.1f MB (schedule %.1f MB); two epochs built in "
      "%.0f ms\n",
      static_cast<unsigned long long>(n), bytes / 1e6, schedule.MemoryBytes() / 1e6,
      seconds * 1000);
  EXPECT_LT(bytes, 200u * 1000 * 1000);
  // Every sample is used once per epoch by the 8 ranks together (no padding: n % 8 == 7 pads 1).
  EXPECT_EQ((*e0)->slots.size(), 8 * ((n + 7) / 8));
}

}  // namespace
}  // namespace clairfs
