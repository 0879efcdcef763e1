// `clairfs simulate --nodes` end to end through the real binary: the table and JSON, how its
// flags combine with the single-node ones, and one clear line for each bad input.
#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::ClairfsBin;
using testing::CommandResult;

CommandResult Simulate(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {ClairfsBin(), "simulate"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::Run(argv);
}

const std::vector<std::string> kJob = {"--files",  "400",    "--sizes",
                                       "imagenet", "--plan", "torch-distributed:seed=3,world=8",
                                       "--epochs", "2"};

std::vector<std::string> With(std::vector<std::string> more) {
  std::vector<std::string> args = kJob;
  args.insert(args.end(), more.begin(), more.end());
  return args;
}

TEST(SimulateClusterCli, PrintsEveryPlacementAsJson) {
  CommandResult r = Simulate(
      With({"--nodes", "4", "--node-capacity", "30%", "--pfs-bandwidth", "200", "--json"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = nlohmann::json::parse(r.out);
  EXPECT_EQ(out["nodes"], 4);
  EXPECT_EQ(out["ranks_per_node"], 2);
  for (const char* placement : {"none", "nopfs", "clairfs"}) {
    const auto& p = out["placements"][placement];
    ASSERT_EQ(p["epochs"].size(), 2u) << placement;
    EXPECT_EQ(p["total"]["reads"], 800) << placement;
    EXPECT_LE(p["max_node_bytes"].get<uint64_t>(), out["node_capacity_bytes"].get<uint64_t>());
    // The local misses by cause, named as a live mount's status names them, sum to the misses.
    for (const auto& e : p["epochs"]) {
      uint64_t causes = 0;
      for (const char* cause :
           {"copy_in_flight", "copy_queued", "left_to_reader", "not_staged_ahead"}) {
        causes += e["miss_causes"][cause].get<uint64_t>();
      }
      EXPECT_EQ(causes, e["reads"].get<uint64_t>() - e["local_hits"].get<uint64_t>()) << e;
    }
  }
  EXPECT_EQ(out["placements"]["none"]["total"]["peer_bytes"], 0);
}

TEST(SimulateClusterCli, PrintsATable) {
  CommandResult r = Simulate(With({"--nodes", "2", "--node-capacity", "64M", "--pfs-bandwidth",
                                   "unlimited", "--placement", "clairfs"}));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("clairfs    job"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("nopfs"), std::string::npos) << r.out;
}

// Several bench runs: each figure beside their median and spread; --setup-s bench takes each
// mode's setup phase (median 2 s for the baseline, 3 s for the peers) into the model.
TEST(SimulateClusterCli, ComparesWithTheMedianOfSeveralBenchRuns) {
  testing::TempDir dir;
  std::vector<std::string> args = With({"--nodes", "4", "--node-capacity", "30%", "--pfs-bandwidth",
                                        "200", "--setup-s", "bench", "--json", "--compare"});
  for (int run = 0; run < 3; ++run) {
    auto phase = [&](const std::string& name, double seconds) {
      return nlohmann::json{{"phase", name},
                            {"pfs_bytes", 100 * (run + 1)},
                            {"hits", 50},
                            {"files_read", 400},
                            {"seconds", seconds}};
    };
    nlohmann::json bench = {
        {"nodes", 4},
        {"files", 400},
        {"dataset_bytes", 1000},
        {"modes",
         {{{"mode", "baseline"},
           {"phases", {phase("setup", 1.0 + run), phase("1", 1.0), phase("2", 1.0)}}},
          {{"mode", "peers"},
           {"phases", {phase("setup", 4.0 - run), phase("1", 1.0), phase("2", 1.0)}}}}}};
    const std::string path = dir / ("bench-" + std::to_string(run) + ".json");
    testing::WriteFile(path, bench.dump());
    args.push_back(path);
  }
  CommandResult r = Simulate(args);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto out = nlohmann::json::parse(r.out);
  EXPECT_DOUBLE_EQ(out["placements"]["none"]["setup"]["time_s"].get<double>(), 2.0);
  EXPECT_DOUBLE_EQ(out["placements"]["clairfs"]["setup"]["time_s"].get<double>(), 3.0);
  EXPECT_GT(out["placements"]["none"]["setup"]["pfs_bytes"].get<uint64_t>(), 0u);
  ASSERT_EQ(out["compare"].size(), 12u);  // 2 modes x 2 epochs x 3 figures
  const auto& first = out["compare"][0];
  EXPECT_EQ(first["what"], "pfs_share");
  EXPECT_DOUBLE_EQ(first["measured"].get<double>(), 0.2);  // 0.1, 0.2, 0.3
  EXPECT_DOUBLE_EQ(first["measured_low"].get<double>(), 0.1);
  EXPECT_DOUBLE_EQ(first["measured_high"].get<double>(), 0.3);
  EXPECT_EQ(first["runs"], 3);
}

TEST(SimulateClusterCli, BadInputIsOneClearLine) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--nodes", "0", "--node-capacity", "1G", "--pfs-bandwidth", "100"},
       "--nodes must be at least 1"},
      {{"--nodes", "2", "--node-capacity", "0", "--pfs-bandwidth", "100"},
       "--node-capacity must be more than 0"},
      {{"--nodes", "3", "--node-capacity", "1G", "--pfs-bandwidth", "100"},
       "the plan's world is 8, not a multiple of --nodes 3"},
      {{"--nodes", "2", "--ranks-per-node", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100"},
       "the plan's world is 8, not --nodes 2 x --ranks-per-node 2 = 4"},
      {{"--nodes", "2", "--capacity", "1G", "--pfs-bandwidth", "100"},
       "with --nodes the capacity is per node: give --node-capacity, not --capacity"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--policy", "lru"},
       "--policy plan"},
      {{"--nodes", "2", "--node-capacity", "1G"}, "--nodes needs --pfs-bandwidth MB/s"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "fast"},
       "--pfs-bandwidth 'fast'"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--placement", "hvac"},
       "--placement 'hvac'"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--compare",
        "/nonexistent/bench.json"},
       "--compare /nonexistent/bench.json: cannot be read"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--setup-s", "bench"},
       "--setup-s bench takes the setup phases of --compare's runs"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--transfer-ms", "soon"},
       "--transfer-ms 'soon'"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--leave-to-reader-ms",
        "measured"},
       "--leave-to-reader-ms measured needs --pfs-copy-ms"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--cores", "many"},
       "--cores 'many'"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--sync", "lockstep"},
       "--sync 'lockstep': expected step or epoch"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--reader-threads", "0"},
       "--reader-threads must be at least 1"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--refusal-ms", "soon"},
       "--refusal-ms 'soon'"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--agent-call-ms",
        "slow"},
       "--agent-call-ms 'slow'"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--pfs-copy-ms",
        "later"},
       "--pfs-copy-ms 'later'"},
      {{"--nodes", "2", "--node-capacity", "1G", "--pfs-bandwidth", "100", "--transfer-ms", "100",
        "--transfer-slot-ms", "150"},
       "--transfer-slot-ms must be at most --transfer-ms"},
  };
  for (const Case& c : cases) {
    CommandResult r = Simulate(With(c.args));
    EXPECT_EQ(r.exit_code, 2) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  // Without --nodes, --capacity is still required.
  CommandResult r = Simulate(kJob);
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--capacity SIZE is required"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clairfs
