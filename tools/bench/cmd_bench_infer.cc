// `clairfs bench infer`: how soon a mount given `--plan auto` adopts its reader's plan (issue 22's
// targets; docs/PLANNER.md, "Plan inference on a mount"). A tree of --files empty files in
// ImageFolder form (classes of 1000 files) is mounted with --plan auto; after --start-delay (a
// job's start-up, 5 s by default: a real one lists the dataset through the mount first) one reader
// reads rank --rank of torch-distributed:seed=--seed,world=--world, epoch 0, at --rate files per
// second (open, read, close), while a poller reads the mount's status every 20 ms until the plan is
// adopted; the reader then reads as many files again. Reported: the opens and seconds until the
// adoption was seen, the share of the rank's epoch read by then (target: under 2% at 2,000
// files/s), the search's CPU from status (targets: 1 s for seed + epoch < 2^16, 10 s up to 2^20),
// whether the adopted spec is the reader's, and the reader's open latency (median and p99) while
// the search ran beside after it (the search must not slow reads). Output: a table or --json. Exit
// codes 0, 1 failed (including no adoption within --timeout), 2 usage. The mount is always
// unmounted; the work directory is removed unless --keep or --dir (a tree already in DIR/tree is
// reused).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <memory>
#include <thread>

#include <nlohmann/json.hpp>

#include "planner/file_tree.h"
#include "planner/layout.h"
#include "planner/plan.h"
#include "tools/bench/bench_mounts.h"
#include "tools/bench/bench_support.h"
#include "tools/bench/cmd_bench.h"
#include "tools/cli/cli.h"
#include "tools/cli/subprocess.h"

