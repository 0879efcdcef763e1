// `clairfs bench epoch`: training epochs in torch DistributedSampler order over the emulated PFS
// directly, clairfs read-through (LRU) at several cache sizes over the same emulator, and the
// local copy of the dataset directly (the limit), with the demand-MIN (Belady) hit ratio of the
// same trace and cache size as the yardstick for the measured hit ratio.
//
// Method: a synthetic image-folder dataset (imagenet-like sizes) is written locally and served by
// `clairfs pfs-emu` with --open-latency and --bandwidth. The read order of rank --rank comes
// from the planner: Plan("torch-distributed:seed=S,world=R") over the dataset's imagefolder
// layout, per epoch. Each epoch is read by --threads threads taking the next sample in order
// (open, read to the end in 1 MiB reads, close, then --work-ms of simulated compute). For clairfs,
// each cache size gets a fresh cache directory and capacity = PERCENT of the dataset's bytes
// rounded up to 4 KiB blocks; between epochs, read-through staging is waited for (not timed) and
// the mount is remounted (--manifest reuse) so that every epoch starts without the mount's
// kernel page cache, as on a node whose memory cannot hold the dataset. Counters (hits, misses,
// bytes from the backing store, bytes staged) are per epoch. Configurations that clairfs does not
// implement yet (plan-driven staging, heat) are printed as absent, never simulated.
//
// Output: a table, or one JSON object with --json; --csv FILE writes one row per configuration
// and epoch; --chart FILE.png writes FILE.dat and a gnuplot chart of epoch time per
// configuration. Exit codes 0, 1 failed, 2 usage. Mounts are always unmounted; the work
// directory is removed unless --keep or --dir.
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <memory>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "planner/belady.h"
#include "planner/file_tree.h"
#include "planner/layout.h"
#include "planner/plan.h"
#include "planner/plan_spec.h"
#include "planner/synthetic_dataset.h"
#include "planner/units.h"
#include "tools/bench_mounts.h"
#include "tools/bench_support.h"
#include "tools/cli.h"
#include "tools/cmd_bench.h"
#include "tools/dataset_writer.h"
#include "tools/subprocess.h"

