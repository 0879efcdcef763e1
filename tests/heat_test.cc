// Integration tests of Darshan heat on real mounts: `clairfs darshan import` (online and offline,
// from the shared DLIO logs and from crafted logs), `clairfs ls` showing heat, `clairfs stage
// --hot --fit`, and heat-aware eviction under read pressure. Every mount is unmounted by its
// guard.
#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cache/content_store.h"
#include "planner/darshan/darshan_writer.h"
#include "planner/heat.h"
#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

using nlohmann::json;

constexpr char kDlioPrefix[] = "/grand/projects/radix-io/usr/snyder/dlio";

// The 12 per-process logs of the DLIO run in the shared data.
std::vector<std::string> DlioLogs() {
  std::vector<std::string> logs;
  for (const std::string& f : ListFilesRecursive(SharedDir() + "/data/darshan")) {
    if (f.rfind("snyder_python3_", 0) == 0 && f.size() > 8 &&
        f.substr(f.size() - 8) == ".darshan") {
      logs.push_back(SharedDir() + "/data/darshan/" + f);
    }
  }
  return logs;
}

// path -> heat_per_byte of every file with heat, from `clairfs ls -r --json`.
std::map<std::string, double> HeatListed(const std::string& mnt) {
  CommandResult r = Cli({"ls", mnt, "-r", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::map<std::string, double> heat;
  for (const auto& e : ParseJson(r.out).value("entries", json::array())) {
    if (e["heat_per_byte"].is_number()) heat[e["path"]] = e["heat_per_byte"].get<double>();
  }
  return heat;
}

std::set<std::string> Staged(const std::string& mnt) {
  CommandResult r = Cli({"ls", mnt, "--staged", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> staged;
  for (const auto& e : ParseJson(r.out).value("entries", json::array())) staged.insert(e["path"]);
  return staged;
}

// A Darshan log (as `clairfs stats --darshan` would write it) in which each file under `root`
// was opened once and read `reads[path]` times whole.
void WriteLog(const std::string& out, const std::string& root,
              const std::map<std::string, std::pair<uint64_t, int>>& size_and_reads) {
  darshan::JobDescription job;
  job.exe = "crafted-by-heat-test";
  job.mounts = {{"lustre", root}};
  std::vector<darshan::FileCounters> files;
  for (const auto& [path, sr] : size_and_reads) {
    darshan::FileCounters fc;
    fc.path = root + "/" + path;
    fc.counters["POSIX_OPENS"] = 1;
    fc.counters["POSIX_READS"] = sr.second;
    fc.counters["POSIX_BYTES_READ"] = static_cast<int64_t>(sr.first) * sr.second;
    fc.counters["POSIX_MAX_BYTE_READ"] = static_cast<int64_t>(sr.first) - 1;
    files.push_back(fc);
  }
  auto log = darshan::BuildPosixLog(job, files);
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_TRUE(darshan::WriteDarshanLogFile(out, *log).ok());
}

class HeatTest : public MountDirsTest {
 protected:
  // A backing tree holding every dataset file the DLIO logs name (below kDlioPrefix) plus a few
  // files the logs never mention. Returns the dataset paths the logs name.
  std::vector<std::string> MakeDlioTree() {
    HeatOptions options;
    options.strip_prefix = kDlioPrefix;
    auto table = LoadHeat(DlioLogs(), options);
    EXPECT_TRUE(table.ok());
    std::vector<std::string> paths;
    if (!table.ok()) return paths;
    for (size_t i = 0; i < table->files.size(); ++i) {
      paths.push_back(table->files[i].path);
      WriteFile(backing_ + "/" + table->files[i].path, RandomBytes(1000 + 37 * i, i));
    }
    for (int i = 0; i < 3; ++i) WriteFile(backing_ + "/other/cold" + std::to_string(i), "x");
    return paths;
  }
};

TEST_F(HeatTest, ImportOfTheSharedDlioLogsStoresHeatPerDatasetPath) {
  const std::vector<std::string> logs = DlioLogs();
  ASSERT_EQ(logs.size(), 12u);
  const std::vector<std::string> dataset = MakeDlioTree();
  ASSERT_GT(dataset.size(), 20u);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  EXPECT_EQ(m.Status().value("eviction", ""), "lru");  // no heat yet

  std::vector<std::string> import = {"darshan", "import", mnt_};
  import.insert(import.end(), logs.begin(), logs.end());
  import.push_back("--json");
  CommandResult r = Cli(import);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json report = ParseJson(r.out);
  EXPECT_EQ(report["logs"].value("read", 0u), 12u);
  EXPECT_EQ(report.value("files_matched", 0u), dataset.size());
  EXPECT_EQ(report.value("prefix", ""), kDlioPrefix);  // detected against the manifest
  EXPECT_TRUE(report.value("prefix_detected", false));
  EXPECT_GT(report["unmatched"].value("count", 0u), 0u);  // the /home/... files of the job
  EXPECT_FALSE(report["unmatched"]["examples"].empty());
  EXPECT_GT(report.value("special_names", 0u), 0u);  // <STDIN> and such

  // The stored heat equals `darshan top`'s for every dataset file, and only for those.
  HeatOptions options;
  options.strip_prefix = kDlioPrefix;
  auto top = LoadHeat(logs, options);
  ASSERT_TRUE(top.ok());
  std::map<std::string, double> listed = HeatListed(mnt_);
  EXPECT_EQ(listed.size(), dataset.size());
  for (const HeatRecord& rec : top->files) {
    ASSERT_TRUE(listed.count(rec.path)) << rec.path;
    EXPECT_NEAR(listed[rec.path], rec.heat_per_byte, 1e-9) << rec.path;
  }
  json status = m.Status();
  EXPECT_EQ(status.value("eviction", ""), "heat");
  EXPECT_EQ(status["heat"].value("files", 0u), dataset.size());
  EXPECT_EQ(status["heat"].value("logs", 0u), 12u);
  CommandResult ls = Cli({"ls", mnt_, "train"});
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_NE(ls.out.find(" 5.40  train/img_042_of_168.npz"), std::string::npos) << ls.out;

  // Importing the same logs again adds nothing (they are recognised), so heat is unchanged.
  r = Cli(import);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  report = ParseJson(r.out);
  EXPECT_EQ(report["logs"].value("already_imported", 0u), 12u);
  EXPECT_EQ(report["logs"].value("read", 1u), 0u);
  EXPECT_EQ(HeatListed(mnt_), listed);

  // --replace with one log: only that log's files keep heat, from that log alone.
  r = Cli(
      {"darshan", "import", mnt_, logs[0], "--replace", "--strip-prefix", kDlioPrefix, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  report = ParseJson(r.out);
  EXPECT_EQ(report.value("replace", false), true);
  EXPECT_FALSE(report.value("prefix_detected", true));
  auto one = LoadHeat({logs[0]}, options);
  ASSERT_TRUE(one.ok());
  std::map<std::string, double> replaced = HeatListed(mnt_);
  EXPECT_EQ(replaced.size(), one->files.size());
  for (const HeatRecord& rec : one->files) EXPECT_NEAR(replaced[rec.path], rec.heat_per_byte, 1e-9);
  EXPECT_EQ(m.Status()["heat"].value("logs", 0u), 1u);

  // Logs of another job match nothing here: refused, nothing stored.
  r = Cli(
      {"darshan", "import", mnt_, SharedDir() + "/data/darshan/mpi-io-test-x86_64-3.4.6.darshan"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("none of the"), std::string::npos) << r.err;
  EXPECT_EQ(HeatListed(mnt_), replaced);
  ASSERT_EQ(m.Umount().exit_code, 0);
}

TEST_F(HeatTest, StageHotFitStagesExactlyTheHottestFilesThatFit) {
  // Twelve files of mixed sizes with mixed heat, four without heat.
  std::map<std::string, std::pair<uint64_t, int>> heat_files;  // path -> (size, reads)
  for (int i = 0; i < 12; ++i) {
    const uint64_t size = 3000 + 2500 * static_cast<uint64_t>(i % 5);
    const std::string path = "d" + std::to_string(i % 3) + "/f" + std::to_string(i) + ".bin";
    WriteFile(backing_ + "/" + path, RandomBytes(size, i));
    heat_files[path] = {size, 1 + (i * 7) % 5};
  }
  for (int i = 0; i < 4; ++i) WriteFile(backing_ + "/cold/c" + std::to_string(i), "cold");
  const std::string log = dir_ / "crafted.darshan";
  WriteLog(log, "/pfs/data", heat_files);

  // The expected selection: hottest per byte first, each taken if it fits what is left.
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [path, sr] : heat_files) {
    HeatCounters c;
    c.bytes_read = sr.first * sr.second;
    c.reads = sr.second;
    c.opens = 1;
    c.max_byte_read = static_cast<int64_t>(sr.first) - 1;
    ranked.emplace_back(HeatPerByte(c), path);
  }
  std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  const uint64_t capacity = 40 * 1024;
  std::set<std::string> expected;
  uint64_t left = capacity;
  for (const auto& [h, path] : ranked) {
    const uint64_t need = ContentStore::EstimateAlloc(heat_files[path].first);
    if (need > left) continue;
    left -= need;
    expected.insert(path);
  }
  ASSERT_GT(expected.size(), 2u);
  ASSERT_LT(expected.size(), heat_files.size());

  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--capacity", std::to_string(capacity), "--no-read-through"}).exit_code, 0);
  CommandResult r = Cli({"stage", mnt_, "--hot", "--fit"});
  EXPECT_EQ(r.exit_code, 1);  // no heat yet
  EXPECT_NE(r.err.find("no heat"), std::string::npos) << r.err;
  EXPECT_EQ(Cli({"stage", mnt_, "--fit"}).exit_code, 2);  // --fit needs --hot
  r = Cli({"darshan", "import", mnt_, log, "--strip-prefix", "/pfs/data"});
  ASSERT_EQ(r.exit_code, 0) << r.err;

  r = Cli({"stage", mnt_, "--hot", "--fit", "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json progress = ParseJson(r.out);
  EXPECT_EQ(progress.value("files_done", 0u), expected.size());
  EXPECT_EQ(progress.value("files_failed", 1u), 0u);
  EXPECT_EQ(progress.value("files_skipped", 1u), 0u);
  EXPECT_EQ(progress["hot"].value("hot_files", 0u), heat_files.size());
  EXPECT_EQ(progress["hot"].value("not_hot", 0u), 4u);
  EXPECT_EQ(progress["hot"].value("no_room", 0u), heat_files.size() - expected.size());
  EXPECT_EQ(Staged(mnt_), expected);
  json status = m.Status();
  EXPECT_EQ(status.value("evictions", 1u), 0u);  // --fit never evicts
  EXPECT_LE(status.value("used_bytes", capacity + 1), capacity);

  // Again: copies take less than the reservation counted for them, so a colder file may fit in
  // what is left now; still nothing is evicted.
  r = Cli({"stage", mnt_, "--hot", "--fit", "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> again = Staged(mnt_);
  for (const std::string& path : expected) EXPECT_TRUE(again.count(path)) << path;
  EXPECT_EQ(m.Status().value("evictions", 1u), 0u);
  expected = again;

  // Without --fit the colder hot files may push out only colder copies: the hottest stay.
  r = Cli({"stage", mnt_, "--hot", "--wait", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> after = Staged(mnt_);
  EXPECT_TRUE(after.count(ranked[0].second)) << ranked[0].second;
  for (const std::string& path : after) EXPECT_TRUE(heat_files.count(path)) << path;
  // A copy goes out only for a strictly hotter one (which may in turn go out for a hotter one),
  // so the hottest copy that went out is colder than the hottest that came in.
  std::map<std::string, double> heat_of;
  for (const auto& [h, path] : ranked) heat_of[path] = h;
  double hottest_out = -1, hottest_in = -1;
  for (const std::string& path : expected) {
    if (!after.count(path)) hottest_out = std::max(hottest_out, heat_of[path]);
  }
  for (const std::string& path : after) {
    if (!expected.count(path)) hottest_in = std::max(hottest_in, heat_of[path]);
  }
  if (hottest_out >= 0) {
    EXPECT_LT(hottest_out, hottest_in);
  }
  EXPECT_LE(m.Status().value("used_bytes", capacity + 1), capacity);
  ASSERT_EQ(m.Umount().exit_code, 0);
}

TEST_F(HeatTest, EvictionUnderReadPressureKeepsHotFiles) {
  std::map<std::string, std::pair<uint64_t, int>> hot;
  for (int i = 0; i < 4; ++i) {
    const std::string path = "hot/h" + std::to_string(i);
    WriteFile(backing_ + "/" + path, RandomBytes(4000, 100 + i));
    hot[path] = {4000, 4};
  }
  std::vector<std::string> cold;
  for (int i = 0; i < 12; ++i) {
    cold.push_back("cold/c" + std::to_string(i));
    WriteFile(backing_ + "/" + cold.back(), RandomBytes(4000, 200 + i));
  }
  const std::string log = dir_ / "hot.darshan";
  WriteLog(log, "/pfs/data", hot);
  // Room for the four hot files as --fit counts them (one 4 KiB block each, as they take) and
  // for three cold copies besides.
  const uint64_t capacity = (4 + 3) * 4096;
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--capacity", std::to_string(capacity)}).exit_code, 0);
  ASSERT_EQ(Cli({"darshan", "import", mnt_, log, "--strip-prefix", "/pfs/data"}).exit_code, 0);
  CommandResult r = Cli({"stage", mnt_, "--hot", "--fit", "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::set<std::string> hot_paths;
  for (const auto& [path, sr] : hot) hot_paths.insert(path);
  ASSERT_EQ(Staged(mnt_), hot_paths);

  // Read pressure: every cold file is read (twice), read-through tries to stage each.
  for (int pass = 0; pass < 2; ++pass) {
    for (const std::string& path : cold) {
      EXPECT_EQ(ReadFile(mnt_ + "/" + path).size(), 4000u) << path;
      ASSERT_TRUE(m.WaitStagingIdle());
    }
  }
  for (const auto& [path, sr] : hot) {
    EXPECT_EQ(ReadFile(mnt_ + "/" + path), RandomBytes(4000, 100 + (path.back() - '0')));
  }
  std::set<std::string> staged = Staged(mnt_);
  for (const std::string& path : hot_paths) EXPECT_TRUE(staged.count(path)) << path;
  size_t cold_staged = staged.size() - hot_paths.size();
  EXPECT_GE(cold_staged, 1u);  // cold files still use the room the hot ones leave
  EXPECT_LE(cold_staged, 3u);
  json status = m.Status();
  EXPECT_GT(status.value("evictions", 0u), 0u);  // cold files evicted each other (LRU)
  EXPECT_EQ(status["staging"].value("failures", 1u), 0u);
  ASSERT_EQ(m.Umount().exit_code, 0);
}

TEST_F(HeatTest, APlanSetOnTheMountTakesOverFromHeatUntilCleared) {
  std::map<std::string, std::pair<uint64_t, int>> hot;
  for (int i = 0; i < 6; ++i) {
    const std::string path = "f" + std::to_string(i);
    WriteFile(backing_ + "/" + path, RandomBytes(3000, i));
    hot[path] = {3000, 2};
  }
  const std::string log = dir_ / "hot.darshan";
  WriteLog(log, "/pfs/data", hot);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--no-read-through"}).exit_code, 0);
  ASSERT_EQ(Cli({"darshan", "import", mnt_, log, "--strip-prefix", "/pfs/data"}).exit_code, 0);
  EXPECT_EQ(m.Status().value("eviction", ""), "heat");
  CommandResult set = Cli(
      {"plan", "set", mnt_, "--plan", "torch-distributed:seed=5,world=1", "--layout", "sorted"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  // The heat policy steps aside and the plan evicts (as on a mount started with the plan).
  EXPECT_EQ(m.Status().value("eviction", ""), "plan");
  CommandResult r = Cli({"stage", mnt_, "--hot", "--fit"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("a plan is active"), std::string::npos) << r.err;
  ASSERT_EQ(Cli({"plan", "clear", mnt_}).exit_code, 0);
  EXPECT_EQ(m.Status().value("eviction", ""), "heat");
  r = Cli({"stage", mnt_, "--hot", "--fit", "--wait"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Staged(mnt_).size(), hot.size());
  ASSERT_EQ(m.Umount().exit_code, 0);
}

TEST_F(HeatTest, OfflineImportIntoAnUnmountedCacheAndRefusedWhileMounted) {
  const std::vector<std::string> logs = DlioLogs();
  const std::vector<std::string> dataset = MakeDlioTree();
  std::vector<std::string> import = {"darshan",   "import", "--cache", cache_,
                                     "--backing", backing_, "--json"};
  import.insert(import.end(), logs.begin(), logs.end());
  CommandResult r = Cli(import);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out).value("files_matched", 0u), dataset.size());

  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  json status = m.Status();
  EXPECT_EQ(status.value("eviction", ""), "heat");
  EXPECT_EQ(status["heat"].value("files", 0u), dataset.size());
  EXPECT_EQ(HeatListed(mnt_).size(), dataset.size());

  // The daemon holds the cache: the offline import is refused, naming the way that works.
  r = Cli(import);
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("in use"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("import through the mountpoint"), std::string::npos) << r.err;
  ASSERT_EQ(m.Umount().exit_code, 0);

  // Unmounted again: a second offline import finds every log imported already.
  r = Cli(import);
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out)["logs"].value("already_imported", 0u), logs.size());
}

// `clairfs simulate --heat`: the heat policy keeps the files a Darshan log says are hot where
// LRU, on a cyclic order larger than the cache, keeps nothing; with --stage-hot they hit from the
// first epoch on. Ten one-block files, three hot, a cache of four blocks, sequential order.
TEST_F(HeatTest, SimulateHeatKeepsTheHotFilesWhereLruKeepsNothing) {
  std::map<std::string, std::pair<uint64_t, int>> hot;
  for (int i = 0; i < 10; ++i) {
    const std::string path = "c/f" + std::to_string(i) + ".jpg";
    WriteFile(backing_ + "/" + path, RandomBytes(4000, 300 + i));
    if (i == 2 || i == 5 || i == 8) hot[path] = {4000, 4};
  }
  const std::string log = dir_ / "hot.darshan";
  WriteLog(log, "/pfs/data", hot);
  const std::vector<std::string> base = {
      "simulate",   "--backing", backing_, "--plan", "sequential:epochs=2",
      "--capacity", "16K",       "--heat", log,      "--json"};
  CommandResult r = Cli(base);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  json out = ParseJson(r.out);
  EXPECT_EQ(out["heat"]["files_with_heat"], 3);
  EXPECT_EQ(out["heat"]["prefix"], "/pfs/data");
  const json& heat_rows = out["policies"]["heat"];
  ASSERT_EQ(heat_rows.size(), 2u);
  EXPECT_EQ(heat_rows[0]["hits"], 0);
  EXPECT_EQ(heat_rows[1]["hits"], 3);
  EXPECT_EQ(heat_rows[1]["backing_bytes"], 7 * 4096);
  EXPECT_EQ(out["policies"]["lru"][1]["hits"], 0);

  std::vector<std::string> staged = base;
  staged.push_back("--stage-hot");
  r = Cli(staged);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  out = ParseJson(r.out);
  EXPECT_EQ(out["policies"]["heat"][0]["hits"], 3);
  EXPECT_EQ(out["policies"]["heat"][0]["backing_bytes"], (7 + 3) * 4096);

  // Usage errors: heat without logs, --stage-hot without --heat.
  r = Cli({"simulate", "--backing", backing_, "--plan", "sequential", "--capacity", "16K",
           "--policy", "heat"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--heat"), std::string::npos) << r.err;
  r = Cli({"simulate", "--backing", backing_, "--plan", "sequential", "--capacity", "16K",
           "--stage-hot"});
  EXPECT_EQ(r.exit_code, 2);
  // An unreadable log is an operation failure naming it.
  const std::string missing = dir_ / "missing.darshan";
  r = Cli({"simulate", "--backing", backing_, "--plan", "sequential", "--capacity", "16K", "--heat",
           missing});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(missing), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clairfs::testing
