// `clairfs bench epoch`: training epochs in torch DistributedSampler order over the emulated PFS
// directly, clairfs read-through (LRU), clairfs with the readers' plan and clairfs with Darshan
// heat at several cache sizes over the same emulator, and the local copy of the dataset directly
// (the limit), with the demand-MIN (Belady) hit ratio of each run's recorded trace at the same
// cache size as the yardstick for the measured hit ratio.
//
// Method: a synthetic image-folder dataset (imagenet-like sizes) is written locally, its pages
// dropped (so it starts on disk, as a node's local copy would, and every reader fills the page
// cache by reading), and served by `clairfs pfs-emu` with --open-latency and --bandwidth. The read
// order of rank --rank comes from the planner: Plan("torch-distributed:seed=S,world=R") over the
// dataset's imagefolder layout, per absolute epoch 0, 1, ... Each epoch is read by --threads
// threads taking the next sample in order (open, read to the end in 1 MiB reads, close, then
// --work-ms of simulated compute); the order in which the threads call open(2) is recorded (the
// trace of opens reaching the daemon). For clairfs, each policy and cache size gets a fresh cache
// directory and capacity = PERCENT of the dataset's bytes rounded up to 4 KiB blocks (LRU, plan and
// heat run in turn per size, so they run under the same machine load); between epochs, staging is
// waited for (not timed) and the mount is remounted (--manifest reuse) so that every epoch starts
// without the mount's kernel page cache, as on a node whose memory cannot hold the dataset. The
// plan configuration mounts with `--plan torch-distributed:seed=S,world=R,ranks=K-K,epochs=E,
// start_epoch=e` for epoch e, so each remount resumes the plan at the epoch the readers are in.
// The heat configuration is the next job of a user whose earlier job ran on an LRU mount: after
// each LRU epoch, `clairfs stats MNT --darshan` writes that mount's Darshan log (as a job epilog
// would); the heat run at the same cache size mounts a fresh cache, imports those logs with
// `clairfs darshan import MNT DIR` and runs `clairfs stage MNT --hot --fit --wait` (a prolog:
// timed and reported on its own, not in epoch 1), then reads the same epochs on mounts without a
// plan, which evict by the imported heat.
// The no-open rows (--no-open-capacities, docs/NO-OPEN.md) mount with the plan and
// --open-mode no-open: "plan-no-open" remounts between epochs as the rows above (each epoch
// starts without the kernel's pages of the files, every file's first READ reaches the daemon),
// "plan-no-open-kept" stays mounted for every epoch (the kernel's pages are kept between epochs,
// as on a node whose memory holds the dataset: what the daemon does not see is not counted);
// after each of its epochs the local copy is read in the same order (local_seconds_after) after
// the same idle pause the epoch had before it (pause_seconds), and its target is judged against
// that, since this machine's speed drifts within minutes. The local-direct row runs last, its
// pages dropped again first, so its first epoch reads from disk.
// Counters (hits, misses, bytes from the backing store, bytes staged, and the part staged after
// the readers finished, untimed) are per epoch. Demand-MIN runs on the recorded opens of the same
// run, all epochs in sequence.
// Then the target ratios and, with --quick, the invariants are computed (bench_epoch_report.h).
//
// Output: a table, or one JSON object with --json; --csv FILE writes one row per configuration
// and epoch; --chart FILE.png writes FILE.dat and a gnuplot chart of epoch time per
// configuration. Exit codes 0; 1 failed, or with --quick an invariant does not hold; 2 usage.
// Mounts are always unmounted; the work directory is removed unless --keep or --dir.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "planner/base/units.h"
#include "planner/belady.h"
#include "planner/file_tree.h"
#include "planner/layout.h"
#include "planner/plan.h"
#include "planner/plan_spec.h"
#include "planner/synthetic_dataset.h"
#include "tools/bench/bench_epoch_report.h"
#include "tools/bench/bench_mounts.h"
#include "tools/bench/bench_support.h"
#include "tools/bench/cmd_bench.h"
#include "tools/bench/dataset_writer.h"
#include "tools/bench/page_cache_probe.h"
#include "tools/cli/cli.h"
#include "tools/cli/subprocess.h"

