// `clairfs bench heat`: read bandwidth of one pass over a dataset of many small and a few large
// files on the emulated PFS, with the cache (10% of the bytes by default) filled beforehand by
// Darshan heat per byte (`stage --hot --fit`), by the largest files first, or not at all; after
// tf-Darshan's case study (staging hot small files to a faster tier).
//
// Method. A synthetic dataset (--small-files x --small-size flat files and --large-files x
// --large-size shards, content verifiable from each path) is served by `clairfs pfs-emu` with
// --open-latency and --bandwidth. Warm-up: one clairfs mount (no read-through) over the emulator
// reads every small file --small-reads times and every large file once, and `clairfs stats
// --darshan` writes that run's Darshan log. Then, --repeat times, for each configuration a fresh
// cache is mounted with --capacity (no read-through, so the pass itself stages nothing) and:
//   none     nothing is staged
//   largest  `clairfs stage --from-file` of the files by size, largest first, each taken if it
//            still fits the capacity (the same accounting as --fit: ContentStore::EstimateAlloc)
//   heat     `clairfs darshan import` of the warm-up log, then `clairfs stage --hot --fit`
// Staging is waited for and not timed. The timed pass reads every file once through the mount
// with --threads readers in one fixed shuffled order (SplitMix64 Fisher-Yates, seed 42; the same
// for every configuration and repetition); bandwidth = dataset bytes / pass seconds. Medians over
// the repetitions (the order of the configurations rotates with each repetition); ratios against
// no staging and heat against largest-first.
// Output: a table, or one JSON object with --json. Exit codes: 0 measured, 1 failed (a wrong
// byte count, a failed command), 2 usage. Every mount is unmounted on every path and the work
// directory removed unless --keep or --dir.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <set>

#include <nlohmann/json.hpp>

#include "cache/content_store.h"
#include "planner/base/units.h"
#include "planner/synthetic_dataset.h"
#include "tools/bench/bench_mounts.h"
#include "tools/bench/bench_support.h"
#include "tools/bench/cmd_bench.h"
#include "tools/bench/dataset_writer.h"
#include "tools/bench/read_workload.h"
#include "tools/cli/cli.h"
#include "tools/cli/control_client.h"
#include "tools/cli/subprocess.h"

