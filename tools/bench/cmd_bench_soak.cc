// `clairfs bench soak`: does the daemon's memory or descriptor count grow under a long read load?
//
// Method. A synthetic image-folder dataset (--files of --sizes, 100 files per class directory,
// every byte verifiable from its path) is written to a work directory and mounted with clairfs
// (--capacity-percent of the dataset's bytes; read-through on; -o --mount-options), directly or
// over the PFS emulator (--emulator, with --open-latency). --readers threads then open, read
// whole and close the dataset's files, each reader pass after pass in its own shuffled order,
// until --opens opens are done, checking every byte (soak_readers.h). With --churn, another
// thread sends the daemon stage, pin, evict, plan set, ls, stats, status, unpin, plan clear and
// evict-all requests in a cycle meanwhile (soak_churn.h). Every --sample-seconds the daemon's
// VmRSS, RssAnon, RssFile, threads and open fds (/proc/PID/status and /proc/PID/fd) are sampled
// with the opens done so far (once more before the readers start and once after they end),
// written to --csv as they come. The summary (soak_summary.h): the figures at the start, at the
// end of the --warmup opens and at the end; growth after the warm-up in MiB per million opens, as
// the least-squares slope through the samples and as end minus warm-up; fds and threads, min
// and max.
//
// Output: a table (or one JSON object with --json, which also holds every sample); progress on a
// terminal. Exit codes: 0 every byte right and every open and admin request answered; 1 a wrong
// byte, a failed open or read, a failed admin request or a failed step; 2 usage. The mounts are
// always unmounted and the work directory removed unless --keep or --dir.
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <optional>
#include <thread>

#include <nlohmann/json.hpp>

#include "planner/base/units.h"
#include "planner/synthetic_dataset.h"
#include "tools/bench/bench_mounts.h"
#include "tools/bench/bench_support.h"
#include "tools/bench/cmd_bench.h"
#include "tools/bench/dataset_writer.h"
#include "tools/bench/soak_churn.h"
#include "tools/bench/soak_readers.h"
#include "tools/bench/soak_summary.h"
#include "tools/cli/cli.h"
#include "tools/cli/progress_meter.h"
#include "tools/cli/subprocess.h"

namespace clairfs::cli {
namespace {

constexpr const char* kBenchSoakCommand = "bench soak";
constexpr uint64_t kSoakFilesPerClass = 100;
constexpr double kMiB = 1024.0 * 1024.0;

struct SoakArgs {
  std::string dir;
  uint64_t files = 5000;
  std::string sizes = "fixed:16K";
  int readers = 8;
  uint64_t opens = 5'000'000;
  uint64_t warmup = 1'000'000;
  bool churn = false;
  int churn_interval_ms = 250;
  double sample_seconds = 2;
  uint64_t capacity_percent = 150;
  std::string mount_options;
  bool drop_pages = false;
  bool emulator = false;
  double open_latency_ms = 0;
  uint64_t seed = 1;
  std::string csv;
  std::string mounted;  // soak this mount instead of making one
  bool quick = false;
  bool keep = false;
  bool json = false;
};

using Clock = std::chrono::steady_clock;

// The progress line on a terminal: opens, rate, the daemon's memory and fds, ETA.
void DrawProgress(const SoakSample& s, uint64_t total_opens) {
  const double rate = s.seconds > 0 ? static_cast<double>(s.opens) / s.seconds : 0;
  const double eta =
      rate > 0 ? static_cast<double>(total_opens - std::min(total_opens, s.opens)) / rate : -1;
  fprintf(stderr,
          "\r\033[Ksoak: %llu/%llu opens, %.0f/s, daemon RSS %.1f MiB (anon %.1f), %llu "
          "fds, ETA %s",
          static_cast<unsigned long long>(s.opens), static_cast<unsigned long long>(total_opens),
          rate, static_cast<double>(s.daemon.rss_bytes) / kMiB,
          static_cast<double>(s.daemon.rss_anon_bytes) / kMiB,
          static_cast<unsigned long long>(s.daemon.open_fds),
          ProgressMeter::FormatDuration(eta).c_str());
}

// Samples the daemon while the readers run; writes each sample to the CSV file if one is open.
class Sampler {
 public:
  Sampler(pid_t pid, std::ofstream* csv, Clock::time_point start)
      : pid_(pid), csv_(csv), start_(start) {
    if (csv_ != nullptr) {
      *csv_ << "seconds,opens,rss_bytes,rss_anon_bytes,rss_file_bytes,threads,open_fds\n";
    }
  }
  Result<SoakSample> Take(uint64_t opens) {
    auto stats = ReadProcessStats(pid_);
    if (!stats.ok()) return stats.status().WithContext("sampling the daemon");
    SoakSample s{std::chrono::duration<double>(Clock::now() - start_).count(), opens, *stats};
    samples_.push_back(s);
    if (csv_ != nullptr) {
      *csv_ << s.seconds << "," << s.opens << "," << s.daemon.rss_bytes << ","
            << s.daemon.rss_anon_bytes << "," << s.daemon.rss_file_bytes << "," << s.daemon.threads
            << "," << s.daemon.open_fds << std::endl;
    }
    return s;
  }
  const std::vector<SoakSample>& samples() const { return samples_; }

