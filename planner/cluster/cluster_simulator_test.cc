// The cluster simulator: small clusters computed by hand, each placement's invariants, agreement
// with the single-node simulator at one node, and bad input.
#include "planner/cluster/cluster_simulator.h"

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "planner/cache_simulator.h"
#include "planner/cluster/cluster_holds.h"
#include "planner/plan.h"
#include "planner/plan_spec.h"
#include "planner/synthetic_dataset.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kClusterBlock = 4096;

std::unique_ptr<Plan> SamplerPlan(const std::string& text, uint64_t files) {
  auto spec = ParsePlanSpec(text);
  EXPECT_TRUE(spec.ok()) << spec.status().message();
  auto plan = Plan::Create(*spec, files);
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return std::move(*plan);
}

// A list: plan written to `dir`; files are numbered in order of first appearance.
std::unique_ptr<Plan> ListPlan(const testing::TempDir& dir, const std::string& text) {
  testing::WriteFile(dir / "plan.txt", text);
  auto spec = ParsePlanSpec("list:" + (dir / "plan.txt"));
  EXPECT_TRUE(spec.ok());
  auto plan = Plan::CreateFromList(*spec, PosixFileTreeInstance());
  EXPECT_TRUE(plan.ok()) << plan.status().message();
  return std::move(*plan);
}

// The swap job: nodes 0 and 1 read a, b and c, d in epoch 0, and each the other's in epoch 1.
constexpr const char* kSwapJob =
    "# epoch 0\n# rank 0\na\nb\n# rank 1\nc\nd\n"
    "# epoch 1\n# rank 0\nc\nd\n# rank 1\na\nb\n";

// 2 nodes of one rank each, caches of `capacity`, 1 s of work per sample (steps of 1 s).
ClusterModel TwoNodesOneRankEach(uint64_t capacity) {
  ClusterModel model;
  model.nodes = 2;
  model.ranks_per_node = 1;
  model.node_capacity = capacity;
  model.work = 1;
  return model;
}

ClusterRunResult Simulate(Plan* plan, uint64_t epochs, const std::vector<uint64_t>& sizes,
                          const ClusterModel& model, ClusterPlacement placement) {
  auto run = SimulateCluster(plan, plan->spec().start_epoch, epochs, sizes, model, placement);
  EXPECT_TRUE(run.ok()) << run.status().message();
  return run.ok() ? std::move(*run) : ClusterRunResult{};
}

std::vector<uint64_t> ImageNetSizes(uint64_t files, uint64_t seed) {
  std::vector<uint64_t> sizes(files);
  for (uint64_t i = 0; i < files; ++i) {
    sizes[i] = (ImageNetLikeSize(seed, i) + kClusterBlock - 1) / kClusterBlock * kClusterBlock;
  }
  return sizes;
}

uint64_t Sum(const std::vector<uint64_t>& sizes) {
  uint64_t total = 0;
  for (uint64_t s : sizes) total += s;
  return total;
}

// 2 nodes, 10 files of 1 MiB, unshuffled DistributedSampler: node 0 reads 0, 2, 4, 6, 8 and node 1
// the odd files, in both epochs. Caches of 5 MiB, work 2 s per sample, a PFS of 2 MiB/s with
// 1.5 s per open. Step 0: both miss, the PFS takes 1.5 s + 2 MiB / 2 MiB/s = 2.5 s (0.5 s of
// stall) and has 5 MiB - 2 MiB = 3 MiB to spare: 1.5 MiB of credit per node. Step 1 stages the
// file about to be read (0.5 MiB left), steps 2 and 3 two files each (the second of step 3 is
// epoch 1's first), step 4 nothing: 8 hits and 2 + 10 MiB from the PFS in 10.5 s; epoch 1 hits
// every file in 10 s.
TEST(ClusterSimulatorTest, TwoNodesTenFilesByHand) {
  auto plan = SamplerPlan("torch-distributed:seed=1,world=2,shuffle=0", 10);
  const std::vector<uint64_t> sizes(10, kMiB);
  ClusterModel model;
  model.nodes = 2;
  model.ranks_per_node = 1;
  model.node_capacity = 5 * kMiB;
  model.pfs_bandwidth = 2.0 * kMiB;
  model.pfs_open_latency = 1.5;
  model.work = 2;
  ClusterRunResult run = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(run.epochs.size(), 2u);
  const ClusterEpochResult& e0 = run.epochs[0];
  EXPECT_EQ(e0.reads, 10u);
  EXPECT_EQ(e0.local_hits, 8u);
  EXPECT_EQ(e0.pfs_reads, 2u);
  EXPECT_EQ(e0.peer_reads, 0u);
  EXPECT_EQ(e0.staged_files, 10u);
  EXPECT_EQ(e0.pfs_bytes, 12 * kMiB);
  EXPECT_EQ(e0.pfs_opens, 12u);
  EXPECT_DOUBLE_EQ(e0.time, 10.5);
  EXPECT_DOUBLE_EQ(e0.stall, 0.5);
  // Step 0's misses: the stagers had no credit yet (a live stager's copies would be queued).
  EXPECT_EQ(e0.staging_behind, 2u);
  EXPECT_EQ(e0.left_to_reader, 0u);
  const ClusterEpochResult& e1 = run.epochs[1];
  EXPECT_EQ(e1.local_hits, 10u);
  EXPECT_EQ(e1.pfs_bytes, 0u);
  EXPECT_DOUBLE_EQ(e1.time, 10.0);
  EXPECT_DOUBLE_EQ(e1.stall, 0.0);
  EXPECT_EQ(run.max_node_bytes, 5 * kMiB);
}

