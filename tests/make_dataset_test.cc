// Integration tests of `clairfs bench make-dataset` as users run it: determinism across runs,
// JSON summary, refusal of foreign directories, usage errors, quiet stderr off a terminal.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>

#include "planner/synthetic_content.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::ClairfsBin;
using testing::CommandResult;
using testing::ReadFile;
using testing::TempDir;

CommandResult MakeDataset(const std::vector<std::string>& args) {
  std::vector<std::string> argv = {ClairfsBin(), "bench", "make-dataset"};
  argv.insert(argv.end(), args.begin(), args.end());
  return testing::Run(argv, 120);
}

// relpath -> content of every regular file under `root`.
std::map<std::string, std::string> Tree(const std::string& root) {
  std::map<std::string, std::string> tree;
  for (const auto& e : std::filesystem::recursive_directory_iterator(root)) {
    if (!e.is_regular_file()) continue;
    tree[std::filesystem::relative(e.path(), root).generic_string()] = ReadFile(e.path());
  }
  return tree;
}

TEST(MakeDatasetCommand, SameArgumentsSameTreeAndVerifiableContent) {
  TempDir tmp;
  const std::vector<std::string> args = {"--files", "50", "--classes", "5", "--seed", "7"};
  auto a_args = args, b_args = args;
  a_args.insert(a_args.begin(), tmp / "a");
  b_args.insert(b_args.begin(), tmp / "b");
  CommandResult a = MakeDataset(a_args);
  CommandResult b = MakeDataset(b_args);
  ASSERT_EQ(a.exit_code, 0) << a.err;
  ASSERT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(a.err, "");  // no progress when stderr is not a terminal
  auto tree_a = Tree(tmp / "a");
  auto tree_b = Tree(tmp / "b");
  ASSERT_EQ(tree_a.size(), 50u);
  EXPECT_TRUE(tree_a == tree_b);
  EXPECT_TRUE(tree_a.count("class_0004/img_00000049.jpg"));
  for (const auto& [relpath, data] : tree_a) {
    EXPECT_TRUE(VerifySyntheticFile(relpath, data).ok()) << relpath;
  }
  // Another seed: same names, other sizes.
  CommandResult c = MakeDataset({tmp / "c", "--files", "50", "--classes", "5", "--seed", "8"});
  ASSERT_EQ(c.exit_code, 0) << c.err;
  auto tree_c = Tree(tmp / "c");
  EXPECT_EQ(tree_c.size(), 50u);
  EXPECT_FALSE(tree_a == tree_c);
}

