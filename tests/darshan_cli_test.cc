// `clairfs darshan dump|top|reencode` as users run them: output, exit codes, error messages.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "planner/darshan_test_support.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using darshan::testing::ComparableLines;
using darshan::testing::DataDir;
using darshan::testing::LogPath;
using darshan::testing::ParserTextPath;
using darshan::testing::RecordLines;
using testing::ClairfsBin;
// Runs the clairfs binary with `args` (a free function: test bodies have their own Run()).
testing::CommandResult Clairfs(std::vector<std::string> args) {
  args.insert(args.begin(), ClairfsBin());
  return testing::Run(args);
}

const char kSnyder[] = "snyder_python3_id3116902-2110365_12-19-66957-188958432683465822_1";

TEST(DarshanCli, DumpPrintsWhatDarshanParserPrints) {
  for (const char* name : {kSnyder, "mpi-io-test-x86_64-3.0.0",
                           "treddy_mpi-io-test_id4373053_6-2-"
                           "60198-9815401321915095332_1"}) {
    testing::CommandResult r = Clairfs({"darshan", "dump", LogPath(name)});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ComparableLines(r.out), ComparableLines(testing::ReadFile(ParserTextPath(name))))
        << name;
  }
}

TEST(DarshanCli, DumpJsonHasJobMountsAndNamedCounters) {
  testing::CommandResult r = Clairfs({"darshan", "dump", "--json", LogPath(kSnyder)});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["version"], "3.41");
  EXPECT_EQ(j["job"]["jobid"], 3116902);
  EXPECT_EQ(j["job"]["metadata"]["lib_ver"], "3.4.6");
  EXPECT_FALSE(j["mounts"].empty());
  size_t posix = 0;
  for (const auto& rec : j["records"]) {
    if (rec["module"] == "POSIX") {
      ++posix;
      EXPECT_TRUE(rec["counters"].contains("POSIX_BYTES_READ"));
      EXPECT_TRUE(rec["counters"].contains("POSIX_F_READ_TIME"));
    }
  }
  // One POSIX record per 86 record lines of the reference.
  EXPECT_EQ(posix * 86, RecordLines(testing::ReadFile(ParserTextPath(kSnyder))).size() - 58);
}

TEST(DarshanCli, CorruptOrMissingLogsFailWithTheRegionNamed) {
  testing::TempDir dir;
  std::string bytes = testing::ReadFile(LogPath(kSnyder));
  testing::WriteFile(dir / "cut.darshan", bytes.substr(0, bytes.size() - 100));
  testing::CommandResult r = Clairfs({"darshan", "dump", dir / "cut.darshan"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("cut.darshan: HEATMAP region"), std::string::npos) << r.err;
  r = Clairfs({"darshan", "dump", dir / "none.darshan"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("No such file"), std::string::npos) << r.err;
  r = Clairfs({"darshan", "dump"});
  EXPECT_EQ(r.exit_code, 2);
  r = Clairfs({"darshan", "top", "--limit", "many", DataDir()});
  EXPECT_EQ(r.exit_code, 2);
}

TEST(DarshanCli, TopMapsPathsOntoTheBackingRoot) {
  testing::TempDir backing;
  testing::WriteFile(backing / "train/img_087_of_168.npz", "x");
  testing::WriteFile(backing / "train/img_001_of_168.npz", "x");
  testing::CommandResult r =
      Clairfs({"darshan", "top", DataDir(), "--backing", backing.path(), "--limit", "5"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("prefix /grand/projects/radix-io/usr/snyder/dlio (detected)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("train/img_087_of_168.npz"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("paths matched no file under " + backing.path()), std::string::npos);

  r = Clairfs({"darshan", "top", DataDir(), "--strip-prefix",
               "/grand/projects/radix-io/usr/snyder/dlio", "--json", "--limit", "0", "--sort",
               "bytes"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["logs"].get<size_t>(), darshan::testing::SharedLogNames().size());
  ASSERT_GT(j["files"].size(), 20u);
  EXPECT_EQ(j["files"].size(), j["file_count"]);
  for (size_t i = 1; i < j["files"].size(); ++i) {
    EXPECT_GE(j["files"][i - 1]["bytes_read"].get<uint64_t>(),
              j["files"][i]["bytes_read"].get<uint64_t>());
  }
}

TEST(DarshanCli, ReencodeWritesALogThatDumpsTheSameRecords) {
  testing::TempDir dir;
  const std::string name = "mpi-io-test-x86_64-3.1.6";
  testing::CommandResult r = Clairfs({"darshan", "reencode", LogPath(name), dir / "out.darshan"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Clairfs({"darshan", "dump", dir / "out.darshan"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("# darshan log version: 3.41"), std::string::npos);
  EXPECT_EQ(RecordLines(r.out), RecordLines(testing::ReadFile(ParserTextPath(name))));
  r = Clairfs({"darshan", "reencode", LogPath(name), dir / "out.darshan"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("File exists"), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clairfs