// Files the stager leaves to the reader are misses of that cause. Node 0 reads 0, 2, 4, 6, 8 (node
// 1 the odd files), caches of 2 MiB (depth one file), 1 s per sample, unlimited PFS, and the reader
// is left what it reaches within 2.5 s: 3 positions at 1 position per second, none before any step.
// Step 0 stages the first two files (hits); step 1 leaves positions 2 and 3 to the reader, step 2
// position 4: three misses per node, all left to the reader.
TEST(ClusterSimulatorTest, FilesLeftToTheReaderAreMissesOfThatCause) {
  auto plan = SamplerPlan("torch-distributed:seed=1,world=2,shuffle=0", 10);
  const std::vector<uint64_t> sizes(10, kMiB);
  ClusterModel model = TwoNodesOneRankEach(2 * kMiB);
  model.leave_to_reader = 2.5;
  ClusterRunResult run = Simulate(plan.get(), 1, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(run.epochs.size(), 1u);
  EXPECT_EQ(run.epochs[0].local_hits, 4u);
  EXPECT_EQ(run.epochs[0].left_to_reader, 6u);
  EXPECT_EQ(run.epochs[0].staging_behind, 0u);
  EXPECT_EQ(run.epochs[0].late_copies, 0u);
  model.leave_to_reader = 0;
  ClusterRunResult all = Simulate(plan.get(), 1, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(all.epochs.size(), 1u);
  EXPECT_EQ(all.epochs[0].local_hits, 10u);
  EXPECT_EQ(all.epochs[0].left_to_reader, 0u);
}

// The lead measured as the live prefetcher measures it: twice the copy time while copies are in
// flight, halved for each 50 ms without, truncated to positions. FilesLeftToTheReaderAreMisses-
// OfThatCause's job (depth one file) with PFS copies of 1.5 s, per node: step 0 stages files 0
// and 2 (published at 1.5 s: late for their reads at 0 and 1 s); with them in flight the estimate
// is 1.5 s, so step 1 leaves position 2 to the reader (2 x 1.5 s x 1 position per second; position
// 3 is past the depth). Nothing is in flight through step 2, the estimate halves to nothing, and
// step 3 stages position 3 (late: it takes 1.5 s); that copy brings the estimate back to just
// under 1.5 s (2 positions), so step 4 leaves position 4. 3 late copies and 2 left, where a
// fixed 3 s lead leaves positions 2, 3 and 4 and makes 2 late copies.
TEST(ClusterSimulatorTest, AMeasuredLeadFollowsTheCopiesInFlight) {
  auto plan = SamplerPlan("torch-distributed:seed=1,world=2,shuffle=0", 10);
  const std::vector<uint64_t> sizes(10, kMiB);
  ClusterModel model = TwoNodesOneRankEach(2 * kMiB);
  model.pfs_copy_time = 1.5;
  model.leave_as_measured = true;
  ClusterRunResult measured = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(measured.epochs.size(), 2u);
  EXPECT_EQ(measured.epochs[0].late_copies, 6u);
  EXPECT_EQ(measured.epochs[0].left_to_reader, 4u);
  EXPECT_EQ(measured.epochs[0].local_hits, 0u);
  model.leave_as_measured = false;
  model.leave_to_reader = 3;
  ClusterRunResult fixed = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(fixed.epochs.size(), 2u);
  EXPECT_EQ(fixed.epochs[0].left_to_reader, 6u);
  EXPECT_EQ(fixed.epochs[0].late_copies, 4u);
  EXPECT_LT(measured.epochs[1].left_to_reader, fixed.epochs[1].left_to_reader);
  EXPECT_GT(measured.epochs[1].late_copies, fixed.epochs[1].late_copies);
  // Without a copy time there is nothing to measure: refused as bad input.
  model.pfs_copy_time = 0;
  model.leave_to_reader = 0;
  model.leave_as_measured = true;
  EXPECT_FALSE(CheckClusterModel(model).ok());
}

// A want the agent cannot take yet waits while the stager goes on (ClusterModel::queued_wants).
// Nodes 0 and 1 read a, b and c, d, then c, d, e and a, b, f (homes: a, b, e node 0; c, d, f node
// 1), caches of 6 MiB, one transfer in flight per node, unlimited PFS, steps of 1 s, PFS copies
// of 2.5 s. Node 0 in step 0 stages a and b (late for their reads at 0 and 1 s), asks node 1 for
// c (node 1, its home, stages it at once for it: a hit for node 1's read at 0 s), and cannot ask
// for d yet. Stopping there, it stages e at 2 s (published at 4.5 s, after its read at 4 s); with
// the wants queued it stages e at 0 s, a hit. Node 1 does the same with d (late), a, b and f.
// Transfers of 1.5 s: c arrives at 1.5 s (hit at 2 s), d is asked at 2 s and arrives at 3.5 s
// (late for 3 s). Transfers of 3.5 s: c is late for 2 s, and d still waits at 3 s: a miss on a
// want not taken (copy_queued).
TEST(ClusterSimulatorTest, QueuedWantsLetThePfsCopiesBehindThemGoOn) {
  testing::TempDir dir;
  auto plan = ListPlan(dir,
                       "# epoch 0\n# rank 0\na\nb\n# rank 1\nc\nd\n"
                       "# epoch 1\n# rank 0\nc\nd\ne\n# rank 1\na\nb\nf\n");
  const std::vector<uint64_t> sizes(6, kMiB);
  ClusterModel model = TwoNodesOneRankEach(6 * kMiB);
  model.transfer_time = 1.5;
  model.transfers_in_flight = 1;
  model.pfs_copy_time = 2.5;
  ClusterRunResult stops = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  model.queued_wants = true;
  ClusterRunResult queued = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  for (const ClusterRunResult* run : {&stops, &queued}) {
    ASSERT_EQ(run->epochs.size(), 2u);
    EXPECT_EQ(run->epochs[0].local_hits, 1u);
    EXPECT_EQ(run->epochs[0].late_copies, 3u);
    EXPECT_EQ(run->epochs[1].late_transfers, 2u);  // d
  }
  EXPECT_EQ(stops.epochs[1].local_hits, 2u);   // c
  EXPECT_EQ(stops.epochs[1].late_copies, 2u);  // e
  EXPECT_EQ(queued.epochs[1].local_hits, 4u);  // c and e
  EXPECT_EQ(queued.epochs[1].late_copies, 0u);

  model.transfer_time = 3.5;
  ClusterRunResult slow = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  ASSERT_EQ(slow.epochs.size(), 2u);
  EXPECT_EQ(slow.epochs[1].late_transfers, 2u);  // c
  EXPECT_EQ(slow.epochs[1].staging_behind, 2u);  // d
  EXPECT_EQ(slow.epochs[1].local_hits, 2u);      // e
}

// A PFS copy takes 1.5 s from its start to its publish (steps of 1 s): each node's stager starts
// all five of its files at 0 s, so its reader finds the first two still in flight (at 0 and 1 s),
// misses them and reads them from the PFS while their copies go on; the other three are hits.
// Epoch 1 reads the same files (no shuffle) and hits them all. Without the copy time every read
// hits.
TEST(ClusterSimulatorTest, APfsCopyStillInFlightIsAMissAndTheCopyGoesOn) {
  auto plan = SamplerPlan("torch-distributed:seed=1,world=2,shuffle=0", 10);
  const std::vector<uint64_t> sizes(10, kMiB);
  ClusterModel model = TwoNodesOneRankEach(5 * kMiB);
  ClusterRunResult at_once = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(at_once.epochs.size(), 2u);
  EXPECT_EQ(at_once.epochs[0].local_hits, 10u);
  EXPECT_EQ(at_once.epochs[0].late_copies, 0u);
  EXPECT_EQ(at_once.epochs[0].pfs_bytes, 10 * kMiB);

  model.pfs_copy_time = 1.5;
  ClusterRunResult run = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(run.epochs.size(), 2u);
  const ClusterEpochResult& e0 = run.epochs[0];
  EXPECT_EQ(e0.local_hits, 6u);
  EXPECT_EQ(e0.late_copies, 4u);
  EXPECT_EQ(e0.late_transfers, 0u);
  EXPECT_EQ(e0.pfs_reads, 4u);
  EXPECT_EQ(e0.staged_files, 10u);
  EXPECT_EQ(e0.pfs_bytes, 14 * kMiB);  // every copy, and the four misses again
  EXPECT_EQ(run.epochs[1].local_hits, 10u);
  EXPECT_EQ(run.epochs[1].late_copies, 0u);
  EXPECT_EQ(run.epochs[1].pfs_bytes, 0u);
  EXPECT_EQ(run.Total().late_copies, 4u);
}

// A stager that spends 1 s per copy publishes one copy per step of 1 s: step 0 of epoch 0 misses
// (no credit yet), each later step stages the file about to be read; epoch 1 stages the one file
// that was missed and hits everything.
TEST(ClusterSimulatorTest, ACopyTimeLimitsTheStager) {
  auto plan = SamplerPlan("torch-distributed:seed=1,world=2,shuffle=0", 10);
  const std::vector<uint64_t> sizes(10, kMiB);
  ClusterModel model = TwoNodesOneRankEach(5 * kMiB);
  model.copy_time = 1;
  ClusterRunResult run = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(run.epochs.size(), 2u);
  EXPECT_EQ(run.epochs[0].local_hits, 8u);
  EXPECT_EQ(run.epochs[0].pfs_reads, 2u);
  EXPECT_EQ(run.epochs[0].staged_files, 8u);
  EXPECT_EQ(run.epochs[1].local_hits, 10u);
  EXPECT_EQ(run.epochs[1].staged_files, 2u);
  EXPECT_EQ(run.Total().pfs_bytes, 12 * kMiB);
}

// Setup (docs/SIMULATOR.md, "Setup, CPU and transfers"): the job of TwoNodesTenFilesByHand with
// 2 s of staging before the first read. The setup's 4 MiB of PFS credit (2 MiB/s x 2 s) is split
// over the nodes: each stages its first two files. Step 0 hits with no credit left (the PFS
// time is 0: no reader reads it), so the step is the work, 2 s, and leaves 4 MiB of credit; steps
// 1 and 2 stage the rest: every read of the job a hit, the dataset read from the PFS once (4 MiB
// in setup, 6 in epoch 0). Without the setup: 8 hits and 12 MiB in epoch 0 (the test above).
TEST(ClusterSimulatorTest, ASetupPhaseStagesBeforeTheFirstRead) {
  auto plan = SamplerPlan("torch-distributed:seed=1,world=2,shuffle=0", 10);
  const std::vector<uint64_t> sizes(10, kMiB);
  ClusterModel model;
  model.nodes = 2;
  model.ranks_per_node = 1;
  model.node_capacity = 5 * kMiB;
  model.pfs_bandwidth = 2.0 * kMiB;
  model.pfs_open_latency = 1.5;
  model.work = 2;
  model.setup_time = 2;
  ClusterRunResult run = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(run.epochs.size(), 2u);
  EXPECT_EQ(run.setup.reads, 0u);
  EXPECT_EQ(run.setup.staged_files, 4u);
  EXPECT_EQ(run.setup.pfs_bytes, 4 * kMiB);
  EXPECT_DOUBLE_EQ(run.setup.time, 2.0);
  EXPECT_EQ(run.epochs[0].local_hits, 10u);
  EXPECT_EQ(run.epochs[0].pfs_reads, 0u);
  EXPECT_EQ(run.epochs[0].pfs_bytes, 6 * kMiB);
  EXPECT_DOUBLE_EQ(run.epochs[0].time, 10.0);
  EXPECT_DOUBLE_EQ(run.epochs[0].stall, 0.0);
  EXPECT_EQ(run.epochs[1].local_hits, 10u);
  EXPECT_EQ(run.Total().pfs_bytes, 10 * kMiB);  // the setup counts in the job's total
  EXPECT_DOUBLE_EQ(run.Total().time, 22.0);
  // Mounts of 1 s each, one after another: node 0 stages for the setup's last second (1 MiB of
  // credit: one file), node 1 is mounted as the setup ends and stages nothing.
  model.mount_time = 1;
  ClusterRunResult staggered = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  EXPECT_EQ(staggered.setup.staged_files, 1u);
  EXPECT_EQ(staggered.setup.pfs_bytes, kMiB);
}

// Before the agents attach (the setup), clairfs's mounts stage only the plan's first epoch, as the
// live prefetcher does on a mount with a peer key (docs/PEERS.md, "Before the agents attach"):
// 20 MiB of setup credit per node and room for the whole dataset, yet each node stages its 5
// files of epoch 0; alone (`none`) a node runs on into epoch 1's files.
TEST(ClusterSimulatorTest, UnderClairfsTheSetupStagesOnlyTheFirstEpoch) {
  auto plan = SamplerPlan("torch-distributed:seed=3,world=2", 10);
  const std::vector<uint64_t> sizes(10, kMiB);
  ClusterModel model = TwoNodesOneRankEach(10 * kMiB);
  model.pfs_bandwidth = 2.0 * kMiB;
  model.setup_time = 20;
  ClusterRunResult peers = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  EXPECT_EQ(peers.setup.staged_files, 10u);
  EXPECT_EQ(peers.setup.pfs_bytes, 10 * kMiB);
  ClusterRunResult alone = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  EXPECT_GT(alone.setup.staged_files, 10u);
  EXPECT_GT(alone.setup.pfs_bytes, 10 * kMiB);
}

// CPU on shared cores: 2 nodes on 1 core, 1 s of work per sample, an unlimited PFS. With 0.25
// CPU-s per open the readers' two opens take 0.5 s of each 1 s step; the other 0.5 CPU-s is split
// over the nodes, one copy of 0.25 CPU-s each per step: as ACopyTimeLimitsTheStager, 8 hits in
// epoch 0. With 1 CPU-s per open the two nodes' opens take 2 s on the one core: each step lasts
// 2 s (1 s of stall) and leaves the stagers nothing, so every read misses.
// Each node at its own pace (--sync epoch). Node 0 reads big, small, big, small and node 1 small,
// big, small, big in epoch 0; big files (8 MiB) do not fit the 4 MiB caches and are read from the
// PFS (1 s per open), small ones are staged ahead (hits, no time). In lockstep every step has a
// miss somewhere: 4 s. On their own clocks each node pays its own two misses: 2 s. In epoch 1
// node 0 misses 4 times and node 1 hits 4 times: 4 s either way, node 1 waiting at the end.
TEST(ClusterSimulatorTest, OnTheirOwnClocksNodesPayOnlyTheirOwnMisses) {
  testing::TempDir dir;
  auto plan = ListPlan(dir,
                       "# epoch 0\n# rank 0\nb0\ns0\nb1\ns1\n# rank 1\nt0\nc0\nt1\nc1\n"
                       "# epoch 1\n# rank 0\nb0\nb1\nc0\nc1\n# rank 1\ns0\ns1\nt0\nt1\n");
  // Numbered by first appearance: b0 s0 b1 s1 t0 c0 t1 c1.
  const std::vector<uint64_t> sizes = {8 * kMiB, kMiB,     8 * kMiB, kMiB,
                                       kMiB,     8 * kMiB, kMiB,     8 * kMiB};
  ClusterModel model = TwoNodesOneRankEach(4 * kMiB);
  model.work = 0;
  model.pfs_open_latency = 1;
  ClusterRunResult lockstep = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  model.sync = ClusterSync::kEpoch;
  ClusterRunResult own = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(lockstep.epochs.size(), 2u);
  ASSERT_EQ(own.epochs.size(), 2u);
  for (const ClusterRunResult* run : {&lockstep, &own}) {
    EXPECT_EQ(run->epochs[0].local_hits, 4u);
    EXPECT_EQ(run->epochs[0].pfs_reads, 4u);
    EXPECT_EQ(run->epochs[1].local_hits, 4u);
    EXPECT_EQ(run->epochs[1].pfs_reads, 4u);
    EXPECT_DOUBLE_EQ(run->epochs[1].time, 4.0);
  }
  EXPECT_DOUBLE_EQ(lockstep.epochs[0].time, 4.0);
  EXPECT_DOUBLE_EQ(lockstep.epochs[0].stall, 4.0);
  EXPECT_DOUBLE_EQ(own.epochs[0].time, 2.0);
  EXPECT_DOUBLE_EQ(own.epochs[0].stall, 2.0);
  EXPECT_DOUBLE_EQ(own.epochs[1].stall, 4.0);
  // Two files in flight per reader: each miss's open latency is half its own.
  model.reader_threads = 2;
  EXPECT_DOUBLE_EQ(Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone).epochs[0].time,
                   1.0);
  model.sync = ClusterSync::kStep;
  EXPECT_DOUBLE_EQ(Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone).epochs[0].time,
                   2.0);
}