namespace clairfs::cli {
namespace {

constexpr const char* kBenchHeatCommand = "bench heat";
const char* const kConfigs[] = {"none", "largest", "heat"};

struct HeatBenchArgs {
  std::string dir;
  uint64_t small_files = 2000;
  std::string small_size = "64K";
  uint64_t large_files = 8;
  std::string large_size = "16M";
  int small_reads = 3;
  double open_latency_ms = 5;
  double bandwidth_mbps = 200;
  int threads = 4;
  double capacity_percent = 10;
  int repeat = 3;
  bool quick = false;
  bool keep = false;
  bool json = false;
};

// The files in one fixed pseudo-random order (SplitMix64 Fisher-Yates): the same on any machine.
std::vector<SyntheticFile> Shuffled(std::vector<SyntheticFile> files, uint64_t seed) {
  SeededShuffle(&files, seed);
  return files;
}

// Largest first, each file taken if it still fits `capacity` (ties by path).
std::vector<SyntheticFile> LargestThatFit(std::vector<SyntheticFile> files, uint64_t capacity) {
  std::sort(files.begin(), files.end(), [](const SyntheticFile& a, const SyntheticFile& b) {
    return a.size != b.size ? a.size > b.size : a.relpath < b.relpath;
  });
  std::vector<SyntheticFile> chosen;
  uint64_t left = capacity;
  for (const SyntheticFile& f : files) {
    const uint64_t need = ContentStore::EstimateAlloc(f.size);
    if (need > left) continue;
    left -= need;
    chosen.push_back(f);
  }
  return chosen;
}

Result<SyntheticSizes> Sizes(const std::string& text) {
  auto sizes = ParseSyntheticSizes(text);
  if (!sizes.ok()) return Status::Invalid(sizes.status().message());
  return *sizes;
}

struct ConfigRun {
  double seconds = 0;
  nlohmann::json facts;  // staged files, hits, ... of this run
};

// Mounts a fresh cache, stages per `config`, reads every file once in `order`; unmounts.
Result<ConfigRun> RunConfig(const std::string& config, const HeatBenchArgs& args, MountStack* stack,
                            const std::string& pfs, const std::string& mnt, const std::string& work,
                            const std::string& log, const std::vector<SyntheticFile>& order,
                            uint64_t capacity, uint64_t expected,
                            const std::set<std::string>& large) {
  const std::string cache = work + "/cache-" + config;
  std::error_code ec;
  std::filesystem::remove_all(cache, ec);
  if (ec) return Status::Error(ec.value(), "remove " + cache);
  const std::string& self = stack->self();
  CLAIRFS_RETURN_IF_ERROR(stack->MountClairfs(
      pfs, mnt, {"--cache", cache, "--capacity", std::to_string(capacity), "--no-read-through"}));
  if (config == "largest") {
    const std::string list = work + "/largest.txt";
    std::ofstream out(list);
    for (const SyntheticFile& f : LargestThatFit(order, capacity)) out << f.relpath << "\n";
    out.close();
    if (!out) return Status::Error(EIO, "writing " + list);
    CLAIRFS_RETURN_IF_ERROR(RunClairfsCommand(self, {"stage", mnt, "--from-file", list, "--wait"}));
  } else if (config == "heat") {
    CLAIRFS_RETURN_IF_ERROR(RunClairfsCommand(self, {"darshan", "import", mnt, log}));
    CLAIRFS_RETURN_IF_ERROR(RunClairfsCommand(self, {"stage", mnt, "--hot", "--fit", "--wait"}));
  }
  CLAIRFS_RETURN_IF_ERROR(WaitStagingIdle(mnt));
  auto client = ControlClient::Connect(mnt);
  if (!client.ok()) return client.status();
  auto staged = client->Call(
      {{"op", "ls"}, {"path", ""}, {"recursive", true}, {"filter", "staged"}, {"limit", 1000000}});
  if (!staged.ok()) return staged.status();
  uint64_t staged_small = 0, staged_large = 0, staged_bytes = 0;
  for (const auto& e : (*staged)["entries"]) {
    (large.count(e.value("path", "")) ? staged_large : staged_small) += 1;
    staged_bytes += e.value("size", uint64_t{0});
  }
  auto before = MountStatus(mnt);
  if (!before.ok()) return before.status();

  auto pass = ReadFiles(mnt, order, args.threads, /*verify=*/args.quick);
  if (!pass.ok()) return pass.status().WithContext(config + " pass");
  if (pass->bytes != expected) {
    return Status::Error(EILSEQ, config + " pass read " + std::to_string(pass->bytes) +
                                     " bytes, expected " + std::to_string(expected));
  }
  auto after = MountStatus(mnt);
  if (!after.ok()) return after.status();
  ConfigRun run;
  run.seconds = pass->seconds;
  run.facts = {{"staged_files", staged_small + staged_large},
               {"staged_small", staged_small},
               {"staged_large", staged_large},
               {"staged_bytes", staged_bytes},
               {"used_bytes", (*before)["used_bytes"]},
               {"eviction", (*before).value("eviction", "")},
               {"bytes_read", pass->bytes},
               {"hits", (*after)["hits"]},
               {"misses", (*after)["misses"]},
               {"evictions", (*after)["evictions"]},
               {"bytes_from_cache", (*after)["bytes_from_cache"]},
               {"bytes_from_backing", (*after)["bytes_from_backing"]}};
  CLAIRFS_RETURN_IF_ERROR(stack->Pop());
  std::filesystem::remove_all(cache, ec);
  return run;
}

Status Measure(const HeatBenchArgs& args, nlohmann::json* out) {
  auto self = SelfExecutable();
  if (!self.ok()) return self.status();
  auto small_size = ParseSize(args.small_size);
  if (!small_size.ok()) return small_size.status().WithContext("--small-size");

  BenchWorkDir work;
  CLAIRFS_RETURN_IF_ERROR(work.Init(args.dir, "heat", args.keep));
  auto data = work.Subdir("data");
  if (!data.ok()) return data.status();
  auto pfs = work.Subdir("pfs");
  if (!pfs.ok()) return pfs.status();
  auto mnt = work.Subdir("mnt");
  if (!mnt.ok()) return mnt.status();

  SyntheticSpec small_spec;
  small_spec.layout = SyntheticLayout::kFlat;
  small_spec.files = args.small_files;
  small_spec.sizes.kind = SyntheticSizes::Kind::kFixed;
  small_spec.sizes.fixed_bytes = *small_size;
  auto small = PlanSyntheticDataset(small_spec);
  if (!small.ok()) return small.status();
  SyntheticSpec large_spec;
  large_spec.layout = SyntheticLayout::kShards;
  auto large_sizes = Sizes("shards:" + std::to_string(args.large_files) + "x" + args.large_size);
  if (!large_sizes.ok()) return large_sizes.status().WithContext("--large-size");
  large_spec.sizes = *large_sizes;
  auto large = PlanSyntheticDataset(large_spec);
  if (!large.ok()) return large.status();
  std::vector<SyntheticFile> files = *small;
  files.insert(files.end(), large->begin(), large->end());
  auto written = WriteSyntheticDataset(*data, files, SettledForMount());
  if (!written.ok()) return written.status();
  const uint64_t expected = TotalSize(files);
  const uint64_t capacity =
      static_cast<uint64_t>(static_cast<double>(expected) * args.capacity_percent / 100);
  std::set<std::string> large_paths;
  for (const SyntheticFile& f : *large) large_paths.insert(f.relpath);

  MountStack stack(*self);
  char latency[32], bandwidth[32];
  snprintf(latency, sizeof(latency), "%g", args.open_latency_ms);
  snprintf(bandwidth, sizeof(bandwidth), "%g", args.bandwidth_mbps);
  CLAIRFS_RETURN_IF_ERROR(
      stack.MountEmulator(*data, *pfs, {"--open-latency", latency, "--bandwidth", bandwidth}));

  // Warm-up: the earlier run whose Darshan log gives the heat.
  const std::string log = work.path() + "/warmup.darshan";
  CLAIRFS_RETURN_IF_ERROR(stack.MountClairfs(
      *pfs, *mnt, {"--cache", work.path() + "/cache-warmup", "--no-read-through"}));
  for (int r = 0; r < args.small_reads; ++r) {
    auto read = ReadFiles(*mnt, *small, args.threads, /*verify=*/r == 0);
    if (!read.ok()) return read.status().WithContext("warm-up");
  }
  auto read_large = ReadFiles(*mnt, *large, args.threads, /*verify=*/true);
  if (!read_large.ok()) return read_large.status().WithContext("warm-up");
  CLAIRFS_RETURN_IF_ERROR(RunClairfsCommand(*self, {"stats", *mnt, "--darshan", log}));
  CLAIRFS_RETURN_IF_ERROR(stack.Pop());
  std::error_code ec;
  std::filesystem::remove_all(work.path() + "/cache-warmup", ec);

  const std::vector<SyntheticFile> order = Shuffled(files, 42);
  std::map<std::string, std::vector<double>> seconds;
  std::map<std::string, nlohmann::json> facts;
  for (int r = 0; r < args.repeat; ++r) {
    // The order of the configurations rotates with each repetition, so that none of them always
    // runs first (on a cold machine) or last.
    for (int k = 0; k < 3; ++k) {
      const char* config = kConfigs[(k + r) % 3];
      auto run = RunConfig(config, args, &stack, *pfs, *mnt, work.path(), log, order, capacity,
                           expected, large_paths);
      if (!run.ok()) return run.status();
      seconds[config].push_back(run->seconds);
      facts[config] = run->facts;  // the same every repetition (staging is deterministic)
    }
  }
  CLAIRFS_RETURN_IF_ERROR(stack.PopAll());

  nlohmann::json configs = nlohmann::json::array();
  std::map<std::string, double> rate;
  for (const char* config : kConfigs) {
    const double median = Median(seconds[config]);
    rate[config] = median > 0 ? static_cast<double>(expected) / median : 0;
    nlohmann::json c = facts[config];
    c["name"] = config;
    c["seconds"] = seconds[config];
    c["median_seconds"] = median;
    c["bytes_per_second"] = rate[config];
    configs.push_back(c);
  }
  auto ratio = [&](const char* a, const char* b) { return rate[b] > 0 ? rate[a] / rate[b] : 0; };
  *out = {{"small_files", small->size()},
          {"small_size", *small_size},
          {"large_files", large->size()},
          {"large_size", large->front().size},
          {"bytes_expected", expected},
          {"capacity_bytes", capacity},
          {"capacity_percent", args.capacity_percent},
          {"open_latency_ms", args.open_latency_ms},
          {"bandwidth_mbps", args.bandwidth_mbps},
          {"threads", args.threads},
          {"small_reads", args.small_reads},
          {"repeat", args.repeat},
          {"configs", configs},
          {"ratios",
           {{"heat_vs_none", ratio("heat", "none")},
            {"largest_vs_none", ratio("largest", "none")},
            {"heat_vs_largest", ratio("heat", "largest")}}}};
  return Status::Ok();
}

void PrintHeatTable(const nlohmann::json& r) {
  printf(
      "heat: %llu x %s + %llu x %s files (%s) on pfs-emu (open %g ms, %g MB/s); capacity %s "
      "(%g%%); warm-up read small files %d times; one pass, %d readers, shuffled, median of %d\n",
      static_cast<unsigned long long>(r["small_files"]),
      FormatBytes(r["small_size"].get<uint64_t>()).c_str(),
      static_cast<unsigned long long>(r["large_files"]),
      FormatBytes(r["large_size"].get<uint64_t>()).c_str(),
      FormatBytes(r["bytes_expected"].get<uint64_t>()).c_str(), r["open_latency_ms"].get<double>(),
      r["bandwidth_mbps"].get<double>(), FormatBytes(r["capacity_bytes"].get<uint64_t>()).c_str(),
      r["capacity_percent"].get<double>(), r["small_reads"].get<int>(), r["threads"].get<int>(),
      r["repeat"].get<int>());
  printf("%-9s %14s %12s %6s %9s %12s %8s\n", "staging", "staged (s/l)", "staged", "hits",
         "seconds", "read", "vs none");
  double none = 0;
  for (const auto& c : r["configs"]) {
    if (c["name"] == "none") none = c["bytes_per_second"].get<double>();
  }
  for (const auto& c : r["configs"]) {
    char staged[32];
    snprintf(staged, sizeof(staged), "%llu/%llu",
             static_cast<unsigned long long>(c["staged_small"].get<uint64_t>()),
             static_cast<unsigned long long>(c["staged_large"].get<uint64_t>()));
    const double rate = c["bytes_per_second"].get<double>();
    printf("%-9s %14s %12s %6llu %9.3f %12s %7.2fx\n", c["name"].get<std::string>().c_str(), staged,
           FormatBytes(c["staged_bytes"].get<uint64_t>()).c_str(),
           static_cast<unsigned long long>(c["hits"].get<uint64_t>()),
           c["median_seconds"].get<double>(), FormatRate(rate).c_str(),
           none > 0 ? rate / none : 0.0);
  }
  printf("heat vs largest first: %.2fx\n", r["ratios"]["heat_vs_largest"].get<double>());
}

}  // namespace

void RegisterBenchHeat(CLI::App& bench) {
  auto args = std::make_shared<HeatBenchArgs>();
  CLI::App* cmd = AddCommand(
      &bench, "heat",
      "Read bandwidth of one pass over many small and a few large files on the emulated PFS, "
      "with the cache (10% of the bytes) staged by Darshan heat per byte, by largest files "
      "first, or not at all (after tf-Darshan)");
  cmd->add_option("--dir", args->dir, "Work directory (default: a temporary one, removed after)");
  cmd->add_option("--small-files", args->small_files, "Small files (default 2000; --quick 300)")
      ->transform(Count(uint64_t{1}, uint64_t{10000000}));
  cmd->add_option("--small-size", args->small_size, "Size of each small file (default 64K)");
  cmd->add_option("--large-files", args->large_files, "Large files (default 8; --quick 4)")
      ->transform(Count(uint64_t{1}, uint64_t{10000}));
  cmd->add_option("--large-size", args->large_size,
                  "Size of each large file (default 16M; --quick 512K)");
  cmd->add_option("--small-reads", args->small_reads,
                  "Times the warm-up run reads each small file (large: once; default 3)")
      ->transform(Count(1, 100));
  cmd->add_option("--open-latency", args->open_latency_ms, "Emulated open latency, ms (default 5)")
      ->check(CLI::Range(0.0, 10000.0));
  cmd->add_option("--bandwidth", args->bandwidth_mbps, "Emulated bandwidth, MB/s (default 200)")
      ->check(CLI::Range(1.0, 1e6));
  cmd->add_option("--threads", args->threads, "Reader threads of the timed pass (default 4)")
      ->transform(Count(1, 256));
  cmd->add_option("--capacity-percent", args->capacity_percent,
                  "Cache capacity as a percentage of the dataset bytes (default 10)")
      ->check(CLI::Range(0.1, 100.0));
  cmd->add_option("--repeat", args->repeat, "Repetitions; medians are reported (default 3)")
      ->transform(Count(1, 100));
  cmd->add_flag("--quick", args->quick,
                "Small and fast, content verified: 300 x 16K + 4 x 512K files, one repetition");
  cmd->add_flag("--keep", args->keep, "Keep the temporary work directory");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, cmd]() {
    HeatBenchArgs a = *args;
    if (a.quick) {
      if (cmd->count("--small-files") == 0) a.small_files = 300;
      if (cmd->count("--small-size") == 0) a.small_size = "16K";
      if (cmd->count("--large-files") == 0) a.large_files = 4;
      if (cmd->count("--large-size") == 0) a.large_size = "512K";
      if (cmd->count("--repeat") == 0) a.repeat = 1;
      if (cmd->count("--open-latency") == 0) a.open_latency_ms = 1;
    }
    nlohmann::json result;
    const Status measured = Measure(a, &result);
    SetExitCode(ReportBench(kBenchHeatCommand, measured, result, a.json, PrintHeatTable));
  });
}

}  // namespace clairfs::cli
