// `clairfs bench {epoch,smallfile,bigfile,manifest} --quick --json`: each instrument runs end to
// end and its output satisfies invariants that hold whatever the machine's speed (timings are
// never checked): every byte expected was read, a cache of 150% of the dataset serves epochs
// >= 2 without touching the backing store, LRU never beats Belady, the daemon's RSS and fd count
// are reported and the fd count is small, and nothing stays mounted or on disk afterwards.
// Each run gets its own TMPDIR so leftovers are attributable.
#include <dirent.h>

#include <fstream>
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

TEST(BenchQuick, SmallfileReadsEveryByteInBothModes) {
  nlohmann::json j = RunBench({"smallfile"});
  ASSERT_TRUE(j.contains("modes")) << j.dump();
  EXPECT_EQ(j["modes"].size(), 2u);
  for (const auto& m : j["modes"]) {
    EXPECT_EQ(m["staged_files"], j["files"]);
    for (const auto& row : m["read"]) {
      EXPECT_EQ(row["direct_bytes"], j["bytes_expected"]);
      EXPECT_EQ(row["mount_bytes"], j["bytes_expected"]);
      EXPECT_GT(row["ratio"].get<double>(), 0);
    }
  }
  // After staging, the second mode's mount serves everything from the cache.
  EXPECT_EQ(j["modes"][1]["bytes_from_backing"], 0);
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

// Passthrough on and off: every read is byte-counted by the bench (it fails otherwise) and two
// reads through a fresh mount are verified byte for byte; with passthrough on, every open of a
// staged file is a passthrough open and no READ reaches the daemon; with it off, the first reads
// do.
TEST(BenchQuick, PassthroughReadsEveryByteAndOnModeSendsNoRead) {
  nlohmann::json j = RunBench({"passthrough"});
  ASSERT_TRUE(j.contains("modes")) << j.dump();
  ASSERT_EQ(j["modes"].size(), 2u);
  EXPECT_EQ(j["big_size"], uint64_t{128} << 20);
  const std::pair<std::string, uint64_t> files[] = {{"big", 1}, {"small", j["files"]}};
  for (const auto& m : j["modes"]) {
    const bool on = m["passthrough"] == "on";
    for (const auto& [ds, count] : files) {
      SCOPED_TRACE(std::string(m["passthrough"]) + " " + ds);
      const auto& v = m[ds]["verify"];
      EXPECT_EQ(v["verified_bytes"], v["verified_bytes_expected"]);
      EXPECT_GT(v["verified_bytes"].get<uint64_t>(), 0u);
      for (const std::string when : {"fresh", "warm"}) {
        const auto& p = m[ds][when];
        EXPECT_GT(p["ratio"].get<double>(), 0) << when;
        if (on) {
          EXPECT_EQ(p["read_requests_max"], 0) << when;
          EXPECT_EQ(p["passthrough_opens"], count) << when;
          EXPECT_EQ(v[when + "_read_requests"], 0) << when;
          EXPECT_EQ(v[when + "_passthrough_opens"], count) << when;
        } else {
          EXPECT_EQ(p["passthrough_opens"], 0) << when;
          EXPECT_EQ(v[when + "_passthrough_opens"], 0) << when;
        }
      }
      if (!on) {
        EXPECT_GT(m[ds]["fresh"]["read_requests"].get<uint64_t>(), 0u);
        EXPECT_GT(v["fresh_read_requests"].get<uint64_t>(), 0u);
      }
    }
  }
  for (const char* k :
       {"read_ns_1_thread", "read_ns_2_threads", "passthrough_open_ns", "release_ns"}) {
    EXPECT_GT(j["counters"][k].get<double>(), 0) << k;
  }
}

}  // namespace
}  // namespace clairfs