namespace clairfs::cli {
namespace {

constexpr const char* kBenchInferCommand = "bench infer";
constexpr uint64_t kFilesPerClass = 1000;

struct InferArgs {
  std::string dir;
  uint64_t files = 1281167;
  uint32_t world = 8;
  uint32_t rank = 3;
  uint64_t seed = 4242;
  double rate = 2000;
  double start_delay = 5;
  double timeout = 120;
  bool quick = false;
  bool keep = false;
  bool json = false;
};

using Clock = std::chrono::steady_clock;

// root/class_CCCC/img_NNNNNNNN.jpg, empty (files already there are kept).
Status MakeTree(const std::string& root, uint64_t files) {
  for (uint64_t i = 0; i < files; ++i) {
    char name[64];
    snprintf(name, sizeof(name), "/class_%04llu",
             static_cast<unsigned long long>(i / kFilesPerClass));
    const std::string dir = root + name;
    if (i % kFilesPerClass == 0 && mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
      return Status::FromErrno(errno, "mkdir " + dir);
    }
    snprintf(name, sizeof(name), "/img_%08llu.jpg", static_cast<unsigned long long>(i));
    const std::string path = dir + name;
    const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0) return Status::FromErrno(errno, "create " + path);
    close(fd);
  }
  return Status::Ok();
}

// Opens, reads a byte of and closes `paths` in order, the i-th due at i / rate seconds; calls
// `each(i, microseconds, seconds since the start)` after each, and stops when it returns false.
Status ReadPaced(const std::vector<std::string>& paths, double rate,
                 const std::function<bool(uint64_t, double, double)>& each) {
  const auto start = Clock::now();
  for (uint64_t i = 0; i < paths.size(); ++i) {
    std::this_thread::sleep_until(start + std::chrono::duration_cast<Clock::duration>(
                                              std::chrono::duration<double>(i / rate)));
    const auto t0 = Clock::now();
    const int fd = open(paths[i].c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, paths[i]);
    char byte;
    (void)!read(fd, &byte, 1);
    close(fd);
    const auto t1 = Clock::now();
    if (!each(i, std::chrono::duration<double, std::micro>(t1 - t0).count(),
              std::chrono::duration<double>(t1 - start).count())) {
      break;
    }
  }
  return Status::Ok();
}

double Percentile(std::vector<double> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t at = std::min(values.size() - 1, static_cast<size_t>(p * (values.size() - 1)));
  return values[at];
}

Status Measure(const InferArgs& args, nlohmann::json* out) {
  if (args.files < 1000) return Status::Invalid("--files: at least 1000");
  if (args.rank >= args.world) return Status::Invalid("--rank must be below --world");
  if (args.rate <= 0) return Status::Invalid("--rate must be positive");
  auto self = SelfExecutable();
  if (!self.ok()) return self.status();
  BenchWorkDir work;
  CLAIRFS_RETURN_IF_ERROR(work.Init(args.dir, "infer", args.keep));
  auto tree = work.Subdir("tree");
  if (!tree.ok()) return tree.status();
  auto mnt = work.Subdir("mnt");
  if (!mnt.ok()) return mnt.status();
  const std::string cache = work.path() + "/cache";
  std::error_code ec;
  std::filesystem::remove_all(cache, ec);
  CLAIRFS_RETURN_IF_ERROR(MakeTree(*tree, args.files));

  // The reader's order, from the planner (what DistributedSampler gives rank --rank).
  auto layout = BuildLayout(PosixFileTreeInstance(), *tree, LayoutSpec{});
  if (!layout.ok()) return layout.status();
  const std::string spec_text = "torch-distributed:seed=" + std::to_string(args.seed) +
                                ",world=" + std::to_string(args.world);
  auto spec = ParsePlanSpec(spec_text);
  if (!spec.ok()) return spec.status();
  auto plan = Plan::Create(*spec, layout->size());
  if (!plan.ok()) return plan.status();
  auto indices = (*plan)->RankIndices(0, args.rank);
  if (!indices.ok()) return indices.status();
  std::vector<std::string> order;
  order.reserve(indices->size());
  for (uint64_t i : *indices) order.push_back(*mnt + "/" + layout->path(i));

  MountStack stack(*self);
  CLAIRFS_RETURN_IF_ERROR(
      stack.MountClairfs(*tree, *mnt, {"--cache", cache, "--capacity", "1G", "--plan", "auto"}));
  std::this_thread::sleep_for(std::chrono::duration<double>(args.start_delay));

  // The poller: the number of opens done when the adoption was first seen.
  std::atomic<uint64_t> opens{0};
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> adopted_at{0};
  nlohmann::json adopted_status;
  std::thread poller([&] {
    while (!stop.load()) {
      auto status = MountStatus(*mnt);
      if (status.ok() && (*status)["plan"].is_object() && (*status)["plan"].contains("inference") &&
          (*status)["plan"]["inference"].value("state", "") == "adopted") {
        adopted_at = std::max<uint64_t>(1, opens.load());
        adopted_status = (*status)["plan"];
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  });
  std::vector<double> during, after;
  double adopted_seconds = 0;
  Status read_error = ReadPaced(order, args.rate, [&](uint64_t i, double us, double elapsed) {
    opens.store(i + 1);
    const uint64_t seen = adopted_at.load();
    if (seen == 0) {
      during.push_back(us);
      return elapsed <= args.timeout;
    }
    if (after.empty()) adopted_seconds = elapsed;
    after.push_back(us);
    return i + 1 < 2 * seen;  // as many again after the adoption
  });
  stop = true;
  poller.join();
  CLAIRFS_RETURN_IF_ERROR(stack.PopAll());
  CLAIRFS_RETURN_IF_ERROR(read_error);
  const uint64_t at = adopted_at.load();
  if (at == 0) {
    return Status::Error(ETIMEDOUT, "no plan adopted after " + std::to_string(opens.load()) +
                                        " opens (" + std::to_string(args.timeout) + " s)");
  }

  // The same first opens through a mount that infers nothing (read-through, a fresh cache): the
  // reader's latency with no search beside it.
  std::filesystem::remove_all(cache, ec);
  CLAIRFS_RETURN_IF_ERROR(stack.MountClairfs(*tree, *mnt, {"--cache", cache, "--capacity", "1G"}));
  std::this_thread::sleep_for(std::chrono::duration<double>(args.start_delay));
  std::vector<double> plain;
  read_error = ReadPaced(order, args.rate, [&](uint64_t i, double us, double) {
    plain.push_back(us);
    return i + 1 < during.size();
  });
  CLAIRFS_RETURN_IF_ERROR(stack.PopAll());
  CLAIRFS_RETURN_IF_ERROR(read_error);
  const nlohmann::json& inference = adopted_status["inference"];
  *out = {{"files", args.files},
          {"world", args.world},
          {"rank", args.rank},
          {"seed", args.seed},
          {"rate", args.rate},
          {"start_delay_seconds", args.start_delay},
          {"rank_epoch_files", order.size()},
          {"opens_until_adopted", at},
          {"seconds_until_adopted", adopted_seconds},
          {"epoch_fraction", static_cast<double>(at) / static_cast<double>(order.size())},
          {"epoch_fraction_target", 0.02},
          {"search_cpu_seconds", inference.value("search_cpu_seconds", 0.0)},
          {"search_cpu_target_seconds", args.seed < (uint64_t{1} << 16) ? 1.0 : 10.0},
          {"trace_opens", inference.value("trace_opens", uint64_t{0})},
          {"adopted", inference["adopted"]},
          {"expected",
           spec_text + ",ranks=" + std::to_string(args.rank) + "-" + std::to_string(args.rank)},
          {"summary", inference.value("summary", "")},
          {"open_us_median_during_search", Percentile(during, 0.5)},
          {"open_us_p99_during_search", Percentile(during, 0.99)},
          {"open_us_median_after", Percentile(after, 0.5)},
          {"open_us_p99_after", Percentile(after, 0.99)},
          {"open_us_median_no_search", Percentile(plain, 0.5)},
          {"open_us_p99_no_search", Percentile(plain, 0.99)},
          {"open_median_ratio_search_vs_none",
           Percentile(plain, 0.5) > 0 ? Percentile(during, 0.5) / Percentile(plain, 0.5) : 0.0}};
  (*out)["right_plan"] = (*out)["adopted"] == (*out)["expected"];
  return Status::Ok();
}

void PrintInferTable(const nlohmann::json& r) {
  printf("infer: %llu files, rank %u of world %u (seed %llu), one reader at %.0f files/s\n",
         static_cast<unsigned long long>(r["files"]), static_cast<unsigned>(r["rank"]),
         static_cast<unsigned>(r["world"]), static_cast<unsigned long long>(r["seed"]),
         static_cast<double>(r["rate"]));
  printf("adopted               %s (%s)\n", r["adopted"].dump().c_str(),
         r["right_plan"].get<bool>() ? "the reader's plan" : "NOT the reader's plan");
  printf("                      %s\n", r.value("summary", "").c_str());
  printf("seen adopted after    %llu opens, %.2f s: %.2f%% of the rank's epoch (target < %.0f%%)\n",
         static_cast<unsigned long long>(r["opens_until_adopted"]),
         static_cast<double>(r["seconds_until_adopted"]),
         100 * static_cast<double>(r["epoch_fraction"]),
         100 * static_cast<double>(r["epoch_fraction_target"]));
  printf("search CPU            %.2f s (target %.0f s)\n",
         static_cast<double>(r["search_cpu_seconds"]),
         static_cast<double>(r["search_cpu_target_seconds"]));
  printf(
      "open+read+close       median %.0f us, p99 %.0f us while searching; %.0f us, %.0f us after\n",
      static_cast<double>(r["open_us_median_during_search"]),
      static_cast<double>(r["open_us_p99_during_search"]),
      static_cast<double>(r["open_us_median_after"]), static_cast<double>(r["open_us_p99_after"]));
  printf(
      "                      the same opens, no search (a read-through mount): median %.0f us, "
      "p99 %.0f us; median ratio %.2fx\n",
      static_cast<double>(r["open_us_median_no_search"]),
      static_cast<double>(r["open_us_p99_no_search"]),
      static_cast<double>(r["open_median_ratio_search_vs_none"]));
}

}  // namespace

void RegisterBenchInfer(CLI::App& bench) {
  auto args = std::make_shared<InferArgs>();
  CLI::App* cmd = AddCommand(
      &bench, "infer",
      "How soon a --plan auto mount adopts the plan of a torch DistributedSampler reader over N "
      "empty files, the search's CPU, and the reader's open latency while it searched beside "
      "after (issue 22)");
  cmd->add_option("--dir", args->dir,
                  "Work directory (default: a temporary one, removed after; a tree already in "
                  "DIR/tree is reused)");
  cmd->add_option("--files", args->files, "Files (default 1281167, ImageNet's training set)")
      ->transform(Count(uint64_t{1000}, uint64_t{100'000'000}));
  cmd->add_option("--world", args->world, "DistributedSampler's world size (default 8)")
      ->check(CLI::Range(1u, 1024u));
  cmd->add_option("--rank", args->rank, "The reader's rank (default 3)");
  cmd->add_option("--seed", args->seed,
                  "seed + epoch of the reader's epoch (default 4242; >= 65536 takes the full "
                  "search)");
  cmd->add_option("--rate", args->rate, "Files per second the reader opens (default 2000)")
      ->check(CLI::Range(1.0, 1e6));
  cmd->add_option("--start-delay", args->start_delay,
                  "Seconds between the mount and the first open (default 5: a job's start-up, "
                  "which for ImageFolder includes listing the whole dataset through the mount)")
      ->check(CLI::Range(0.0, 600.0));
  cmd->add_option("--timeout", args->timeout,
                  "Seconds of reading without an adoption before giving up (default 120)")
      ->check(CLI::Range(1.0, 3600.0));
  cmd->add_flag("--quick", args->quick,
                "20000 files, world 2, rank 1, 1000 files/s, 1 s start-up (the flags given win)");
  cmd->add_flag("--keep", args->keep, "Keep the temporary work directory");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->callback([args, cmd]() {
    InferArgs a = *args;
    if (a.quick) {
      if (cmd->count("--files") == 0) a.files = 20000;
      if (cmd->count("--world") == 0) a.world = 2;
      if (cmd->count("--rank") == 0) a.rank = 1;
      if (cmd->count("--rate") == 0) a.rate = 1000;
      if (cmd->count("--start-delay") == 0) a.start_delay = 1;
    }
    nlohmann::json result;
    const Status measured = Measure(a, &result);
    SetExitCode(ReportBench(kBenchInferCommand, measured, result, a.json, PrintInferTable));
  });
}

}  // namespace clairfs::cli
