// Plan: DistributedSampler padding and drop_last, per-epoch caching, stream replay in any asking
// order, torch-random draw order, epoch/rank bounds, list plans, and a timed ImageNet-sized epoch.
#include "planner/plan.h"

#include <chrono>
#include <cstdio>
#include <vector>

#include <gtest/gtest.h>

#include "planner/torch_randperm.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

std::unique_ptr<Plan> MakePlan(const std::string& text, uint64_t n) {
  auto spec = ParsePlanSpec(text);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  auto plan = Plan::Create(*spec, n);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return plan.ok() ? std::move(*plan) : nullptr;
}

TEST(Plan, DistributedPaddingAndDropLast) {
  // N = 10, world 4: ceil -> 3 per rank, positions 10 and 11 wrap to 0 and 1.
  auto plan = MakePlan("torch-distributed:seed=0,world=4,shuffle=0", 10);
  EXPECT_EQ(*plan->RankIndices(0, 0), (std::vector<uint64_t>{0, 4, 8}));
  EXPECT_EQ(*plan->RankIndices(0, 2), (std::vector<uint64_t>{2, 6, 0}));
  EXPECT_EQ(*plan->RankIndices(0, 3), (std::vector<uint64_t>{3, 7, 1}));
  auto dropped = MakePlan("torch-distributed:seed=0,world=4,shuffle=0,drop_last=1", 10);
  EXPECT_EQ(*dropped->RankIndices(0, 3), (std::vector<uint64_t>{3, 7}));
  // Fewer samples than ranks: padding repeats the whole order; drop_last reads nothing.
  auto tiny = MakePlan("torch-distributed:seed=0,world=8,shuffle=0", 3);
  EXPECT_EQ(*tiny->RankIndices(0, 7), std::vector<uint64_t>{1});
  auto tiny_dropped = MakePlan("torch-distributed:seed=0,world=8,drop_last=1", 3);
  EXPECT_TRUE(tiny_dropped->RankIndices(0, 7)->empty());
  EXPECT_EQ(DistributedSamplesPerRank(10, 4, true), 2u);
  EXPECT_EQ(DistributedSamplesPerRank(12, 4, true), 3u);
  EXPECT_EQ(DistributedSamplesPerRank(3, 8, false), 1u);
}

TEST(Plan, DistributedEpochIsRandpermOfSeedPlusEpoch) {
  auto plan = MakePlan("torch-distributed:seed=40,world=1", 50);
  TorchGenerator g(42);
  EXPECT_EQ(*plan->RankIndices(2, 0), Randperm(50, g).ToVector());
}

TEST(Plan, WithoutSetEpochEveryEpochRepeatsTheFirstOrder) {
  // A job that never calls sampler.set_epoch seeds every epoch with seed + 0 (+ start_epoch).
  auto plan = MakePlan("torch-distributed:seed=40,world=1,set_epoch=0", 50);
  TorchGenerator g(40);
  const std::vector<uint64_t> first = Randperm(50, g).ToVector();
  EXPECT_EQ(*plan->RankIndices(0, 0), first);
  EXPECT_EQ(*plan->RankIndices(7, 0), first);
  auto later = MakePlan("torch-distributed:seed=40,world=1,start_epoch=2,set_epoch=0", 50);
  TorchGenerator g2(42);
  EXPECT_EQ(*later->RankIndices(5, 0), Randperm(50, g2).ToVector());
}

TEST(Plan, CachesOneEpochSharedByRanks) {
  auto plan = MakePlan("torch-distributed:seed=1,world=4", 1000);
  auto first = plan->Epoch(3);
  auto again = plan->Epoch(3);
  ASSERT_TRUE(first.ok() && again.ok());
  EXPECT_EQ(first->get(), again->get());
  // 4 bytes per sample for the one global order, however many ranks read it.
  EXPECT_EQ((*first)->MemoryBytes(), 4000u);
  auto other = plan->Epoch(4);
  ASSERT_TRUE(other.ok());
  EXPECT_NE(other->get(), first->get());
  EXPECT_EQ((*first)->epoch(), 3u);  // still valid after the cache moved on
}

TEST(Plan, ContinuingStreamsGiveTheSameEpochInAnyAskingOrder) {
  for (const char* spec : {"torch-random:seed=5", "torch-random:seed=5,persistent_workers=1",
                           "numpy:seed=5", "numpy-rng:seed=5"}) {
    auto forward = MakePlan(spec, 101);
    std::vector<std::vector<uint64_t>> orders;
    for (uint64_t e = 0; e < 4; ++e) orders.push_back(*forward->RankIndices(e, 0));
    auto backward = MakePlan(spec, 101);
    for (uint64_t e = 4; e-- > 0;) EXPECT_EQ(*backward->RankIndices(e, 0), orders[e]) << spec;
    auto jump = MakePlan(spec, 101);
    EXPECT_EQ(*jump->RankIndices(3, 0), orders[3]) << spec;
    EXPECT_NE(orders[0], orders[1]) << spec;
  }
}