 private:
  pid_t pid_;
  std::ofstream* csv_;
  Clock::time_point start_;
  std::vector<SoakSample> samples_;
};

// Mounts clairfs (over the emulator with --emulator) on the dataset; returns the mountpoint.
Result<std::string> MountDataset(const SoakArgs& args, const BenchWorkDir& work,
                                 const std::string& data, uint64_t dataset_bytes,
                                 MountStack* stack) {
  std::string backing = data;
  if (args.emulator) {
    auto pfs = work.Subdir("pfs");
    if (!pfs.ok()) return pfs.status();
    char latency[32];
    snprintf(latency, sizeof(latency), "%g", args.open_latency_ms);
    CLAIRFS_RETURN_IF_ERROR(stack->MountEmulator(data, *pfs, {"--open-latency", latency}));
    backing = *pfs;
  }
  auto mnt = work.Subdir("mnt");
  if (!mnt.ok()) return mnt.status();
  const uint64_t capacity =
      std::max<uint64_t>(1 << 20, dataset_bytes / 100 * args.capacity_percent);
  std::vector<std::string> flags = {"--cache", work.path() + "/cache", "--capacity",
                                    std::to_string(capacity)};
  if (!args.mount_options.empty()) flags.insert(flags.end(), {"-o", args.mount_options});
  CLAIRFS_RETURN_IF_ERROR(stack->MountClairfs(backing, *mnt, flags));
  return *mnt;
}

Status Measure(const SoakArgs& args, nlohmann::json* out) {
  if (args.warmup >= args.opens) {
    return Status::Invalid("--warmup (" + std::to_string(args.warmup) +
                           ") must be below --opens (" + std::to_string(args.opens) + ")");
  }
  auto sizes = ParseSyntheticSizes(args.sizes);
  if (!sizes.ok()) return sizes.status().WithContext("--sizes");
  if (sizes->kind == SyntheticSizes::Kind::kShards) {
    return Status::Invalid("--sizes: shards have no class directories; use imagenet or fixed:SIZE");
  }
  auto self = SelfExecutable();
  if (!self.ok()) return self.status();
  BenchWorkDir work;
  MountStack stack(*self);
  std::vector<SyntheticFile> files;
  std::string mnt = args.mounted;
  if (mnt.empty()) {
    CLAIRFS_RETURN_IF_ERROR(work.Init(args.dir, "soak", args.keep));
    auto data = work.Subdir("data");
    if (!data.ok()) return data.status();
    SyntheticSpec spec;
    spec.files = args.files;
    spec.classes = std::max<uint64_t>(1, args.files / kSoakFilesPerClass);
    spec.sizes = *sizes;
    spec.seed = args.seed;
    auto planned = PlanSyntheticDataset(spec);
    if (!planned.ok()) return planned.status();
    files = std::move(*planned);
    auto written = WriteSyntheticDataset(*data, files, SettledForMount());
    if (!written.ok()) return written.status();
    auto mounted = MountDataset(args, work, *data, TotalSize(files), &stack);
    if (!mounted.ok()) return mounted.status();
    mnt = *mounted;
  } else {
    // A mount someone else made (e.g. a daemon run in the foreground under heaptrack) of a
    // dataset of `bench make-dataset`: its files are what the mount lists.
    auto listed = ListRegularFiles(mnt);
    if (!listed.ok()) return listed.status();
    if (listed->empty()) return Status::Error(ENOENT, "no files under --mounted " + mnt);
    files = std::move(*listed);
  }
  const uint64_t dataset_bytes = TotalSize(files);
  std::ofstream csv;
  if (!args.csv.empty()) {
    csv.open(args.csv, std::ios::trunc);
    if (!csv) return Status::FromErrno(errno, "cannot write --csv " + args.csv);
  }
  auto status = MountStatus(mnt);
  if (!status.ok()) return status.status();
  const pid_t pid = (*status)["pid"];

  const bool progress = StderrIsTerminal() && !args.json;
  const Clock::time_point start = Clock::now();
  Sampler sampler(pid, csv.is_open() ? &csv : nullptr, start);
  auto first = sampler.Take(0);
  if (!first.ok()) return first.status();
  SoakReaders readers(mnt, files, {args.readers, args.opens, args.drop_pages, args.seed});
  std::optional<SoakChurn> churn;
  if (args.churn) churn.emplace(mnt, files, args.churn_interval_ms, args.seed);
  readers.Start();
  if (churn) churn->Start();
  Status sampling;
  auto next_sample = start;
  while (!readers.Done()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    if (Clock::now() < next_sample) continue;
    next_sample += std::chrono::duration_cast<Clock::duration>(
        std::chrono::duration<double>(args.sample_seconds));
    auto s = sampler.Take(readers.opens());
    if (!s.ok()) {
      sampling = s.status();  // the daemon is gone: stop, unmount, report it
      break;
    }
    if (progress) DrawProgress(*s, args.opens);
  }
  readers.Stop();
  readers.Join();
  if (churn) churn->Stop();
  if (progress) fprintf(stderr, "\r\033[K");
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  CLAIRFS_RETURN_IF_ERROR(sampling);
  auto last = sampler.Take(readers.opens());
  if (!last.ok()) return last.status();
  auto end_status = MountStatus(mnt);
  if (!end_status.ok()) return end_status.status();
  CLAIRFS_RETURN_IF_ERROR(stack.PopAll());

  const SoakSummary summary = SummarizeSoak(sampler.samples(), args.warmup);
  nlohmann::json samples = nlohmann::json::array();
  for (const SoakSample& s : sampler.samples()) samples.push_back(SoakSampleJson(s));
  *out = {{"files", files.size()},
          {"dataset_bytes", dataset_bytes},
          {"sizes", args.sizes},
          {"readers", args.readers},
          {"opens", readers.opens()},
          {"bytes_read", readers.bytes()},
          {"seconds", seconds},
          {"opens_per_second", seconds > 0 ? static_cast<double>(readers.opens()) / seconds : 0},
          {"wrong_bytes", readers.wrong_bytes()},
          {"failed_opens", readers.failed_opens()},
          {"errors", readers.errors()},
          {"churn", churn ? churn->Json() : nlohmann::json(nullptr)},
          {"churn_failed", churn ? churn->failed() : 0},
          {"emulator", args.emulator},
          {"drop_pages", args.drop_pages},
          {"capacity_percent", args.capacity_percent},
          {"mount_options", args.mount_options},
          {"daemon_pid", pid},
          {"passthrough", (*end_status)["passthrough"]},
          {"hits", (*end_status)["hits"]},
          {"misses", (*end_status)["misses"]},
          {"summary", SoakSummaryJson(summary)},
          {"sample_list", samples}};
  return Status::Ok();
}

std::string MiB(const nlohmann::json& bytes) {
  char text[32];
  snprintf(text, sizeof(text), "%.1f MiB", bytes.get<double>() / kMiB);
  return text;
}

void PrintSoakTable(const nlohmann::json& r) {
  const nlohmann::json& s = r["summary"];
  printf("soak: %llu opens of %llu files (%s) by %d readers in %.0f s (%.0f opens/s)%s\n",
         static_cast<unsigned long long>(r["opens"]), static_cast<unsigned long long>(r["files"]),
         std::string(r["sizes"]).c_str(), static_cast<int>(r["readers"]),
         static_cast<double>(r["seconds"]), static_cast<double>(r["opens_per_second"]),
         r["churn"].is_null() ? "" : ", with admin churn");
  printf("wrong bytes %llu, failed opens %llu", static_cast<unsigned long long>(r["wrong_bytes"]),
         static_cast<unsigned long long>(r["failed_opens"]));
  if (!r["churn"].is_null()) {
    printf(", churn: %llu cycles, %llu failed requests",
           static_cast<unsigned long long>(r["churn"]["cycles"]),
           static_cast<unsigned long long>(r["churn_failed"]));
  }
  printf("\n");
  for (const auto& e : r["errors"]) printf("  %s\n", std::string(e).c_str());
  if (!r["churn"].is_null()) {
    for (const auto& e : r["churn"]["errors"]) printf("  churn %s\n", std::string(e).c_str());
  }
  printf("%-26s %12s %12s %8s %8s\n", "daemon", "VmRSS", "RssAnon", "fds", "threads");
  const std::pair<const char*, const char*> rows[] = {
      {"start", "start"}, {"after the warm-up", "at_warmup"}, {"end", "end"}};
  for (const auto& [label, key] : rows) {
    const nlohmann::json& p = s[key];
    printf("%-26s %12s %12s %8llu %8llu\n", label, MiB(p["rss_bytes"]).c_str(),
           MiB(p["rss_anon_bytes"]).c_str(), static_cast<unsigned long long>(p["open_fds"]),
           static_cast<unsigned long long>(p["threads"]));
  }
  printf(
      "warm-up: %llu opens (first sample after it at %llu); fds %llu-%llu after it, "
      "%llu-%llu in all\n",
      static_cast<unsigned long long>(s["warmup_opens"]),
      static_cast<unsigned long long>(s["opens_at_warmup"]),
      static_cast<unsigned long long>(s["open_fds_after_warmup"]["min"]),
      static_cast<unsigned long long>(s["open_fds_after_warmup"]["max"]),
      static_cast<unsigned long long>(s["open_fds"]["min"]),
      static_cast<unsigned long long>(s["open_fds"]["max"]));
  const nlohmann::json& g = s["growth_after_warmup"];
  if (g.is_null()) {
    printf("growth after the warm-up: not measured (fewer than two samples after it)\n");
    return;
  }
  const auto per_million = [&](const char* key) { return g[key].get<double>() / kMiB; };
  printf(
      "growth after the warm-up, MiB per million opens: VmRSS %+.3f (fit) %+.3f (end - "
      "warm-up); RssAnon %+.3f (fit) %+.3f (end - warm-up)\n",
      per_million("rss_slope_bytes_per_million_opens"),
      per_million("rss_end_delta_bytes_per_million_opens"),
      per_million("rss_anon_slope_bytes_per_million_opens"),
      per_million("rss_anon_end_delta_bytes_per_million_opens"));
}

}  // namespace

void RegisterBenchSoak(CLI::App& bench) {
  auto args = std::make_shared<SoakArgs>();
  CLI::App* cmd = AddCommand(
      &bench, "soak",
      "Long read load on one mount, every byte checked, optionally with admin churn (stage, "
      "pin, evict, plan set/clear, ls, stats): samples the daemon's VmRSS, RssAnon, threads and "
      "open fds and reports their growth after a warm-up in MiB per million opens");
  cmd->add_option("--dir", args->dir, "Work directory (default: a temporary one, removed after)");
  cmd->add_option("--files", args->files,
                  "Dataset files, 100 per class directory (default 5000; "
                  "--quick 1000)")
      ->transform(Count(uint64_t{1}, uint64_t{10'000'000}));
  cmd->add_option("--sizes", args->sizes,
                  "File sizes as bench make-dataset takes them: fixed:SIZE or imagenet (default "
                  "fixed:16K)");
  cmd->add_option("--readers", args->readers, "Reader threads (default 8)")
      ->transform(Count(1, 256));
  cmd->add_option("--opens", args->opens, "Opens in all (default 5000000; --quick 100000)")
      ->transform(Count(uint64_t{2}, uint64_t{1'000'000'000'000}));
  cmd->add_option("--warmup", args->warmup,
                  "Opens before growth is measured (default 1000000; --quick 20000)")
      ->transform(Count(uint64_t{0}, uint64_t{1'000'000'000'000}));
  cmd->add_flag("--churn", args->churn,
                "Send admin requests meanwhile: stage, pin, evict, plan set, ls, stats, status, "
                "unpin, plan clear, evict all, in a cycle");
  cmd->add_option("--churn-interval", args->churn_interval_ms,
                  "Milliseconds between admin requests (default 250)")
      ->transform(Count(1, 600'000));
  cmd->add_option("--sample-seconds", args->sample_seconds,
                  "Seconds between samples of the daemon (default 2; --quick 0.5)")
      ->check(CLI::Range(0.05, 3600.0))
      ->type_name("SECONDS");
  cmd->add_option("--capacity-percent", args->capacity_percent,
                  "Cache capacity in percent of the dataset's bytes (default 150: everything "
                  "fits, evictions come from the churn; below 100 reads evict too)")
      ->transform(Count(uint64_t{1}, uint64_t{100'000}));
  cmd->add_option("--mount-options", args->mount_options,
                  "More options for clairfs mount, as its -o list (e.g. passthrough=off or "
                  "read_mode=splice)");
  cmd->add_flag("--drop-pages", args->drop_pages,
                "Drop each file's cached pages before closing it, so every read reaches the "
                "daemon (or, in passthrough, the copy) instead of the page cache");
  cmd->add_flag("--emulator", args->emulator, "Mount clairfs over the PFS emulator");
  cmd->add_option("--open-latency", args->open_latency_ms,
                  "With --emulator: its open latency, ms (default 0)")
      ->check(CLI::Range(0.0, 10000.0))
      ->type_name("MS");
  cmd->add_option("--seed", args->seed, "Dataset, reader order and churn seed (default 1)")
      ->transform(Count(uint64_t{0}, UINT64_MAX));
  cmd->add_option("--csv", args->csv, "Write every sample to FILE as it is taken");
  cmd->add_option("--mounted", args->mounted,
                  "Soak this clairfs mount of a `bench make-dataset` dataset instead of making "
                  "one (e.g. a daemon run with mount --foreground under heaptrack); --files, "
                  "--sizes, --capacity-percent, --mount-options and --emulator do not apply")
      ->type_name("MOUNTPOINT");
  cmd->add_flag("--quick", args->quick, "1000 files, 100000 opens, a warm-up of 20000");
  cmd->add_flag("--keep", args->keep, "Keep the temporary work directory");
  cmd->add_flag("--json", args->json, "Print one JSON object (with every sample); no progress");
  cmd->footer(
      "Every byte read is checked against the content its path must have. The daemon's VmRSS, "
      "RssAnon (its heap and other private memory), RssFile, threads and open fds are sampled "
      "from /proc/PID every --sample-seconds (--csv writes each sample as it is taken). Growth "
      "is measured after the --warmup opens, while the caches that fill with the first reads "
      "(the index's block cache, the node cache, per-file counters) are full: the slope of the "
      "least-squares line through the samples and the end minus the warm-up, in MiB per million "
      "opens. Exit codes: 0 every byte right and every open and admin request answered; 1 a "
      "wrong byte, a failed open or read, a failed admin request, or a step failed; 2 usage.");
  cmd->callback([args, cmd]() {
    SoakArgs a = *args;
    if (a.quick) {
      if (cmd->count("--files") == 0) a.files = 1000;
      if (cmd->count("--opens") == 0) a.opens = 100'000;
      if (cmd->count("--warmup") == 0) a.warmup = 20'000;
      if (cmd->count("--sample-seconds") == 0) a.sample_seconds = 0.5;
    }
    nlohmann::json result;
    const Status measured = Measure(a, &result);
    if (int rc = ReportBench(kBenchSoakCommand, measured, result, a.json, PrintSoakTable);
        rc != kExitOk) {
      return SetExitCode(rc);
    }
    const uint64_t wrong = result["wrong_bytes"], failed = result["failed_opens"],
                   churn_failed = result["churn_failed"];
    if (wrong > 0 || failed > 0 || churn_failed > 0) {
      return SetExitCode(
          Fail(kBenchSoakCommand,
               Status::Error(EILSEQ, std::to_string(wrong) + " wrong bytes, " +
                                         std::to_string(failed) + " failed opens, " +
                                         std::to_string(churn_failed) + " failed admin requests")));
    }
    SetExitCode(kExitOk);
  });
}

}  // namespace clairfs::cli
