// Placement: homes by first reader and by hash, moves when nodes are lost, hold budgets.
#include "planner/placement/placement.h"

#include <gtest/gtest.h>

#include <map>
#include <vector>

namespace clairfs {
namespace {

IndexVector Indices(const std::vector<uint64_t>& values) {
  IndexVector v = IndexVector::ForMaxValue(1000);
  for (uint64_t x : values) v.push_back(x);
  return v;
}

TEST(PlacementTest, AFilesHomeIsTheNodeThatReadsItFirst) {
  // Rank 0 (node 0) reads 3, 1, 0; rank 1 (node 1) reads 2, 3, 4. In start order: 3 (r0), 2 (r1),
  // 1 (r0), 3 again (r1), 0 (r0), 4 (r1). File 5 is never read: hashed.
  auto epoch = EpochOrder::Explicit(0, {Indices({3, 1, 0}), Indices({2, 3, 4})});
  auto placement = Placement::ByFirstReader(*epoch, {0, 1}, 2, 6);
  ASSERT_TRUE(placement.ok()) << placement.status().message();
  EXPECT_EQ(placement->PreferredHome(0), 0u);
  EXPECT_EQ(placement->PreferredHome(1), 0u);
  EXPECT_EQ(placement->PreferredHome(2), 1u);
  EXPECT_EQ(placement->PreferredHome(3), 0u);
  EXPECT_EQ(placement->PreferredHome(4), 1u);
  EXPECT_EQ(placement->PreferredHome(5), RendezvousNode(5, LiveNodes{1, 1}));
  // Home files in the order they are first read.
  std::vector<uint64_t> node0 = placement->HomeFiles(0);
  std::vector<uint64_t> node1 = placement->HomeFiles(1);
  std::vector<uint64_t> expect0 = {3, 1, 0};
  std::vector<uint64_t> expect1 = {2, 4};
  (placement->PreferredHome(5) == 0 ? expect0 : expect1).push_back(5);
  EXPECT_EQ(node0, expect0);
  EXPECT_EQ(node1, expect1);
}

TEST(PlacementTest, HomeFilesOfEveryNodeAreEachNodesHomeFiles) {
  auto epoch = EpochOrder::Explicit(
      0, {Indices({3, 1, 0, 7}), Indices({2, 3, 4, 6}), Indices({9, 8, 2, 1})});
  auto placement = Placement::ByFirstReader(*epoch, {0, 1, 1}, 2, 12);
  ASSERT_TRUE(placement.ok()) << placement.status().message();
  auto all = placement->HomeFilesOfEveryNode();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0], placement->HomeFiles(0));
  EXPECT_EQ(all[1], placement->HomeFiles(1));
  auto hashed = Placement::ByHash(3, 50);
  ASSERT_TRUE(hashed.ok());
  auto all_hashed = hashed->HomeFilesOfEveryNode();
  for (uint32_t n = 0; n < 3; ++n) EXPECT_EQ(all_hashed[n], hashed->HomeFiles(n)) << n;
}

TEST(PlacementTest, HoldBudgetLeavesAnEighthToThePrefetcher) {
  EXPECT_EQ(HoldBudget(800), 700u);
  EXPECT_EQ(HoldBudget(0), UINT64_MAX);
}

TEST(PlacementTest, SeveralRanksOfANodeShareItsHomes) {
  // Ranks 0 and 1 on node 0, ranks 2 and 3 on node 1.
  auto epoch =
      EpochOrder::Explicit(0, {Indices({0, 4}), Indices({1, 5}), Indices({2, 6}), Indices({3, 7})});
  auto placement = Placement::ByFirstReader(*epoch, {0, 0, 1, 1}, 2, 8);
  ASSERT_TRUE(placement.ok());
  for (uint64_t f : {0, 1, 4, 5}) EXPECT_EQ(placement->PreferredHome(f), 0u) << f;
  for (uint64_t f : {2, 3, 6, 7}) EXPECT_EQ(placement->PreferredHome(f), 1u) << f;
}

