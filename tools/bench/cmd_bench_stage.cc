// `clairfs bench stage`: the staging engine in-process and the `clairfs stage` command as a user
// runs it, against `cp -r` and `rsync -a`.
//
// A synthetic tree (flat, --files x --size, verifiable content) is served by `clairfs pfs-emu`
// with --open-latency. Each timed run gets a freshly mounted emulator (no kernel page cache of
// the emulated files carried over) and a fresh target:
//   engine:  CacheDir + IndexDb + Manifest::Rescan of the emulated tree + ContentStore + Stager
//            (as fs/daemon.cc builds them), every file enqueued, WaitIdle(); durable by the
//            publish protocol (fsync, rename, directory sync, synced index write per file)
//   clairfs stage --offline:  `clairfs stage --offline --backing EMU --cache DIR --threads N`,
//            from the command's start to its exit (no mount)
//   clairfs stage --wait:  `clairfs mount EMU MNT --cache DIR --stage-threads N` (timed on its
//            own: the mount's startup, which lists the tree), then `clairfs stage MNT --wait`
//            from the command's start to its exit; unmounted afterwards (not timed)
//   cp:      cp -r MNT TARGET, then sync -f TARGET
//   rsync:   rsync -a MNT/ TARGET/, then sync -f TARGET
// so every figure includes the copies' durability and, except the mounted stage (whose mount
// lists the tree before), listing the tree. After each engine and command run every staged copy
// is read back from the cache and verified byte for byte (not timed; for the commands, once they
// have exited and released the cache). Then large files: --big-files x --big-size through an
// emulator with --bandwidth, staged by the engine; the rate is compared with the cap.
// Output: a table of medians and ratios, or one JSON object.
// Exit codes: 0 measured and verified, 1 failed (a copy missing or wrong), 2 bad arguments.
// Mounts are always unmounted and the work directory removed (unless --dir was given).
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <map>
#include <memory>

#include <nlohmann/json.hpp>

#include "cache/cache_opener.h"
#include "cache/content_store.h"
#include "cache/index_db.h"
#include "cache/manifest.h"
#include "cache/stager.h"
#include "planner/base/units.h"
#include "planner/synthetic_content.h"
#include "planner/synthetic_dataset.h"
#include "tools/bench/bench_mounts.h"
#include "tools/bench/bench_support.h"
#include "tools/bench/cmd_bench.h"
#include "tools/bench/dataset_writer.h"
#include "tools/cli/cli.h"
#include "tools/cli/subprocess.h"

namespace clairfs::cli {
namespace {

constexpr const char* kBenchStageCommand = "bench stage";
// Row names of the two command runs (keys of "median_seconds").
constexpr const char* kOfflineRow = "clairfs stage --offline";
constexpr const char* kMountedRow = "clairfs stage --wait";

struct StageBenchArgs {
  std::string dir;
  uint64_t files = 2000;
  std::string size = "110K";
  double open_latency_ms = 2;
  int big_files = 2;
  std::string big_size = "256M";
  double bandwidth_mbps = 400;
  int stage_threads = 64;
  std::string engine = "both";
  int repeat = 3;
  bool quick = false;
  bool json = false;
};

// The emulator mounted on `mountpoint` for one run; unmounted when this goes out of scope.
class Emulator {
 public:
  static Result<std::unique_ptr<Emulator>> Mount(const std::string& backing,
                                                 const std::string& mountpoint,
                                                 const std::vector<std::string>& flags) {
    auto self = SelfExecutable();
    if (!self.ok()) return self.status();
    std::vector<std::string> argv = {*self, "pfs-emu", backing, mountpoint};
    argv.insert(argv.end(), flags.begin(), flags.end());
    auto run = RunProgram(argv, /*capture_stderr=*/true);
    if (!run.ok()) return run.status();
    if (run->exit_code != 0) return Status::Error(EIO, "pfs-emu did not mount: " + run->err);
    return std::unique_ptr<Emulator>(new Emulator(mountpoint));
  }
  ~Emulator() {
    auto run = RunProgram({"fusermount3", "-u", mountpoint_}, true);
    if (!run.ok() || run->exit_code != 0)
      (void)RunProgram({"fusermount3", "-uz", mountpoint_}, true);
  }

