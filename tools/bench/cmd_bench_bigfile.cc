// `clairfs bench bigfile`: sequential and random 1 MiB reads of one big staged file through a
// clairfs mount vs the staged copy directly, and the first sequential read after a fresh mount.
//
// Method: one synthetic file of --size bytes in a local backing directory is mounted with
// clairfs, read once through the mount (verified; read-through stages it), and, once staging is
// idle, its copy is found in CACHE/data. Warm case: both sides are read once to warm every page
// cache, then sequential reads (read(2), 1 MiB) and random reads (pread(2) of every 1 MiB block
// in a seeded shuffled order) alternate between the copy and the mount --repeat times. Fresh
// case: the mount is unmounted and mounted again (--manifest reuse; the mount's page cache is
// gone, the copy's is warm) before each sequential read through it. Ratios are direct time /
// mount time (1.0 = as fast as the copy); medians are reported. Output: a table or --json.
// Exit codes 0, 1 failed, 2 usage. Mounts are always unmounted; the work directory is removed
// unless --keep or --dir.
#include <fcntl.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "fs/fuse/fuse_adapter.h"
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

constexpr const char* kBenchBigfileCommand = "bench bigfile";
constexpr size_t kBlock = 1 << 20;

struct BigfileArgs {
  std::string dir;
  std::string size = "1G";
  int repeat = 5;
  std::string read_mode = "pread";
  bool quick = false;
  bool keep = false;
  bool json = false;
};

using Clock = std::chrono::steady_clock;

struct Timed {
  double seconds = 0;
  uint64_t bytes = 0;
};

// Reads `path` from start to end in 1 MiB read(2) calls.
Result<Timed> ReadSequential(const std::string& path, char* buf) {
  auto start = Clock::now();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  Timed t;
  for (;;) {
    ssize_t n = read(fd, buf, kBlock);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return Status::FromErrno(err, "read " + path);
    }
    if (n == 0) break;
    t.bytes += static_cast<uint64_t>(n);
  }
  close(fd);
  t.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return t;
}

// pread(2)s of 1 MiB at each of `offsets`.
Result<Timed> ReadRandom(const std::string& path, const std::vector<uint64_t>& offsets, char* buf) {
  auto start = Clock::now();
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  Timed t;
  for (uint64_t off : offsets) {
    size_t done = 0;
    while (done < kBlock) {
      ssize_t n = pread(fd, buf + done, kBlock - done, static_cast<off_t>(off + done));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        close(fd);
        return Status::FromErrno(err, "pread " + path);
      }
      if (n == 0) break;
      done += static_cast<size_t>(n);
    }
    t.bytes += done;
  }
  close(fd);
  t.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return t;
}

// Every 1 MiB block offset of a file of `size` bytes, in a SplitMix64 Fisher-Yates order.
std::vector<uint64_t> ShuffledBlocks(uint64_t size, uint64_t seed) {
  std::vector<uint64_t> offsets;
  for (uint64_t off = 0; off < size; off += kBlock) offsets.push_back(off);
  SeededShuffle(&offsets, seed);
  return offsets;
}

nlohmann::json Pair(const std::vector<double>& direct, const std::vector<double>& mount,
                    uint64_t bytes) {
  double d = Median(direct), m = Median(mount);
  return {{"direct_seconds", d},
          {"mount_seconds", m},
          {"direct_mbps", d > 0 ? static_cast<double>(bytes) / d / 1e6 : 0.0},
          {"mount_mbps", m > 0 ? static_cast<double>(bytes) / m / 1e6 : 0.0},
          {"ratio", m > 0 ? d / m : 0.0},
          {"bytes", bytes}};
}