// On their own clocks the nodes still reading share the PFS; one that is done waits and takes no
// share (the swap job's epoch 0, a b on node 0 and c d on node 1, of 1, 1, 3 and 1 MiB; a PFS of
// 2 MiB/s with no open latency, caches too small for any copy, no work):
//   node 0 reads a in [0, 1] and b in [1, 2] at half the PFS (1 MiB/s), as node 1 reads c in
//   [0, 3]; node 1's d starts at 3, when node 0 is done: the whole PFS, 0.5 s. The epoch: 3.5 s.
//   In lockstep: a and c together (4 MiB, 2 s), then b and d (2 MiB, 1 s): 3 s.
TEST(ClusterSimulatorTest, OnTheirOwnClocksTheNodesStillReadingShareThePfs) {
  testing::TempDir dir;
  auto plan = ListPlan(dir, kSwapJob);
  const std::vector<uint64_t> sizes = {kMiB, kMiB, 3 * kMiB, kMiB};
  ClusterModel model = TwoNodesOneRankEach(1);
  model.work = 0;
  model.pfs_bandwidth = 2.0 * kMiB;
  model.sync = ClusterSync::kEpoch;
  ClusterRunResult own = Simulate(plan.get(), 1, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(own.epochs.size(), 1u);
  EXPECT_EQ(own.epochs[0].pfs_reads, 4u);
  EXPECT_DOUBLE_EQ(own.epochs[0].time, 3.5);
  model.sync = ClusterSync::kStep;
  ClusterRunResult lockstep = Simulate(plan.get(), 1, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(lockstep.epochs.size(), 1u);
  EXPECT_DOUBLE_EQ(lockstep.epochs[0].time, 3.0);
}

// On one node there is nobody to keep pace with: both syncs give the same run, every mechanism on.
TEST(ClusterSimulatorTest, OneNodeRunsTheSameWhateverTheSync) {
  auto plan = SamplerPlan("torch-distributed:seed=3,world=2,epochs=3", 400);
  const std::vector<uint64_t> sizes = ImageNetSizes(400, 3);
  ClusterModel model;
  model.nodes = 1;
  model.ranks_per_node = 2;
  model.node_capacity = Sum(sizes) / 2;
  model.pfs_bandwidth = 40e6;
  model.pfs_open_latency = 0.002;
  model.pfs_metadata_ops = 2000;
  model.work = 0.003;
  model.copy_time = 0.001;
  model.setup_time = 0.5;
  model.cores = 1;
  model.reader_share = 0.5;
  model.open_cpu = 0.0005;
  model.copy_cpu = 0.001;
  model.pfs_copy_time = 0.02;
  model.leave_as_measured = true;
  ClusterRunResult lockstep = Simulate(plan.get(), 3, sizes, model, ClusterPlacement::kNone);
  model.sync = ClusterSync::kEpoch;
  ClusterRunResult own = Simulate(plan.get(), 3, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(lockstep.epochs.size(), 3u);
  ASSERT_EQ(own.epochs.size(), 3u);
  for (size_t e = 0; e < 3; ++e) {
    SCOPED_TRACE("epoch " + std::to_string(e));
    const ClusterEpochResult& a = lockstep.epochs[e];
    const ClusterEpochResult& b = own.epochs[e];
    EXPECT_EQ(a.local_hits, b.local_hits);
    EXPECT_EQ(a.pfs_reads, b.pfs_reads);
    EXPECT_EQ(a.pfs_bytes, b.pfs_bytes);
    EXPECT_EQ(a.staged_files, b.staged_files);
    EXPECT_EQ(a.late_copies, b.late_copies);
    EXPECT_EQ(a.left_to_reader, b.left_to_reader);
    EXPECT_EQ(a.staging_behind, b.staging_behind);
    // The same steps, summed from another origin: equal but for rounding.
    EXPECT_NEAR(a.time, b.time, 1e-9 * a.time);
    EXPECT_NEAR(a.stall, b.stall, 1e-9 * a.time);
  }
  // The run is not trivial: some hits, some misses of each kind the mechanisms make.
  EXPECT_GT(lockstep.epochs[1].local_hits, 0u);
  EXPECT_GT(lockstep.epochs[1].pfs_reads, 0u);
}

TEST(ClusterSimulatorTest, NodesContendForSharedCores) {
  auto plan = SamplerPlan("torch-distributed:seed=1,world=2,shuffle=0", 10);
  const std::vector<uint64_t> sizes(10, kMiB);
  ClusterModel model = TwoNodesOneRankEach(5 * kMiB);
  model.cores = 1;
  model.open_cpu = 0.25;
  model.copy_cpu = 0.25;
  ClusterRunResult light = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(light.epochs.size(), 2u);
  EXPECT_EQ(light.epochs[0].local_hits, 8u);
  EXPECT_EQ(light.epochs[0].staged_files, 8u);
  EXPECT_DOUBLE_EQ(light.epochs[0].time, 5.0);
  EXPECT_DOUBLE_EQ(light.epochs[0].stall, 0.0);
  model.open_cpu = 1;
  ClusterRunResult heavy = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(heavy.epochs.size(), 2u);
  EXPECT_EQ(heavy.epochs[0].local_hits, 0u);
  EXPECT_EQ(heavy.epochs[0].staged_files, 0u);
  EXPECT_EQ(heavy.epochs[0].pfs_reads, 10u);
  EXPECT_DOUBLE_EQ(heavy.epochs[0].time, 10.0);
  EXPECT_DOUBLE_EQ(heavy.epochs[0].stall, 5.0);
  // Two cores: the opens take 1 s of each step, the work hides them, no stall.
  model.cores = 2;
  EXPECT_DOUBLE_EQ(Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone).epochs[0].time,
                   5.0);
}

// A fair scheduler: while a stager waits for CPU, the readers get only their share of the cores.
// 2 nodes on 1 core, 1 s of work, 0.25 CPU-s per open, 1 CPU-s per copy. Readers first (share
// 1): steps of 1 s leave 0.25 CPU-s per node, a copy every fourth step: 1 hit per node in epoch
// 0, 5 s. Share 0.25: the two opens (0.5 CPU-s) take 2 s on a quarter of the core, leaving 0.75
// CPU-s per node each step: copies for the reads of steps 2, 3 and 4, 3 hits per node, 10 s.
TEST(ClusterSimulatorTest, StagersWaitingForCpuTakeTheirShareOfTheCores) {
  auto plan = SamplerPlan("torch-distributed:seed=1,world=2,shuffle=0", 10);
  const std::vector<uint64_t> sizes(10, kMiB);
  ClusterModel model = TwoNodesOneRankEach(5 * kMiB);
  model.cores = 1;
  model.open_cpu = 0.25;
  model.copy_cpu = 1;
  ClusterRunResult first = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(first.epochs.size(), 2u);
  EXPECT_EQ(first.epochs[0].local_hits, 2u);
  EXPECT_DOUBLE_EQ(first.epochs[0].time, 5.0);
  model.reader_share = 0.25;
  ClusterRunResult fair = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(fair.epochs.size(), 2u);
  EXPECT_EQ(fair.epochs[0].local_hits, 6u);
  EXPECT_DOUBLE_EQ(fair.epochs[0].time, 10.0);
  EXPECT_DOUBLE_EQ(fair.epochs[0].stall, 5.0);
}

// A mount with a peer key digests every PFS copy: only clairfs's mounts have one. NodesContend-
// ForSharedCores' light job (one copy of 0.25 CPU-s per node per step: 8 hits in epoch 0) with
// 0.25 CPU-s of digest: for clairfs a copy every second step (its files are its own homes, from
// the PFS): misses at steps 0, 1 and 3, 4 hits; none is unchanged.
TEST(ClusterSimulatorTest, DigestsCostCpuOnClairfsMountsOnly) {
  auto plan = SamplerPlan("torch-distributed:seed=1,world=2,shuffle=0", 10);
  const std::vector<uint64_t> sizes(10, kMiB);
  ClusterModel model = TwoNodesOneRankEach(5 * kMiB);
  model.cores = 1;
  model.open_cpu = 0.25;
  model.copy_cpu = 0.25;
  EXPECT_EQ(Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs).epochs[0].local_hits,
            8u);
  model.digest_cpu = 0.25;
  EXPECT_EQ(Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone).epochs[0].local_hits,
            8u);
  EXPECT_EQ(Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs).epochs[0].local_hits,
            4u);
}

