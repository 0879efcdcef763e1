// `clairfs darshan dump|top|reencode|import` as users run them: output, exit codes, error
// messages, names that are not UTF-8, and what a failed offline import leaves behind.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <utility>

#include <nlohmann/json.hpp>

#include "planner/darshan/darshan_writer.h"

#include "planner/darshan/darshan_test_support.h"
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

// Every module of the log is carried over: the shared MPI-IO test log keeps its MPI-IO and
// DXT_MPIIO regions (bytes checked in planner/darshan_writer_test.cc), with their versions.
TEST(DarshanCli, ReencodeKeepsTheModulesItDoesNotDecode) {
  testing::TempDir dir;
  const std::string name = "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1";
  testing::CommandResult r = Clairfs({"darshan", "reencode", LogPath(name), dir / "out.darshan"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, uint32_t> before, after;
  for (auto [log, versions] :
       {std::pair{LogPath(name), &before}, std::pair{dir / "out.darshan", &after}}) {
    r = Clairfs({"darshan", "dump", "--json", log});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    const nlohmann::json dumped = nlohmann::json::parse(r.out);
    for (const auto& m : dumped["regions"]["modules"]) {
      (*versions)[m["module"].get<std::string>()] = m["version"].get<uint32_t>();
    }
  }
  EXPECT_EQ(after, before);
  EXPECT_EQ(after["MPI-IO"], 3u);
  EXPECT_EQ(after["DXT_MPIIO"], 2u);
  EXPECT_EQ(after["DXT_POSIX"], 1u);  // what Darshan 3.4.x reads, as the original had
}

// A log whose file name is not UTF-8 and holds a newline: dump's text mirrors darshan-parser
// and prints it raw; everything else prints it escaped, one line, valid UTF-8.
class DarshanNamesTest : public ::testing::Test {
 protected:
  static constexpr char kRaw[] = "/pfs/data/bad\xff\xfe\nname.npz";
  static constexpr char kShown[] = "/pfs/data/bad\\xff\\xfe\\x0aname.npz";

  void SetUp() override {
    darshan::JobDescription job;
    job.exe = "names-test";
    job.mounts = {{"lustre", "/pfs"}};
    std::vector<darshan::FileCounters> files(2);
    files[0].path = kRaw;
    files[1].path = "/pfs/data/plain.npz";
    for (auto& f : files) {
      f.counters = {{"POSIX_OPENS", 1}, {"POSIX_READS", 2}, {"POSIX_BYTES_READ", 2000}};
      f.counters["POSIX_MAX_BYTE_READ"] = 999;
    }
    auto log = darshan::BuildPosixLog(job, files);
    ASSERT_TRUE(log.ok()) << log.status().message();
    ASSERT_TRUE(darshan::WriteDarshanLogFile(log_, *log).ok());
  }

  testing::TempDir dir_;
  const std::string log_ = dir_ / "names.darshan";
};

TEST_F(DarshanNamesTest, DumpTextIsRawAndJsonIsEscaped) {
  testing::CommandResult r = Clairfs({"darshan", "dump", log_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find(std::string("\tPOSIX_OPENS\t1\t") + kRaw + "\t/pfs\tlustre\n"),
            std::string::npos);

  r = Clairfs({"darshan", "dump", "--json", log_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);  // strict: throws on bytes that are not UTF-8
  std::set<std::string> names;
  for (const auto& rec : j["records"]) names.insert(rec["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{kShown, "/pfs/data/plain.npz"}));
  EXPECT_EQ(r.out.find('\xff'), std::string::npos);
  // dump --help says which form is which.
  r = Clairfs({"darshan", "dump", "--help"});
  EXPECT_NE(r.out.find("printed raw"), std::string::npos) << r.out;
}

TEST_F(DarshanNamesTest, TopPrintsEscapedNamesInTextAndJson) {
  testing::CommandResult r = Clairfs({"darshan", "top", log_, "--strip-prefix", "/pfs"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("  data/bad\\xff\\xfe\\x0aname.npz\n"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find('\xff'), std::string::npos);
  EXPECT_EQ(r.out.find("\nname.npz"), std::string::npos);

  r = Clairfs({"darshan", "top", log_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  std::set<std::string> paths;
  for (const auto& f : j["files"]) paths.insert(f["path"].get<std::string>());
  EXPECT_EQ(paths, (std::set<std::string>{kShown, "/pfs/data/plain.npz"}));

  // Unmatched examples under a backing root are escaped too.
  testing::MakeDirs(dir_ / "backing/data");
  testing::WriteFile(dir_ / "backing/data/plain.npz", "x");
  r = Clairfs(
      {"darshan", "top", log_, "--backing", dir_ / "backing", "--strip-prefix", "/pfs", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["unmatched"]["examples"], nlohmann::json::array({kShown}));
}

TEST_F(DarshanNamesTest, ErrorMessagesNameFilesEscapedOnOneLine) {
  const std::string missing = dir_ / "no\xff\nlog.darshan";
  for (const char* command : {"dump", "top"}) {
    testing::CommandResult r = Clairfs({"darshan", command, missing});
    EXPECT_EQ(r.exit_code, 1) << command;
    EXPECT_NE(r.err.find("no\\xff\\x0alog.darshan"), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  }
  testing::CommandResult r = Clairfs({"darshan", "reencode", log_, log_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("File exists"), std::string::npos) << r.err;
}

// `darshan import` keys heat by the raw dataset path: the name crosses the control protocol
// escaped and matches the file of the same raw bytes in the backing tree.
TEST_F(DarshanNamesTest, OfflineImportMatchesTheRawName) {
  testing::MakeDirs(dir_ / "backing/data");
  testing::WriteFile(dir_ / "backing/data/bad\xff\xfe\nname.npz", "abc");
  testing::CommandResult r = Clairfs({"darshan", "import", "--cache", dir_ / "cache", "--backing",
                                      dir_ / "backing", "--strip-prefix", "/pfs", "--json", log_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["files_matched"], 1);
  EXPECT_EQ(j["unmatched"]["examples"], nlohmann::json::array({"/pfs/data/plain.npz"}));
}

// Item 10 of the issue: a failed `darshan import --cache NEW` leaves no new cache behind; a
// cache that existed before stays.
TEST(DarshanCli, FailedOfflineImportLeavesNoNewCache) {
  testing::TempDir dir;
  testing::MakeDirs(dir / "backing");
  testing::WriteFile(dir / "backing/a.npz", "x");
  const std::string corrupt = dir / "corrupt.darshan";
  testing::WriteFile(corrupt, testing::ReadFile(LogPath(kSnyder)).substr(0, 2000));
  struct Case {
    std::string log;
    std::string error;
  };
  for (const Case& c : {Case{LogPath(kSnyder), "none of the"}, Case{corrupt, "corrupt.darshan"},
                        Case{dir / "missing.darshan", "No such file"}}) {
    SCOPED_TRACE(c.log);
    const std::string cache = dir / "new-cache";
    testing::CommandResult r =
        Clairfs({"darshan", "import", "--cache", cache, "--backing", dir / "backing", c.log});
    EXPECT_EQ(r.exit_code, 1) << r.err;
    EXPECT_NE(r.err.find(c.error), std::string::npos) << r.err;
    EXPECT_FALSE(testing::PathExists(cache));
  }
  testing::MakeDirs(dir / "old-cache");
  testing::WriteFile(dir / "old-cache/keep", "mine");
  testing::CommandResult r = Clairfs(
      {"darshan", "import", "--cache", dir / "old-cache", "--backing", dir / "backing", corrupt});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(testing::ReadFile(dir / "old-cache/keep"), "mine");
  // A cache path whose parent is missing is refused, and nothing is made.
  r = Clairfs({"darshan", "import", "--cache", dir / "no/such/cache", "--backing", dir / "backing",
               LogPath(kSnyder)});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_FALSE(testing::PathExists(dir / "no"));
}

}  // namespace
}  // namespace clairfs