 private:
  explicit Emulator(std::string mountpoint) : mountpoint_(std::move(mountpoint)) {}
  std::string mountpoint_;
};

double Seconds(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - since).count();
}

Status RemoveAll(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);
  if (ec) return Status::Error(ec.value(), "remove " + path + ": " + ec.message());
  return Status::Ok();
}

struct Verified {
  uint64_t files = 0;
  uint64_t bytes = 0;
};

// Reads every file of `files` back from its staged copy in `store` and checks it against the
// synthetic content; EIO names the first file missing or short.
Result<Verified> VerifyCopies(ContentStore* store, Env* env,
                              const std::vector<SyntheticFile>& files) {
  Verified verified;
  for (const SyntheticFile& f : files) {
    auto copy = store->Find(f.relpath, /*touch=*/false);
    if (!copy) return Status::Error(EIO, "not staged: " + f.relpath);
    std::string data;
    data.resize(f.size);
    int fd = open(copy->data_path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, "open " + copy->data_path);
    auto n = env->Pread(fd, data.data(), data.size(), 0);
    close(fd);
    if (!n.ok()) return n.status();
    if (*n != f.size) return Status::Error(EIO, "short staged copy: " + f.relpath);
    CLAIRFS_RETURN_IF_ERROR(VerifySyntheticFile(f.relpath, data));
    ++verified.files;
    verified.bytes += f.size;
  }
  return verified;
}

// Opens the cache at `cache` as a mount would (lock, index, recovery) after the process that
// staged into it has exited, and verifies every copy.
Result<Verified> VerifyCache(const std::string& cache, const std::vector<SyntheticFile>& files) {
  Env* env = Env::Default();
  CacheOpenOptions open;
  open.cache_dir = cache;
  auto opened = OpenCache(std::move(open), env);
  if (!opened.ok()) return opened.status();
  return VerifyCopies(opened->store.get(), env, files);
}

struct EngineRun {
  double seconds = 0;
  uint64_t staged_files = 0;
  uint64_t verified_files = 0;
  uint64_t verified_bytes = 0;
  uint64_t peak_buffers = 0;
  bool uring = false;
};

// Stages the tree at `source` into a fresh cache at `cache`, timed from the listing to the last
// publish, then verifies every copy against the synthetic content.
Result<EngineRun> RunEngine(const std::string& source, const std::string& cache, StageEngine engine,
                            int threads, const std::vector<SyntheticFile>& files) {
  CLAIRFS_RETURN_IF_ERROR(RemoveAll(cache));
  Env* env = Env::Default();
  EngineRun run;
  auto start = std::chrono::steady_clock::now();
  auto tree = BackingTree::Open(source, env);
  if (!tree.ok()) return tree.status();
  CacheOpenOptions open;
  open.cache_dir = cache;
  open.listing = ManifestListing::kRescan;
  open.backing = *tree;
  auto opened = OpenCache(std::move(open), env);
  if (!opened.ok()) return opened.status();
  const Manifest& manifest = *opened->manifest;
  ContentStore* store = opened->store.get();
  StagerOptions options;
  options.backing_root = source;
  options.backing = *tree;
  options.threads = threads;
  options.chunk_size = 256 * 1024;
  options.engine = engine;
  {
    Stager stager(options, store, env);
    Status listed = manifest.ForEachFile([&](const std::string& path, const NodeAttr& attr) {
      stager.Enqueue(path, attr.identity(), StagePriority::kNormal);
      return true;
    });
    CLAIRFS_RETURN_IF_ERROR(listed);
    stager.WaitIdle();
    run.seconds = Seconds(start);
    StagerStats stats = stager.stats();
    run.staged_files = stats.files_staged;
    run.peak_buffers = stats.peak_buffers_in_use;
    run.uring = stats.uring;
  }
  auto verified = VerifyCopies(store, env, files);
  if (!verified.ok()) return verified.status();
  run.verified_files = verified->files;
  run.verified_bytes = verified->bytes;
  return run;
}

