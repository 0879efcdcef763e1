// `clairfs plan show` end to end through the real binary: output formats, exit codes, messages.
#include <unistd.h>

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
