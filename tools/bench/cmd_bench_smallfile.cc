// `clairfs bench smallfile`: open+read+close of many small staged files through a clairfs mount
// vs reading the staged copies directly from the cache directory, plus stat of every file and
// listing of every directory through the mount vs on the backing directory.
//
// Method: a synthetic image-folder tree of --files files of --size bytes is written to a local
// backing directory and mounted with clairfs (read-through). One verified read through the mount
// stages every file; after staging is idle, CACHE/data/** holds exactly the copies the mount
// serves. A warm-up pass reads both sides once (every page cache warm), then for each --threads
// value both sides are read alternately --repeat times and the medians compared (ratio = direct
// time / mount time, 1.0 = as fast as the copies). Each of --modes gets its own mount over the
// same cache: passthrough (the kernel reads staged copies itself; opens and releases still reach
// the daemon), pread and splice (passthrough off: the daemon serves reads the page cache misses,
// by that method). Each mode records the FUSE transport its mount used (io_uring when the
// kernel offers it: docs/FUSE-URING.md); --fuse-uring off,on measures every mode over each
// transport in one run (rows labelled MODE/dev and MODE/ring). Output: a table, or one JSON object
// with --json. Exit codes 0, 1 failed, 2 usage. Every mount is unmounted on every path; the work
// directory is removed unless --keep or --dir.
#include <dirent.h>
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <set>
#include <string_view>

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

constexpr const char* kBenchSmallfileCommand = "bench smallfile";

struct SmallfileArgs {
  std::string dir;
  uint64_t files = 6000;
  std::string size = "110K";
  std::string threads = "1,2";
  int repeat = 5;
  std::string modes = "passthrough,pread,splice";
  std::string transports = "auto";
  bool quick = false;
  bool keep = false;
  bool json = false;
};

using Clock = std::chrono::steady_clock;

