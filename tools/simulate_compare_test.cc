// The model beside bench runs: modes onto placements, epochs in order, the 10% rule against the
// runs' median with their spread, the setup phase's median, and bench JSON that does not fit the
// simulated job.
#include "tools/simulate_compare.h"

#include <gtest/gtest.h>

#include <vector>

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

// A bench whose baseline epoch 1 read `pfs_1` bytes and took `seconds_1` s; setup `setup` s.
nlohmann::json Bench(uint64_t pfs_1 = 500, double seconds_1 = 1.0, double setup = 3.0) {
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
          {epoch("setup", 900, 0, setup), epoch("1", pfs_1, 50, seconds_1),
           epoch("2", 400, 60, 1.0)}}},
        {{"mode", "peers"}, {"phases", {epoch("1", 100, 90, 0.5), epoch("2", 0, 100, 0.4)}}}}}};
}

TEST(SimulateCompareTest, ModesMeetPlacementsEpochByEpoch) {
  // The model's dataset is 2000 bytes: PFS bytes compare as shares (1050 / 2000 = 0.525 against
  // 500 / 1000 = 0.5: within 10%).
  std::vector<ClusterRunResult> runs = {SimulatedRun(ClusterPlacement::kNone, 1050, 70, 1.5),
                                        SimulatedRun(ClusterPlacement::kNoPfs, 0, 0, 0),
                                        SimulatedRun(ClusterPlacement::kClairfs, 0, 100, 0.41)};
  auto rows = CompareWithBench({Bench()}, runs, 4, 100, 2000, 0.10);
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

// The miss causes: each run's baseline epoch 1 counts, beside the model's (30 misses of 100 reads:
// 10 late copies, 5 left to the reader, so 15 not staged ahead); runs without causes give none.
TEST(SimulateCompareTest, MissCausesMeetTheModelsUnjudged) {
  std::vector<ClusterRunResult> runs = {SimulatedRun(ClusterPlacement::kNone, 0, 70, 1.0)};
  runs[0].epochs[0].late_copies = 10;
  runs[0].epochs[0].left_to_reader = 5;
  std::vector<nlohmann::json> benches;
  for (uint64_t left : {20, 40, 30}) {
    nlohmann::json bench = Bench();
    bench["modes"][0]["phases"][1]["miss_causes"] = {{"copy_in_flight", 3},
                                                     {"copy_queued", 0},
                                                     {"left_to_reader", left},
                                                     {"not_staged_ahead", 1},
                                                     {"unplanned", 0}};
    benches.push_back(bench);
  }
  std::vector<CauseRow> rows = CompareMissCauses(benches, runs);
  ASSERT_EQ(rows.size(), 4u);  // baseline epoch 1 only: epoch 2 and the peers have no causes
  EXPECT_EQ(rows[0].placement, "none");
  EXPECT_EQ(rows[0].epoch, 1u);
  EXPECT_EQ(rows[0].cause, "copy_in_flight");
  EXPECT_DOUBLE_EQ(rows[0].measured, 3);
  EXPECT_DOUBLE_EQ(rows[0].model, 10);
  EXPECT_EQ(rows[2].cause, "left_to_reader");
  EXPECT_DOUBLE_EQ(rows[2].measured, 30);
  EXPECT_DOUBLE_EQ(rows[2].measured_low, 20);
  EXPECT_DOUBLE_EQ(rows[2].measured_high, 40);
  EXPECT_DOUBLE_EQ(rows[2].model, 5);
  EXPECT_DOUBLE_EQ(rows[3].model, 15);
  // One run from before the daemons counted causes: no epoch has them in every run.
  benches.push_back(Bench());
  EXPECT_TRUE(CompareMissCauses(benches, runs).empty());
}

TEST(SimulateCompareTest, ABenchOfAnotherJobIsRefused) {
  std::vector<ClusterRunResult> runs = {SimulatedRun(ClusterPlacement::kNone, 0, 0, 0)};
  auto other = CompareWithBench({Bench()}, runs, 8, 100, 2000, 0.10);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().message(),
            "--compare: the bench ran 4 nodes over 100 files, not 8 over 100");
  auto shorter = CompareWithBench({Bench()}, {SimulatedRun(ClusterPlacement::kNone, 0, 0, 0)}, 4,
                                  100, 2000, 0.10);
  EXPECT_TRUE(shorter.ok());
  std::vector<ClusterRunResult> one_epoch = {SimulatedRun(ClusterPlacement::kNone, 0, 0, 0)};
  one_epoch[0].epochs.resize(1);
  auto too_few = CompareWithBench({Bench()}, one_epoch, 4, 100, 2000, 0.10);
  ASSERT_FALSE(too_few.ok());
  EXPECT_NE(too_few.status().message().find("epoch 2"), std::string::npos);
  EXPECT_FALSE(CompareWithBench({nlohmann::json::array()}, runs, 4, 100, 2000, 0.10).ok());
  EXPECT_FALSE(CompareWithBench({nlohmann::json{{"nodes", 4}}}, runs, 4, 100, 2000, 0.10).ok());
}

