// `clairfs bench {epoch,smallfile,bigfile,manifest,heat} --quick --json`: each instrument runs end
// to end and its output satisfies invariants that hold whatever the machine's speed (timings are
// never checked): every byte expected was read, a cache of 150% of the dataset serves epochs
// >= 2 without touching the backing store, LRU never beats Belady, the daemon's RSS and fd count
// are reported and the fd count is small, heat staging fills the capacity with the hot small
// files and largest-first with a large one, and nothing stays mounted or on disk afterwards.
// Each run gets its own TMPDIR so leftovers are attributable.
#include <dirent.h>

#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace clairfs {
namespace {

// Fuse mounts whose mountpoint lies below `dir` (from /proc/self/mountinfo).
int MountsBelow(const std::string& dir) {
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  int count = 0;
  while (std::getline(in, line)) {
    if (line.find(" " + dir + "/") != std::string::npos) ++count;
  }
  return count;
}

int EntriesIn(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return -1;
  int n = 0;
  while (dirent* e = readdir(d)) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") ++n;
  }
  closedir(d);
  return n;
}

// Runs `clairfs bench ARGS --quick --json` with TMPDIR inside a fresh temp dir and checks that
// it succeeded and left nothing mounted or on disk.
nlohmann::json RunBench(const std::vector<std::string>& args) {
  testing::TempDir tmp;
  std::vector<std::string> argv = {testing::ClairfsBin(), "bench"};
  argv.insert(argv.end(), args.begin(), args.end());
  argv.insert(argv.end(), {"--quick", "--json"});
  testing::CommandResult r = testing::Run(argv, 300, {"TMPDIR=" + tmp.path()});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(MountsBelow(tmp.path()), 0) << "a bench left a mount behind";
  EXPECT_EQ(EntriesIn(tmp.path()), 0) << "a bench left its work directory behind";
  if (r.exit_code != 0) return nlohmann::json::object();
  return nlohmann::json::parse(r.out);
}

TEST(BenchQuick, EpochReadsEverythingAndLruNeverBeatsBelady) {
  nlohmann::json j = RunBench({"epoch"});
  ASSERT_TRUE(j.contains("configs")) << j.dump();
  bool saw_150 = false, saw_absent = false;
  for (const auto& c : j["configs"]) {
    if (!c["implemented"]) {
      saw_absent = true;
      EXPECT_FALSE(c.contains("epochs")) << "an absent configuration must not report figures";
      continue;
    }
    ASSERT_EQ(c["epochs"].size(), static_cast<size_t>(j["epochs"]));
    for (const auto& e : c["epochs"]) {
      EXPECT_EQ(e["bytes"], e["bytes_expected"]) << c["name"] << " epoch " << e["epoch"];
    }
    if (c["capacity_percent"].is_null()) continue;
    EXPECT_LE(c["hits"].get<uint64_t>(), c["belady_hits"].get<uint64_t>()) << c["name"];
    if (c["capacity_percent"] == 150) {
      saw_150 = true;
      for (size_t i = 1; i < c["epochs"].size(); ++i) {
        EXPECT_EQ(c["epochs"][i]["backing_bytes"], 0) << "epoch " << i + 1 << " at 150%";
        EXPECT_EQ(c["epochs"][i]["misses"], 0) << "epoch " << i + 1 << " at 150%";
      }
    }
  }
  EXPECT_TRUE(saw_150);
  EXPECT_TRUE(saw_absent);
}

TEST(BenchQuick, SmallfileReadsEveryByteInEveryMode) {
  nlohmann::json j = RunBench({"smallfile"});
  ASSERT_TRUE(j.contains("modes")) << j.dump();
  EXPECT_EQ(j["modes"].size(), 3u);
  for (const auto& m : j["modes"]) {
    EXPECT_EQ(m["staged_files"], j["files"]);
    for (const auto& row : m["read"]) {
      EXPECT_EQ(row["direct_bytes"], j["bytes_expected"]);
      EXPECT_EQ(row["mount_bytes"], j["bytes_expected"]);
      EXPECT_GT(row["ratio"].get<double>(), 0);
    }
  }
  // After staging, the later modes' mounts serve everything from the cache.
  EXPECT_EQ(j["modes"][1]["bytes_from_backing"], 0);
  EXPECT_EQ(j["modes"][2]["bytes_from_backing"], 0);
}