// The peer window lets clairfs's copies from peers go beyond the prefetch depth, evicting copies
// of later use: on a 4-node job whose transfers take longer than the depth gives, more copies
// come from peers, and the invariants hold (no node over its capacity, no held copy lost).
TEST(ClusterSimulatorTest, ThePeerWindowLetsPeersCopiesGoBeyondTheDepth) {
  const uint64_t files = 400;
  auto plan = SamplerPlan("torch-distributed:seed=42,world=4", files);
  const std::vector<uint64_t> sizes = ImageNetSizes(files, 42);
  ClusterModel model;
  model.nodes = 4;
  model.ranks_per_node = 1;
  model.node_capacity = Sum(sizes) * 3 / 10;
  model.work = 0.002;
  model.transfer_time = 0.1;
  ClusterRunResult depth = Simulate(plan.get(), 3, sizes, model, ClusterPlacement::kClairfs);
  model.peer_window = true;
  ClusterRunResult window = Simulate(plan.get(), 3, sizes, model, ClusterPlacement::kClairfs);
  EXPECT_GT(window.Total().peer_bytes, depth.Total().peer_bytes);
  EXPECT_LE(window.max_node_bytes, model.node_capacity);
  EXPECT_EQ(window.held_copies_at_end, window.held_files);
  // Only clairfs has a peer window.
  EXPECT_EQ(Simulate(plan.get(), 3, sizes, model, ClusterPlacement::kNone).Total().local_hits, [&] {
    ClusterModel without = model;
    without.peer_window = false;
    return Simulate(plan.get(), 3, sizes, without, ClusterPlacement::kNone).Total().local_hits;
  }());
}

