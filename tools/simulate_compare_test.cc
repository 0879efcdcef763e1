// The model beside a bench run: modes onto placements, epochs in order, the 10% rule, and bench
// JSON that does not fit the simulated job.
#include "tools/simulate_compare.h"

#include <gtest/gtest.h>

namespace clairfs::cli {
namespace {

ClusterRunResult SimulatedRun(ClusterPlacement placement, uint64_t pfs_bytes, uint64_t hits,
                              double time) {
  ClusterRunResult run;
  run.placement = placement;
  ClusterEpochResult e;
  e.reads = 100;
  e.local_hits = hits;
  e.pfs_bytes = pfs_bytes;
  e.time = time;
  run.epochs = {e, e};
  return run;
}

nlohmann::json Bench() {
  auto epoch = [](const char* name, uint64_t pfs, uint64_t hits, double seconds) {
    return nlohmann::json{{"phase", name},
                          {"pfs_bytes", pfs},
                          {"hits", hits},
                          {"files_read", 100},
                          {"seconds", seconds}};
  };
  return nlohmann::json{
      {"nodes", 4},
      {"files", 100},
      {"dataset_bytes", 1000},
      {"modes",
       {{{"mode", "baseline"},
         {"phases",
          {epoch("setup", 900, 0, 3.0), epoch("1", 500, 50, 1.0), epoch("2", 400, 60, 1.0)}}},
        {{"mode", "peers"}, {"phases", {epoch("1", 100, 90, 0.5), epoch("2", 0, 100, 0.4)}}}}}};
}

TEST(SimulateCompareTest, ModesMeetPlacementsEpochByEpoch) {
  // The model's dataset is 2000 bytes: PFS bytes compare as shares (1050 / 2000 = 0.525 against
  // 500 / 1000 = 0.5: within 10%).
  std::vector<ClusterRunResult> runs = {SimulatedRun(ClusterPlacement::kNone, 1050, 70, 1.5),
                                        SimulatedRun(ClusterPlacement::kNoPfs, 0, 0, 0),
                                        SimulatedRun(ClusterPlacement::kClairfs, 0, 100, 0.41)};
  auto rows = CompareWithBench(Bench(), runs, 4, 100, 2000, 0.10);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 12u);  // 2 modes x 2 epochs x 3 figures; setup left out
  const CompareRow& first = (*rows)[0];
  EXPECT_EQ(first.placement, "none");
  EXPECT_EQ(first.epoch, 1u);
  EXPECT_EQ(first.what, "pfs_share");
  EXPECT_DOUBLE_EQ(first.measured, 0.5);
  EXPECT_DOUBLE_EQ(first.model, 0.525);
  EXPECT_TRUE(first.within);
  EXPECT_FALSE((*rows)[1].within);          // hits 0.7 against 0.5
  EXPECT_FALSE((*rows)[2].within);          // 1.5 s against 1.0 s
  const CompareRow& last_pfs = (*rows)[9];  // peers epoch 2: measured 0, model 0
  EXPECT_EQ(last_pfs.placement, "clairfs");
  EXPECT_EQ(last_pfs.epoch, 2u);
  EXPECT_TRUE(last_pfs.within);
  EXPECT_TRUE((*rows)[11].within);  // 0.41 s against 0.4 s
}

TEST(SimulateCompareTest, ABenchOfAnotherJobIsRefused) {
  std::vector<ClusterRunResult> runs = {SimulatedRun(ClusterPlacement::kNone, 0, 0, 0)};
  auto other = CompareWithBench(Bench(), runs, 8, 100, 2000, 0.10);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(),
            "--compare: the bench ran 4 nodes over 100 files, not 8 over 100");
  auto shorter = CompareWithBench(Bench(), {SimulatedRun(ClusterPlacement::kNone, 0, 0, 0)}, 4, 100,
                                  2000, 0.10);
  EXPECT_TRUE(shorter.ok());
  std::vector<ClusterRunResult> one_epoch = {SimulatedRun(ClusterPlacement::kNone, 0, 0, 0)};
  one_epoch[0].epochs.resize(1);
  auto too_few = CompareWithBench(Bench(), one_epoch, 4, 100, 2000, 0.10);
  ASSERT_FALSE(too_few.ok());
  EXPECT_NE(too_few.status().message().find("epoch 2"), std::string::npos);
  EXPECT_FALSE(CompareWithBench(nlohmann::json::array(), runs, 4, 100, 2000, 0.10).ok());
  EXPECT_FALSE(CompareWithBench(nlohmann::json{{"nodes", 4}}, runs, 4, 100, 2000, 0.10).ok());
}

}  // namespace
}  // namespace clairfs::cli
