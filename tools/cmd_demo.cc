// `clairfs demo`: the quick start's main job, end to end on a small built-in dataset.
//
// Generates a deterministic image-folder dataset, puts it behind the PFS emulator (2 ms per open,
// 200 MB/s: a busy parallel filesystem), mounts clairfs over it with the cache in a temporary
// directory, reads one epoch in a seeded shuffled order (read-through stages what it reads),
// unmounts and mounts again (so the mount's kernel page cache is gone), reads a second epoch, and
// prints per epoch the time and the bytes served from the local cache vs the backing store. Every
// byte read is verified. Everything it mounted is unmounted on every exit path; the directory is
// removed unless --keep.
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <memory>

#include "planner/base/units.h"
#include "planner/synthetic_dataset.h"
#include "tools/bench/bench_mounts.h"
#include "tools/bench/bench_support.h"
#include "tools/bench/dataset_writer.h"
#include "tools/bench/read_workload.h"
#include "tools/cli/cli.h"
#include "tools/cli/interrupt_cleanup.h"
#include "tools/cli/progress_meter.h"
#include "tools/cli/subprocess.h"
#include "tools/commands.h"

namespace clairfs::cli {
namespace {

struct DemoArgs {
  std::string dir;
  uint64_t files = 2000;
  uint64_t seed = 42;
  int threads = 4;
  bool keep = false;
  bool no_emulation = false;
};

// A seeded Fisher-Yates shuffle on SplitMix64 (deterministic on every platform).
std::vector<SyntheticFile> Shuffled(std::vector<SyntheticFile> files, uint64_t seed) {
  SeededShuffle(&files, seed);
  return files;
}

struct EpochRow {
  double seconds;
  uint64_t files, bytes, from_cache, from_backing, hits, opens;
};

Result<EpochRow> RunEpoch(const std::string& mnt, const std::vector<SyntheticFile>& order,
                          int threads) {
  auto read = ReadFiles(mnt, order, threads, /*verify=*/true);
  if (!read.ok()) return read.status();
  auto s = MountStatus(mnt);
  if (!s.ok()) return s.status();
  return EpochRow{read->seconds,
                  read->files,
                  read->bytes,
                  s->value("bytes_from_cache", uint64_t{0}),
                  s->value("bytes_from_backing", uint64_t{0}),
                  s->value("hits", uint64_t{0}),
                  s->value("opens", uint64_t{0})};
}

int RunDemo(const DemoArgs& a) {
  auto self = SelfExecutable();
  if (!self.ok()) return Fail("demo", self.status());
  namespace fsys = std::filesystem;
  std::string root = a.dir;
  bool made_root = false;
  if (root.empty()) {
    char templ[] = "/tmp/clairfs-demo-XXXXXX";
    if (mkdtemp(templ) == nullptr) return Fail("demo", Status::FromErrno(errno, "mkdtemp"));
    root = templ;
    made_root = true;
    if (!a.keep) RegisterDirectoryForCleanup(root);  // removed also when interrupted
  }
  const std::string dataset = root + "/dataset", pfs = root + "/pfs", mnt = root + "/mnt",
                    cache = root + "/cache";
  std::error_code ec;
  for (const auto& d : {pfs, mnt}) fsys::create_directories(d, ec);

  SyntheticSpec spec;
  spec.layout = SyntheticLayout::kImageFolder;
  spec.files = a.files;
  spec.classes = std::max<uint64_t>(1, a.files / 100);
  spec.seed = a.seed;
  auto files = PlanSyntheticDataset(spec);
  if (!files.ok()) return Fail("demo", files.status());
  printf("clairfs demo in %s\n", root.c_str());
  printf("1. dataset: %llu files in %llu classes, %s (median %s), imagefolder layout\n",
         static_cast<unsigned long long>(files->size()),
         static_cast<unsigned long long>(spec.classes), FormatBytes(TotalSize(*files)).c_str(),
         FormatBytes(MedianSize(*files)).c_str());
  fflush(stdout);
  {
    ProgressMeter meter("writing", files->size(), TotalSize(*files), StderrIsTerminal());
    DatasetWriteOptions wo = SettledForMount();
    wo.progress = [&](uint64_t f, uint64_t b) { meter.Update(f, b); };
    auto written = WriteSyntheticDataset(dataset, *files, wo);
    meter.Finish();
    if (!written.ok()) return Fail("demo", written.status());
  }

  int rc = kExitOk;
  {
    MountStack stack(*self);
    std::string backing = dataset;
    if (!a.no_emulation) {
      Status st = stack.MountEmulator(dataset, pfs, {"--open-latency", "2", "--bandwidth", "200"});
      if (!st.ok()) return Fail("demo", st);
      backing = pfs;
      printf("2. backing store: the dataset behind the PFS emulator (2 ms per open, 200 MB/s)\n");
    } else {
      printf("2. backing store: the dataset directory itself (no emulation)\n");
    }
    const std::vector<std::string> mount_flags = {"--cache", cache};
    Status st = stack.MountClairfs(backing, mnt, mount_flags);
    if (!st.ok()) return Fail("demo", st);
    printf("3. mounted clairfs at %s (cache %s)\n", mnt.c_str(), cache.c_str());
    std::vector<EpochRow> rows;
    for (int epoch = 1; epoch <= 2; ++epoch) {
      printf("   epoch %d: reading %llu files in a seeded shuffled order with %d threads...\n",
             epoch, static_cast<unsigned long long>(files->size()), a.threads);
      fflush(stdout);
      auto row = RunEpoch(mnt, Shuffled(*files, a.seed + static_cast<uint64_t>(epoch)), a.threads);
      if (!row.ok()) return Fail("demo", row.status());
      rows.push_back(*row);
      if (epoch == 1) {
        // Let read-through staging finish, then remount: the mount's page cache is gone.
        st = WaitStagingIdle(mnt);
        if (st.ok()) st = stack.Pop();
        if (st.ok()) st = stack.MountClairfs(backing, mnt, mount_flags);
        if (!st.ok()) return Fail("demo", st);
        printf("   staged, unmounted and mounted again\n");
      }
    }
    printf("\n%-6s %10s %12s %14s %14s %12s\n", "epoch", "time", "MB/s", "from cache",
           "from backing", "hits/opens");
    for (size_t i = 0; i < rows.size(); ++i) {
      const EpochRow& r = rows[i];
      printf("%-6zu %9.2fs %12.1f %14s %14s %6llu/%-6llu\n", i + 1, r.seconds,
             r.seconds > 0 ? static_cast<double>(r.bytes) / r.seconds / 1e6 : 0.0,
             FormatBytes(r.from_cache).c_str(), FormatBytes(r.from_backing).c_str(),
             static_cast<unsigned long long>(r.hits), static_cast<unsigned long long>(r.opens));
    }
    if (rows.size() == 2 && rows[1].seconds > 0) {
      printf("\nepoch 2 took %.2fx less time than epoch 1; every byte read was verified.\n",
             rows[0].seconds / rows[1].seconds);
    }
    printf("(counters count what reaches the daemon; the kernel page cache serves the rest)\n");
    // Unmount everything now so a failure is reported (the destructor only cleans up).
    Status unmounted = stack.PopAll();
    if (!unmounted.ok()) rc = Fail("demo", unmounted);
  }
  if (made_root && !a.keep) {
    fsys::remove_all(root, ec);
    UnregisterDirectoryForCleanup(root);
  } else {
    printf("kept %s\n", root.c_str());
  }
  return rc;
}

}  // namespace

void RegisterDemo(CLI::App& app) {
  auto args = std::make_shared<DemoArgs>();
  CLI::App* cmd = AddCommand(
      &app, "demo",
      "Run clairfs end to end on a small generated dataset: two epochs through a mount over an\n"
      "emulated parallel filesystem, with per-epoch time and bytes from cache vs backing store.");
  cmd->add_option("--dir", args->dir, "Work directory (default: a new /tmp/clairfs-demo-*)");
  cmd->add_option("--files", args->files, "Files in the dataset (default 2000)")
      ->transform(Count(1, kMaxSyntheticFiles));
  cmd->add_option("--seed", args->seed, "Seed of the dataset and the shuffles (default 42)")
      ->transform(Count(0, UINT64_MAX));
  cmd->add_option("--threads", args->threads, "Reader threads (default 4)")
      ->transform(Count(1, 256));
  cmd->add_flag("--keep", args->keep, "Keep the work directory");
  cmd->add_flag("--no-emulation", args->no_emulation,
                "Read the dataset directory directly instead of through the PFS emulator");
  cmd->callback([args]() { SetExitCode(RunDemo(*args)); });
}

}  // namespace clairfs::cli