// stat(2) of root/<relpath> for every file; seconds taken.
Result<double> StatAll(const std::string& root, const std::vector<SyntheticFile>& files) {
  auto start = Clock::now();
  for (const auto& f : files) {
    struct stat st {};
    std::string path = root + "/" + f.relpath;
    if (stat(path.c_str(), &st) != 0) return Status::FromErrno(errno, "stat " + path);
    if (static_cast<uint64_t>(st.st_size) != f.size) {
      return Status::Error(EILSEQ, "stat " + path + ": wrong size");
    }
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// opendir+readdir+closedir of root/<dir> for every directory; seconds taken. `entries` counts
// the names seen (without . and ..).
Result<double> ListAll(const std::string& root, const std::vector<std::string>& dirs,
                       uint64_t* entries) {
  auto start = Clock::now();
  *entries = 0;
  for (const auto& d : dirs) {
    std::string path = d.empty() ? root : root + "/" + d;
    DIR* dir = opendir(path.c_str());
    if (dir == nullptr) return Status::FromErrno(errno, "opendir " + path);
    while (dirent* e = readdir(dir)) {
      if (std::string_view(e->d_name) != "." && std::string_view(e->d_name) != "..") ++*entries;
    }
    closedir(dir);
  }
  return std::chrono::duration<double>(Clock::now() - start).count();
}

nlohmann::json Pair(const std::vector<double>& direct, const std::vector<double>& mount) {
  double d = Median(direct), m = Median(mount);
  return {{"direct_seconds", d}, {"mount_seconds", m}, {"ratio", m > 0 ? d / m : 0.0}};
}

Status Measure(const SmallfileArgs& args, nlohmann::json* out) {
  auto size = ParseSize(args.size);
  if (!size.ok()) return size.status().WithContext("--size");
  auto thread_counts = ParseIntList(args.threads, "--threads");
  if (!thread_counts.ok()) return thread_counts.status();
  // passthrough: the kernel reads the staged copies (--passthrough auto: on when the daemon may
  // have it); pread, splice: every open and (uncached) read through the daemon.
  auto parsed_modes = ParseChoiceList("--modes", args.modes, {"passthrough", "pread", "splice"});
  if (!parsed_modes.ok()) return parsed_modes.status();
  auto parsed_transports = ParseChoiceList("--fuse-uring", args.transports, {"auto", "on", "off"});
  if (!parsed_transports.ok()) return parsed_transports.status();
  // Every mode with every transport, transports outermost; a transport named only when asked.
  struct Variant {
    std::string mode, transport, label;
  };
  std::vector<Variant> variants;
  for (const std::string& transport : *parsed_transports) {
    for (const std::string& mode : *parsed_modes) {
      std::string label = mode;
      if (parsed_transports->size() > 1 || transport != "auto") {
        label += FuseUringLabel(transport);
      }
      variants.push_back({mode, transport, label});
    }
  }
  auto self = SelfExecutable();
  if (!self.ok()) return self.status();

  BenchWorkDir work;
  CLAIRFS_RETURN_IF_ERROR(work.Init(args.dir, "smallfile", args.keep));
  auto backing = work.Subdir("backing");
  if (!backing.ok()) return backing.status();
  auto mnt = work.Subdir("mnt");
  if (!mnt.ok()) return mnt.status();
  const std::string cache = work.path() + "/cache";

  SyntheticSpec spec;
  spec.files = args.files;
  spec.classes = std::max<uint64_t>(1, args.files / 100);
  spec.sizes.kind = SyntheticSizes::Kind::kFixed;
  spec.sizes.fixed_bytes = *size;
  auto files = PlanSyntheticDataset(spec);
  if (!files.ok()) return files.status();
  auto written = WriteSyntheticDataset(*backing, *files, {});
  if (!written.ok()) return written.status();
  const uint64_t expected = TotalSize(*files);
  std::set<std::string> dir_set = {""};
  for (const auto& f : *files) {
    auto slash = f.relpath.rfind('/');
    if (slash != std::string::npos) dir_set.insert(f.relpath.substr(0, slash));
  }
  const std::vector<std::string> dirs(dir_set.begin(), dir_set.end());

  auto check_bytes = [&](const ReadResult& r, const char* what) -> Status {
    if (r.bytes != expected) {
      return Status::Error(EILSEQ, std::string(what) + ": read " + std::to_string(r.bytes) +
                                       " bytes, expected " + std::to_string(expected));
    }
    return Status::Ok();
  };

  nlohmann::json mode_results = nlohmann::json::array();
  MountStack stack(*self);
  for (size_t m = 0; m < variants.size(); ++m) {
    const Variant& variant = variants[m];
    std::vector<std::string> flags = {"--cache", cache, "--fuse-uring", variant.transport};
    if (variant.mode == "passthrough") {
      flags.insert(flags.end(), {"--passthrough", "auto"});
    } else {
      flags.insert(flags.end(), {"--passthrough", "off", "--read-mode", variant.mode});
    }
    if (m > 0) flags.insert(flags.end(), {"--manifest", "reuse"});
    CLAIRFS_RETURN_IF_ERROR(stack.MountClairfs(*backing, *mnt, flags));
    if (m == 0) {
      // Stage everything: one verified read, then wait for read-through staging to finish.
      auto staged = ReadFiles(*mnt, *files, 2, /*verify=*/true);
      if (!staged.ok()) return staged.status().WithContext("first read through the mount");
      CLAIRFS_RETURN_IF_ERROR(WaitStagingIdle(*mnt));
    }
    auto copies = ListRegularFiles(cache + "/data");
    if (!copies.ok()) return copies.status();
    if (copies->size() != files->size() || TotalSize(*copies) != expected) {
      return Status::Error(EIO, "the cache holds " + std::to_string(copies->size()) +
                                    " copies of " + FormatBytes(TotalSize(*copies)) +
                                    ", expected " + std::to_string(files->size()) + " of " +
                                    FormatBytes(expected));
    }
    // Warm-up: every page cache (the copies' and the mount's) holds what is read below.
    auto warm_mount = ReadFiles(*mnt, *files, 2, /*verify=*/true);
    if (!warm_mount.ok()) return warm_mount.status().WithContext("warm-up through the mount");
    auto warm_direct = ReadFiles(cache + "/data", *copies, 2, false);
    if (!warm_direct.ok()) return warm_direct.status();

    nlohmann::json reads = nlohmann::json::array();
    for (int threads : *thread_counts) {
      std::vector<double> direct, mount;
      for (int r = 0; r < args.repeat; ++r) {
        auto d = ReadFiles(cache + "/data", *copies, threads, false);
        if (!d.ok()) return d.status();
        CLAIRFS_RETURN_IF_ERROR(check_bytes(*d, "direct read of the copies"));
        auto t = ReadFiles(*mnt, *files, threads, false);
        if (!t.ok()) return t.status();
        CLAIRFS_RETURN_IF_ERROR(check_bytes(*t, "read through the mount"));
        direct.push_back(d->seconds);
        mount.push_back(t->seconds);
      }
      nlohmann::json row = Pair(direct, mount);
      row["threads"] = threads;
      row["direct_bytes"] = expected;
      row["mount_bytes"] = expected;
      reads.push_back(row);
    }
    std::vector<double> stat_direct, stat_mount, list_direct, list_mount;
    uint64_t entries_direct = 0, entries_mount = 0;
    for (int r = 0; r < args.repeat; ++r) {
      auto sd = StatAll(*backing, *files);
      if (!sd.ok()) return sd.status();
      auto sm = StatAll(*mnt, *files);
      if (!sm.ok()) return sm.status();
      auto ld = ListAll(*backing, dirs, &entries_direct);
      if (!ld.ok()) return ld.status();
      auto lm = ListAll(*mnt, dirs, &entries_mount);
      if (!lm.ok()) return lm.status();
      stat_direct.push_back(*sd);
      stat_mount.push_back(*sm);
      list_direct.push_back(*ld);
      list_mount.push_back(*lm);
    }
    if (entries_direct != entries_mount) {
      return Status::Error(EILSEQ, "listing through the mount saw " +
                                       std::to_string(entries_mount) + " entries, the backing " +
                                       std::to_string(entries_direct));
    }
    auto status = MountStatus(*mnt);
    if (!status.ok()) return status.status();
    nlohmann::json result = {{"read_mode", variant.mode},
                             {"fuse_uring", variant.transport},
                             {"label", variant.label},
                             {"passthrough", (*status)["passthrough"]},
                             {"fuse_transport", status->value("fuse_transport", nlohmann::json())},
                             {"held_copy_opens", (*status)["held_copy_opens"]},
                             {"read", reads},
                             {"stat", Pair(stat_direct, stat_mount)},
                             {"list", Pair(list_direct, list_mount)},
                             {"list_entries", entries_mount},
                             {"hits", (*status)["hits"]},
                             {"misses", (*status)["misses"]},
                             {"opens", (*status)["opens"]},
                             {"bytes_from_cache", (*status)["bytes_from_cache"]},
                             {"bytes_from_backing", (*status)["bytes_from_backing"]},
                             {"staged_files", (*status)["staged_files"]}};
    mode_results.push_back(result);
    CLAIRFS_RETURN_IF_ERROR(stack.Pop());
  }
  *out = {{"files", files->size()},     {"file_size", *size},    {"directories", dirs.size()},
          {"bytes_expected", expected}, {"repeat", args.repeat}, {"modes", mode_results}};
  return Status::Ok();
}

void PrintSmallfileTable(const nlohmann::json& r) {
  printf("smallfile: %llu staged files of %s, open+read+close, page caches warm, median of %d\n",
         static_cast<unsigned long long>(r["files"]), FormatBytes(r["file_size"]).c_str(),
         static_cast<int>(r["repeat"]));
  printf("%-17s %-22s %12s %12s %8s\n", "mode", "workload", "direct", "through mount", "ratio");
  for (const auto& m : r["modes"]) {
    const std::string mode = m.value("label", m.value("read_mode", ""));
    if (m.value("read_mode", "") == "passthrough" &&
        m["passthrough"].value("state", "off") != "on") {
      printf("(passthrough unavailable: %s; the passthrough rows read through the daemon)\n",
             m["passthrough"].value("reason", std::string("?")).c_str());
    }
    auto line = [&](const std::string& what, const nlohmann::json& p) {
      printf("%-17s %-22s %10.3f s %10.3f s %7.2fx\n", mode.c_str(), what.c_str(),
             static_cast<double>(p["direct_seconds"]), static_cast<double>(p["mount_seconds"]),
             static_cast<double>(p["ratio"]));
    };
    if (m.contains("fuse_transport") && m["fuse_transport"].is_object()) {
      printf("(%s: requests over %s)\n", mode.c_str(),
             m["fuse_transport"].value("state", "") == "io_uring" ? "io_uring" : "/dev/fuse");
    }
    for (const auto& row : m["read"]) {
      line("read, " + std::to_string(static_cast<int>(row["threads"])) + " thread(s)", row);
    }
    line("stat every file", m["stat"]);
    line("list every directory", m["list"]);
  }
  printf(
      "(read: direct = the staged copies in CACHE/data; stat, list: direct = the backing "
      "directory)\n");
}

}  // namespace

void RegisterBenchSmallfile(CLI::App& bench) {
  auto args = std::make_shared<SmallfileArgs>();
  CLI::App* cmd = AddCommand(
      &bench, "smallfile",
      "Open+read+close of small staged files through a clairfs mount vs the staged copies, and "
      "stat/listing through the mount vs the backing directory, side by side");
  cmd->add_option("--dir", args->dir, "Work directory (default: a temporary one, removed after)");
  cmd->add_option("--files", args->files, "Files (default 6000; --quick 1000)")
      ->transform(Count(1, kMaxSyntheticFiles));
  cmd->add_option("--size", args->size, "Size of each file (default 110K)");
  cmd->add_option("--threads", args->threads, "Reader thread counts, e.g. 1,2 (default 1,2)");
  cmd->add_option("--repeat", args->repeat, "Repetitions; medians are reported (default 5)")
      ->transform(Count(1, 100));
  cmd->add_option("--modes", args->modes,
                  "Mounts to measure, in order: passthrough (kernel passthrough for staged "
                  "files, when available), pread and splice (passthrough off: every read that "
                  "misses the page cache goes through the daemon by that method); default all");
  cmd->add_option("--fuse-uring", args->transports, kFuseUringListHelp);
  cmd->add_flag("--quick", args->quick, "Fewer files and repetitions (1000 files, 3 runs)");
  cmd->add_flag("--keep", args->keep, "Keep the temporary work directory");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, cmd]() {
    SmallfileArgs a = *args;
    if (a.quick) {
      if (cmd->count("--files") == 0) a.files = 1000;
      if (cmd->count("--repeat") == 0) a.repeat = 3;
    }
    nlohmann::json result;
    const Status measured = Measure(a, &result);
    SetExitCode(ReportBench(kBenchSmallfileCommand, measured, result, a.json, PrintSmallfileTable));
  });
}

}  // namespace clairfs::cli