TEST(MakeDatasetCommand, JsonSummary) {
  TempDir tmp;
  CommandResult r = MakeDataset(
      {tmp / "ds", "--layout", "flat", "--files", "10", "--sizes", "fixed:4K", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["layout"], "flat");
  EXPECT_EQ(j["files"], 10);
  EXPECT_EQ(j["total_bytes"], 40960);
  EXPECT_EQ(j["median_bytes"], 4096);
  EXPECT_EQ(j["written_files"], 10);
  // Running again keeps every file.
  CommandResult again = MakeDataset(
      {tmp / "ds", "--layout", "flat", "--files", "10", "--sizes", "fixed:4K", "--json"});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  auto k = nlohmann::json::parse(again.out);
  EXPECT_EQ(k["written_files"], 0);
  EXPECT_EQ(k["reused_files"], 10);
}

TEST(MakeDatasetCommand, ShardsOverrideFiles) {
  TempDir tmp;
  CommandResult r = MakeDataset({tmp / "ds", "--sizes", "shards:3x1M", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["files"], 3);
  EXPECT_EQ(j["layout"], "shards");
  EXPECT_EQ(ReadFile(tmp / "ds/shard_0002.tar").size(), 1u << 20);
}

TEST(MakeDatasetCommand, RefusesAForeignDirectoryUnlessForced) {
  TempDir tmp;
  testing::WriteFile(tmp / "ds/README", "not a dataset");
  CommandResult refused = MakeDataset({tmp / "ds", "--files", "3"});
  EXPECT_EQ(refused.exit_code, 1);
  EXPECT_NE(refused.err.find("not empty"), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("README"), std::string::npos) << refused.err;
  EXPECT_FALSE(testing::PathExists(tmp / "ds/class_0000"));
  CommandResult forced = MakeDataset({tmp / "ds", "--files", "3", "--force"});
  EXPECT_EQ(forced.exit_code, 0) << forced.err;
  EXPECT_EQ(ReadFile(tmp / "ds/README"), "not a dataset");
}

TEST(MakeDatasetCommand, UsageErrorsExitTwoWithOneLine) {
  TempDir tmp;
  const std::vector<std::vector<std::string>> cases = {
      {tmp / "ds"},                                      // no --files
      {tmp / "ds", "--files", "3", "--sizes", "huge"},   // bad size model
      {tmp / "ds", "--files", "3", "--classes", "4"},    // more classes than files
      {tmp / "ds", "--files", "3", "--layout", "tree"},  // bad layout
      {tmp / "ds", "--sizes", "shards:2x1M", "--layout", "flat"},
      {tmp / "ds", "--files", "3", "--layout", "flat", "--classes", "2"},
  };
  for (const auto& args : cases) {
    CommandResult r = MakeDataset(args);
    EXPECT_EQ(r.exit_code, 2) << args.back() << ": " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
    EXPECT_NE(r.err.find("clairfs bench make-dataset:"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(testing::PathExists(tmp / "ds"));
}

TEST(VerifyDatasetCommand, PassesAGoodTreeAndNamesEveryBadFile) {
  TempDir tmp;
  ASSERT_EQ(MakeDataset({tmp / "ds", "--files", "40", "--classes", "4"}).exit_code, 0);
  CommandResult good = testing::Run({ClairfsBin(), "bench", "verify-dataset", tmp / "ds"});
  EXPECT_EQ(good.exit_code, 0) << good.err;
  EXPECT_NE(good.out.find("verified 40 files"), std::string::npos) << good.out;
  EXPECT_NE(good.out.find("all correct"), std::string::npos) << good.out;

  std::string flipped = ReadFile(tmp / "ds/class_0001/img_00000012.jpg");
  flipped[777] ^= 0x20;
  testing::WriteFile(tmp / "ds/class_0001/img_00000012.jpg", flipped);
  std::string cut = ReadFile(tmp / "ds/class_0003/img_00000039.jpg");
  testing::WriteFile(tmp / "ds/class_0003/img_00000039.jpg", cut.substr(0, cut.size() - 1));
  CommandResult bad = testing::Run({ClairfsBin(), "bench", "verify-dataset", tmp / "ds", "--json"});
  EXPECT_EQ(bad.exit_code, 1);
  auto j = nlohmann::json::parse(bad.out);
  EXPECT_EQ(j["files"], 40);
  EXPECT_EQ(j["failed_files"], 2);
  std::string errors = j["errors"].dump();
  EXPECT_NE(errors.find("class_0001/img_00000012.jpg: wrong content at offset 777"),
            std::string::npos)
      << errors;
  EXPECT_NE(errors.find("class_0003/img_00000039.jpg"), std::string::npos) << errors;

  // Rooted one level too high, every relative path gains "ds/": the content keys differ.
  CommandResult wrong_root =
      testing::Run({ClairfsBin(), "bench", "verify-dataset", tmp.path(), "--json"});
  EXPECT_EQ(wrong_root.exit_code, 1);
  EXPECT_EQ(nlohmann::json::parse(wrong_root.out)["failed_files"], 40);
  testing::MakeDirs(tmp / "void");
  CommandResult none = testing::Run({ClairfsBin(), "bench", "verify-dataset", tmp / "void"});
  EXPECT_EQ(none.exit_code, 1);
  EXPECT_NE(none.err.find("no files"), std::string::npos) << none.err;
}

}  // namespace
}  // namespace clairfs