namespace clairfs::cli {
namespace {

constexpr const char* kCommand = "bench epoch";
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
  std::string open_latency = "2";
  std::string bandwidth = "200";
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
};

// Reads root/<path> for every id of `order` with `threads` threads in order of the list, each
// followed by `work_ms` of sleep (the training step's compute).
Result<EpochRead> ReadEpoch(const std::string& root, const std::vector<SyntheticFile>& files,
                            const std::vector<uint32_t>& order, int threads, double work_ms) {
  std::atomic<size_t> next{0};
  std::atomic<uint64_t> bytes{0}, done{0};
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
  return EpochRead{std::chrono::duration<double>(Clock::now() - start).count(), done.load(),
                   bytes.load()};
}

uint64_t Blocks(uint64_t bytes) { return (bytes + kBlockBytes - 1) / kBlockBytes * kBlockBytes; }

// The rank's sample order per epoch, as indices into `files`, from the planner.
Result<std::vector<std::vector<uint32_t>>> PlanEpochs(const EpochArgs& a, const std::string& root,
                                                      const std::vector<SyntheticFile>& files) {
  auto layout_spec = ParseLayoutSpec("imagefolder", "");
  if (!layout_spec.ok()) return layout_spec.status();
  auto layout = BuildLayout(PosixFileTreeInstance(), root, *layout_spec);
  if (!layout.ok()) return layout.status();
  auto spec = ParsePlanSpec("torch-distributed:seed=" + std::to_string(a.seed) +
                            ",world=" + std::to_string(a.world));
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

// Direct reads of `root` for every epoch: the emulated PFS or the local dataset.
Result<nlohmann::json> RunDirect(const EpochArgs& a, const Inputs& in, const std::string& name,
                                 const std::string& root, bool backing_is_pfs) {
  nlohmann::json config = {{"name", name}, {"implemented", true}, {"capacity_percent", nullptr}};
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

// clairfs read-through (LRU) over the emulator with a cache of `percent` of the dataset.
Result<nlohmann::json> RunLru(const EpochArgs& a, const Inputs& in, MountStack* stack,
                              const std::string& cache, int percent) {
  const uint64_t capacity = in.dataset_blocks * static_cast<uint64_t>(percent) / 100;
  std::vector<uint32_t> trace;
  for (const auto& order : in.epochs) trace.insert(trace.end(), order.begin(), order.end());
  std::vector<uint64_t> sizes;
  for (const auto& f : in.files) sizes.push_back(Blocks(f.size));
  auto belady = SimulateBeladyHits(trace, sizes, capacity);
  if (!belady.ok()) return belady.status();

  nlohmann::json config = {{"name", "clairfs-lru-" + std::to_string(percent) + "%"},
                           {"implemented", true},
                           {"capacity_percent", percent},
                           {"capacity_bytes", capacity}};
  nlohmann::json epochs = nlohmann::json::array();
  const std::vector<std::string> flags = {"--cache", cache, "--capacity", std::to_string(capacity)};
  std::vector<std::string> reuse = flags;
  reuse.insert(reuse.end(), {"--manifest", "reuse"});
  uint64_t lru_hits = 0, belady_hits = 0, accesses = 0;
  size_t offset = 0;
  for (size_t e = 0; e < in.epochs.size(); ++e) {
    CLAIRFS_RETURN_IF_ERROR(stack->MountClairfs(in.pfs, in.mnt, e == 0 ? flags : reuse));
    auto before = MountStatus(in.mnt);
    if (!before.ok()) return before.status();
    auto r = ReadEpoch(in.mnt, in.files, in.epochs[e], a.threads, a.work_ms);
    if (!r.ok()) return r.status();
    CLAIRFS_RETURN_IF_ERROR(WaitStagingIdle(in.mnt));
    auto after = MountStatus(in.mnt);
    if (!after.ok()) return after.status();
    CLAIRFS_RETURN_IF_ERROR(stack->Pop());
    auto delta = [&](const char* key) {
      return (*after).value(key, uint64_t{0}) - (*before).value(key, uint64_t{0});
    };
    const uint64_t staged = (*after)["staging"].value("bytes_staged", uint64_t{0}) -
                            (*before)["staging"].value("bytes_staged", uint64_t{0});
    const uint64_t hits = delta("hits"), misses = delta("misses");
    uint64_t epoch_belady = 0;
    for (size_t i = 0; i < in.epochs[e].size(); ++i) epoch_belady += (*belady)[offset + i];
    offset += in.epochs[e].size();
    lru_hits += hits;
    belady_hits += epoch_belady;
    accesses += in.epochs[e].size();
    epochs.push_back({{"epoch", e + 1},
                      {"seconds", r->seconds},
                      {"bytes", r->bytes},
                      {"bytes_expected", in.epoch_bytes[e]},
                      {"hits", hits},
                      {"misses", misses},
                      {"hit_ratio", Ratio(hits, hits + misses)},
                      {"bytes_from_backing", delta("bytes_from_backing")},
                      {"bytes_staged", staged},
                      {"backing_bytes", delta("bytes_from_backing") + staged},
                      {"belady_hits", epoch_belady},
                      {"belady_hit_ratio", Ratio(epoch_belady, in.epochs[e].size())},
                      {"used_bytes", (*after)["used_bytes"]}});
  }
  config["epochs"] = epochs;
  config["hits"] = lru_hits;
  config["belady_hits"] = belady_hits;
  config["accesses"] = accesses;
  Summarise(&config);
  return config;
}

Status WriteOutputs(const EpochArgs& a, const nlohmann::json& result) {
  if (!a.csv.empty()) {
    std::ofstream csv(a.csv);
    csv << "configuration,epoch,seconds,bytes,hits,misses,hit_ratio,backing_bytes,"
           "belady_hit_ratio\n";
    for (const auto& c : result["configs"]) {
      if (!c["implemented"]) continue;
      for (const auto& e : c["epochs"]) {
        csv << std::string(c["name"]) << "," << e["epoch"] << "," << e["seconds"] << ","
            << e["bytes"] << "," << e["hits"] << "," << e["misses"] << "," << e["hit_ratio"] << ","
            << e["backing_bytes"] << ","
            << (e["belady_hit_ratio"].is_null() ? std::string() : e["belady_hit_ratio"].dump())
            << "\n";
      }
    }
    if (!csv) return Status::Error(EIO, "cannot write " + a.csv);
  }
  if (a.chart.empty()) return Status::Ok();
  std::string base = a.chart;
  if (base.size() > 4 && base.substr(base.size() - 4) == ".png") base.resize(base.size() - 4);
  const std::string dat = base + ".dat", script = base + ".gp";
  std::vector<const nlohmann::json*> shown;
  for (const auto& c : result["configs"]) {
    if (c["implemented"]) shown.push_back(&c);
  }
  {
    std::ofstream out(dat);
    out << "epoch";
    for (const auto* c : shown) out << " \"" << std::string((*c)["name"]) << "\"";
    out << "\n";
    for (int e = 0; e < a.epochs; ++e) {
      out << e + 1;
      for (const auto* c : shown) out << " " << (*c)["epochs"][static_cast<size_t>(e)]["seconds"];
      out << "\n";
    }
    if (!out) return Status::Error(EIO, "cannot write " + dat);
  }
  {
    std::ofstream gp(script);
    gp << "set terminal pngcairo size 900,520 font 'sans,10'\n"
       << "set output '" << a.chart << "'\n"
       << "set title 'clairfs bench epoch: " << result["files"] << " files, " << result["threads"]
       << " readers, PFS emulator " << a.open_latency << " ms/open, " << a.bandwidth << " MB/s'\n"
       << "set xlabel 'epoch'\nset ylabel 'epoch time (s)'\nset logscale y\n"
       << "set key outside right\nset xtics 1\nset grid\n"
       << "plot for [i=2:" << shown.size() + 1 << "] '" << dat
       << "' using 1:i with linespoints title columnheader(i)\n";
    if (!gp) return Status::Error(EIO, "cannot write " + script);
  }
  auto run = RunProgram({"gnuplot", script}, true);
  if (!run.ok()) return run.status().WithContext("gnuplot");
  if (run->exit_code != 0) return Status::Error(EIO, "gnuplot failed: " + run->err);
  return Status::Ok();
}

Status Measure(const EpochArgs& a, nlohmann::json* out) {
  if (a.rank >= a.world) return Status::Invalid("--rank must be below --world");
  auto capacities = ParseIntList(a.capacities, "--capacities");
  if (!capacities.ok()) return capacities.status();
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
  auto written = WriteSyntheticDataset(in.dataset, in.files, {});
  if (!written.ok()) return written.status();
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
  for (int percent : *capacities) {
    auto cache = work.Subdir("cache-" + std::to_string(percent));
    if (!cache.ok()) return cache.status();
    auto lru = RunLru(a, in, &stack, *cache, percent);
    if (!lru.ok()) return lru.status();
    configs.push_back(*lru);
  }
  CLAIRFS_RETURN_IF_ERROR(stack.PopAll());
  configs.push_back({{"name", "clairfs-plan"}, {"implemented", false}});
  configs.push_back({{"name", "clairfs-heat"}, {"implemented", false}});
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
  return WriteOutputs(a, *out);
}

void PrintTable(const nlohmann::json& r) {
  printf(
      "epoch: %llu files (%s), rank %u of %u, %d epochs, %d readers, work %g ms/sample, PFS "
      "emulator %s ms/open, %s MB/s\n",
      static_cast<unsigned long long>(r["files"]), FormatBytes(r["dataset_bytes"]).c_str(),
      static_cast<unsigned>(r["rank"]), static_cast<unsigned>(r["world"]),
      static_cast<int>(r["epochs"]), static_cast<int>(r["threads"]),
      static_cast<double>(r["work_ms"]), std::string(r["open_latency_ms"]).c_str(),
      std::string(r["bandwidth_mbps"]).c_str());
  printf("%-18s %9s %9s %9s %9s %9s %12s %12s\n", "configuration", "epoch 1", "steady", "hit 1",
         "hit st.", "Belady st", "backing 1", "backing st.");
  for (const auto& c : r["configs"]) {
    std::string name = c["name"];
    if (!c["implemented"]) {
      printf("%-18s absent (not implemented yet)\n", name.c_str());
      continue;
    }
    const auto& epochs = c["epochs"];
    std::vector<double> steady_backing;
    for (size_t i = epochs.size() > 1 ? 1 : 0; i < epochs.size(); ++i) {
      steady_backing.push_back(epochs[i]["backing_bytes"]);
    }
    std::string belady =
        c["steady_belady_hit_ratio"].is_null()
            ? "-"
            : std::to_string(static_cast<double>(c["steady_belady_hit_ratio"])).substr(0, 5);
    printf("%-18s %8.2fs %8.2fs %9.3f %9.3f %9s %12s %12s\n", name.c_str(),
           static_cast<double>(epochs[0]["seconds"]), static_cast<double>(c["steady_seconds"]),
           static_cast<double>(epochs[0]["hit_ratio"]), static_cast<double>(c["steady_hit_ratio"]),
           belady.c_str(), FormatBytes(epochs[0]["backing_bytes"]).c_str(),
           FormatBytes(static_cast<uint64_t>(Median(steady_backing))).c_str());
  }
  printf(
      "(steady = median over epochs >= 2; hit ratios count opens reaching the daemon; backing = "
      "bytes read from the emulated PFS by readers plus staging; Belady = demand-MIN on the "
      "same trace and capacity)\n");
}

}  // namespace

void RegisterBenchEpoch(CLI::App& bench) {
  auto args = std::make_shared<EpochArgs>();
  CLI::App* cmd =
      AddCommand(&bench, "epoch",
                 "Training epochs in torch DistributedSampler order over the emulated PFS, clairfs "
                 "read-through at several cache sizes, and local disk, with Belady's hit ratio");
  cmd->add_option("--dir", args->dir, "Work directory (default: a temporary one, removed after)");
  cmd->add_option("--files", args->files, "Files in the dataset (default 2000; --quick 400)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{10'000'000}));
  cmd->add_option("--epochs", args->epochs, "Epochs (default 5; --quick 3)")
      ->check(CLI::Range(1, 1000));
  cmd->add_option("--threads", args->threads, "Reader threads (default 4)")
      ->check(CLI::Range(1, 256));
  cmd->add_option("--world", args->world, "DistributedSampler world size (default 1)")
      ->check(CLI::Range(1u, 1u << 20));
  cmd->add_option("--rank", args->rank, "The rank whose order is read (default 0)");
  cmd->add_option("--seed", args->seed, "Sampler and dataset seed (default 42)");
  cmd->add_option("--work-ms", args->work_ms, "Simulated compute per sample, ms (default 0)")
      ->check(CLI::Range(0.0, 10000.0));
  cmd->add_option("--capacities", args->capacities,
                  "Cache sizes in percent of the dataset (default 25,50,100,150)");
  cmd->add_option("--open-latency", args->open_latency,
                  "Emulated PFS open latency, ms (default 2)");
  cmd->add_option("--bandwidth", args->bandwidth, "Emulated PFS bandwidth, MB/s (default 200)");
  cmd->add_option("--chart", args->chart, "Write a PNG chart (and FILE.dat, FILE.gp beside it)");
  cmd->add_option("--csv", args->csv, "Write one CSV row per configuration and epoch");
  cmd->add_flag("--quick", args->quick, "400 files, 3 epochs");
  cmd->add_flag("--keep", args->keep, "Keep the temporary work directory");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, cmd]() {
    EpochArgs a = *args;
    if (a.quick) {
      if (cmd->count("--files") == 0) a.files = 400;
      if (cmd->count("--epochs") == 0) a.epochs = 3;
    }
    nlohmann::json result;
    Status status = Measure(a, &result);
    if (!status.ok()) {
      return SetExitCode(Fail(kCommand, status));
    }
    if (a.json) {
      printf("%s\n", result.dump().c_str());
    } else {
      PrintTable(result);
    }
    SetExitCode(kExitOk);
  });
}

}  // namespace clairfs::cli