// The live prefetcher's rule, with one copy per 1 s step (ACopyTimeLimitsTheStager's job): left
// to the reader are the PFS copies it reaches within 1.5 s, at its pace so far (1 position per
// second after step 0): 2 positions. Step 1 skips the files of positions 1 and 2 and stages the
// one of 3, step 2 the one of 4: per node 2 hits of 5 in epoch 0 (8 of 10 without the rule).
TEST(ClusterSimulatorTest, PfsCopiesTheReaderReachesFirstAreLeftToIt) {
  auto plan = SamplerPlan("torch-distributed:seed=1,world=2,shuffle=0", 10);
  const std::vector<uint64_t> sizes(10, kMiB);
  ClusterModel model = TwoNodesOneRankEach(5 * kMiB);
  model.copy_time = 1;
  model.leave_to_reader = 1.5;
  ClusterRunResult run = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(run.epochs.size(), 2u);
  EXPECT_EQ(run.epochs[0].local_hits, 4u);
  EXPECT_EQ(run.epochs[0].pfs_reads, 6u);
  EXPECT_EQ(run.epochs[0].staged_files, 8u);
}

// Peer transfers take time (the swap job of PeersServeWhatTheirHomesHold, clairfs, caches of 5
// MiB so that each node asks for both of the other's files in step 0 at clock 0; steps of 1 s).
//   1.5 s per transfer: they arrive at 1.5 s, before epoch 1's reads at 2 and 3 s: all hits.
//   2.5 s: they arrive at 2.5 s, after epoch 1's first reads (2 s): those two are misses read
//          from the PFS; the second reads (3 s) hit.
//   1.5 s, one transfer in flight per node: each node asks for one file in step 0 (arriving at
//          1.5 s), nothing in step 1 (still in flight at 1 s), the other in epoch 1's step 0 (2 s,
//          arriving at 3.5 s): epoch 1's second reads (3 s) miss.
TEST(ClusterSimulatorTest, PeerTransfersTakeTimeAndAreLimitedInFlight) {
  testing::TempDir dir;
  auto plan = ListPlan(dir, kSwapJob);
  const std::vector<uint64_t> sizes(4, kMiB);
  ClusterModel model = TwoNodesOneRankEach(5 * kMiB);
  model.transfer_time = 1.5;
  ClusterRunResult in_time = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  ASSERT_EQ(in_time.epochs.size(), 2u);
  EXPECT_EQ(in_time.epochs[0].local_hits, 4u);
  EXPECT_EQ(in_time.epochs[1].local_hits, 4u);
  EXPECT_EQ(in_time.epochs[1].late_transfers, 0u);
  EXPECT_EQ(in_time.Total().pfs_bytes, 4 * kMiB);

  model.transfer_time = 2.5;
  ClusterRunResult late = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  ASSERT_EQ(late.epochs.size(), 2u);
  EXPECT_EQ(late.epochs[1].local_hits, 2u);
  EXPECT_EQ(late.epochs[1].late_transfers, 2u);
  EXPECT_EQ(late.epochs[1].pfs_reads, 2u);
  EXPECT_EQ(late.epochs[1].pfs_bytes, 2 * kMiB);

  model.transfer_time = 1.5;
  model.transfers_in_flight = 1;
  ClusterRunResult limited = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  ASSERT_EQ(limited.epochs.size(), 2u);
  EXPECT_EQ(limited.epochs[0].local_hits, 4u);
  EXPECT_EQ(limited.epochs[1].local_hits, 2u);
  EXPECT_EQ(limited.epochs[1].late_transfers, 2u);
}

