// Heat: merging logs per path (checked against darshan-parser's own numbers), ranking, and
// mapping PFS paths onto a backing root by a given or detected prefix.
#include "planner/heat.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>

#include "planner/darshan/darshan_test_support.h"
#include "planner/darshan/darshan_writer.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using darshan::testing::DataDir;
using darshan::testing::LogPath;
using darshan::testing::ParserTextPath;
using darshan::testing::RecordLines;
using darshan::testing::SharedLogNames;

std::vector<std::string> SnyderLogs() {
  std::vector<std::string> names;
  for (const std::string& n : SharedLogNames()) {
    if (n.rfind("snyder_python3_", 0) == 0) names.push_back(n);
  }
  return names;
}

// Per-path sums computed from the reference darshan-parser text, independently of the reader.
std::map<std::string, HeatCounters> FromParserText(const std::vector<std::string>& names) {
  std::map<std::string, HeatCounters> out;
  for (const std::string& name : names) {
    for (const std::string& line : RecordLines(clairfs::testing::ReadFile(ParserTextPath(name)))) {
      std::vector<std::string> col;
      size_t start = 0;
      for (size_t tab; (tab = line.find('\t', start)) != std::string::npos; start = tab + 1) {
        col.push_back(line.substr(start, tab - start));
      }
      col.push_back(line.substr(start));
      const std::string& counter = col[3];
      const std::string& path = col[5];
      if (path.empty() || path[0] != '/') continue;
      HeatCounters& h = out[path];
      long long v = std::atoll(col[4].c_str());
      uint64_t pos = v > 0 ? static_cast<uint64_t>(v) : 0;
      if (counter == "POSIX_BYTES_READ" || counter == "STDIO_BYTES_READ") h.bytes_read += pos;
      if (counter == "POSIX_READS" || counter == "STDIO_READS") h.reads += pos;
      if (counter == "POSIX_OPENS" || counter == "STDIO_OPENS") h.opens += pos;
      if (counter == "POSIX_MAX_BYTE_READ" || counter == "STDIO_MAX_BYTE_READ") {
        h.max_byte_read = std::max<int64_t>(h.max_byte_read, v);
      }
      if (counter == "POSIX_F_READ_TIME" || counter == "STDIO_F_READ_TIME") {
        h.read_time += std::max(0.0, std::atof(col[4].c_str()));
      }
    }
  }
  return out;
}

TEST(Heat, MergesPerProcessLogsLikeTheParserNumbers) {
  std::vector<std::string> names = SnyderLogs();
  ASSERT_EQ(names.size(), 12u);
  std::vector<std::string> paths;
  for (const std::string& n : names) paths.push_back(LogPath(n));
  Result<HeatTable> table = LoadHeat(paths, {});
  ASSERT_TRUE(table.ok()) << table.status().message();
  EXPECT_EQ(table->logs, 12u);
  std::map<std::string, HeatCounters> want = FromParserText(names);
  ASSERT_EQ(table->files.size(), want.size());
  size_t read_files = 0;
  for (const HeatRecord& r : table->files) {
    SCOPED_TRACE(r.path);
    ASSERT_TRUE(want.count(r.path));
    const HeatCounters& w = want[r.path];
    EXPECT_EQ(r.counters.bytes_read, w.bytes_read);
    EXPECT_EQ(r.counters.reads, w.reads);
    EXPECT_EQ(r.counters.opens, w.opens);
    EXPECT_EQ(r.counters.max_byte_read, w.max_byte_read);
    EXPECT_NEAR(r.counters.read_time, w.read_time, 1e-5 * (1 + w.read_time));
    if (r.counters.bytes_read > 0) {
      ++read_files;
      EXPECT_DOUBLE_EQ(r.rereads, static_cast<double>(r.counters.bytes_read) /
                                      static_cast<double>(r.counters.max_byte_read + 1));
    }
  }
  EXPECT_GT(read_files, 10u);
  // Hottest first.
  for (size_t i = 1; i < table->files.size(); ++i) {
    EXPECT_GE(table->files[i - 1].heat_per_byte, table->files[i].heat_per_byte);
  }
  EXPECT_GT(table->special_names, 0u);  // <STDIN> and friends are not files
}