struct CommandRun {
  double seconds = 0;        // the stage command, start to exit
  double mount_seconds = 0;  // `clairfs mount` until it returned (mounted runs only)
  Verified verified;
};

// `clairfs stage --offline` of the tree at `source` into a fresh cache, then verification.
Result<CommandRun> RunStageOffline(const std::string& self, const std::string& source,
                                   const std::string& cache, int threads,
                                   const std::vector<SyntheticFile>& files) {
  CLAIRFS_RETURN_IF_ERROR(RemoveAll(cache));
  CommandRun run;
  auto start = std::chrono::steady_clock::now();
  CLAIRFS_RETURN_IF_ERROR(
      RunClairfsCommand(self, {"stage", "--offline", "--backing", source, "--cache", cache,
                               "--threads", std::to_string(threads)}));
  run.seconds = Seconds(start);
  auto verified = VerifyCache(cache, files);
  if (!verified.ok()) return verified.status();
  run.verified = *verified;
  return run;
}

// `clairfs mount` of the tree at `source` on `mountpoint` with a fresh cache, then `clairfs stage
// MOUNTPOINT --wait`; unmounted (the daemon has exited) before verification.
Result<CommandRun> RunStageMounted(const std::string& self, const std::string& source,
                                   const std::string& mountpoint, const std::string& cache,
                                   int threads, const std::vector<SyntheticFile>& files) {
  CLAIRFS_RETURN_IF_ERROR(RemoveAll(cache));
  CommandRun run;
  {
    MountStack stack(self);
    auto start = std::chrono::steady_clock::now();
    CLAIRFS_RETURN_IF_ERROR(stack.MountClairfs(
        source, mountpoint, {"--cache", cache, "--stage-threads", std::to_string(threads)}));
    run.mount_seconds = Seconds(start);
    start = std::chrono::steady_clock::now();
    CLAIRFS_RETURN_IF_ERROR(RunClairfsCommand(self, {"stage", mountpoint, "--wait"}));
    run.seconds = Seconds(start);
    CLAIRFS_RETURN_IF_ERROR(stack.PopAll());
  }
  auto verified = VerifyCache(cache, files);
  if (!verified.ok()) return verified.status();
  run.verified = *verified;
  return run;
}

// Runs `argv` then `sync -f target`; returns the seconds both took.
Result<double> RunCopyTool(const std::vector<std::string>& argv, const std::string& target) {
  CLAIRFS_RETURN_IF_ERROR(RemoveAll(target));
  auto start = std::chrono::steady_clock::now();
  auto run = RunProgram(argv, true);
  if (!run.ok()) return run.status();
  if (run->exit_code != 0) return Status::Error(EIO, argv[0] + " failed: " + run->err);
  auto sync = RunProgram({"sync", "-f", target}, true);
  if (!sync.ok()) return sync.status();
  if (sync->exit_code != 0) return Status::Error(EIO, "sync -f failed: " + sync->err);
  return Seconds(start);
}

std::vector<StageEngine> EnginesOf(const std::string& name) {
  if (name == "uring") return {StageEngine::kUring};
  if (name == "threads") return {StageEngine::kThreads};
  return {StageEngine::kUring, StageEngine::kThreads};
}
const char* EngineName(StageEngine e) { return e == StageEngine::kUring ? "uring" : "threads"; }