Status Measure(const BigfileArgs& args, nlohmann::json* out) {
  auto size = ParseSize(args.size);
  if (!size.ok()) return size.status().WithContext("--size");
  if (*size < kBlock) return Status::Invalid("--size: at least 1M");
  if (!ParseReadMode(args.read_mode).ok()) {
    return Status::Invalid("--read-mode: expected pread or splice");
  }
  auto self = SelfExecutable();
  if (!self.ok()) return self.status();
  BenchWorkDir work;
  CLAIRFS_RETURN_IF_ERROR(work.Init(args.dir, "bigfile", args.keep));
  auto backing = work.Subdir("backing");
  if (!backing.ok()) return backing.status();
  auto mnt = work.Subdir("mnt");
  if (!mnt.ok()) return mnt.status();
  const std::string cache = work.path() + "/cache";

  SyntheticSpec spec;
  spec.layout = SyntheticLayout::kShards;
  spec.sizes.kind = SyntheticSizes::Kind::kShards;
  spec.sizes.shard_count = 1;
  spec.sizes.shard_bytes = *size;
  auto files = PlanSyntheticDataset(spec);
  if (!files.ok()) return files.status();
  auto written = WriteSyntheticDataset(*backing, *files, SettledForMount());
  if (!written.ok()) return written.status();
  const std::string through = *mnt + "/" + (*files)[0].relpath;

  MountStack stack(*self);
  std::vector<std::string> flags = {"--cache", cache, "--read-mode", args.read_mode};
  CLAIRFS_RETURN_IF_ERROR(stack.MountClairfs(*backing, *mnt, flags));
  auto staged = ReadFiles(*mnt, *files, 1, /*verify=*/true);
  if (!staged.ok()) return staged.status().WithContext("first read through the mount");
  CLAIRFS_RETURN_IF_ERROR(WaitStagingIdle(*mnt));
  auto copies = ListRegularFiles(cache + "/data");
  if (!copies.ok()) return copies.status();
  if (copies->size() != 1 || (*copies)[0].size != *size) {
    return Status::Error(EIO, "expected one staged copy of " + FormatBytes(*size) + " in " + cache +
                                  "/data, found " + std::to_string(copies->size()) + " files");
  }
  const std::string copy = cache + "/data/" + (*copies)[0].relpath;

  std::unique_ptr<char[]> buf(new char[kBlock]);
  auto expect = [&](const Timed& t, const char* what) -> Status {
    if (t.bytes != *size) {
      return Status::Error(EILSEQ, std::string(what) + ": read " + std::to_string(t.bytes) +
                                       " bytes, expected " + std::to_string(*size));
    }
    return Status::Ok();
  };
  // Warm-up of both page caches.
  for (const auto* p : {&copy, &through}) {
    auto w = ReadSequential(*p, buf.get());
    if (!w.ok()) return w.status();
  }
  const std::vector<uint64_t> offsets = ShuffledBlocks(*size, 42);
  std::vector<double> seq_d, seq_m, rnd_d, rnd_m, fresh_d, fresh_m;
  for (int r = 0; r < args.repeat; ++r) {
    auto d = ReadSequential(copy, buf.get());
    if (!d.ok()) return d.status();
    CLAIRFS_RETURN_IF_ERROR(expect(*d, "sequential read of the copy"));
    auto m = ReadSequential(through, buf.get());
    if (!m.ok()) return m.status();
    CLAIRFS_RETURN_IF_ERROR(expect(*m, "sequential read through the mount"));
    seq_d.push_back(d->seconds);
    seq_m.push_back(m->seconds);
    auto rd = ReadRandom(copy, offsets, buf.get());
    if (!rd.ok()) return rd.status();
    CLAIRFS_RETURN_IF_ERROR(expect(*rd, "random read of the copy"));
    auto rm = ReadRandom(through, offsets, buf.get());
    if (!rm.ok()) return rm.status();
    CLAIRFS_RETURN_IF_ERROR(expect(*rm, "random read through the mount"));
    rnd_d.push_back(rd->seconds);
    rnd_m.push_back(rm->seconds);
  }
  auto status = MountStatus(*mnt);
  if (!status.ok()) return status.status();
  const nlohmann::json warm_status = *status;
  std::vector<std::string> reuse = flags;
  reuse.insert(reuse.end(), {"--manifest", "reuse"});
  for (int r = 0; r < args.repeat; ++r) {
    CLAIRFS_RETURN_IF_ERROR(stack.Pop());
    CLAIRFS_RETURN_IF_ERROR(stack.MountClairfs(*backing, *mnt, reuse));
    auto d = ReadSequential(copy, buf.get());
    if (!d.ok()) return d.status();
    CLAIRFS_RETURN_IF_ERROR(expect(*d, "sequential read of the copy"));
    auto m = ReadSequential(through, buf.get());
    if (!m.ok()) return m.status();
    CLAIRFS_RETURN_IF_ERROR(expect(*m, "first read after a fresh mount"));
    fresh_d.push_back(d->seconds);
    fresh_m.push_back(m->seconds);
  }
  auto fresh_status = MountStatus(*mnt);
  if (!fresh_status.ok()) return fresh_status.status();
  CLAIRFS_RETURN_IF_ERROR(stack.PopAll());
  *out = {{"size", *size},
          {"bytes_expected", *size},
          {"read_mode", args.read_mode},
          {"repeat", args.repeat},
          {"sequential", Pair(seq_d, seq_m, *size)},
          {"random", Pair(rnd_d, rnd_m, *size)},
          {"fresh_mount_sequential", Pair(fresh_d, fresh_m, *size)},
          {"hits", warm_status["hits"]},
          {"bytes_from_cache", warm_status["bytes_from_cache"]},
          {"bytes_from_backing", warm_status["bytes_from_backing"]},
          {"fresh_bytes_from_backing", (*fresh_status)["bytes_from_backing"]}};
  return Status::Ok();
}