TEST(PlacementTest, LosingANodeMovesOnlyItsFilesAndEveryoneAgreesWhere) {
  constexpr uint32_t kNodes = 8;
  constexpr uint64_t kFiles = 4000;
  auto placement = Placement::ByHash(kNodes, kFiles);
  ASSERT_TRUE(placement.ok());
  LiveNodes live(kNodes, 1);
  std::map<uint32_t, uint64_t> per_node;
  for (uint64_t f = 0; f < kFiles; ++f) {
    EXPECT_EQ(placement->Home(f, live), placement->PreferredHome(f));
    ++per_node[placement->PreferredHome(f)];
  }
  // Spread: every node within 25% of the mean.
  for (const auto& [node, files] : per_node) {
    EXPECT_GT(files, kFiles / kNodes * 3 / 4) << node;
    EXPECT_LT(files, kFiles / kNodes * 5 / 4) << node;
  }
  live[3] = 0;
  uint64_t moved = 0;
  for (uint64_t f = 0; f < kFiles; ++f) {
    const uint32_t home = placement->Home(f, live);
    EXPECT_NE(home, 3u);
    if (placement->PreferredHome(f) != 3) {
      EXPECT_EQ(home, placement->PreferredHome(f)) << f;
    } else {
      ++moved;
      // Deterministic: the same answer every time (every survivor computes it alone).
      EXPECT_EQ(home, placement->Home(f, live));
    }
  }
  EXPECT_EQ(moved, per_node[3]);
  EXPECT_EQ(RendezvousNode(7, LiveNodes(kNodes, 0)), kNoNode);
}

TEST(PlacementTest, FirstReaderHomesOfALostNodeGoToTheLiveOnes) {
  auto epoch = EpochOrder::Explicit(0, {Indices({0, 1}), Indices({2, 3}), Indices({4, 5})});
  auto placement = Placement::ByFirstReader(*epoch, {0, 1, 2}, 3, 6);
  ASSERT_TRUE(placement.ok());
  const LiveNodes live = {1, 0, 1};
  for (uint64_t f = 0; f < 6; ++f) {
    const uint32_t home = placement->Home(f, live);
    EXPECT_TRUE(home == 0 || home == 2) << f;
    if (f != 2 && f != 3) {
      EXPECT_EQ(home, placement->PreferredHome(f));
    }
  }
}

TEST(PlacementTest, BadMappingsAreRefused) {
  auto epoch = EpochOrder::Explicit(0, {Indices({0}), Indices({1})});
  EXPECT_FALSE(Placement::ByFirstReader(*epoch, {0}, 2, 2).ok());
  EXPECT_FALSE(Placement::ByFirstReader(*epoch, {0, 2}, 2, 2).ok());
  EXPECT_FALSE(Placement::ByFirstReader(*epoch, {0, 1}, 0, 2).ok());
  EXPECT_FALSE(Placement::ByFirstReader(*epoch, {0, 1}, 2, 1).ok());  // file 1 is past the end
  EXPECT_FALSE(Placement::ByHash(0, 10).ok());
}

TEST(PlacementTest, HoldWithinTakesTheLongestPrefixThatFits) {
  const std::vector<uint64_t> files = {10, 11, 12, 13};
  auto size = [](uint64_t f) { return f * 100; };  // 1000, 1100, 1200, 1300
  EXPECT_EQ(HoldWithin(files, size, 0), std::vector<uint64_t>{});
  EXPECT_EQ(HoldWithin(files, size, 2099), std::vector<uint64_t>({10}));
  EXPECT_EQ(HoldWithin(files, size, 2100), std::vector<uint64_t>({10, 11}));
  EXPECT_EQ(HoldWithin(files, size, UINT64_MAX), files);
}

}  // namespace
}  // namespace clairfs