Status Measure(const StageBenchArgs& args, const std::string& work, nlohmann::json* out) {
  const std::string small_data = work + "/small", big_data = work + "/big", mnt = work + "/mnt";
  const std::string clairfs_mnt = work + "/clairfs-mnt";
  for (const std::string& d : {mnt, clairfs_mnt}) {
    std::error_code ec;
    std::filesystem::create_directories(d, ec);
    if (ec) return Status::Error(ec.value(), "mkdir " + d);
  }
  auto self = SelfExecutable();
  if (!self.ok()) return self.status();

  SyntheticSpec small_spec;
  small_spec.layout = SyntheticLayout::kFlat;
  small_spec.files = args.files;
  auto sizes = ParseSyntheticSizes("fixed:" + args.size);
  if (!sizes.ok()) return Status::Invalid(sizes.status().message());
  small_spec.sizes = *sizes;
  auto small = PlanSyntheticDataset(small_spec);
  if (!small.ok()) return Status::Invalid(small.status().message());
  auto written = WriteSyntheticDataset(small_data, *small, SettledForMount());
  if (!written.ok()) return written.status();
  uint64_t small_bytes = 0;
  for (const auto& f : *small) small_bytes += f.size;

  char latency[32];
  snprintf(latency, sizeof(latency), "%g", args.open_latency_ms);
  const std::vector<std::string> small_flags = {"--open-latency", latency};
  const std::vector<StageEngine> engines = EnginesOf(args.engine);
  std::map<std::string, std::vector<double>> times;
  std::vector<double> mount_times;
  nlohmann::json engine_json = nlohmann::json::object();
  nlohmann::json command_json = nlohmann::json::object();
  for (int r = 0; r < args.repeat; ++r) {
    for (StageEngine engine : engines) {
      auto emu = Emulator::Mount(small_data, mnt, small_flags);
      if (!emu.ok()) return emu.status();
      auto run = RunEngine(mnt, work + "/cache", engine, args.stage_threads, *small);
      if (!run.ok()) return run.status().WithContext(std::string("engine ") + EngineName(engine));
      times[EngineName(engine)].push_back(run->seconds);
      engine_json[EngineName(engine)] = {{"verified_files", run->verified_files},
                                         {"verified_bytes", run->verified_bytes},
                                         {"staged_files", run->staged_files},
                                         {"peak_buffers_in_use", run->peak_buffers},
                                         {"uring", run->uring}};
    }
    {
      auto emu = Emulator::Mount(small_data, mnt, small_flags);
      if (!emu.ok()) return emu.status();
      auto run = RunStageOffline(*self, mnt, work + "/cache", args.stage_threads, *small);
      if (!run.ok()) return run.status().WithContext("clairfs stage --offline");
      times[kOfflineRow].push_back(run->seconds);
      command_json["offline"] = {{"verified_files", run->verified.files},
                                 {"verified_bytes", run->verified.bytes}};
    }
    {
      auto emu = Emulator::Mount(small_data, mnt, small_flags);
      if (!emu.ok()) return emu.status();
      auto run =
          RunStageMounted(*self, mnt, clairfs_mnt, work + "/cache", args.stage_threads, *small);
      if (!run.ok()) return run.status().WithContext("clairfs mount + stage --wait");
      times[kMountedRow].push_back(run->seconds);
      mount_times.push_back(run->mount_seconds);
      command_json["mounted"] = {{"verified_files", run->verified.files},
                                 {"verified_bytes", run->verified.bytes}};
    }
    {
      auto emu = Emulator::Mount(small_data, mnt, small_flags);
      if (!emu.ok()) return emu.status();
      auto t = RunCopyTool({"cp", "-r", mnt, work + "/cp"}, work + "/cp");
      if (!t.ok()) return t.status();
      times["cp -r + sync -f"].push_back(*t);
    }
    {
      auto emu = Emulator::Mount(small_data, mnt, small_flags);
      if (!emu.ok()) return emu.status();
      auto t = RunCopyTool({"rsync", "-a", mnt + "/", work + "/rsync/"}, work + "/rsync");
      if (!t.ok()) return t.status();
      times["rsync -a + sync -f"].push_back(*t);
    }
  }
  nlohmann::json small_json = {{"files", small->size()},
                               {"bytes", small_bytes},
                               {"open_latency_ms", args.open_latency_ms},
                               {"stage_threads", args.stage_threads},
                               {"repeat", args.repeat},
                               {"engines", engine_json},
                               {"commands", command_json}};
  nlohmann::json medians = nlohmann::json::object();
  for (const auto& [name, v] : times) medians[name] = Median(v);
  small_json["median_seconds"] = medians;
  small_json["seconds"] = times;
  small_json["mount_seconds"] = mount_times;
  small_json["median_mount_seconds"] = Median(mount_times);
  std::vector<double> mount_and_stage;
  for (size_t i = 0; i < mount_times.size(); ++i) {
    mount_and_stage.push_back(mount_times[i] + times[kMountedRow][i]);
  }
  small_json["median_mount_and_stage_seconds"] = Median(mount_and_stage);
  CLAIRFS_RETURN_IF_ERROR(RemoveAll(work + "/cp"));
  CLAIRFS_RETURN_IF_ERROR(RemoveAll(work + "/rsync"));

  // Large files against the emulator's bandwidth cap.
  SyntheticSpec big_spec;
  big_spec.layout = SyntheticLayout::kShards;
  auto big_sizes =
      ParseSyntheticSizes("shards:" + std::to_string(args.big_files) + "x" + args.big_size);
  if (!big_sizes.ok()) return Status::Invalid(big_sizes.status().message());
  big_spec.sizes = *big_sizes;
  auto big = PlanSyntheticDataset(big_spec);
  if (!big.ok()) return Status::Invalid(big.status().message());
  auto big_written = WriteSyntheticDataset(big_data, *big, SettledForMount());
  if (!big_written.ok()) return big_written.status();
  uint64_t big_bytes = 0;
  for (const auto& f : *big) big_bytes += f.size;
  char bandwidth[32];
  snprintf(bandwidth, sizeof(bandwidth), "%g", args.bandwidth_mbps);
  nlohmann::json big_engines = nlohmann::json::object();
  for (StageEngine engine : engines) {
    std::vector<double> v;
    EngineRun last;
    for (int r = 0; r < args.repeat; ++r) {
      auto emu = Emulator::Mount(big_data, mnt, {"--bandwidth", bandwidth});
      if (!emu.ok()) return emu.status();
      auto run = RunEngine(mnt, work + "/cache", engine, args.stage_threads, *big);
      if (!run.ok()) return run.status().WithContext(std::string("engine ") + EngineName(engine));
      v.push_back(run->seconds);
      last = *run;
    }
    double median = Median(v);
    double rate = median > 0 ? static_cast<double>(big_bytes) / median : 0;
    big_engines[EngineName(engine)] = {{"median_seconds", median},
                                       {"bytes_per_second", rate},
                                       {"fraction_of_cap", rate / (args.bandwidth_mbps * 1e6)},
                                       {"verified_files", last.verified_files},
                                       {"verified_bytes", last.verified_bytes}};
  }
  CLAIRFS_RETURN_IF_ERROR(RemoveAll(work + "/cache"));
  *out = {{"small", small_json},
          {"big",
           {{"files", big->size()},
            {"bytes", big_bytes},
            {"bandwidth_cap_mbps", args.bandwidth_mbps},
            {"engines", big_engines}}}};
  return Status::Ok();
}