// Three runs: each figure against their median, with the lowest and highest kept as the spread.
TEST(SimulateCompareTest, SeveralRunsCompareWithTheirMedian) {
  std::vector<ClusterRunResult> runs = {SimulatedRun(ClusterPlacement::kNone, 1050, 50, 1.56)};
  // Baseline epoch 1: PFS shares 0.3, 0.5, 0.9 (median 0.5: the model's 0.525 is within 10% of
  // it, not of the mean 0.567), times 1.2, 1.4, 1.6 s (median 1.4).
  auto rows = CompareWithBench({Bench(300, 1.6), Bench(900, 1.2), Bench(500, 1.4)}, runs, 4, 100,
                               2000, 0.10);
  ASSERT_TRUE(rows.ok()) << rows.status().message();
  ASSERT_EQ(rows->size(), 6u);  // the baseline only: no clairfs run
  const CompareRow& pfs = (*rows)[0];
  EXPECT_DOUBLE_EQ(pfs.measured, 0.5);
  EXPECT_DOUBLE_EQ(pfs.measured_low, 0.3);
  EXPECT_DOUBLE_EQ(pfs.measured_high, 0.9);
  EXPECT_TRUE(pfs.within);
  const CompareRow& time = (*rows)[2];
  EXPECT_DOUBLE_EQ(time.measured, 1.4);
  EXPECT_DOUBLE_EQ(time.measured_low, 1.2);
  EXPECT_DOUBLE_EQ(time.measured_high, 1.6);
  EXPECT_FALSE(time.within);  // 1.56 s is within 10% of 1.6 s, not of the median 1.4 s
  EXPECT_DOUBLE_EQ(MedianOf({4, 1, 3, 2}), 2.5);
  EXPECT_DOUBLE_EQ(MedianOf({}), 0.0);
  // Runs of different shapes are refused.
  nlohmann::json shorter = Bench();
  shorter["modes"][0]["phases"].erase(2);
  auto mixed = CompareWithBench({Bench(), shorter}, runs, 4, 100, 2000, 0.10);
  ASSERT_FALSE(mixed.ok());
  EXPECT_EQ(mixed.status().message(), "--compare: the bench runs differ in their modes or epochs");
  EXPECT_FALSE(CompareWithBench({}, runs, 4, 100, 2000, 0.10).ok());
}

// The setup phase's seconds, median over the runs, by the mode a placement maps onto.
TEST(SimulateCompareTest, SetupSecondsAreTheRunsMedian) {
  auto none = BenchSetupSeconds({Bench(500, 1, 3.0), Bench(500, 1, 1.0), Bench(500, 1, 2.5)},
                                ClusterPlacement::kNone);
  ASSERT_TRUE(none.ok()) << none.status().message();
  EXPECT_DOUBLE_EQ(*none, 2.5);
  // The bench's peers mode has no setup phase here: refused, naming it.
  auto peers = BenchSetupSeconds({Bench()}, ClusterPlacement::kClairfs);
  ASSERT_FALSE(peers.ok());
  EXPECT_EQ(peers.status().message(), "--setup-s bench: a bench run has no setup phase of peers");
}

}  // namespace
}  // namespace clairfs::cli
