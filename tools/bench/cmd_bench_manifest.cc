// `clairfs bench manifest`: what a big namespace costs the daemon. A tree of --entries empty
// files (directories of 1000) is mounted; the mount time (the daemon lists the tree into its
// manifest before `clairfs mount` returns), the stat rate of every entry through the mount with
// --threads threads (vs the same on the backing directory), the daemon's resident memory
// (VmRSS) and open file descriptors (/proc/PID; pid from `status`) after mounting and after the
// stats are reported; then the mount is unmounted and mounted again with --manifest reuse and
// that mount time reported too. Output: a table or --json. Exit codes 0, 1 failed, 2 usage.
// Mounts are always unmounted; the work directory is removed unless --keep or --dir (a tree
// already present in --dir is reused).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "planner/base/units.h"
#include "tools/bench/bench_mounts.h"
#include "tools/bench/bench_support.h"
#include "tools/bench/cmd_bench.h"
#include "tools/cli/cli.h"
#include "tools/cli/subprocess.h"

namespace clairfs::cli {
namespace {

constexpr const char* kBenchManifestCommand = "bench manifest";
constexpr uint64_t kFilesPerDir = 1000;

struct ManifestArgs {
  std::string dir;
  uint64_t entries = 1000000;
  int threads = 4;
  bool quick = false;
  bool keep = false;
  bool json = false;
};

using Clock = std::chrono::steady_clock;

std::string EntryPath(uint64_t i) {
  char name[64];
  snprintf(name, sizeof(name), "d%05llu/f%07llu", static_cast<unsigned long long>(i / kFilesPerDir),
           static_cast<unsigned long long>(i));
  return name;
}

// Runs fn(i) for i in [0, n) on `threads` threads; the first error wins.
Status ParallelFor(uint64_t n, int threads, const std::function<Status(uint64_t)>& fn) {
  std::atomic<uint64_t> next{0};
  std::atomic<bool> failed{false};
  std::vector<Status> errors(static_cast<size_t>(threads));
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      for (uint64_t i = next++; i < n && !failed.load(); i = next++) {
        Status st = fn(i);
        if (!st.ok()) {
          errors[static_cast<size_t>(t)] = st;
          failed = true;
        }
      }
    });
  }
  for (auto& th : pool) th.join();
  for (auto& st : errors) {
    if (!st.ok()) return st;
  }
  return Status::Ok();
}

// Creates root/dDDDDD/fFFFFFFF for every entry (keeps what exists).
Status MakeManifestTree(const std::string& root, uint64_t entries) {
  const uint64_t dirs = (entries + kFilesPerDir - 1) / kFilesPerDir;
  for (uint64_t d = 0; d < dirs; ++d) {
    std::string dir = root + "/" + EntryPath(d * kFilesPerDir).substr(0, 6);
    if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::FromErrno(errno, "mkdir " + dir);
    }
  }
  return ParallelFor(entries, 2, [&](uint64_t i) {
    std::string path = root + "/" + EntryPath(i);
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Status::FromErrno(errno, "create " + path);
    close(fd);
    return Status::Ok();
  });
}