void PrintStageTable(const nlohmann::json& r) {
  const auto& s = r["small"];
  uint64_t files = s["files"], bytes = s["bytes"];
  printf(
      "staging %llu files (%s) from pfs-emu --open-latency %g ms, %d files in flight, "
      "median of %d; each figure includes durability and (but for stage --wait, whose mount "
      "listed the tree) listing\n",
      static_cast<unsigned long long>(files), FormatBytes(bytes).c_str(),
      static_cast<double>(s["open_latency_ms"]), static_cast<int>(s["stage_threads"]),
      static_cast<int>(s["repeat"]));
  printf("%-24s %10s %12s %12s %10s %10s\n", "method", "seconds", "files/s", "rate", "vs cp",
         "vs rsync");
  const auto& m = s["median_seconds"];
  double cp = m.value("cp -r + sync -f", 0.0), rsync = m.value("rsync -a + sync -f", 0.0);
  for (const auto& [name, value] : m.items()) {
    double sec = value;
    printf("%-24s %10.3f %12.0f %12s %9.2fx %9.2fx\n", name.c_str(), sec, files / sec,
           FormatRate(bytes / sec).c_str(), cp / sec, rsync / sec);
  }
  const double mount_and_stage = s["median_mount_and_stage_seconds"];
  printf(
      "(%s: the command from start to exit, no mount; %s: the command on a mount made just "
      "before;\n both with %d threads)\n",
      kOfflineRow, kMountedRow, static_cast<int>(s["stage_threads"]));
  printf(
      "clairfs mount (startup, lists the tree): %.3f s; mount + stage --wait: %.3f s = %.2fx vs "
      "cp, %.2fx vs rsync\n",
      static_cast<double>(s["median_mount_seconds"]), mount_and_stage, cp / mount_and_stage,
      rsync / mount_and_stage);
  const auto& b = r["big"];
  printf("\nlarge files: %llu x %s from pfs-emu --bandwidth %g MB/s\n",
         static_cast<unsigned long long>(b["files"]),
         FormatBytes(static_cast<uint64_t>(b["bytes"]) / static_cast<uint64_t>(b["files"])).c_str(),
         static_cast<double>(b["bandwidth_cap_mbps"]));
  for (const auto& [name, e] : b["engines"].items()) {
    printf("%-24s %10.3f s %12s  %5.1f%% of the cap\n", name.c_str(),
           static_cast<double>(e["median_seconds"]),
           FormatRate(static_cast<double>(e["bytes_per_second"])).c_str(),
           100 * static_cast<double>(e["fraction_of_cap"]));
  }
}

}  // namespace