TEST(Heat, DirectoriesMeanEveryLogBelowThem) {
  Result<HeatTable> dir = LoadHeat({DataDir()}, {});
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(dir->logs, SharedLogNames().size());
}

TEST(Heat, DetectsThePrefixAgainstTheBackingRoot) {
  std::vector<std::string> paths;
  for (const std::string& n : SnyderLogs()) paths.push_back(LogPath(n));
  Result<HeatTable> raw = LoadHeat(paths, {});
  ASSERT_TRUE(raw.ok());
  const std::string kPrefix = "/grand/projects/radix-io/usr/snyder/dlio";
  clairfs::testing::TempDir backing;
  size_t dataset = 0;
  std::string left_out;
  for (const HeatRecord& r : raw->files) {
    if (r.path.rfind(kPrefix + "/", 0) != 0) continue;
    ++dataset;
    if (left_out.empty()) {
      left_out = r.path;  // this one is missing from the backing root
      continue;
    }
    clairfs::testing::WriteFile(backing.path() + r.path.substr(kPrefix.size()), "x");
  }
  ASSERT_GT(dataset, 20u);
  // A decoy: one file that would match under a deeper prefix.
  clairfs::testing::WriteFile(backing / "img_001_of_168.npz", "x");

  HeatOptions options;
  options.backing_root = backing.path();
  Result<HeatTable> mapped = LoadHeat(paths, options);
  ASSERT_TRUE(mapped.ok()) << mapped.status().message();
  EXPECT_EQ(mapped->prefix, kPrefix);
  EXPECT_TRUE(mapped->prefix_detected);
  EXPECT_EQ(mapped->files.size(), dataset - 1);
  for (const HeatRecord& r : mapped->files) EXPECT_EQ(r.path.rfind("train/img_", 0), 0u) << r.path;
  EXPECT_EQ(mapped->unmatched_paths, raw->files.size() - (dataset - 1));
  EXPECT_FALSE(mapped->unmatched_examples.empty());

  // The same with the prefix given (with a trailing slash), and with a wrong one.
  options.strip_prefix = kPrefix + "/";
  Result<HeatTable> given = LoadHeat(paths, options);
  ASSERT_TRUE(given.ok());
  EXPECT_FALSE(given->prefix_detected);
  EXPECT_EQ(given->files.size(), dataset - 1);
  options.strip_prefix = "/nowhere";
  Result<HeatTable> wrong = LoadHeat(paths, options);
  ASSERT_TRUE(wrong.ok());
  EXPECT_EQ(wrong->files.size(), 0u);
  EXPECT_EQ(wrong->unmatched_paths, raw->files.size());
}

TEST(Heat, StripPrefixWithoutBackingKeepsEveryPathBelowIt) {
  std::vector<std::string> paths;
  for (const std::string& n : SnyderLogs()) paths.push_back(LogPath(n));
  HeatOptions options;
  options.strip_prefix = "/grand/projects/radix-io/usr/snyder/dlio";
  Result<HeatTable> t = LoadHeat(paths, options);
  ASSERT_TRUE(t.ok());
  ASSERT_FALSE(t->files.empty());
  EXPECT_GT(t->unmatched_paths, 0u);  // the /home/... files
  for (const HeatRecord& r : t->files) EXPECT_EQ(r.path.rfind("train/", 0), 0u);
}