namespace clairfs::cli {
namespace {

constexpr const char* kBenchEpochCommand = "bench epoch";
constexpr uint64_t kBlockBytes = 4096;

struct EpochArgs {
  std::string dir;
  uint64_t files = 2000;
  int epochs = 5;
  int threads = 4;
  uint32_t world = 1;
  uint32_t rank = 0;
  uint64_t seed = 42;
  double work_ms = 0;
  std::string capacities = "25,50,100,150";
  std::string no_open_capacities = "50,150";  // the no-open rows' cache sizes ("none": no rows)
  std::string open_latency = "2";
  std::string bandwidth = "200";
  std::string plan_window;    // passed to plan mounts when set
  std::string stage_threads;  // passed to every clairfs mount when set
  std::string chart;
  std::string csv;
  bool quick = false;
  bool keep = false;
  bool json = false;
};

using Clock = std::chrono::steady_clock;

struct EpochRead {
  double seconds = 0;
  uint64_t files = 0;
  uint64_t bytes = 0;
  // File ids in the order the threads called open(2): each thread takes the next slot just
  // before its call, so this is the order the opens reach the daemon, up to the at most
  // `threads` opens in flight at once.
  std::vector<uint32_t> opened;
};

// Reads root/<path> for every id of `order` with `threads` threads in order of the list, each
// followed by `work_ms` of sleep (the training step's compute).
Result<EpochRead> ReadEpoch(const std::string& root, const std::vector<SyntheticFile>& files,
                            const std::vector<uint32_t>& order, int threads, double work_ms) {
  std::atomic<size_t> next{0}, opens{0};
  std::atomic<uint64_t> bytes{0}, done{0};
  std::vector<uint32_t> opened(order.size());
  std::atomic<bool> failed{false};
  std::vector<Status> errors(static_cast<size_t>(threads));
  const auto work = std::chrono::microseconds(static_cast<int64_t>(work_ms * 1000));
  auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      constexpr size_t kBuf = 1 << 20;
      std::unique_ptr<char[]> buf(new char[kBuf]);
      for (size_t i = next++; i < order.size() && !failed.load(); i = next++) {
        const std::string path = root + "/" + files[order[i]].relpath;
        opened[opens++] = order[i];  // each slot is written by one thread, read after join
        int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
          errors[static_cast<size_t>(t)] = Status::FromErrno(errno, "open " + path);
          failed = true;
          break;
        }
        for (;;) {
          ssize_t n = read(fd, buf.get(), kBuf);
          if (n < 0 && errno == EINTR) continue;
          if (n < 0) {
            errors[static_cast<size_t>(t)] = Status::FromErrno(errno, "read " + path);
            failed = true;
          }
          if (n <= 0) break;
          bytes += static_cast<uint64_t>(n);
        }
        close(fd);
        ++done;
        if (work.count() > 0) std::this_thread::sleep_for(work);
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& st : errors) {
    if (!st.ok()) return st;
  }
  opened.resize(opens.load());
  return EpochRead{std::chrono::duration<double>(Clock::now() - start).count(), done.load(),
                   bytes.load(), std::move(opened)};
}

// The readers' sampler: torch DistributedSampler(seed, world) with set_epoch(e).
std::string SamplerSpec(const EpochArgs& a) {
  return "torch-distributed:seed=" + std::to_string(a.seed) + ",world=" + std::to_string(a.world);
}

uint64_t Blocks(uint64_t bytes) { return (bytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes; }

// The rank's sample order per epoch, as indices into `files`, from the planner.
Result<std::vector<std::vector<uint32_t>>> PlanEpochs(const EpochArgs& a, const std::string& root,
                                                      const std::vector<SyntheticFile>& files) {
  auto layout_spec = ParseLayoutSpec("imagefolder", "");
  if (!layout_spec.ok()) return layout_spec.status();
  auto layout = BuildLayout(PosixFileTreeInstance(), root, *layout_spec);
  if (!layout.ok()) return layout.status();
  auto spec = ParsePlanSpec(SamplerSpec(a));
  if (!spec.ok()) return spec.status();
  auto plan = Plan::Create(*spec, layout->size());
  if (!plan.ok()) return plan.status();
  std::unordered_map<std::string, uint32_t> id;
  for (size_t i = 0; i < files.size(); ++i) id[files[i].relpath] = static_cast<uint32_t>(i);
  std::vector<std::vector<uint32_t>> epochs;
  for (int e = 0; e < a.epochs; ++e) {
    auto indices = (*plan)->RankIndices(static_cast<uint64_t>(e), a.rank);
    if (!indices.ok()) return indices.status();
    std::vector<uint32_t> order;
    for (uint64_t sample : *indices) {
      auto it = id.find(layout->path(sample));
      if (it == id.end())
        return Status::Error(EIO, "layout path not in the dataset: " + layout->path(sample));
      order.push_back(it->second);
    }
    epochs.push_back(std::move(order));
  }
  return epochs;
}

double Ratio(uint64_t a, uint64_t b) {
  return b ? static_cast<double>(a) / static_cast<double>(b) : 0.0;
}

// Steady-state fields: medians over epochs >= 2 (all epochs if there is only one).
void Summarise(nlohmann::json* config) {
  std::vector<double> seconds, hit_ratio, belady;
  const auto& epochs = (*config)["epochs"];
  for (size_t i = epochs.size() > 1 ? 1 : 0; i < epochs.size(); ++i) {
    seconds.push_back(epochs[i]["seconds"]);
    hit_ratio.push_back(epochs[i]["hit_ratio"]);
    if (!epochs[i]["belady_hit_ratio"].is_null()) belady.push_back(epochs[i]["belady_hit_ratio"]);
  }
  (*config)["steady_seconds"] = Median(seconds);
  (*config)["steady_hit_ratio"] = Median(hit_ratio);
  (*config)["steady_belady_hit_ratio"] =
      belady.empty() ? nlohmann::json() : nlohmann::json(Median(belady));
}

struct Inputs {
  std::string dataset, pfs, mnt;
  std::vector<SyntheticFile> files;
  std::vector<std::vector<uint32_t>> epochs;
  std::vector<uint64_t> epoch_bytes;  // expected bytes per epoch
  uint64_t dataset_blocks = 0;
};

// Writes the dataset's dirty pages back and drops its pages from the page cache, so that its next
// reads come from disk.
Status DropDatasetPages(const Inputs& in) {
  sync();  // a dirty page cannot be dropped
  for (const auto& f : in.files) CLAIRFS_RETURN_IF_ERROR(DropPages(in.dataset + "/" + f.relpath));
  return Status::Ok();
}

// Direct reads of `root` for every epoch: the emulated PFS or the local dataset.
Result<nlohmann::json> RunDirect(const EpochArgs& a, const Inputs& in, const std::string& name,
                                 const std::string& root, bool backing_is_pfs) {
  nlohmann::json config = {
      {"name", name}, {"policy", name}, {"implemented", true}, {"capacity_percent", nullptr}};
  nlohmann::json epochs = nlohmann::json::array();
  for (size_t e = 0; e < in.epochs.size(); ++e) {
    auto r = ReadEpoch(root, in.files, in.epochs[e], a.threads, a.work_ms);
    if (!r.ok()) return r.status();
    epochs.push_back({{"epoch", e + 1},
                      {"seconds", r->seconds},
                      {"bytes", r->bytes},
                      {"bytes_expected", in.epoch_bytes[e]},
                      {"hits", 0},
                      {"misses", 0},
                      {"hit_ratio", 0.0},
                      {"backing_bytes", backing_is_pfs ? r->bytes : 0},
                      {"belady_hit_ratio", nullptr}});
  }
  config["epochs"] = epochs;
  Summarise(&config);
  return config;
}

// The mount's plan for the measured rank from absolute epoch `start_epoch` on: the order the
// readers follow (PlanEpochs), served for rank --rank only, ending with the bench's last epoch.
std::string MountPlanSpec(const EpochArgs& a, size_t start_epoch) {
  return SamplerSpec(a) + ",ranks=" + std::to_string(a.rank) + "-" + std::to_string(a.rank) +
         ",epochs=" + std::to_string(a.epochs) + ",start_epoch=" + std::to_string(start_epoch);
}

// The rows: an eviction policy, and for the plan also the mount's open mode (see the top).
enum class Policy { kLru, kPlan, kHeat, kPlanNoOpen, kPlanNoOpenKept };

const char* PolicyName(Policy policy) {
  switch (policy) {
    case Policy::kLru:
      return "lru";
    case Policy::kPlan:
      return "plan";
    case Policy::kHeat:
      return "heat";
    case Policy::kPlanNoOpen:
      return "plan-no-open";
    case Policy::kPlanNoOpenKept:
      return "plan-no-open-kept";
  }
  return "?";
}

// After the reads and their staging: until the plan's prefetcher leaves nothing to the reader
// (a stopped reader's pace decays within about a second) and nothing is queued, twice 300 ms
// apart. Staging idle alone is not the end: the files left to the reader while it read are the
// next epoch's first, queued only once its pace has decayed, and the remount for the next epoch
// would lose them.
Status WaitPrefetcherQuiet(const std::string& mnt) {
  auto quiet = [](const nlohmann::json& s) {
    return s["plan"].is_object() && s["plan"].value("left_to_reader", uint64_t{1}) == 0 &&
           s["staging"].value("queued", 1) == 0 && s["staging"].value("in_flight", 1) == 0;
  };
  std::string last;
  for (int i = 0; i < 200; ++i) {
    auto before = MountStatus(mnt);
    if (!before.ok()) return before.status();
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    auto after = MountStatus(mnt);
    if (!after.ok()) return after.status();
    if (quiet(*before) && quiet(*after)) return Status::Ok();
    last = (*after)["plan"].dump() + " " + (*after)["staging"].dump();
    // A dropped plan leaves nothing more to stage.
    if ((*after)["plan"].is_object() && (*after)["plan"].value("dropped", false)) {
      return Status::Ok();
    }
  }
  return Status::Error(ETIMEDOUT,
                       "the plan's prefetcher on " + mnt + " did not settle in 60 s: " + last);
}

// The heat run's prolog on the freshly mounted cache, as a job script would run it before
// training: import the earlier job's Darshan logs (every file in `log_dir`), then stage the
// hottest files that fit and wait. Returns what it did, read back from the mount.
Result<nlohmann::json> HeatProlog(const std::string& self, const std::string& mnt,
                                  const std::string& log_dir) {
  auto start = Clock::now();
  CLAIRFS_RETURN_IF_ERROR(RunClairfsCommand(self, {"darshan", "import", mnt, log_dir}));
  const double import_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  start = Clock::now();
  CLAIRFS_RETURN_IF_ERROR(RunClairfsCommand(self, {"stage", mnt, "--hot", "--fit", "--wait"}));
  const double stage_seconds = std::chrono::duration<double>(Clock::now() - start).count();
  CLAIRFS_RETURN_IF_ERROR(WaitStagingIdle(mnt));
  auto status = MountStatus(mnt);
  if (!status.ok()) return status.status();
  const nlohmann::json heat =
      (*status)["heat"].is_object() ? (*status)["heat"] : nlohmann::json::object();
  return nlohmann::json{{"import_seconds", import_seconds},
                        {"stage_seconds", stage_seconds},
                        {"heat_files", heat.value("files", uint64_t{0})},
                        {"heat_logs", heat.value("logs", uint64_t{0})},
                        {"files_staged", (*status)["staging"].value("files_staged", uint64_t{0})},
                        {"bytes_staged", (*status)["staging"].value("bytes_staged", uint64_t{0})},
                        {"staging_failures", (*status)["staging"].value("failures", uint64_t{0})},
                        {"used_bytes", (*status)["used_bytes"]},
                        {"eviction", (*status).value("eviction", "")}};
}

// clairfs over the emulator with a cache of `percent` of the dataset: read-through with LRU
// eviction, mounted with the readers' plan (prefetch in plan order, eviction by next use), or
// read-through with the heat imported from `log_dir` and staged by the prolog (HeatProlog).
// Every epoch is a fresh mount of the same cache (see the header comment); a plan mount starts
// at that epoch (start_epoch), as a resumed job would. The LRU run writes each epoch mount's
// Darshan log into `log_dir` when it is given. Demand-MIN runs on the opens recorded in this
// run, concatenated over the epochs, at the same capacity.
Result<nlohmann::json> RunClairfs(const EpochArgs& a, const Inputs& in, MountStack* stack,
                                  const std::string& cache, int percent, Policy policy,
                                  const std::string& log_dir) {
  const uint64_t capacity = in.dataset_blocks * static_cast<uint64_t>(percent) / 100;
  const bool kept = policy == Policy::kPlanNoOpenKept;
  const bool no_open = kept || policy == Policy::kPlanNoOpen;
  const bool plan = policy == Policy::kPlan || no_open;
  const std::string policy_name = PolicyName(policy);
  nlohmann::json config = {{"name", "clairfs-" + policy_name + "-" + std::to_string(percent) + "%"},
                           {"policy", policy_name},
                           {"implemented", true},
                           {"capacity_percent", percent},
                           {"capacity_bytes", capacity}};
  nlohmann::json epochs = nlohmann::json::array();
  std::vector<uint32_t> trace;  // opens recorded over all epochs
  uint64_t hits_total = 0;
  auto last_read_end = Clock::now();
  for (size_t e = 0; e < in.epochs.size(); ++e) {
    std::vector<std::string> flags = {"--cache", cache, "--capacity", std::to_string(capacity)};
    if (e > 0) flags.insert(flags.end(), {"--manifest", "reuse"});
    if (plan) flags.insert(flags.end(), {"--plan", MountPlanSpec(a, e)});
    if (plan && !a.plan_window.empty()) flags.insert(flags.end(), {"--plan-window", a.plan_window});
    if (!a.stage_threads.empty()) flags.insert(flags.end(), {"--stage-threads", a.stage_threads});
    if (no_open) flags.insert(flags.end(), {"--open-mode", "no-open"});
    // The kept row's one mount serves every epoch, its plan from epoch 1 on.
    if (!kept || e == 0) CLAIRFS_RETURN_IF_ERROR(stack->MountClairfs(in.pfs, in.mnt, flags));
    if (policy == Policy::kHeat && e == 0) {
      auto prolog = HeatProlog(stack->self(), in.mnt, log_dir);
      if (!prolog.ok()) return prolog.status().WithContext("heat prolog");
      config["prolog"] = *prolog;
    }
    auto before = MountStatus(in.mnt);
    if (!before.ok()) return before.status();
    // How long the machine sat idle since the last read (the waits and status calls between
    // epochs): the local read of the kept row gets the same pause (below).
    const auto pause = Clock::now() - last_read_end;
    auto r = ReadEpoch(in.mnt, in.files, in.epochs[e], a.threads, a.work_ms);
    if (!r.ok()) return r.status();
    // The kept row's epochs are compared with the local copy read in the same order right after
    // each of them: this machine's speed drifts by a third within minutes, more than the rows'
    // difference (the local-direct row runs last, minutes later). A read that follows an idle
    // pause runs slower (12-15% for these 25 ms epochs on the 2-core VM, docs/BENCHMARKS.md), so
    // the local read waits as long as the epoch did before it starts.
    std::optional<double> local_after, pause_seconds;
    if (kept) {
      if (e > 0) {
        const auto capped = std::min<Clock::duration>(pause, std::chrono::seconds(2));
        std::this_thread::sleep_for(capped);
        pause_seconds = std::chrono::duration<double>(capped).count();
      }
      auto local = ReadEpoch(in.dataset, in.files, in.epochs[e], a.threads, a.work_ms);
      if (!local.ok()) return local.status();
      local_after = local->seconds;
    }
    last_read_end = Clock::now();
    auto read_end = MountStatus(in.mnt);
    if (!read_end.ok()) return read_end.status();
    CLAIRFS_RETURN_IF_ERROR(WaitStagingIdle(in.mnt));
    if (plan) CLAIRFS_RETURN_IF_ERROR(WaitPrefetcherQuiet(in.mnt));
    auto after = MountStatus(in.mnt);
    if (!after.ok()) return after.status();
    if (policy == Policy::kLru && !log_dir.empty()) {
      // The epilog of this "job": its Darshan log is what the heat run imports.
      const std::string log = log_dir + "/epoch-" + std::to_string(e + 1) + ".darshan";
      CLAIRFS_RETURN_IF_ERROR(
          RunClairfsCommand(stack->self(), {"stats", in.mnt, "--darshan", log}));
    }
    if (!kept || e + 1 == in.epochs.size()) CLAIRFS_RETURN_IF_ERROR(stack->Pop());
    auto delta = [&](const nlohmann::json& to, const nlohmann::json& from, const char* key) {
      return to.value(key, uint64_t{0}) - from.value(key, uint64_t{0});
    };
    const uint64_t staged = delta((*after)["staging"], (*before)["staging"], "bytes_staged");
    const uint64_t staged_untimed =
        delta((*after)["staging"], (*read_end)["staging"], "bytes_staged");
    const uint64_t hits = delta(*after, *before, "hits"), misses = delta(*after, *before, "misses");
    const uint64_t from_backing = delta(*after, *before, "bytes_from_backing");
    uint64_t reordered = 0;
    for (size_t i = 0; i < r->opened.size(); ++i) reordered += r->opened[i] != in.epochs[e][i];
    trace.insert(trace.end(), r->opened.begin(), r->opened.end());
    hits_total += hits;
    nlohmann::json row = {
        {"epoch", e + 1},
        {"seconds", r->seconds},
        {"bytes", r->bytes},
        {"bytes_expected", in.epoch_bytes[e]},
        {"hits", hits},
        {"misses", misses},
        {"hit_ratio", Ratio(hits, hits + misses)},
        {"accesses", r->opened.size()},
        {"reordered", reordered},
        {"bytes_from_backing", from_backing},
        {"bytes_staged", staged},
        {"files_staged", delta((*after)["staging"], (*before)["staging"], "files_staged")},
        {"staging_failures", delta((*after)["staging"], (*before)["staging"], "failures")},
        {"evictions", delta(*after, *before, "evictions")},
        // What reached the daemon while the readers ran: in no-open mode a file whose pages the
        // kernel keeps costs neither, a name whose entry timed out costs a LOOKUP.
        {"read_requests", delta(*read_end, *before, "read_requests")},
        {"lookups", delta(*read_end, *before, "lookups")},
        {"bytes_staged_untimed", staged_untimed},
        {"staging_backlog_at_read_end", (*read_end)["staging"].value("queued", uint64_t{0}) +
                                            (*read_end)["staging"].value("in_flight", uint64_t{0})},
        {"backing_bytes", from_backing + staged},
        {"used_bytes", (*after)["used_bytes"]},
        {"eviction", (*after).value("eviction", "")}};
    if (local_after) row["local_seconds_after"] = *local_after;
    if (pause_seconds) row["pause_seconds"] = *pause_seconds;
    if (plan) {
      row["plan"] = (*after)["plan"];
      row["plan_at_read_end"] = (*read_end)["plan"];
    }
    epochs.push_back(std::move(row));
  }
  std::vector<uint64_t> sizes;
  for (const auto& f : in.files) sizes.push_back(Blocks(f.size));
  auto belady = SimulateBeladyHits(trace, sizes, capacity);
  if (!belady.ok()) return belady.status();
  uint64_t belady_total = 0;
  size_t offset = 0;
  for (auto& row : epochs) {
    const size_t n = row["accesses"];
    uint64_t epoch_belady = 0;
    for (size_t i = 0; i < n; ++i) epoch_belady += (*belady)[offset + i];
    offset += n;
    belady_total += epoch_belady;
    row["belady_hits"] = epoch_belady;
    row["belady_hit_ratio"] = Ratio(epoch_belady, n);
  }
  config["epochs"] = epochs;
  config["hits"] = hits_total;
  config["belady_hits"] = belady_total;
  config["accesses"] = trace.size();
  Summarise(&config);
  return config;
}

Status Measure(const EpochArgs& a, nlohmann::json* out) {
  if (a.rank >= a.world) return Status::Invalid("--rank must be below --world");
  auto capacities = ParseIntList(a.capacities, "--capacities");
  if (!capacities.ok()) return capacities.status();
  std::vector<int> no_open_capacities;
  if (a.no_open_capacities != "none") {
    auto parsed = ParseIntList(a.no_open_capacities, "--no-open-capacities");
    if (!parsed.ok()) return parsed.status();
    no_open_capacities = *parsed;
  }
  auto self = SelfExecutable();
  if (!self.ok()) return self.status();
  BenchWorkDir work;
  CLAIRFS_RETURN_IF_ERROR(work.Init(a.dir, "epoch", a.keep));
  Inputs in;
  for (auto [name, field] :
       {std::pair{"dataset", &in.dataset}, {"pfs", &in.pfs}, {"mnt", &in.mnt}}) {
    auto d = work.Subdir(name);
    if (!d.ok()) return d.status();
    *field = *d;
  }
  SyntheticSpec spec;
  spec.files = a.files;
  spec.classes = std::max<uint64_t>(1, a.files / 100);
  spec.seed = a.seed;
  auto files = PlanSyntheticDataset(spec);
  if (!files.ok()) return files.status();
  in.files = *files;
  auto written = WriteSyntheticDataset(in.dataset, in.files, SettledForMount());
  if (!written.ok()) return written.status();
  // The local copy starts on disk, as a node's would: pages a write left are laid out in larger
  // folios than pages a read brings in, and read 12-13% faster (docs/BENCHMARKS.md), which would
  // flatter the local rows against the FUSE files, whose pages every row fills by reading.
  CLAIRFS_RETURN_IF_ERROR(DropDatasetPages(in));
  for (const auto& f : in.files) in.dataset_blocks += Blocks(f.size);
  auto epochs = PlanEpochs(a, in.dataset, in.files);
  if (!epochs.ok()) return epochs.status();
  in.epochs = *epochs;
  for (const auto& order : in.epochs) {
    uint64_t bytes = 0;
    for (uint32_t id : order) bytes += in.files[id].size;
    in.epoch_bytes.push_back(bytes);
  }

  nlohmann::json configs = nlohmann::json::array();
  MountStack stack(*self);
  CLAIRFS_RETURN_IF_ERROR(stack.MountEmulator(
      in.dataset, in.pfs, {"--open-latency", a.open_latency, "--bandwidth", a.bandwidth}));
  auto pfs = RunDirect(a, in, "pfs-direct", in.pfs, true);
  if (!pfs.ok()) return pfs.status();
  configs.push_back(*pfs);
  // LRU, plan and heat run in turn per cache size so that they run under the same load (heat
  // after LRU: it imports the LRU run's logs); the table lists all LRU rows, then all plan rows,
  // then all heat rows.
  std::map<Policy, std::vector<nlohmann::json>> rows;
  const std::vector<Policy> kRowOrder = {Policy::kLru, Policy::kPlan, Policy::kHeat,
                                         Policy::kPlanNoOpen, Policy::kPlanNoOpenKept};
  for (int percent : *capacities) {
    auto logs = work.Subdir("darshan-lru-" + std::to_string(percent));
    if (!logs.ok()) return logs.status();
    std::vector<Policy> policies = {Policy::kLru, Policy::kPlan, Policy::kHeat};
    if (std::find(no_open_capacities.begin(), no_open_capacities.end(), percent) !=
        no_open_capacities.end()) {
      policies.insert(policies.end(), {Policy::kPlanNoOpen, Policy::kPlanNoOpenKept});
    }
    for (Policy policy : policies) {
      const std::string name = std::string(PolicyName(policy)) + "-" + std::to_string(percent);
      auto cache = work.Subdir("cache-" + name);
      if (!cache.ok()) return cache.status();
      const bool writes_or_reads_logs = policy == Policy::kLru || policy == Policy::kHeat;
      auto run =
          RunClairfs(a, in, &stack, *cache, percent, policy, writes_or_reads_logs ? *logs : "");
      if (!run.ok()) return run.status().WithContext(name);
      rows[policy].push_back(*run);
      if (!a.keep && a.dir.empty()) {  // used once: free its space for the next configuration
        std::error_code ec;
        std::filesystem::remove_all(*cache, ec);
        if (policy == Policy::kHeat) std::filesystem::remove_all(*logs, ec);
      }
    }
  }
  for (Policy policy : kRowOrder) {
    for (auto& row : rows[policy]) configs.push_back(std::move(row));
  }
  CLAIRFS_RETURN_IF_ERROR(stack.PopAll());
  // Its first epoch reads from disk, as the clairfs rows' first epochs do.
  CLAIRFS_RETURN_IF_ERROR(DropDatasetPages(in));
  auto local = RunDirect(a, in, "local-direct", in.dataset, false);
  if (!local.ok()) return local.status();
  configs.push_back(*local);

  *out = {{"files", in.files.size()},
          {"dataset_bytes", TotalSize(in.files)},
          {"dataset_blocks", in.dataset_blocks},
          {"epochs", a.epochs},
          {"threads", a.threads},
          {"world", a.world},
          {"rank", a.rank},
          {"seed", a.seed},
          {"work_ms", a.work_ms},
          {"open_latency_ms", a.open_latency},
          {"bandwidth_mbps", a.bandwidth},
          {"configs", configs}};
  (*out)["targets"] = EpochTargets(*out);
  if (a.quick) (*out)["invariants"] = EpochInvariants(*out);
  if (!a.csv.empty()) CLAIRFS_RETURN_IF_ERROR(WriteEpochCsv(*out, a.csv));
  if (!a.chart.empty()) CLAIRFS_RETURN_IF_ERROR(WriteEpochChart(*out, a.chart));
  return Status::Ok();
}

}  // namespace

void RegisterBenchEpoch(CLI::App& bench) {
  auto args = std::make_shared<EpochArgs>();
  CLI::App* cmd =
      AddCommand(&bench, "epoch",
                 "Training epochs in torch DistributedSampler order over the emulated PFS, clairfs "
                 "read-through, clairfs with the plan and clairfs with Darshan heat (imported from "
                 "the read-through run's logs) at several cache sizes, and local disk, with "
                 "Belady's hit ratio on the recorded trace");
  cmd->add_option("--dir", args->dir, "Work directory (default: a temporary one, removed after)");
  cmd->add_option("--files", args->files, "Files in the dataset (default 2000; --quick 400)")
      ->transform(Count(uint64_t{1}, uint64_t{10'000'000}));
  cmd->add_option("--epochs", args->epochs, "Epochs (default 5; --quick 3)")
      ->transform(Count(1, 1000));
  cmd->add_option("--threads", args->threads, "Reader threads (default 4)")
      ->transform(Count(1, 256));
  cmd->add_option("--world", args->world, "DistributedSampler world size (default 1)")
      ->transform(Count(1u, 1u << 20));
  cmd->add_option("--rank", args->rank, "The rank whose order is read (default 0)")
      ->transform(Count(0, (1u << 20) - 1));
  cmd->add_option("--seed", args->seed, "Sampler and dataset seed (default 42)")
      ->transform(Count(0, UINT64_MAX));
  cmd->add_option("--work-ms", args->work_ms, "Simulated compute per sample, ms (default 0)")
      ->check(CLI::Range(0.0, 10000.0));
  cmd->add_option("--capacities", args->capacities,
                  "Cache sizes in percent of the dataset (default 25,50,100,150)");
  cmd->add_option("--no-open-capacities", args->no_open_capacities,
                  "Cache sizes of the no-open rows (plan, --open-mode no-open, remounted each "
                  "epoch or kept mounted), of those in --capacities (default 50,150; none)");
  cmd->add_option("--open-latency", args->open_latency,
                  "Emulated PFS open latency, ms (default 2)");
  cmd->add_option("--bandwidth", args->bandwidth, "Emulated PFS bandwidth, MB/s (default 200)");
  cmd->add_option("--plan-window", args->plan_window,
                  "--plan-window of the plan mounts (default: the mount's)");
  cmd->add_option("--stage-threads", args->stage_threads,
                  "--stage-threads of every clairfs mount (default: the mount's)");
  cmd->add_option("--chart", args->chart, "Write a PNG chart (and FILE.dat, FILE.gp beside it)");
  cmd->add_option("--csv", args->csv, "Write one CSV row per configuration and epoch");
  cmd->add_flag("--quick", args->quick,
                "400 files, 3 epochs; check invariants (exit 1 if one fails)");
  cmd->add_flag("--keep", args->keep, "Keep the temporary work directory");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, cmd]() {
    EpochArgs a = *args;
    if (a.quick) {
      if (cmd->count("--files") == 0) a.files = 400;
      if (cmd->count("--epochs") == 0) a.epochs = 3;
    }
    nlohmann::json result;
    const Status measured = Measure(a, &result);
    if (int rc = ReportBench(kBenchEpochCommand, measured, result, a.json, PrintEpochTable);
        rc != kExitOk) {
      return SetExitCode(rc);
    }
    for (const auto& check : result.value("invariants", nlohmann::json::array())) {
      if (!check["ok"]) {
        return SetExitCode(
            Fail(kBenchEpochCommand,
                 Status::Error(EPROTO, "invariant failed: " + std::string(check["check"]))));
      }
    }
    SetExitCode(kExitOk);
  });
}

}  // namespace clairfs::cli