void RegisterBenchStage(CLI::App& bench) {
  auto args = std::make_shared<StageBenchArgs>();
  CLI::App* cmd = AddCommand(
      &bench, "stage",
      "Time the staging engine (io_uring and/or thread pool) and the `clairfs stage` command "
      "(--offline, and --wait on a mount) against cp -r and rsync -a of a tree served by "
      "`clairfs pfs-emu` with an open latency, durability included; then large files against "
      "the emulator's bandwidth cap");
  cmd->add_option("--dir", args->dir, "Work directory (default: a temporary one, removed after)");
  cmd->add_option("--files", args->files, "Small files (default 2000)")
      ->transform(Count(uint64_t{1}, uint64_t{10000000}));
  cmd->add_option("--size", args->size, "Size of each small file (default 110K)");
  cmd->add_option("--open-latency", args->open_latency_ms, "Emulated open latency, ms (default 2)")
      ->check(CLI::Range(0.0, 10000.0));
  cmd->add_option("--big-files", args->big_files, "Large files (default 2)")
      ->transform(Count(1, 1000));
  cmd->add_option("--big-size", args->big_size, "Size of each large file (default 256M)");
  cmd->add_option("--bandwidth", args->bandwidth_mbps,
                  "Emulator bandwidth cap for the large files, MB/s (default 400)")
      ->check(CLI::Range(1.0, 1e6));
  cmd->add_option("--stage-threads", args->stage_threads,
                  "Files staged concurrently: the engine's threads, the mount's --stage-threads "
                  "and stage --offline's --threads (default 64)")
      ->transform(Count(1, 4096));
  cmd->add_option("--engine", args->engine, "uring, threads or both (default both)")
      ->check(CLI::IsMember({"uring", "threads", "both"}));
  cmd->add_option("--repeat", args->repeat, "Repetitions; medians are reported (default 3)")
      ->transform(Count(1, 100));
  cmd->add_flag("--quick", args->quick,
                "Small and fast: 200 files, 2 x 16M large files, one repetition");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args]() {
    StageBenchArgs a = *args;
    if (a.quick) {
      a.files = std::min<uint64_t>(a.files, 200);
      a.big_size = "16M";
      a.repeat = 1;
    }
    nlohmann::json result;
    Status status;
    {
      BenchWorkDir work;
      status = work.Init(a.dir, "stage", /*keep=*/false);
      if (status.ok()) status = Measure(a, work.path(), &result);
    }
    if (!status.ok()) {
      return SetExitCode(Fail(kBenchStageCommand, status));
    }
    if (a.json) {
      printf("%s\n", result.dump().c_str());
    } else {
      PrintStageTable(result);
    }
    SetExitCode(kExitOk);
  });
}

}  // namespace clairfs::cli
