// The peer tier for real (docs/PEERS.md): several mounts of one dataset on this machine, each with
// its own daemon and cache, their agents run by a real `mpirun` (one rank per mount, %r in the
// mountpoint), and readers that follow each rank's plan through its own mount, every byte checked
// against the backing file. Faults: an agent killed or stopped mid-epoch, a daemon killed under its
// agent, mismatched nodes, peers that send corrupt, short or forged copies, an agent run by an
// unprivileged user. Nothing is left mounted or running, even when an assertion fails.
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "tests/background_process.h"
#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

using json = nlohmann::json;

// Polls `done` every 20 ms for up to 10 s.
bool WaitFor(const std::function<bool()>& done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (std::chrono::steady_clock::now() < deadline) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

std::string FaultyPeerBin() {
  const std::string clairfs = ClairfsBin();
  return clairfs.substr(0, clairfs.rfind('/') + 1) + "peer/clairfs-peer-faulty";
}

std::vector<std::string> MpiEnv() {
  return {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1",
          "OMPI_MCA_rmaps_base_oversubscribe=1"};
}

struct ReadOutcome {
  uint64_t files = 0;
  uint64_t wrong = 0;
  uint64_t errors = 0;
  double slowest_seconds = 0;
};

// How many times `needle` occurs in `text`.
size_t Count(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

// Several nodes of one job on this machine. Node i: mount dir/mnt<i> of the shared backing tree,
// cache dir/cache<i>, plan rank i of the world.
class PeerCluster {
 public:
  PeerCluster(int nodes, int files, size_t max_size, uint64_t seed, int epochs)
      : nodes_(nodes), epochs_(epochs) {
    backing_ = dir_ / "backing";
    MakeDirs(backing_);
    contents_ = MakeFiles(backing_, files, max_size, seed);
    for (const auto& [path, data] : contents_) dataset_bytes_ += data.size();
    key_ = dir_ / "peer.key";
    WriteFile(key_, RandomBytes(32, seed + 1));
    chmod(key_.c_str(), 0600);
    for (int i = 0; i < nodes_; ++i) {
      MakeDirs(Mnt(i));
      mounts_.push_back(
          std::make_unique<ClairfsMount>(backing_, Mnt(i), dir_ / ("cache" + std::to_string(i))));
    }
  }

  std::string Mnt(int i) const { return dir_ / ("mnt" + std::to_string(i)); }
  std::string MntPattern() const { return dir_ / "mnt%r"; }
  std::string Spec(int node, uint64_t seed = 7) const {
    return "torch-distributed:seed=" + std::to_string(seed) + ",world=" + std::to_string(nodes_) +
           ",ranks=" + std::to_string(node) + "-" + std::to_string(node) +
           ",epochs=" + std::to_string(epochs_);
  }
  uint64_t dataset_bytes() const { return dataset_bytes_; }
  ClairfsMount& mount(int i) { return *mounts_[i]; }
  const std::string& dir() const { return dir_.path(); }
  const std::string& key() const { return key_; }
  const std::string& backing() const { return backing_; }

  // Mounts node i with its plan (or `auto`), the key and a capacity of `capacity_fraction` of
  // the dataset.
  ::testing::AssertionResult MountAll(double capacity_fraction,
                                      const std::vector<std::string>& extra = {},
                                      bool auto_plan = false) {
    const uint64_t capacity =
        static_cast<uint64_t>(capacity_fraction * dataset_bytes_) + (64 << 10);
    for (int i = 0; i < nodes_; ++i) {
      std::vector<std::string> args = {"--capacity", std::to_string(capacity / 1024) + "K",
                                       "--plan",     auto_plan ? "auto" : Spec(i),
                                       "--layout",   "sorted",
                                       "--peer-key", key_};
      args.insert(args.end(), extra.begin(), extra.end());
      CommandResult r = mounts_[i]->Mount(args);
      if (r.exit_code != 0) return ::testing::AssertionFailure() << "mount " << i << ": " << r.err;
    }
    return ::testing::AssertionSuccess();
  }

  // mpirun of one agent per node (over TCP when `tcp`), with `agent_args` after the mountpoint.
  std::unique_ptr<BackgroundProcess> StartAgents(bool tcp,
                                                 const std::vector<std::string>& agent_args = {},
                                                 const std::string& binary = "",
                                                 const std::vector<std::string>& prefix = {}) {
    std::vector<std::string> argv = prefix;
    for (const char* a : {"mpirun", "--oversubscribe", "--enable-recovery", "-np"})
      argv.push_back(a);
    argv.push_back(std::to_string(nodes_));
    if (tcp) {
      for (const char* a : {"--mca", "btl", "tcp,self"}) argv.push_back(a);
    }
    if (binary.empty()) {
      argv.push_back(ClairfsBin());
      argv.push_back("peer");
    } else {
      argv.push_back(binary);
    }
    argv.push_back(MntPattern());
    argv.insert(argv.end(), agent_args.begin(), agent_args.end());
    return std::make_unique<BackgroundProcess>(argv, dir_ / "agents.log", MpiEnv());
  }

  // A script that runs `clairfs peer` with its arguments and prints "agent exit N" on stderr:
  // mpirun --enable-recovery (Open MPI 4.1) exits 0 whatever its ranks return.
  std::string ExitReportingAgent() const {
    const std::string script = dir_ / "agent-exit.sh";
    WriteFile(script, "#!/bin/sh\n\"" + ClairfsBin() +
                          "\" peer \"$@\"\nrc=$?\necho \"agent exit $rc\" >&2\nexit $rc\n");
    chmod(script.c_str(), 0755);
    return script;
  }

  // Waits until every node's status shows an attached agent.
  bool WaitAttached(BackgroundProcess* agents, int timeout_seconds = 60) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
    while (std::chrono::steady_clock::now() < deadline) {
      int attached = 0;
      for (int i = 0; i < nodes_; ++i) {
        json s = mounts_[i]->Status();
        attached +=
            s.contains("peers") && s["peers"].is_object() && s["peers"].value("attached", false);
      }
      if (attached == nodes_) return true;
      if (!agents->running()) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    return false;
  }

  // The files rank `rank` reads in `epoch`, from `clairfs plan show` (the planner's own answer).
  std::vector<std::string> Order(int rank, int epoch) {
    CommandResult r =
        Run({ClairfsBin(), "plan", "show", "--backing", backing_, "--plan",
             "torch-distributed:seed=7,world=" + std::to_string(nodes_), "--layout", "sorted",
             "--epoch", std::to_string(epoch), "--rank", std::to_string(rank), "--json"});
    std::vector<std::string> out;
    if (r.exit_code != 0) {
      ADD_FAILURE() << r.err;
      return out;
    }
    const json parsed = json::parse(r.out);  // kept: a range over a temporary's member dangles
    for (const json& p : parsed["paths"]) out.push_back(p.get<std::string>());
    return out;
  }

  // Each node's reader reads its rank's files of `epoch` through its own mount, `pause` between
  // files, checking every byte; `skip` lists nodes whose reader does not run.
  std::vector<ReadOutcome> ReadEpoch(int epoch,
                                     std::chrono::milliseconds pause = std::chrono::milliseconds(1),
                                     std::set<int> skip = {}) {
    std::vector<ReadOutcome> outcomes(static_cast<size_t>(nodes_));
    std::vector<std::vector<std::string>> orders;
    for (int i = 0; i < nodes_; ++i) orders.push_back(Order(i, epoch));
    std::vector<std::thread> readers;
    for (int i = 0; i < nodes_; ++i) {
      if (skip.count(i) != 0) continue;
      readers.emplace_back([&, i] {
        ReadOutcome& o = outcomes[static_cast<size_t>(i)];
        for (const std::string& path : orders[static_cast<size_t>(i)]) {
          const auto start = std::chrono::steady_clock::now();
          std::string got;
          const std::string full = Mnt(i) + "/" + path;
          FILE* f = fopen(full.c_str(), "rb");
          if (f == nullptr) {
            ++o.errors;
          } else {
            char buf[65536];
            size_t n;
            while ((n = fread(buf, 1, sizeof(buf), f)) > 0) got.append(buf, n);
            if (ferror(f)) ++o.errors;
            fclose(f);
            if (got != contents_.at(path)) ++o.wrong;
          }
          o.slowest_seconds = std::max(
              o.slowest_seconds,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
          ++o.files;
          std::this_thread::sleep_for(pause);
        }
      });
    }
    for (auto& t : readers) t.join();
    return outcomes;
  }

  uint64_t Total(const char* what) {
    uint64_t sum = 0;
    for (int i = 0; i < nodes_; ++i) {
      json s = mounts_[i]->Status();
      if (!s.contains("peers") || !s["peers"].is_object()) continue;
      const json& p = s["peers"];
      if (std::string(what) == "received") sum += p["received"].value("files", uint64_t{0});
      if (std::string(what) == "rejected") sum += p["received"].value("rejected", uint64_t{0});
      if (std::string(what) == "served") sum += p.value("copies_served", uint64_t{0});
    }
    return sum;
  }

 private:
  TempDir dir_;
  int nodes_;
  int epochs_;
  std::string backing_;
  std::string key_;
  std::map<std::string, std::string> contents_;
  uint64_t dataset_bytes_ = 0;
  std::vector<std::unique_ptr<ClairfsMount>> mounts_;
};

void ExpectAllRight(const std::vector<ReadOutcome>& outcomes, const std::string& what) {
  for (size_t i = 0; i < outcomes.size(); ++i) {
    EXPECT_EQ(outcomes[i].wrong, 0u) << what << " node " << i;
    EXPECT_EQ(outcomes[i].errors, 0u) << what << " node " << i;
  }
}

class PeerTest : public ::testing::TestWithParam<bool> {};

// Three and four nodes, over shared memory and over TCP: every byte right, the nodes fill each
// other's caches from the second epoch on, and the agents leave by themselves when the plans end.
TEST_P(PeerTest, NodesStageForEachOtherAndLeaveWhenThePlansEnd) {
  const bool tcp = GetParam();
  const int nodes = tcp ? 4 : 3;
  PeerCluster cluster(nodes, 240, 48 << 10, 11, 3);
  ASSERT_TRUE(cluster.MountAll(0.5));
  // Before the agents attach, each mount (a peer key, a plan of part of the world) stages only
  // the first epoch and says so (docs/PEERS.md, "Before the agents attach").
  for (int i = 0; i < nodes; ++i) {
    EXPECT_TRUE(WaitFor([&] {
      return cluster.mount(i).Status()["plan"].value("awaiting_peer_agents", false);
    })) << "node "
        << i;
  }
  const CommandResult status = clairfs::testing::Cli({"status", cluster.mount(0).mountpoint()});
  EXPECT_NE(status.out.find("waiting for the job's peer agents"), std::string::npos) << status.out;
  auto agents = cluster.StartAgents(tcp, {}, cluster.ExitReportingAgent());
  ASSERT_TRUE(cluster.WaitAttached(agents.get())) << agents->Output();
  for (int i = 0; i < nodes; ++i) {
    EXPECT_TRUE(WaitFor([&] {
      return !cluster.mount(i).Status()["plan"].value("awaiting_peer_agents", true);
    })) << "node "
        << i;
  }
  for (int e = 0; e < 3; ++e) ExpectAllRight(cluster.ReadEpoch(e), "epoch " + std::to_string(e));
  const int agents_exit = agents->Wait(60);
  EXPECT_EQ(agents_exit, 0) << agents->Output();
  const size_t done = Count(agents->Output(), "agent exit 0");
  EXPECT_EQ(done, static_cast<size_t>(nodes)) << agents->Output();
  if (agents_exit != 0 || done != static_cast<size_t>(nodes)) {
    for (int i = 0; i < nodes; ++i) {
      json s = cluster.mount(i).Status();
      ADD_FAILURE() << "node " << i << ": plan " << s["plan"].dump() << "\npeers "
                    << s["peers"].dump();
    }
  }
  const std::string log = agents->Output();
  EXPECT_NE(log.find("done: pulled"), std::string::npos) << log;
  EXPECT_GT(cluster.Total("received"), 0u) << log;
  // A copy sent may arrive after the file was staged from the PFS (its deadline passed): dropped.
  EXPECT_LE(cluster.Total("received"), cluster.Total("served")) << log;
  EXPECT_EQ(cluster.Total("rejected"), 0u);
  // Each node says how long its wants took to arrive or to be given up (docs/PEERS.md).
  for (int i = 0; i < nodes; ++i) {
    const json w = cluster.mount(i).Status()["peers"]["wants"];
    ASSERT_TRUE(w["delivery_ms_mean"].is_number() && w["failure_ms_mean"].is_number()) << w.dump();
    if (w.value("delivered", 0) > 0) {
      EXPECT_GT(w["delivery_ms_mean"].get<double>(), 0.0) << w.dump();
    }
    EXPECT_GE(w["failure_ms_mean"].get<double>(), 0.0) << w.dump();
  }
  // Hits on copies that came from peers are counted as such.
  uint64_t peer_bytes = 0;
  for (int i = 0; i < nodes; ++i) {
    peer_bytes += cluster.mount(i).Status().value("bytes_from_peer_copies", uint64_t{0});
    json s = cluster.mount(i).Status();
    EXPECT_FALSE(s["peers"].value("attached", true)) << "node " << i;
  }
  EXPECT_GT(peer_bytes, 0u);
  for (int i = 0; i < nodes; ++i) EXPECT_EQ(cluster.mount(i).Umount().exit_code, 0);
}

INSTANTIATE_TEST_SUITE_P(Transports, PeerTest, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return info.param ? "Tcp" : "SharedMemory";
                         });

// Mounts given `--plan auto`: the agents, started before any reader, wait for their daemons to
// infer the plan from the readers' first opens, then attach with the same job plan on every node
// and the nodes stage for each other; every byte right.
TEST(PeerAutoTest, AgentsWaitForTheInferredPlanAndThenAttach) {
  // 6,000 files: a dataset large enough for the inference threshold.
  PeerCluster cluster(2, 6000, 4 << 10, 21, 2);
  ASSERT_TRUE(cluster.MountAll(0.5, {}, /*auto_plan=*/true));
  auto agents = cluster.StartAgents(false, {"--plan-wait", "120"}, cluster.ExitReportingAgent());
  // Before any open the agents wait (the hello says why).
  std::this_thread::sleep_for(std::chrono::seconds(2));
  EXPECT_TRUE(agents->running()) << agents->Output();
  EXPECT_FALSE(cluster.mount(0).Status()["peers"].value("attached", true));
  ExpectAllRight(cluster.ReadEpoch(0, std::chrono::milliseconds(0)), "epoch 0");
  ASSERT_TRUE(cluster.WaitAttached(agents.get(), 60)) << agents->Output();
  EXPECT_NE(agents->Output().find("waiting for the mount to infer its plan"), std::string::npos)
      << agents->Output();
  for (int i = 0; i < 2; ++i) {
    json plan = cluster.mount(i).Status()["plan"];
    EXPECT_EQ(plan["spec"], "torch-distributed:seed=7,world=2,ranks=" + std::to_string(i) + "-" +
                                std::to_string(i))
        << plan.dump();
  }
  ExpectAllRight(cluster.ReadEpoch(1), "epoch 1");
  EXPECT_GT(cluster.Total("received"), 0u) << agents->Output();
  EXPECT_EQ(cluster.Total("rejected"), 0u);
  // The inferred plan has no last epoch: the agents run until stopped.
  kill(agents->pid(), SIGTERM);
  agents->Wait(30);
  for (int i = 0; i < 2; ++i) EXPECT_EQ(cluster.mount(i).Umount().exit_code, 0);
}

// kill -9 of one agent mid-epoch: the others' readers finish with right bytes and no read waits
// long; the survivors suspect the lost node within a few seconds and say so; its own mount keeps
// serving from its cache and the PFS.
TEST(PeerFaultTest, AnAgentKilledMidEpochCostsItsPeersNothingButPfsReads) {
  PeerCluster cluster(4, 240, 48 << 10, 12, 3);
  ASSERT_TRUE(cluster.MountAll(0.5));
  auto agents = cluster.StartAgents(false);
  ASSERT_TRUE(cluster.WaitAttached(agents.get())) << agents->Output();
  ExpectAllRight(cluster.ReadEpoch(0), "epoch 0");
  // The agent of rank 2 is the one attached to mount 2.
  const pid_t agent2 = static_cast<pid_t>(cluster.mount(2).Status()["peers"].value("agent_pid", 0));
  ASSERT_GT(agent2, 0);
  std::thread killer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    kill(agent2, SIGKILL);
  });
  auto epoch1 = cluster.ReadEpoch(1, std::chrono::milliseconds(5));
  killer.join();
  ExpectAllRight(epoch1, "epoch 1");
  for (const ReadOutcome& o : epoch1) EXPECT_LT(o.slowest_seconds, 3.0);
  // Its mount goes on alone.
  EXPECT_FALSE(cluster.mount(2).Status()["peers"].value("attached", true));
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  bool suspected = false;
  while (!suspected && std::chrono::steady_clock::now() < deadline) {
    suspected = agents->Output().find("node 2 is suspected") != std::string::npos;
    if (!suspected) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(suspected) << agents->Output();
  // Each survivor suspects it on its own clock and reports each second: all of them within 15 s.
  for (int i : {0, 1, 3}) {
    json peers;
    uint64_t count = 0;
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    do {
      peers = cluster.mount(i).Status()["peers"];
      count = peers.contains("agent") ? peers["agent"].value("suspected", uint64_t{0}) : 0;
      if (count == 0) std::this_thread::sleep_for(std::chrono::milliseconds(200));
    } while (count == 0 && std::chrono::steady_clock::now() < until);
    EXPECT_GE(count, 1u) << "node " << i << ": " << peers.dump();
  }
  ExpectAllRight(cluster.ReadEpoch(2), "epoch 2");
  agents->Wait(60);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(cluster.mount(i).Umount().exit_code, 0);
}

// An agent stopped for 10 s: no reader waits for it, the others suspect it within about 5 s, and
// it rejoins once it answers again.
TEST(PeerFaultTest, AStoppedAgentIsSuspectedAndRejoins) {
  PeerCluster cluster(3, 180, 48 << 10, 13, 3);
  ASSERT_TRUE(cluster.MountAll(0.6));
  auto agents = cluster.StartAgents(false);
  ASSERT_TRUE(cluster.WaitAttached(agents.get())) << agents->Output();
  ExpectAllRight(cluster.ReadEpoch(0), "epoch 0");
  const pid_t agent1 = static_cast<pid_t>(cluster.mount(1).Status()["peers"].value("agent_pid", 0));
  ASSERT_GT(agent1, 0);
  ASSERT_EQ(kill(agent1, SIGSTOP), 0);
  const auto stopped_at = std::chrono::steady_clock::now();
  auto epoch1 = cluster.ReadEpoch(1, std::chrono::milliseconds(20), {1});
  ExpectAllRight(epoch1, "epoch 1");
  for (const ReadOutcome& o : epoch1) EXPECT_LT(o.slowest_seconds, 3.0);
  std::this_thread::sleep_until(stopped_at + std::chrono::seconds(10));
  EXPECT_NE(agents->Output().find("node 1 is suspected"), std::string::npos) << agents->Output();
  ASSERT_EQ(kill(agent1, SIGCONT), 0);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  bool rejoined = false;
  while (!rejoined && std::chrono::steady_clock::now() < deadline) {
    rejoined = agents->Output().find("node 1 answers again") != std::string::npos;
    if (!rejoined) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(rejoined) << agents->Output();
  // Node 1 reads its epoch 1 late, then everyone the last one.
  ExpectAllRight(cluster.ReadEpoch(1, std::chrono::milliseconds(1), {0, 2}), "epoch 1, node 1");
  ExpectAllRight(cluster.ReadEpoch(2), "epoch 2");
  agents->Wait(60);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(cluster.mount(i).Umount().exit_code, 0);
}

// A daemon killed under its running agent: the agent leaves, the other nodes go on.
TEST(PeerFaultTest, ADaemonKilledUnderItsAgent) {
  PeerCluster cluster(3, 180, 48 << 10, 14, 2);
  ASSERT_TRUE(cluster.MountAll(0.6));
  auto agents = cluster.StartAgents(false);
  ASSERT_TRUE(cluster.WaitAttached(agents.get())) << agents->Output();
  ExpectAllRight(cluster.ReadEpoch(0, std::chrono::milliseconds(1), {2}), "epoch 0");
  const pid_t daemon2 = static_cast<pid_t>(cluster.mount(2).Status().value("pid", 0));
  ASSERT_GT(daemon2, 0);
  kill(daemon2, SIGKILL);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(15);
  bool left = false;
  while (!left && std::chrono::steady_clock::now() < deadline) {
    left = agents->Output().find("rank 2: leaving") != std::string::npos;
    if (!left) std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_TRUE(left) << agents->Output();
  ExpectAllRight(cluster.ReadEpoch(1, std::chrono::milliseconds(1), {2}), "epoch 1");
  // The survivors are not done (node 2's readers never finish): end them.
  agents.reset();
  for (int i = 0; i < 2; ++i) EXPECT_EQ(cluster.mount(i).Umount().exit_code, 0);
}

// Nodes that do not agree are refused at start, with one line naming the odd rank.
TEST(PeerFaultTest, MismatchedNodesAreRefusedNamingTheOddRank) {
  {
    PeerCluster cluster(3, 60, 8 << 10, 15, 1);
    ASSERT_TRUE(
        cluster.mount(0)
            .Mount({"--plan", cluster.Spec(0), "--layout", "sorted", "--peer-key", cluster.key()})
            .exit_code == 0);
    ASSERT_TRUE(cluster.mount(1)
                    .Mount({"--plan", cluster.Spec(1, 8), "--layout", "sorted", "--peer-key",
                            cluster.key()})
                    .exit_code == 0);
    ASSERT_TRUE(
        cluster.mount(2)
            .Mount({"--plan", cluster.Spec(2), "--layout", "sorted", "--peer-key", cluster.key()})
            .exit_code == 0);
    auto agents = cluster.StartAgents(false, {}, cluster.ExitReportingAgent());
    EXPECT_GE(agents->Wait(60), 0) << "the agents did not end";
    EXPECT_NE(agents->Output().find("rank 1 ("), std::string::npos) << agents->Output();
    EXPECT_NE(agents->Output().find("has another plan"), std::string::npos) << agents->Output();
    EXPECT_EQ(Count(agents->Output(), "agent exit 1"), 3u) << agents->Output();
  }
  {
    PeerCluster cluster(2, 60, 8 << 10, 16, 1);
    ASSERT_TRUE(
        cluster.mount(0)
            .Mount({"--plan", cluster.Spec(0), "--layout", "sorted", "--peer-key", cluster.key()})
            .exit_code == 0);
    ASSERT_TRUE(cluster.mount(1)
                    .Mount({"--plan", cluster.Spec(1), "--layout", "sorted", "--peer-key", "none"})
                    .exit_code == 0);
    auto agents = cluster.StartAgents(false, {}, cluster.ExitReportingAgent());
    EXPECT_GE(agents->Wait(60), 0) << "the agents did not end";
    EXPECT_NE(agents->Output().find("rank 1 ("), std::string::npos) << agents->Output();
    EXPECT_NE(agents->Output().find("has no peer key"), std::string::npos) << agents->Output();
    EXPECT_EQ(Count(agents->Output(), "agent exit 1"), 2u) << agents->Output();
  }
}

// Peers that lie (a test build of the agent): corrupt, short and forged copies are misses, never
// wrong bytes.
TEST(PeerFaultTest, CorruptShortOrForgedCopiesAreMissesNeverWrongBytes) {
  for (const char* fault : {"corrupt", "short", "forge"}) {
    SCOPED_TRACE(fault);
    PeerCluster cluster(3, 150, 32 << 10, 17, 2);
    // Caches too small to stage both epochs before the agents attach (mpirun may take seconds
    // under load), readers paced, and a long deadline: epoch 1 has files wanted from peers.
    ASSERT_TRUE(cluster.MountAll(0.45));
    auto agents =
        cluster.StartAgents(false, {"--fault", fault, "--deadline", "5000"}, FaultyPeerBin());
    ASSERT_TRUE(cluster.WaitAttached(agents.get())) << agents->Output();
    ExpectAllRight(cluster.ReadEpoch(0), "epoch 0");
    ExpectAllRight(cluster.ReadEpoch(1, std::chrono::milliseconds(20)), "epoch 1");
    EXPECT_EQ(cluster.Total("received"), 0u);
    if (std::string(fault) != "short") {
      EXPECT_GT(cluster.Total("rejected"), 0u);
    }
    agents->Wait(60);
    for (int i = 0; i < 3; ++i) EXPECT_EQ(cluster.mount(i).Umount().exit_code, 0);
  }
}

// The job's user runs the agents: they work without any access to the caches.
TEST(PeerFaultTest, AnUnprivilegedAgentWorksAndCannotReadTheCache) {
  PeerCluster cluster(3, 150, 32 << 10, 18, 2);
  ASSERT_TRUE(cluster.MountAll(0.45, {"-o", "allow_other"}));  // as above: files left to want
  chmod(cluster.dir().c_str(), 0755);
  CommandResult denied = clairfs::testing::Run({"setpriv", "--reuid=65534", "--regid=65534",
                                                "--clear-groups", "ls", cluster.dir() + "/cache0"});
  EXPECT_NE(denied.exit_code, 0);
  auto agents = cluster.StartAgents(false, {"--deadline", "5000"}, "",
                                    {"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                     "env", "HOME=/tmp", "TMPDIR=/tmp"});
  ASSERT_TRUE(cluster.WaitAttached(agents.get())) << agents->Output();
  EXPECT_EQ(cluster.mount(0).Status()["peers"].value("agent_uid", 0), 65534);
  ExpectAllRight(cluster.ReadEpoch(0), "epoch 0");
  ExpectAllRight(cluster.ReadEpoch(1, std::chrono::milliseconds(20)), "epoch 1");
  EXPECT_GT(cluster.Total("received"), 0u) << agents->Output();
  EXPECT_EQ(agents->Wait(60), 0) << agents->Output();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(cluster.mount(i).Umount().exit_code, 0);
}

}  // namespace
}  // namespace clairfs::testing