TEST(BenchQuick, BigfileReadsTheWholeFileEveryWay) {
  nlohmann::json j = RunBench({"bigfile", "--size", "64M"});
  ASSERT_TRUE(j.contains("sequential")) << j.dump();
  EXPECT_EQ(j["size"], uint64_t{64} << 20);
  for (const char* k : {"sequential", "random", "fresh_mount_sequential"}) {
    EXPECT_EQ(j[k]["bytes"], j["bytes_expected"]) << k;
    EXPECT_GT(j[k]["ratio"].get<double>(), 0) << k;
  }
  EXPECT_EQ(j["fresh_bytes_from_backing"], 0);
}

TEST(BenchQuick, ManifestReportsRssAndFewFds) {
  nlohmann::json j = RunBench({"manifest", "--entries", "20000"});
  ASSERT_TRUE(j.contains("after_stat")) << j.dump();
  for (const char* when : {"after_mount", "after_stat", "after_reuse_mount"}) {
    EXPECT_EQ(j[when]["dataset_files"], 20000) << when;
    EXPECT_GT(j[when]["rss_bytes"].get<uint64_t>(), 0u) << when;
    EXPECT_GT(j[when]["open_fds"].get<uint64_t>(), 0u) << when;
    EXPECT_LT(j[when]["open_fds"].get<uint64_t>(), 200u) << when;
  }
  EXPECT_GT(j["mount_seconds"].get<double>(), 0);
  EXPECT_GT(j["reuse_mount_seconds"].get<double>(), 0);
}

TEST(BenchQuick, HeatStagesHotSmallFilesAndEveryPassReadsEverything) {
  nlohmann::json j = RunBench({"heat"});
  ASSERT_TRUE(j.contains("configs")) << j.dump();
  const uint64_t capacity = j["capacity_bytes"];
  ASSERT_EQ(j["configs"].size(), 3u);
  std::map<std::string, nlohmann::json> by_name;
  for (const auto& c : j["configs"]) {
    by_name[c["name"]] = c;
    EXPECT_EQ(c["bytes_read"], j["bytes_expected"]) << c["name"];
    EXPECT_LE(c["used_bytes"].get<uint64_t>(), capacity) << c["name"];
    EXPECT_GT(c["median_seconds"].get<double>(), 0) << c["name"];
    // Read once each, no read-through: every staged file is one hit, nothing is evicted.
    EXPECT_EQ(c["hits"], c["staged_files"]) << c["name"];
    EXPECT_EQ(c["evictions"], 0) << c["name"];
    EXPECT_EQ(c["hits"].get<uint64_t>() + c["misses"].get<uint64_t>(),
              j["small_files"].get<uint64_t>() + j["large_files"].get<uint64_t>())
        << c["name"];
  }
  EXPECT_EQ(by_name["none"]["staged_files"], 0);
  EXPECT_EQ(by_name["none"]["bytes_from_cache"], 0);
  // The warm-up read small files more often: heat stages small files only, and more of them.
  EXPECT_EQ(by_name["heat"]["staged_large"], 0);
  EXPECT_GT(by_name["heat"]["staged_small"].get<uint64_t>(),
            by_name["largest"]["staged_small"].get<uint64_t>());
  EXPECT_EQ(by_name["heat"]["eviction"], "heat");
  EXPECT_EQ(by_name["largest"]["staged_large"], 1);
  EXPECT_EQ(by_name["largest"]["eviction"], "lru");
  for (const char* r : {"heat_vs_none", "largest_vs_none", "heat_vs_largest"}) {
    EXPECT_GT(j["ratios"][r].get<double>(), 0) << r;
  }
}

}  // namespace
}  // namespace clairfs