// The live agent frees a transfer's slot when its bytes are in, before the publish (the swap job
// of PeerTransfersTakeTimeAndAreLimitedInFlight, 1.5 s per transfer, one in flight per node).
// With a slot time of 0.5 s each node asks for one file at clock 0 (slot free at 0.5 s, copy at
// 1.5 s) and the other at clock 1 (copy at 2.5 s): both arrive before epoch 1 reads them (2 s
// and 3 s), where a slot held until the publish left the second to arrive at 3.5 s, late.
TEST(ClusterSimulatorTest, ATransferFreesItsSlotBeforeItsCopyIsPublished) {
  testing::TempDir dir;
  auto plan = ListPlan(dir, kSwapJob);
  const std::vector<uint64_t> sizes(4, kMiB);
  ClusterModel model = TwoNodesOneRankEach(5 * kMiB);
  model.transfer_time = 1.5;
  model.transfers_in_flight = 1;
  model.transfer_slot_time = 0.5;
  ClusterRunResult run = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  ASSERT_EQ(run.epochs.size(), 2u);
  EXPECT_EQ(run.epochs[1].local_hits, 4u);
  EXPECT_EQ(run.epochs[1].late_transfers, 0u);
  // A slot time as long as the transfer is the slot held until the publish.
  model.transfer_slot_time = 1.5;
  EXPECT_EQ(Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs).epochs[1].local_hits,
            2u);
}

// The agent makes its daemon calls one at a time (the swap job, clairfs, 1.5 s per transfer;
// steps of 1 s). An agent has no calls before the first step, so nothing moves at clock 0.
//   0.1 s a call (10 a step): at clock 1 both nodes ask for both files (2 calls each at the asker,
//     1 at the home); they arrive at 2.5 s: epoch 1's first reads (2 s) miss, its second hit.
//   0.25 s a call (4 a step): at clock 1 node 0 asks for c and d (its 4 calls, and 2 of node 1's);
//     node 1 has 2 calls left, but a and b need 1 of node 0's each: none. They arrive at 2.5 s
//     (d is hit at 3 s). At clock 2 node 1 asks for a and b, arriving at 3.5 s: both late.
//   1.5 s a call (2/3 of a call a step): a free agent takes a want and owes its calls. At clock 1
//     both agents are free (2/3 each): node 0 asks for c, owing 4/3 (node 1 then owes 1/3); then
//     node 0 is busy, so d, a and b wait. At clock 2 node 0 still owes 2/3, and at clock 3 it has
//     just paid them, with nothing to spare (not free): c arrives at 2.5 s, after its read at 2 s
//     (late), and epoch 1 reads the other three from the PFS.
TEST(ClusterSimulatorTest, TheAgentsDaemonCallsLimitItsTransfers) {
  testing::TempDir dir;
  auto plan = ListPlan(dir, kSwapJob);
  const std::vector<uint64_t> sizes(4, kMiB);
  ClusterModel model = TwoNodesOneRankEach(5 * kMiB);
  model.transfer_time = 1.5;
  model.agent_call_time = 0.1;
  ClusterRunResult ample = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  ASSERT_EQ(ample.epochs.size(), 2u);
  EXPECT_EQ(ample.epochs[0].local_hits, 4u);
  EXPECT_EQ(ample.epochs[1].local_hits, 2u);
  EXPECT_EQ(ample.epochs[1].late_transfers, 2u);
  model.agent_call_time = 0.25;
  ClusterRunResult scarce = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  ASSERT_EQ(scarce.epochs.size(), 2u);
  EXPECT_EQ(scarce.epochs[1].local_hits, 1u);
  EXPECT_EQ(scarce.epochs[1].late_transfers, 3u);
  model.agent_call_time = 1.5;
  ClusterRunResult slow = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  ASSERT_EQ(slow.epochs.size(), 2u);
  EXPECT_EQ(slow.epochs[0].peer_bytes, kMiB);
  EXPECT_EQ(slow.epochs[1].late_transfers, 1u);
  EXPECT_EQ(slow.epochs[1].local_hits, 0u);
  // Only clairfs has agents: the same model under `none` is as without calls.
  ClusterRunResult alone = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  model.agent_call_time = 0;
  ClusterRunResult alone_free = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  EXPECT_EQ(alone.Total().local_hits, alone_free.Total().local_hits);
  EXPECT_EQ(alone.Total().pfs_bytes, alone_free.Total().pfs_bytes);
}

