// `clairfs plan show` end to end through the real binary: output formats, exit codes, messages.
#include <unistd.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "planner/darshan/darshan_writer.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::ClairfsBin;
using testing::CommandResult;
using testing::MakeDirs;
using testing::TempDir;
using testing::WriteFile;

CommandResult PlanShow(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {ClairfsBin(), "plan", "show"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::Run(argv);
}

class PlanShowCli : public ::testing::Test {
 protected:
  void SetUp() override {
    for (const char* cls : {"cat", "dog"}) {
      for (int i = 0; i < 5; ++i) {
        WriteFile(dir_ / ("ds/" + std::string(cls) + "/" + std::to_string(i) + ".jpg"), "x");
      }
    }
  }
  std::string backing() const { return dir_ / "ds"; }
  TempDir dir_;
};

TEST_F(PlanShowCli, PrintsPathsIndicesAndJson) {
  CommandResult paths =
      PlanShow({"--backing", backing(), "--plan", "sequential", "--epoch", "0", "--limit", "3"});
  ASSERT_EQ(paths.exit_code, 0) << paths.err;
  EXPECT_EQ(paths.out, "cat/0.jpg\ncat/1.jpg\ncat/2.jpg\n");

  CommandResult indices =
      PlanShow({"--backing", backing(), "--plan", "torch-distributed:seed=3,world=2", "--epoch",
                "1", "--rank", "1", "--format", "indices"});
  ASSERT_EQ(indices.exit_code, 0) << indices.err;
  EXPECT_EQ(std::count(indices.out.begin(), indices.out.end(), '\n'), 5);

  CommandResult json =
      PlanShow({"--backing", backing(), "--plan", "torch-distributed:seed=3,world=2", "--epoch",
                "1", "--rank", "1", "--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["rank"], 1);
  EXPECT_EQ(parsed["world"], 2);
  EXPECT_EQ(parsed["num_samples"], 10);
  EXPECT_EQ(parsed["count"], 5);
  EXPECT_EQ(parsed["paths"].size(), 5u);
}

TEST_F(PlanShowCli, LinksLeavingTheRootAreLeftOutOfPathsWithAWarning) {
  WriteFile(dir_ / "outside/x.jpg", "x");
  ASSERT_EQ(symlink((dir_ / "outside/x.jpg").c_str(), (backing() + "/dog/9.jpg").c_str()), 0);
  CommandResult shown = PlanShow({"--backing", backing(), "--plan", "sequential", "--epoch", "0"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(std::count(shown.out.begin(), shown.out.end(), '\n'), 10);
  EXPECT_EQ(shown.out.find("dog/9.jpg"), std::string::npos);
  EXPECT_NE(shown.err.find("dog/9.jpg"), std::string::npos) << shown.err;
  CommandResult indices = PlanShow(
      {"--backing", backing(), "--plan", "sequential", "--epoch", "0", "--format", "indices"});
  EXPECT_EQ(std::count(indices.out.begin(), indices.out.end(), '\n'), 11);
  CommandResult json =
      PlanShow({"--backing", backing(), "--plan", "sequential", "--epoch", "0", "--json"});
  auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["left_out"], nlohmann::json::array({"dog/9.jpg"}));
}

TEST_F(PlanShowCli, ListPlansNeedNoBacking) {
  WriteFile(dir_ / "order.txt", "# epoch 2\n# rank 0\nb.jpg\na.jpg\n# rank 1\nc.jpg\n");
  CommandResult shown =
      PlanShow({"--plan", "list:" + (dir_ / "order.txt"), "--epoch", "2", "--rank", "1"});
  ASSERT_EQ(shown.exit_code, 0) << shown.err;
  EXPECT_EQ(shown.out, "c.jpg\n");
  CommandResult missing = PlanShow({"--plan", "list:" + (dir_ / "order.txt"), "--epoch", "0"});
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_NE(missing.err.find("epoch 0 is outside the plan"), std::string::npos) << missing.err;
}

TEST_F(PlanShowCli, ExitCodesAndMessages) {
  struct Case {
    std::vector<std::string> args;
    int exit_code;
    std::string names;
  };
  std::string b = backing();
  const std::vector<Case> cases = {
      {{"--backing", b, "--plan", "torch-distributed:seed=1", "--epoch", "0"}, 2, "needs world"},
      {{"--backing", b, "--plan", "numpy:seed=1,colour=red", "--epoch", "0"},
       2,
       "unknown key 'colour'"},
      {{"--backing", b, "--plan", "numpy:seed=1", "--epoch", "-1"}, 2, "--epoch='-1'"},
      {{"--backing", b, "--plan", "numpy:seed=1", "--epoch", "0", "--rank", "1"},
       2,
       "rank 1 is outside the plan"},
      {{"--backing", b, "--plan", "numpy:seed=1,epochs=2", "--epoch", "2"},
       2,
       "epoch 2 is outside the plan (epochs 0-1)"},
      {{"--backing", b, "--plan", "numpy:seed=1", "--epoch", "0", "--format", "csv"},
       2,
       "expected paths or indices"},
      {{"--plan", "numpy:seed=1", "--epoch", "0"}, 2, "--backing DIR is required"},
      {{"--backing", b, "--epoch", "0"}, 2, "--plan"},
      {{"--backing", b, "--layout", "tree", "--plan", "sequential", "--epoch", "0"},
       2,
       "expected imagefolder, sorted or list:FILE"},
      // Bounds are checked before the (missing) tree is read.
      {{"--backing", dir_ / "nope", "--plan", "numpy:seed=1,epochs=1", "--epoch", "1"},
       2,
       "epoch 1 is outside the plan"},
      {{"--backing", dir_ / "nope", "--plan", "sequential", "--epoch", "0"},
       1,
       "No such file or directory"},
      {{"--plan", "list:" + (dir_ / "nope.txt"), "--epoch", "0"}, 2, "nope.txt: No such file"},
  };
  for (const Case& c : cases) {
    CommandResult result = PlanShow(c.args);
    EXPECT_EQ(result.exit_code, c.exit_code) << c.names << ": " << result.err;
    EXPECT_NE(result.err.find(c.names), std::string::npos) << result.err;
    EXPECT_TRUE(result.out.empty()) << result.out;
  }
}

TEST_F(PlanShowCli, LinkCycleFailsNamingTheLink) {
  ASSERT_EQ(symlink("..", (backing() + "/cat/loop").c_str()), 0);
  CommandResult shown = PlanShow({"--backing", backing(), "--plan", "sequential", "--epoch", "0"});
  EXPECT_EQ(shown.exit_code, 1);
  EXPECT_NE(shown.err.find("link cycle: cat/loop"), std::string::npos) << shown.err;
}

// `plan detect` over a list layout of 5000 samples (no tree needed), with a small search so each
// run takes milliseconds: traces printed by `plan show`, with and without a pid column.
class PlanDetectCli : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string list;
    for (int i = 0; i < 5000; ++i) list += "c/" + std::to_string(i) + ".jpg\n";
    WriteFile(dir_ / "list.txt", list);
    MakeDirs(dir_ / "ds");
  }
  std::vector<std::string> Show(const std::string& spec, int epoch, int rank, int limit) {
    CommandResult shown = PlanShow({"--backing", dir_ / "ds", "--layout", "list:" + list(),
                                    "--plan", spec, "--epoch", std::to_string(epoch), "--rank",
                                    std::to_string(rank), "--limit", std::to_string(limit)});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    std::vector<std::string> lines;
    size_t start = 0;
    for (size_t end; (end = shown.out.find('\n', start)) != std::string::npos; start = end + 1) {
      lines.push_back(shown.out.substr(start, end - start));
    }
    return lines;
  }
  CommandResult Detect(const std::string& trace, std::vector<std::string> extra = {}) {
    WriteFile(dir_ / "trace.txt", trace);
    std::vector<std::string> argv = {
        ClairfsBin(), "plan",           "detect",  "--backing",        dir_ / "ds",
        "--layout",   "list:" + list(), "--trace", dir_ / "trace.txt", "--max-seed",
        "4096",       "--max-world",    "16",      "--window",         "16"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    return testing::Run(argv);
  }
  std::string list() const { return dir_ / "list.txt"; }
  TempDir dir_;
};

TEST_F(PlanDetectCli, FindsTheSpecEpochAndRankPlanShowReproduces) {
  std::string trace;
  for (const std::string& path : Show("torch-distributed:seed=100,world=4", 7, 2, 60)) {
    trace += path + "\n";
  }
  CommandResult found = Detect("# opens of rank 2\n" + trace);
  ASSERT_EQ(found.exit_code, 0) << found.out << found.err;
  EXPECT_NE(found.out.find("plan: torch-distributed:seed=107,world=4,ranks=2-2\n"),
            std::string::npos)
      << found.out;
  EXPECT_NE(found.out.find("epoch: 0\nrank: 2\n"), std::string::npos) << found.out;
  // What it prints reproduces the trace.
  std::string again;
  for (const std::string& path : Show("torch-distributed:seed=107,world=4,ranks=2-2", 0, 2, 60)) {
    again += path + "\n";
  }
  EXPECT_EQ(again, trace);

  CommandResult json = Detect(trace, {"--json"});
  ASSERT_EQ(json.exit_code, 0) << json.err;
  auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["adopted"], true);
  EXPECT_EQ(parsed["plan"], "torch-distributed:seed=107,world=4,ranks=2-2");
  EXPECT_EQ(parsed["seed_plus_epoch"], 107);
  EXPECT_EQ(parsed["rank"], 2);
  EXPECT_EQ(parsed["observations"], 60);
}

TEST_F(PlanDetectCli, PidColumnGroupsReadersIntoRanks) {
  auto rank0 = Show("torch-distributed:seed=9,world=8", 0, 0, 30);
  auto rank3 = Show("torch-distributed:seed=9,world=8", 0, 3, 30);
  std::string trace;
  for (size_t i = 0; i < 30; ++i) trace += "700 " + rank0[i] + "\n701 " + rank3[i] + "\n";
  trace += "701 not/in/the/dataset.jpg\n";
  CommandResult json = Detect(trace, {"--json"});
  ASSERT_EQ(json.exit_code, 0) << json.out << json.err;
  auto parsed = nlohmann::json::parse(json.out);
  EXPECT_EQ(parsed["plan"], "torch-distributed:seed=9,world=8,ranks=0-3");
  EXPECT_EQ(parsed["pids"], true);
  EXPECT_EQ(parsed["not_in_dataset"], 1);
  ASSERT_EQ(parsed["readers"].size(), 2u);
  EXPECT_EQ(parsed["readers"][0]["reader"], 700);
  EXPECT_EQ(parsed["readers"][0]["rank"], 0);
  EXPECT_EQ(parsed["readers"][1]["rank"], 3);
}

// Darshan DXT_POSIX traces as the trace: a non-MPI job's two processes (ranks 0 and 1 of world
// 2), one log each (rank 0 in both), started 1 s apart, that read the dataset through a mount
// point (/datasets/x), not the backing root; each file read in two segments.
TEST_F(PlanDetectCli, ReadsTheTraceFromDarshanDxtLogsOfTheJobsProcesses) {
  std::vector<std::string> logs;
  for (int rank = 0; rank < 2; ++rank) {
    std::vector<std::string> paths = Show("torch-distributed:seed=300,world=2", 4, rank, 60);
    darshan::JobDescription job;
    job.start_time_sec = 1700000000 + rank;
    job.end_time_sec = job.start_time_sec + 10;
    job.exe = "python3 train.py";
    job.mounts.push_back({"fuse.clairfs", "/datasets"});
    std::vector<darshan::FileCounters> files;
    for (const std::string& path : paths) {
      files.push_back({"/datasets/x/" + path, 0, {{"POSIX_OPENS", 1}, {"POSIX_READS", 2}}, {}});
    }
    auto log = darshan::BuildPosixLog(job, files);
    ASSERT_TRUE(log.ok()) << log.status().message();
    std::map<std::string, uint64_t> id_of;
    for (const auto& [id, name] : log->names) id_of[name] = id;
    // Records in another order than the reads: the times decide.
    for (size_t i = paths.size(); i-- > 0;) {
      darshan::DxtRecord record;
      record.id = id_of.at("/datasets/x/" + paths[i]);
      record.rank = 0;
      record.hostname = "node1";
      const double t = 0.01 * static_cast<double>(i) - rank;  // both ranks in step
      record.reads.push_back({0, 4096, t, t + 0.001, 0});
      record.reads.push_back({4096, 4096, t + 0.002, t + 0.003, 0});
      log->dxt_posix.push_back(record);
    }
    logs.push_back(dir_ / ("rank" + std::to_string(rank) + ".darshan"));
    ASSERT_TRUE(darshan::WriteDarshanLogFile(logs.back(), *log).ok());
  }
  std::vector<std::string> argv = {
      ClairfsBin(), "plan",  "detect",      "--backing", dir_ / "ds", "--layout", "list:" + list(),
      "--max-seed", "4096",  "--max-world", "16",        "--window",  "16",       "--json",
      "--darshan",  logs[0], logs[1]};
  CommandResult found = testing::Run(argv);
  ASSERT_EQ(found.exit_code, 0) << found.out << found.err;
  auto parsed = nlohmann::json::parse(found.out);
  EXPECT_EQ(parsed["plan"], "torch-distributed:seed=304,world=2");
  EXPECT_EQ(parsed["readers"].size(), 2u);
  EXPECT_EQ(parsed["not_in_dataset"], 0u);
  EXPECT_EQ(parsed["trace_lines"], 120u);
  // A log without DXT traces says how to get them; --trace and --darshan exclude each other.
  darshan::JobDescription job;
  job.mounts.push_back({"fuse.clairfs", "/datasets"});
  auto plain = darshan::BuildPosixLog(job, {{"/datasets/x/c/1.jpg", 0, {{"POSIX_OPENS", 1}}, {}}});
  ASSERT_TRUE(plain.ok());
  ASSERT_TRUE(darshan::WriteDarshanLogFile(dir_ / "plain.darshan", *plain).ok());
  CommandResult none =
      testing::Run({ClairfsBin(), "plan", "detect", "--backing", dir_ / "ds", "--layout",
                    "list:" + list(), "--darshan", dir_ / "plain.darshan"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("DXT_ENABLE_IO_TRACE=1"), std::string::npos) << none.err;
  CommandResult both = testing::Run({ClairfsBin(), "plan", "detect", "--backing", dir_ / "ds",
                                     "--trace", dir_ / "t.txt", "--darshan", logs[0]});
  EXPECT_EQ(both.exit_code, 2) << both.err;
  CommandResult neither = testing::Run({ClairfsBin(), "plan", "detect", "--backing", dir_ / "ds"});
  EXPECT_EQ(neither.exit_code, 2);
  EXPECT_NE(neither.err.find("--trace FILE or --darshan"), std::string::npos) << neither.err;
}

TEST_F(PlanDetectCli, NoPlanExitCodesAndUsage) {
  std::string sequential;
  for (int i = 0; i < 60; ++i) sequential += "c/" + std::to_string(i) + ".jpg\n";
  CommandResult none = Detect(sequential);
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.out.find("no plan adopted (no_candidate)"), std::string::npos) << none.out;
  CommandResult few = Detect("c/1.jpg\nc/2.jpg\n", {"--json"});
  EXPECT_EQ(few.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(few.out)["outcome"], "too_few_observations");
  CommandResult missing =
      testing::Run({ClairfsBin(), "plan", "detect", "--backing", dir_ / "ds", "--layout",
                    "list:" + list(), "--trace", dir_ / "nope.txt"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("nope.txt: No such file"), std::string::npos) << missing.err;
  CommandResult directory = testing::Run({ClairfsBin(), "plan", "detect", "--backing", dir_ / "ds",
                                          "--layout", "list:" + list(), "--trace", dir_ / "ds"});
  EXPECT_EQ(directory.exit_code, 1);
  EXPECT_NE(directory.err.find("Is a directory"), std::string::npos) << directory.err;
  CommandResult bad = Detect("c/1.jpg\nbad\\escape\n");
  EXPECT_EQ(bad.exit_code, 2);
  EXPECT_NE(bad.err.find("trace.txt:2: "), std::string::npos) << bad.err;
  CommandResult usage = testing::Run({ClairfsBin(), "plan", "detect", "--backing", dir_ / "ds"});
  EXPECT_EQ(usage.exit_code, 2);
  CommandResult help = testing::Run({ClairfsBin(), "plan", "detect", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("PID PATH"), std::string::npos);
}

TEST(PlanCli, HelpAndParentCommand) {
  CommandResult help = testing::Run({ClairfsBin(), "plan", "show", "--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("torch-distributed:seed=S,world=R"), std::string::npos);
  EXPECT_NE(help.out.find("--layout-root"), std::string::npos);
  CommandResult bare = testing::Run({ClairfsBin(), "plan"});
  EXPECT_EQ(bare.exit_code, 2);
}

}  // namespace
}  // namespace clairfs