// stat(2) of every entry with `threads` threads; seconds.
Result<double> StatEntries(const std::string& root, uint64_t entries, int threads) {
  auto start = Clock::now();
  Status st = ParallelFor(entries, threads, [&](uint64_t i) {
    struct stat s {};
    std::string path = root + "/" + EntryPath(i);
    if (stat(path.c_str(), &s) != 0) return Status::FromErrno(errno, "stat " + path);
    return Status::Ok();
  });
  if (!st.ok()) return st;
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Result<nlohmann::json> DaemonStats(const std::string& mnt) {
  auto status = MountStatus(mnt);
  if (!status.ok()) return status.status();
  pid_t pid = (*status)["pid"];
  auto stats = ReadProcessStats(pid);
  if (!stats.ok()) return stats.status();
  return nlohmann::json{{"pid", pid},
                        {"rss_bytes", stats->rss_bytes},
                        {"open_fds", stats->open_fds},
                        {"dataset_files", (*status)["dataset_files"]}};
}

// Runs `clairfs mount` and returns how long it took to return (the mount serves by then).
Result<double> TimedMount(MountStack* stack, const std::string& backing, const std::string& mnt,
                          const std::vector<std::string>& flags) {
  auto start = Clock::now();
  CLAIRFS_RETURN_IF_ERROR(stack->MountClairfs(backing, mnt, flags));
  return std::chrono::duration<double>(Clock::now() - start).count();
}

Status Measure(const ManifestArgs& args, nlohmann::json* out) {
  if (args.entries < 1) return Status::Invalid("--entries: at least 1");
  auto self = SelfExecutable();
  if (!self.ok()) return self.status();
  BenchWorkDir work;
  CLAIRFS_RETURN_IF_ERROR(work.Init(args.dir, "manifest", args.keep));
  auto backing = work.Subdir("tree");
  if (!backing.ok()) return backing.status();
  auto mnt = work.Subdir("mnt");
  if (!mnt.ok()) return mnt.status();
  const std::string cache = work.path() + "/cache";
  std::error_code ec;
  std::filesystem::remove_all(cache, ec);  // a kept cache would turn the rescan into a reuse

  auto made = Clock::now();
  CLAIRFS_RETURN_IF_ERROR(MakeManifestTree(*backing, args.entries));
  double make_seconds = std::chrono::duration<double>(Clock::now() - made).count();
  // The backing directory once, so its inodes and dentries are in memory for both sides.
  auto warm = StatEntries(*backing, args.entries, args.threads);
  if (!warm.ok()) return warm.status();
  auto direct = StatEntries(*backing, args.entries, args.threads);
  if (!direct.ok()) return direct.status();

  MountStack stack(*self);
  const std::vector<std::string> flags = {"--cache", cache};
  auto mount_seconds = TimedMount(&stack, *backing, *mnt, flags);
  if (!mount_seconds.ok()) return mount_seconds.status();
  auto after_mount = DaemonStats(*mnt);
  if (!after_mount.ok()) return after_mount.status();
  auto first = StatEntries(*mnt, args.entries, args.threads);
  if (!first.ok()) return first.status();
  auto second = StatEntries(*mnt, args.entries, args.threads);
  if (!second.ok()) return second.status();
  auto after_stat = DaemonStats(*mnt);
  if (!after_stat.ok()) return after_stat.status();
  CLAIRFS_RETURN_IF_ERROR(stack.Pop());

  std::vector<std::string> reuse = flags;
  reuse.insert(reuse.end(), {"--manifest", "reuse"});
  auto reuse_seconds = TimedMount(&stack, *backing, *mnt, reuse);
  if (!reuse_seconds.ok()) return reuse_seconds.status();
  auto after_reuse = DaemonStats(*mnt);
  if (!after_reuse.ok()) return after_reuse.status();
  auto reuse_stat = StatEntries(*mnt, args.entries, args.threads);
  if (!reuse_stat.ok()) return reuse_stat.status();
  CLAIRFS_RETURN_IF_ERROR(stack.PopAll());

  const double n = static_cast<double>(args.entries);
  auto rate = [n](double s) { return s > 0 ? n / s : 0.0; };
  *out = {{"entries", args.entries},
          {"directories", (args.entries + kFilesPerDir - 1) / kFilesPerDir},
          {"threads", args.threads},
          {"make_tree_seconds", make_seconds},
          {"mount_seconds", *mount_seconds},
          {"reuse_mount_seconds", *reuse_seconds},
          {"stat_direct_per_second", rate(*direct)},
          {"stat_first_per_second", rate(*first)},
          {"stat_second_per_second", rate(*second)},
          {"stat_after_reuse_per_second", rate(*reuse_stat)},
          {"after_mount", *after_mount},
          {"after_stat", *after_stat},
          {"after_reuse_mount", *after_reuse},
          {"rss_bytes", (*after_stat)["rss_bytes"]},
          {"open_fds", (*after_stat)["open_fds"]}};
  return Status::Ok();
}

void PrintManifestTable(const nlohmann::json& r) {
  printf("manifest: %llu empty files in %llu directories, stat with %d threads\n",
         static_cast<unsigned long long>(r["entries"]),
         static_cast<unsigned long long>(r["directories"]), static_cast<int>(r["threads"]));
  printf("mount (lists the tree into the manifest)   %8.2f s\n",
         static_cast<double>(r["mount_seconds"]));
  printf("mount again with --manifest reuse          %8.2f s\n",
         static_cast<double>(r["reuse_mount_seconds"]));
  printf("stat every entry: backing directory        %10.0f /s\n",
         static_cast<double>(r["stat_direct_per_second"]));
  printf("stat every entry: mount, first pass        %10.0f /s\n",
         static_cast<double>(r["stat_first_per_second"]));
  printf("stat every entry: mount, second pass       %10.0f /s\n",
         static_cast<double>(r["stat_second_per_second"]));
  printf("stat every entry: after the reuse mount    %10.0f /s\n",
         static_cast<double>(r["stat_after_reuse_per_second"]));
  for (const char* when : {"after_mount", "after_stat", "after_reuse_mount"}) {
    printf("daemon %-18s RSS %10s, %llu open fds\n", when,
           FormatBytes(r[when]["rss_bytes"]).c_str(),
           static_cast<unsigned long long>(r[when]["open_fds"]));
  }
}

}  // namespace

void RegisterBenchManifest(CLI::App& bench) {
  auto args = std::make_shared<ManifestArgs>();
  CLI::App* cmd = AddCommand(
      &bench, "manifest",
      "Daemon memory, open fds, mount time and stat rate for a tree of N empty files, and the "
      "mount time with --manifest reuse");
  cmd->add_option("--dir", args->dir,
                  "Work directory (default: a temporary one, removed after; a tree already in "
                  "DIR/tree is reused)");
  cmd->add_option("--entries", args->entries, "Files (default 1000000; --quick 20000)")
      ->transform(Count(uint64_t{1}, uint64_t{100'000'000}));
  cmd->add_option("--threads", args->threads, "Stat threads (default 4)")->transform(Count(1, 256));
  cmd->add_flag("--quick", args->quick, "20000 entries");
  cmd->add_flag("--keep", args->keep, "Keep the temporary work directory");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, cmd]() {
    ManifestArgs a = *args;
    if (a.quick && cmd->count("--entries") == 0) a.entries = 20000;
    nlohmann::json result;
    const Status measured = Measure(a, &result);
    SetExitCode(ReportBench(kBenchManifestCommand, measured, result, a.json, PrintManifestTable));
  });
}

}  // namespace clairfs::cli