// A home without a copy refuses (the swap job, clairfs, 1.5 s per transfer). In step 0 node 0
// acts first: node 1 has no copy of c or d yet, so both of node 0's wants are refused and node 0
// stages them from the PFS once refused; node 1's wants for a and b find node 0's copies.
//   refusal 0.5 s: c and d arrive at 0.5 s, a and b at 1.5 s: epoch 1 all hits; node 1 also
//     stages its own c and d, so the PFS gives 6 MiB (without refusals the home stages c and d
//     for node 0 and keeps them: 4 MiB).
//   refusal 2.5 s: node 0 reads c at 2 s before its refusal: the want is withdrawn (no PFS copy)
//     and c is read from the PFS; d is staged at 2.5 s and hit at 3 s. Still 6 MiB.
TEST(ClusterSimulatorTest, AHomeWithoutACopyRefusesAndTheAskerStagesFromThePfs) {
  testing::TempDir dir;
  auto plan = ListPlan(dir, kSwapJob);
  const std::vector<uint64_t> sizes(4, kMiB);
  ClusterModel model = TwoNodesOneRankEach(5 * kMiB);
  model.transfer_time = 1.5;
  model.refusal_time = 0.5;
  ClusterRunResult quick = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  ASSERT_EQ(quick.epochs.size(), 2u);
  EXPECT_EQ(quick.epochs[0].refused_wants, 2u);
  EXPECT_EQ(quick.epochs[0].local_hits, 4u);
  EXPECT_EQ(quick.epochs[1].local_hits, 4u);
  EXPECT_EQ(quick.Total().pfs_bytes, 6 * kMiB);
  EXPECT_EQ(quick.Total().peer_bytes, 2 * kMiB);

  model.refusal_time = 2.5;
  ClusterRunResult slow = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  ASSERT_EQ(slow.epochs.size(), 2u);
  EXPECT_EQ(slow.epochs[1].local_hits, 3u);
  EXPECT_EQ(slow.epochs[1].pfs_reads, 1u);
  EXPECT_EQ(slow.epochs[1].late_transfers, 0u);
  EXPECT_EQ(slow.epochs[1].unrefused_wants, 1u);  // a live want still taken: copy_in_flight
  EXPECT_EQ(slow.Total().pfs_bytes, 6 * kMiB);
  EXPECT_EQ(slow.Total().pfs_opens, 6u);
}

// Two nodes swap their halves between epochs: node 0 reads a, b then c, d; node 1 c, d then a, b.
// Caches of 3 MiB (hold budget 2.625 MiB: two files), unlimited bandwidth, depth one file.
//   none: node 0 stages a, b, c in step 0 (c for epoch 1), d in epoch 1 after evicting a: 4 MiB
//         from the PFS per node, 8 MiB for a 4 MiB dataset.
//   clairfs: homes a, b -> node 0, c, d -> node 1, all held. Node 0 stages a, b from the PFS and
//         asks node 1 for c, which node 1 has not staged yet (nodes act in order): node 1 stages
//         it from the PFS and sends it. Node 1 stages d from the PFS and pulls a from node 0; in
//         epoch 1 node 0 pulls d and node 1 b: 4 MiB from the PFS (each file once), 4 MiB
//         between peers, every read a hit.
//   nopfs: the same holds, but no node stages for another: node 0 reads c from the PFS too.
TEST(ClusterSimulatorTest, PeersServeWhatTheirHomesHold) {
  testing::TempDir dir;
  auto plan = ListPlan(dir, kSwapJob);
  const std::vector<uint64_t> sizes(4, kMiB);
  ClusterModel model = TwoNodesOneRankEach(3 * kMiB);
  ClusterRunResult none = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNone);
  ASSERT_EQ(none.epochs.size(), 2u);
  EXPECT_EQ(none.epochs[0].pfs_bytes, 6 * kMiB);
  EXPECT_EQ(none.epochs[1].pfs_bytes, 2 * kMiB);
  EXPECT_EQ(none.Total().local_hits, 8u);
  EXPECT_EQ(none.Total().peer_bytes, 0u);

  ClusterRunResult clairfs = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kClairfs);
  ASSERT_EQ(clairfs.epochs.size(), 2u);
  EXPECT_EQ(clairfs.held_files, 4u);
  EXPECT_EQ(clairfs.epochs[0].pfs_bytes, 4 * kMiB);
  EXPECT_EQ(clairfs.epochs[0].peer_bytes, 2 * kMiB);
  EXPECT_EQ(clairfs.epochs[1].pfs_bytes, 0u);
  EXPECT_EQ(clairfs.epochs[1].peer_bytes, 2 * kMiB);
  EXPECT_EQ(clairfs.Total().local_hits, 8u);
  EXPECT_EQ(clairfs.held_copies_at_end, 4u);
  EXPECT_EQ(clairfs.files_with_held_copy, 4u);
  // NoPFS picks the same files here (each read once per node: ties by first access).
  ClusterRunResult nopfs = Simulate(plan.get(), 2, sizes, model, ClusterPlacement::kNoPfs);
  EXPECT_EQ(nopfs.Total().pfs_bytes, 5 * kMiB);
  EXPECT_EQ(nopfs.Total().peer_bytes, 3 * kMiB);
}

// NoPFS holds the node's most frequent files first, ties by first access; no de-duplication.
TEST(ClusterSimulatorTest, NoPfsHoldsTheMostFrequentFilesFirst) {
  testing::TempDir dir;
  // Node 0 reads x in every epoch, y and z once; node 1 reads x twice.
  auto plan = ListPlan(dir,
                       "# epoch 0\n# rank 0\nz\ny\n# rank 1\nx\nw\n"
                       "# epoch 1\n# rank 0\nx\nw\n# rank 1\nx\nv\n"
                       "# epoch 2\n# rank 0\nx\nv\n# rank 1\nu\nv\n");
  // Files by first appearance: z=0, y=1, x=2, w=3, v=4, u=5.
  const std::vector<uint64_t> sizes(6, kMiB);
  ClusterModel model;
  model.nodes = 2;
  model.ranks_per_node = 1;
  model.node_capacity = 2 * kMiB + kMiB / 4;  // hold budget ~1.97 MiB: one file
  auto holds = ChooseClusterHolds(ClusterPlacement::kNoPfs, plan.get(), 0, 3, sizes, model);
  ASSERT_TRUE(holds.ok()) << holds.status().message();
  EXPECT_EQ(holds->per_node[0], std::vector<uint32_t>{2});  // x: 2 reads
  EXPECT_EQ(holds->per_node[1], std::vector<uint32_t>{2});  // x: 2 reads, held twice
  model.node_capacity = 4 * kMiB;                           // budget 3.5 MiB: three files
  holds = ChooseClusterHolds(ClusterPlacement::kNoPfs, plan.get(), 0, 3, sizes, model);
  ASSERT_TRUE(holds.ok());
  EXPECT_EQ(holds->per_node[0], (std::vector<uint32_t>{2, 0, 1}));  // x, then z, y by first read
  EXPECT_EQ(holds->per_node[1], (std::vector<uint32_t>{2, 4, 3}));  // x, v (2 reads), then w
}

