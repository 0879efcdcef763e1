// `clairfs bench pfs-emu-overhead`: what the PFS emulator itself costs, and whether its delays
// overlap. Both are needed before any emulated-PFS figure can be trusted:
//   1. overhead: a synthetic tree (small ImageNet-like files and one big file) is read directly
//      and through `clairfs pfs-emu` with every delay at zero, page cache of the backing files
//      warm; the ratio (direct time / emulator time, 1.0 = free) is the ceiling any
//      clairfs-over-emulator measurement can reach.
//   2. overlap: the emulator is remounted with --open-latency L; K files are opened at the same
//      moment from K threads; the wall time should be about L, not K x L.
// Content read through the emulator is verified byte for byte before anything is timed.
// Output: a table on stdout, or one JSON object with --json. Exit codes: 0 measured, 1 failed,
// 2 bad arguments. Mounts are always unmounted, also on failure.
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "planner/base/units.h"
#include "planner/synthetic_dataset.h"
#include "tools/bench/bench_mounts.h"
#include "tools/bench/bench_support.h"
#include "tools/bench/cmd_bench.h"
#include "tools/bench/dataset_writer.h"
#include "tools/bench/read_workload.h"
#include "tools/cli/cli.h"
#include "tools/cli/subprocess.h"

namespace clairfs::cli {
namespace {

constexpr const char* kBenchPfsEmuOverheadCommand = "bench pfs-emu-overhead";

struct OverheadArgs {
  std::string dir;  // work directory; a fresh one under $TMPDIR if empty
  uint64_t files = 2000;
  std::string big = "256M";
  int threads = 1;
  int opens = 64;
  double open_latency_ms = 2;
  int repeat = 3;
  bool json = false;
};

struct PairTiming {
  double direct = 0;  // median seconds
  double emulated = 0;
  uint64_t bytes = 0;
};

// Times `files` read directly from `backing` and through `mount`, alternating, `repeat` times.
Result<PairTiming> TimePair(const std::string& backing, const std::string& mount,
                            const std::vector<SyntheticFile>& files, const OverheadArgs& args) {
  std::vector<double> direct, emulated;
  PairTiming timing;
  for (int r = 0; r < args.repeat; ++r) {
    auto d = ReadFiles(backing, files, args.threads, false);
    if (!d.ok()) return d.status();
    auto e = ReadFiles(mount, files, args.threads, false);
    if (!e.ok()) return e.status();
    direct.push_back(d->seconds);
    emulated.push_back(e->seconds);
    timing.bytes = d->bytes;
  }
  timing.direct = Median(direct);
  timing.emulated = Median(emulated);
  return timing;
}

Status Measure(const OverheadArgs& args, nlohmann::json* out) {
  BenchWorkDir work;
  CLAIRFS_RETURN_IF_ERROR(work.Init(args.dir, "emu", /*keep=*/false));
  auto self = SelfExecutable();
  if (!self.ok()) return self.status();
  MountStack mounts(*self);
  const std::string data = work.path() + "/data";
  const std::string mnt = work.path() + "/mnt";
  std::error_code ec;
  std::filesystem::create_directories(mnt, ec);
  if (ec) return Status::FromErrno(ec.value(), "mkdir " + mnt);

  SyntheticSpec small_spec;
  small_spec.files = args.files;
  small_spec.classes = std::min<uint64_t>(10, args.files);
  auto small = PlanSyntheticDataset(small_spec);
  if (!small.ok()) return small.status();
  SyntheticSpec big_spec;
  big_spec.layout = SyntheticLayout::kShards;
  auto big_sizes = ParseSyntheticSizes("shards:1x" + args.big);
  if (!big_sizes.ok()) return big_sizes.status();
  big_spec.sizes = *big_sizes;
  auto big = PlanSyntheticDataset(big_spec);
  if (!big.ok()) return big.status();
  std::vector<SyntheticFile> all = *small;
  all.insert(all.end(), big->begin(), big->end());
  auto written = WriteSyntheticDataset(data, all, SettledForMount());
  if (!written.ok()) return written.status();

  // Warm the backing files' page cache so both sides read from memory.
  auto warm = ReadFiles(data, all, 2, false);
  if (!warm.ok()) return warm.status();

  PairTiming small_timing, big_timing;
  const uint64_t opens = std::min<uint64_t>(static_cast<uint64_t>(args.opens), small->size());
  std::vector<std::string> burst_paths;
  for (uint64_t i = 0; i < opens; ++i) burst_paths.push_back(mnt + "/" + (*small)[i].relpath);
  // Median wall time of `repeat` (at least 5) bursts of concurrent opens of burst_paths.
  auto time_bursts = [&](std::vector<double>* walls, std::vector<double>* slowest) -> Status {
    for (int r = 0; r < std::max(args.repeat, 5); ++r) {
      auto burst = TimeConcurrentOpens(burst_paths);
      if (!burst.ok()) return burst.status();
      walls->push_back(burst->wall_seconds);
      slowest->push_back(burst->slowest_seconds);
    }
    return Status::Ok();
  };
  std::vector<double> zero_walls, zero_slowest, walls, slowest;
  {
    CLAIRFS_RETURN_IF_ERROR(mounts.MountEmulator(data, mnt, {}));
    auto verified = ReadFiles(mnt, all, 2, /*verify=*/true);
    if (!verified.ok()) return verified.status().WithContext("verification through the emulator");
    auto s = TimePair(data, mnt, *small, args);
    if (!s.ok()) return s.status();
    small_timing = *s;
    auto b = TimePair(data, mnt, *big, args);
    if (!b.ok()) return b.status();
    big_timing = *b;
    // The same burst without delay: what K threads opening at once cost on this machine.
    CLAIRFS_RETURN_IF_ERROR(time_bursts(&zero_walls, &zero_slowest));
    CLAIRFS_RETURN_IF_ERROR(mounts.Pop());
  }
  {
    char latency[32];
    snprintf(latency, sizeof(latency), "%g", args.open_latency_ms);
    CLAIRFS_RETURN_IF_ERROR(mounts.MountEmulator(data, mnt, {"--open-latency", latency}));
    CLAIRFS_RETURN_IF_ERROR(time_bursts(&walls, &slowest));
    CLAIRFS_RETURN_IF_ERROR(mounts.Pop());
  }

  auto ratio = [](const PairTiming& t) { return t.emulated > 0 ? t.direct / t.emulated : 0; };
  *out = {
      {"small_files", small->size()},
      {"small_bytes", small_timing.bytes},
      {"small_direct_seconds", small_timing.direct},
      {"small_emulated_seconds", small_timing.emulated},
      {"small_ratio", ratio(small_timing)},
      {"big_bytes", big_timing.bytes},
      {"big_direct_seconds", big_timing.direct},
      {"big_emulated_seconds", big_timing.emulated},
      {"big_ratio", ratio(big_timing)},
      {"threads", args.threads},
      {"repeat", args.repeat},
      {"opens", opens},
      {"open_latency_ms", args.open_latency_ms},
      {"open_burst_wall_ms_median", Median(walls) * 1e3},
      {"open_burst_slowest_ms_median", Median(slowest) * 1e3},
      {"open_burst_zero_latency_wall_ms_median", Median(zero_walls) * 1e3},
      {"open_serial_ms", static_cast<double>(opens) * args.open_latency_ms},
  };
  return Status::Ok();
}

void PrintPfsEmuOverheadTable(const nlohmann::json& r) {
  auto row = [&](const char* name, const char* prefix) {
    std::string p(prefix);
    double direct = r[p + "_direct_seconds"], emulated = r[p + "_emulated_seconds"];
    uint64_t bytes = r[p + "_bytes"];
    printf("%-28s %10.3f s %10s   %10.3f s %10s   %5.2fx\n", name, direct,
           FormatRate(bytes / direct).c_str(), emulated, FormatRate(bytes / emulated).c_str(),
           static_cast<double>(r[p + "_ratio"]));
  };
  printf(
      "PFS emulator overhead, all delays 0, backing page cache warm, %d thread(s), median of %d\n",
      static_cast<int>(r["threads"]), static_cast<int>(r["repeat"]));
  printf("%-28s %23s   %23s   %s\n", "workload", "direct", "through pfs-emu", "speed");
  std::string small_name =
      std::to_string(static_cast<uint64_t>(r["small_files"])) + " imagenet-like files";
  row(small_name.c_str(), "small");
  std::string big_name = "1 file of " + FormatBytes(r["big_bytes"]);
  row(big_name.c_str(), "big");
  printf(
      "overlap: %llu concurrent opens at %g ms: wall %.1f ms (slowest single open %.1f ms); "
      "the same burst at 0 ms: %.1f ms; serial would be %.0f ms\n",
      static_cast<unsigned long long>(r["opens"]), static_cast<double>(r["open_latency_ms"]),
      static_cast<double>(r["open_burst_wall_ms_median"]),
      static_cast<double>(r["open_burst_slowest_ms_median"]),
      static_cast<double>(r["open_burst_zero_latency_wall_ms_median"]),
      static_cast<double>(r["open_serial_ms"]));
}

}  // namespace

void RegisterBenchPfsEmuOverhead(CLI::App& bench) {
  auto args = std::make_shared<OverheadArgs>();
  CLI::App* cmd = AddCommand(
      &bench, "pfs-emu-overhead",
      "Measure the PFS emulator's own cost (reading a tree directly vs through `clairfs pfs-emu` "
      "with zero delays) and its latency overlap (concurrent opens at --open-latency)");
  cmd->add_option("--dir", args->dir, "Work directory (default: a temporary one, removed after)");
  cmd->add_option("--files", args->files, "Small files (imagenet sizes, default 2000)")
      ->transform(Count(1, kMaxSyntheticFiles));
  cmd->add_option("--big", args->big, "Size of the big file (default 256M)");
  cmd->add_option("--threads", args->threads, "Reader threads (default 1)")
      ->transform(Count(1, 256));
  cmd->add_option("--opens", args->opens, "Concurrent opens in the overlap test (default 64)")
      ->transform(Count(1, 4096));
  cmd->add_option("--open-latency", args->open_latency_ms,
                  "Open latency for the overlap test, ms (default 2)")
      ->check(CLI::Range(0.0, 10000.0));
  cmd->add_option("--repeat", args->repeat, "Repetitions; medians are reported (default 3)")
      ->transform(Count(1, 100));
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args]() {
    nlohmann::json result;
    Status status = Measure(*args, &result);
    if (!status.ok()) {
      return SetExitCode(Fail(kBenchPfsEmuOverheadCommand, status));
    }
    if (args->json) {
      printf("%s\n", result.dump().c_str());
    } else {
      PrintPfsEmuOverheadTable(result);
    }
    SetExitCode(kExitOk);
  });
}

}  // namespace clairfs::cli