TEST(Heat, DetectStripPrefixPrefersMostMatchesThenShorterPrefix) {
  std::set<std::string> backing = {"train/a", "train/b", "val/c", "a"};
  auto exists = [&](const std::string& rel) { return backing.count(rel) > 0; };
  PrefixGuess g = DetectStripPrefix(
      {"/pfs/ds/train/a", "/pfs/ds/train/b", "/pfs/ds/val/c", "/pfs/ds/other/z"}, exists, 100);
  EXPECT_EQ(g.prefix, "/pfs/ds");
  EXPECT_EQ(g.matches, 3u);
  EXPECT_EQ(g.sampled, 4u);
  PrefixGuess none = DetectStripPrefix({"/x/y"}, exists, 100);
  EXPECT_EQ(none.matches, 0u);
  // Root-level layout: the prefix is "/" (empty).
  PrefixGuess root = DetectStripPrefix({"/train/a", "/train/b"}, exists, 100);
  EXPECT_EQ(root.prefix, "");
  EXPECT_EQ(root.matches, 2u);
}

TEST(Heat, SmallFilesReadOftenRankAboveBigFilesReadOnce) {
  darshan::JobDescription job;
  job.mounts = {{"lustre", "/lus"}};
  darshan::FileCounters small, big, unread;
  small.path = "/lus/ds/small";
  small.counters = {{"POSIX_OPENS", 10},
                    {"POSIX_READS", 10},
                    {"POSIX_BYTES_READ", 10 * 4096},
                    {"POSIX_MAX_BYTE_READ", 4095}};
  big.path = "/lus/ds/big";
  big.counters = {{"POSIX_OPENS", 1},
                  {"POSIX_READS", 256},
                  {"POSIX_BYTES_READ", 1 << 30},
                  {"POSIX_MAX_BYTE_READ", (1 << 30) - 1}};
  unread.path = "/lus/ds/unread";
  unread.counters = {{"POSIX_OPENS", 1}, {"POSIX_MAX_BYTE_READ", -1}};
  clairfs::testing::TempDir dir;
  for (int i = 0; i < 2; ++i) {  // two processes' logs of the same files
    Result<darshan::DarshanLog> log = darshan::BuildPosixLog(job, {small, big, unread});
    ASSERT_TRUE(log.ok());
    ASSERT_TRUE(
        darshan::WriteDarshanLogFile(dir / ("p" + std::to_string(i) + ".darshan"), *log).ok());
  }
  clairfs::testing::WriteFile(dir / "notes.txt", "not a log");
  Result<HeatTable> t = LoadHeat({dir.path()}, {});
  ASSERT_TRUE(t.ok()) << t.status().message();
  ASSERT_EQ(t->logs, 2u);
  ASSERT_EQ(t->files.size(), 3u);
  EXPECT_EQ(t->files[0].path, "/lus/ds/small");
  EXPECT_EQ(t->files[0].counters.reads, 20u);
  EXPECT_DOUBLE_EQ(t->files[0].rereads, 20.0);
  EXPECT_EQ(t->files[1].path, "/lus/ds/big");
  EXPECT_DOUBLE_EQ(t->files[1].rereads, 2.0);
  EXPECT_EQ(t->files[2].path, "/lus/ds/unread");
  EXPECT_EQ(t->files[2].heat_per_byte, 0.0);
}

TEST(Heat, CorruptLogsFailUnlessSkipped) {
  clairfs::testing::TempDir dir;
  clairfs::testing::WriteFile(dir / "bad.darshan", "3.41garbage");
  ASSERT_FALSE(SnyderLogs().empty()) << "no shared Darshan logs (../shared/data missing?)";
  Result<HeatTable> strict = LoadHeat({dir.path(), LogPath(SnyderLogs()[0])}, {});
  ASSERT_FALSE(strict.ok());
  EXPECT_NE(strict.status().message().find("bad.darshan: header"), std::string::npos);
  HeatOptions lenient;
  lenient.skip_bad_logs = true;
  Result<HeatTable> t = LoadHeat({dir.path(), LogPath(SnyderLogs()[0])}, lenient);
  ASSERT_TRUE(t.ok());
  EXPECT_EQ(t->logs, 1u);
  ASSERT_EQ(t->skipped_logs.size(), 1u);
  EXPECT_FALSE(LoadHeat({dir / "missing.darshan"}, {}).ok());
}

}  // namespace
}  // namespace clairfs