// `--nodes 1` with unlimited bandwidth is the single-node simulator's plan policy.
TEST(ClusterSimulatorTest, OneNodeAgreesWithTheSingleNodeSimulator) {
  const uint64_t files = 3000;
  const std::vector<uint64_t> sizes = ImageNetSizes(files, 5);
  for (uint64_t percent : {30, 50, 120}) {
    auto plan = SamplerPlan("torch-distributed:seed=42,world=4", files);
    const uint64_t capacity = Sum(sizes) * percent / 100;
    SimTrace trace;
    for (uint64_t e = 0; e < 3; ++e) {
      auto order = plan->Epoch(e);
      ASSERT_TRUE(order.ok());
      trace.epochs.push_back(e);
      std::vector<uint32_t> accesses;
      for (uint64_t p = 0; p < (*order)->RankSize(0); ++p) {
        for (uint32_t r = 0; r < 4; ++r)
          accesses.push_back(static_cast<uint32_t>((*order)->At(r, p)));
      }
      trace.accesses.push_back(std::move(accesses));
    }
    const std::vector<SimEpochResult> single =
        SimulateCache(trace, sizes, capacity, SimPolicy::kPlan);
    ClusterModel model;
    model.nodes = 1;
    model.ranks_per_node = 4;
    model.node_capacity = capacity;
    ClusterRunResult cluster = Simulate(plan.get(), 3, sizes, model, ClusterPlacement::kNone);
    ASSERT_EQ(cluster.epochs.size(), single.size());
    for (size_t e = 0; e < single.size(); ++e) {
      SCOPED_TRACE("capacity " + std::to_string(percent) + "%, epoch " + std::to_string(e));
      EXPECT_EQ(cluster.epochs[e].reads, single[e].accesses);
      EXPECT_EQ(cluster.epochs[e].local_hits, single[e].hits);
      EXPECT_EQ(cluster.epochs[e].pfs_reads, single[e].misses);
      EXPECT_EQ(cluster.epochs[e].pfs_bytes, single[e].backing_bytes);
    }
  }
}

// Every placement keeps every node within its capacity, also when staging runs late; clairfs
// never loses a held copy and, with caches holding 120% of the dataset together, reads each byte
// from the PFS about once.
TEST(ClusterSimulatorTest, PlacementInvariants) {
  const uint64_t files = 4000;
  const std::vector<uint64_t> sizes = ImageNetSizes(files, 9);
  const uint64_t dataset = Sum(sizes);
  auto plan = SamplerPlan("torch-distributed:seed=7,world=16", files);
  for (bool limited : {false, true}) {
    ClusterModel model;
    model.nodes = 8;
    model.ranks_per_node = 2;
    model.node_capacity = dataset * 120 / 100 / 8;
    if (limited) {
      model.pfs_bandwidth = 400e6;
      model.pfs_open_latency = 0.002;
      model.pfs_metadata_ops = 20000;
      model.net_bandwidth = 1000e6;
      model.work = 0.001;
    }
    for (ClusterPlacement placement :
         {ClusterPlacement::kNone, ClusterPlacement::kNoPfs, ClusterPlacement::kClairfs}) {
      SCOPED_TRACE(std::string(ClusterPlacementName(placement)) +
                   (limited ? " limited" : " unlimited"));
      ClusterRunResult run = Simulate(plan.get(), 4, sizes, model, placement);
      ASSERT_EQ(run.epochs.size(), 4u);
      EXPECT_LE(run.max_node_bytes, model.node_capacity);
      EXPECT_GT(run.max_node_bytes, 0u);
      const ClusterEpochResult total = run.Total();
      EXPECT_EQ(total.reads, 4 * files);
      EXPECT_EQ(total.local_hits + total.peer_reads + total.pfs_reads, total.reads);
      if (placement == ClusterPlacement::kNone) {
        EXPECT_EQ(total.peer_bytes, 0u);
      }
      if (placement == ClusterPlacement::kClairfs) {
        // Every home file is read by its home in epoch 0, so every held copy is there at the end.
        EXPECT_GT(run.held_files, files * 9 / 10);
        EXPECT_EQ(run.held_copies_at_end, run.held_files);
        if (!limited) {
          EXPECT_LE(total.pfs_bytes, dataset * 105 / 100);
        }
      }
    }
  }
}

TEST(ClusterSimulatorTest, BadInputGetsOneClearError) {
  auto plan = SamplerPlan("torch-distributed:seed=1,world=8", 100);
  const std::vector<uint64_t> sizes(100, kClusterBlock);
  ClusterModel model;
  model.nodes = 0;
  model.ranks_per_node = 8;
  model.node_capacity = kMiB;
  auto run = SimulateCluster(plan.get(), 0, 1, sizes, model, ClusterPlacement::kClairfs);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), EINVAL);
  EXPECT_EQ(run.status().message(), "--nodes must be at least 1");

  model.nodes = 1;
  model.node_capacity = 0;
  run = SimulateCluster(plan.get(), 0, 1, sizes, model, ClusterPlacement::kNone);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().message(), "--node-capacity must be more than 0");

  model.nodes = 3;
  model.ranks_per_node = 2;
  model.node_capacity = kMiB;
  run = SimulateCluster(plan.get(), 0, 1, sizes, model, ClusterPlacement::kNone);
  ASSERT_FALSE(run.ok());
  EXPECT_EQ(run.status().code(), EINVAL);
  EXPECT_EQ(run.status().message(),
            "the plan's world is 8, not --nodes 3 x --ranks-per-node 2 = 6");

  auto part = SamplerPlan("torch-distributed:seed=1,world=8,ranks=0-3", 100);
  model.nodes = 4;
  run = SimulateCluster(part.get(), 0, 1, sizes, model, ClusterPlacement::kNone);
  ASSERT_FALSE(run.ok());
  EXPECT_NE(run.status().message().find("drop ranks="), std::string::npos);

  model.nodes = 4;
  model.pfs_bandwidth = -1;
  EXPECT_FALSE(CheckClusterModel(model).ok());
  model.pfs_bandwidth = kUnlimited;
  model.pfs_copy_time = -0.001;
  EXPECT_EQ(CheckClusterModel(model).message(), "--pfs-copy-ms must not be negative");
  model.pfs_copy_time = 0;
  model.reader_threads = 0;
  EXPECT_EQ(CheckClusterModel(model).message(), "--reader-threads must be at least 1");
  EXPECT_FALSE(ParseClusterPlacement("hvac").ok());
  EXPECT_EQ(ParseClusterSync("lockstep").status().message(),
            "--sync 'lockstep': expected step or epoch");
}

}  // namespace
}  // namespace clairfs