void PrintBigfileTable(const nlohmann::json& r) {
  printf("bigfile: one staged file of %s, 1 MiB reads, read mode %s, median of %d\n",
         FormatBytes(r["size"]).c_str(), std::string(r["read_mode"]).c_str(),
         static_cast<int>(r["repeat"]));
  printf("%-42s %20s %20s %8s\n", "workload", "staged copy", "through mount", "ratio");
  auto line = [](const char* what, const nlohmann::json& p) {
    printf("%-42s %8.3f s %6.0f MB/s %8.3f s %6.0f MB/s %7.2fx\n", what,
           static_cast<double>(p["direct_seconds"]), static_cast<double>(p["direct_mbps"]),
           static_cast<double>(p["mount_seconds"]), static_cast<double>(p["mount_mbps"]),
           static_cast<double>(p["ratio"]));
  };
  line("sequential, page caches warm", r["sequential"]);
  line("random 1 MiB blocks, page caches warm", r["random"]);
  line("sequential, first read after a fresh mount", r["fresh_mount_sequential"]);
}

}  // namespace

void RegisterBenchBigfile(CLI::App& bench) {
  auto args = std::make_shared<BigfileArgs>();
  CLI::App* cmd = AddCommand(
      &bench, "bigfile",
      "Sequential and random 1 MiB reads of a big staged file through a clairfs mount vs the "
      "staged copy, warm and on a fresh mount, side by side");
  cmd->add_option("--dir", args->dir, "Work directory (default: a temporary one, removed after)");
  cmd->add_option("--size", args->size, "Size of the file (default 1G; --quick 256M)");
  cmd->add_option("--repeat", args->repeat, "Repetitions; medians are reported (default 5)")
      ->transform(Count(1, 100));
  cmd->add_option("--read-mode", args->read_mode, "Mount read mode: pread (default) or splice");
  cmd->add_flag("--quick", args->quick, "A smaller file and fewer repetitions (256M, 3 runs)");
  cmd->add_flag("--keep", args->keep, "Keep the temporary work directory");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, cmd]() {
    BigfileArgs a = *args;
    if (a.quick) {
      if (cmd->count("--size") == 0) a.size = "256M";
      if (cmd->count("--repeat") == 0) a.repeat = 3;
    }
    nlohmann::json result;
    const Status measured = Measure(a, &result);
    SetExitCode(ReportBench(kBenchBigfileCommand, measured, result, a.json, PrintBigfileTable));
  });
}

}  // namespace clairfs::cli