TEST(Plan, TorchRandomEpochDrawOrder) {
  // Epoch 1 without persistent workers: base seed (2 words), randperm (N-1), extra randperm
  // (N-1) for epoch 0, then base seed and randperm for epoch 1.
  const uint64_t n = 20;
  auto plan = MakePlan("torch-random:seed=9", n);
  TorchGenerator g(9);
  g.Discard(2 + 2 * (n - 1) + 2);
  EXPECT_EQ(*plan->RankIndices(1, 0), Randperm(n, g).ToVector());
  auto persistent = MakePlan("torch-random:seed=9,persistent_workers=1", n);
  TorchGenerator p(9);
  p.Discard(2 + 2 * (n - 1));
  EXPECT_EQ(*persistent->RankIndices(1, 0), Randperm(n, p).ToVector());
}

TEST(Plan, EpochAndRankBounds) {
  auto plan = MakePlan("torch-distributed:seed=1,world=8,ranks=4-5,epochs=10,start_epoch=2", 64);
  EXPECT_EQ(plan->first_rank(), 4u);
  auto early = plan->RankIndices(1, 4);
  ASSERT_FALSE(early.ok());
  EXPECT_EQ(early.status().code(), EINVAL);
  EXPECT_NE(early.status().message().find("epochs 2-9"), std::string::npos)
      << early.status().message();
  EXPECT_FALSE(plan->RankIndices(10, 4).ok());
  EXPECT_TRUE(plan->RankIndices(9, 5).ok());
  auto rank = plan->RankIndices(2, 3);
  ASSERT_FALSE(rank.ok());
  EXPECT_NE(rank.status().message().find("ranks 4-5 of a world of 8"), std::string::npos)
      << rank.status().message();
  // The same checks without a dataset, as the CLI does before walking a tree.
  EXPECT_EQ(Plan::DefaultRank(plan->spec()), 4u);
  EXPECT_TRUE(Plan::CheckSamplerBounds(plan->spec(), 9, 5).ok());
  EXPECT_EQ(Plan::CheckSamplerBounds(plan->spec(), 1, 4).message(), early.status().message());
  EXPECT_EQ(Plan::CheckSamplerBounds(plan->spec(), 2, 3).message(), rank.status().message());
  auto single = MakePlan("numpy:seed=1", 5);
  EXPECT_FALSE(single->RankIndices(0, 1).ok());
}

TEST(Plan, DerivedSeedsOutsideTheLibraryRangeAreErrors) {
  auto torch = MakePlan("torch-distributed:seed=18446744073709551615,world=1", 5);
  EXPECT_TRUE(torch->RankIndices(0, 0).ok());
  auto beyond = torch->RankIndices(1, 0);
  ASSERT_FALSE(beyond.ok());
  EXPECT_NE(beyond.status().message().find("seed + epoch"), std::string::npos);
  auto numpy = MakePlan("numpy:seed=4294967295,reseed=epoch", 5);
  EXPECT_TRUE(numpy->RankIndices(0, 0).ok());
  EXPECT_FALSE(numpy->RankIndices(1, 0).ok());
}

TEST(Plan, ListPlansReadTheirFile) {
  testing::TempDir dir;
  testing::WriteFile(dir / "order.txt", "# epoch 5\n# rank 1\nb\n# rank 0\na\n");
  auto spec = ParsePlanSpec("list:" + (dir / "order.txt"));
  ASSERT_TRUE(spec.ok());
  auto plan = Plan::CreateFromList(*spec, PosixFileTreeInstance());
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ((*plan)->world(), 2u);
  EXPECT_EQ(*(*plan)->RankIndices(5, 1), std::vector<uint64_t>{0});
  EXPECT_EQ((*(*plan)->list_paths())[0], "b");
  auto missing_epoch = (*plan)->RankIndices(0, 0);
  ASSERT_FALSE(missing_epoch.ok());
  EXPECT_NE(missing_epoch.status().message().find("epochs 5"), std::string::npos);
  auto unreadable = ParsePlanSpec("list:" + (dir / "missing.txt"));
  ASSERT_TRUE(unreadable.ok());
  auto failed = Plan::CreateFromList(*unreadable, PosixFileTreeInstance());
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.status().code(), EINVAL);
  EXPECT_NE(failed.status().message().find("missing.txt: No such file or directory"),
            std::string::npos)
      << failed.status().message();
}

// The permutation of an ImageNet-sized epoch must be cheap next to an epoch of I/O: well under
// 100 ms on an idle machine. The bound here is loose (shared, loaded CI machines).
TEST(PlanPerformance, ImageNetSizedPermutation) {
  const uint64_t n = 1281167;
  for (const char* spec : {"torch-distributed:seed=42,world=8", "numpy:seed=42",
                           "numpy-rng:seed=42", "torch-random:seed=42"}) {
    auto plan = MakePlan(spec, n);
    auto start = std::chrono::steady_clock::now();
    auto order = plan->Epoch(0);
    double ms =
        std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    ASSERT_TRUE(order.ok());
    printf("%s: epoch of %llu samples in %.1f ms, %llu bytes\n", spec,
           static_cast<unsigned long long>(n), ms,
           static_cast<unsigned long long>((*order)->MemoryBytes()));
    EXPECT_LT(ms, 1000.0) << spec;
    EXPECT_EQ((*order)->MemoryBytes(), 4 * n);
  }
}

}  // namespace
}  // namespace clairfs
