// `clairfs plan detect --backing DIR [--layout L] [--layout-root D] (--trace FILE | --darshan
// LOG...) [--json]`: which plan a recorded list of opens follows (planner/inference;
// docs/PLANNER.md, "Plan inference").
//
// The trace is one opened path per line, relative to the backing root or to the layout root (or
// absolute under the backing root), as escaped names (planner/base/name_escape.h, what `plan
// show` prints); with a leading pid column ("PID PATH" on every line) each pid is one reader.
// Empty lines and lines starting with '#' are skipped; paths outside the dataset are counted and
// ignored. `--trace -` reads stdin. Absolute paths match by their trailing components.
// `--darshan` takes Darshan logs' DXT_POSIX traces instead (ReadDarshanTrace).
//
// Contract: reads the backing tree (to build the layout) and the trace, never anything else.
// Exit codes: 0 a plan was adopted (spec, epoch and rank printed); 1 none was (the reason
// printed), or the tree or trace could not be read; 2 bad arguments.
#include <sys/stat.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/base/log.h"
#include "planner/base/name_escape.h"
#include "planner/darshan/darshan_reader.h"
#include "planner/file_tree.h"
#include "planner/inference/plan_inference.h"
#include "planner/layout.h"
#include "tools/cli/cli.h"
#include "tools/commands.h"

namespace clairfs::cli {
namespace {

const char* const kPlanDetectCommand = "plan detect";

struct PlanDetectOptions {
  std::string backing;
  std::string layout = "imagefolder";
  std::string layout_root;
  std::string trace;
  std::vector<std::string> darshan;  // --darshan LOG...: DXT_POSIX traces instead of --trace
  uint64_t window = 256;
  uint64_t max_world = 1024;
  uint64_t max_seed = uint64_t{1} << 20;
  uint64_t threads = 0;  // 0: DefaultSearchThreads()
  bool json = false;
};

struct Trace {
  std::vector<Observation> observations;
  uint64_t lines = 0;
  uint64_t not_in_dataset = 0;
  bool pids = false;
};

// Maps a traced path to its sample: relative to the backing root or the layout root, or absolute.
// An absolute path is matched by its trailing components (the job may have read the dataset
// through a mount point, not the backing root): the longest suffix that is a dataset path.
class PathMatcher {
 public:
  PathMatcher(const Layout& layout, const std::string& backing, const std::string& layout_root)
      : layout_root_(layout_root) {
    index_of_.reserve(layout.size() * 2);
    for (uint64_t i = 0; i < layout.size(); ++i) index_of_.emplace(layout.path(i), i);
    backing_prefix_ = backing;
    while (backing_prefix_.size() > 1 && backing_prefix_.back() == '/') backing_prefix_.pop_back();
    backing_prefix_ += '/';
  }

  std::optional<uint64_t> Find(std::string p) const {
    if (p.compare(0, backing_prefix_.size(), backing_prefix_) == 0)
      p.erase(0, backing_prefix_.size());
    if (auto found = Relative(p)) return found;
    if (p.empty() || p[0] != '/') return std::nullopt;
    for (size_t slash = p.find('/', 1); slash != std::string::npos;
         slash = p.find('/', slash + 1)) {
      if (auto found = Relative(p.substr(slash + 1))) return found;
    }
    return std::nullopt;
  }

 private:
  std::optional<uint64_t> Relative(const std::string& p) const {
    auto it = index_of_.find(p);
    if (it == index_of_.end() && !layout_root_.empty()) it = index_of_.find(layout_root_ + "/" + p);
    if (it == index_of_.end()) return std::nullopt;
    return it->second;
  }

  std::string layout_root_;
  std::string backing_prefix_;
  std::unordered_map<std::string, uint64_t> index_of_;
};

bool IsPidLine(const std::string& line) {
  size_t i = 0;
  while (i < line.size() && line[i] >= '0' && line[i] <= '9') ++i;
  return i > 0 && i < 20 && i + 1 < line.size() && (line[i] == ' ' || line[i] == '\t');
}

Result<Trace> ReadTrace(const PlanDetectOptions& options, const Layout& layout,
                        const std::string& layout_root) {
  std::ifstream file;
  std::istream* in = &std::cin;
  if (options.trace != "-") {
    struct stat st;
    if (stat(options.trace.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
      return Status::FromErrno(EISDIR, options.trace);
    }
    file.open(options.trace);
    if (!file) return Status::FromErrno(errno, options.trace);
    in = &file;
  }
  std::vector<std::string> lines;
  std::string line;
  while (std::getline(*in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    lines.push_back(std::move(line));
  }
  if (in->bad()) return Status::FromErrno(EIO, options.trace);

  Trace trace;
  trace.lines = lines.size();
  trace.pids = !lines.empty();
  for (const std::string& l : lines) {
    if (!IsPidLine(l)) {
      trace.pids = false;
      break;
    }
  }
  const PathMatcher matcher(layout, options.backing, layout_root);

  for (size_t n = 0; n < lines.size(); ++n) {
    const std::string& l = lines[n];
    uint64_t pid = 0;
    std::string_view path = l;
    if (trace.pids) {
      size_t space = l.find_first_of(" \t");
      pid = std::stoull(l.substr(0, space));
      size_t start = l.find_first_not_of(" \t", space);
      path = std::string_view(l).substr(start);
    }
    auto name = UnescapeName(path);
    if (!name.ok()) {
      // The message quotes the whole line: keep it to one readable line.
      std::string why = name.status().message();
      if (why.size() > 160) why = why.substr(0, 160) + "...";
      return Status::Invalid(options.trace + ":" + std::to_string(n + 1) + ": " + why);
    }
    auto index = matcher.Find(std::move(*name));
    if (!index) {
      ++trace.not_in_dataset;
      continue;
    }
    trace.observations.push_back({*index, pid});
  }
  return trace;
}

// The trace in Darshan logs' DXT_POSIX records (the job run with DXT_ENABLE_IO_TRACE=1): each
// file's first read by each (log, rank) is an open, ordered by time across the logs (each log's
// times are offsets from its job's start). A reader is one rank of one log: a non-MPI job's
// processes, DataLoader workers included, each write their own log, and several readers may
// share a rank.
Result<Trace> ReadDarshanTrace(const PlanDetectOptions& options, const Layout& layout,
                               const std::string& layout_root) {
  struct Event {
    double time;
    uint64_t reader;
    std::string name;
  };
  std::vector<Event> events;
  std::vector<darshan::DarshanLog> logs;
  for (const std::string& path : options.darshan) {
    auto log = darshan::ReadDarshanLogFile(path);
    if (!log.ok()) return log.status().WithContext(path);
    if (log->dxt_posix.empty()) {
      return Status::Error(ENODATA, path +
                                        ": no DXT_POSIX traces in this log (run the job with "
                                        "Darshan's DXT_ENABLE_IO_TRACE=1 to record them)");
    }
    logs.push_back(std::move(*log));
  }
  int64_t first_start = INT64_MAX;
  for (const darshan::DarshanLog& log : logs) {
    first_start = std::min(first_start, log.job.start_time_sec);
  }
  for (size_t l = 0; l < logs.size(); ++l) {
    const darshan::DarshanLog& log = logs[l];
    const double start = static_cast<double>(log.job.start_time_sec - first_start) +
                         static_cast<double>(log.job.start_time_nsec) * 1e-9;
    for (const darshan::DxtRecord& record : log.dxt_posix) {
      if (record.reads.empty()) continue;
      const std::string* name = log.FindName(record.id);
      if (name == nullptr) continue;
      double first = record.reads.front().start_time;
      for (const darshan::DxtSegment& read : record.reads) first = std::min(first, read.start_time);
      const uint64_t reader = (static_cast<uint64_t>(l + 1) << 32) |
                              static_cast<uint32_t>(static_cast<int32_t>(record.rank));
      events.push_back({start + first, reader, *name});
    }
  }
  std::stable_sort(events.begin(), events.end(),
                   [](const Event& a, const Event& b) { return a.time < b.time; });
  const PathMatcher matcher(layout, options.backing, layout_root);
  Trace trace;
  trace.lines = events.size();
  trace.pids = true;
  for (Event& e : events) {
    auto index = matcher.Find(std::move(e.name));
    if (!index) {
      ++trace.not_in_dataset;
      continue;
    }
    trace.observations.push_back({*index, e.reader});
  }
  return trace;
}

int RunPlanDetect(const PlanDetectOptions& options) {
  auto layout_spec = ParseLayoutSpec(options.layout, options.layout_root);
  if (!layout_spec.ok()) return Fail(kPlanDetectCommand, layout_spec.status());
  auto layout = BuildLayout(PosixFileTreeInstance(), options.backing, *layout_spec);
  if (!layout.ok()) return Fail(kPlanDetectCommand, layout.status());
  auto trace = options.darshan.empty() ? ReadTrace(options, *layout, layout_spec->root)
                                       : ReadDarshanTrace(options, *layout, layout_spec->root);
  if (!trace.ok()) return Fail(kPlanDetectCommand, trace.status());

  InferenceOptions search;
  search.window = static_cast<uint32_t>(options.window);
  search.max_world = static_cast<uint32_t>(options.max_world);
  search.max_seed_plus_epoch = options.max_seed;
  search.threads =
      options.threads > 0 ? static_cast<uint32_t>(options.threads) : DefaultSearchThreads();
  InferenceResult r = InferPlan(trace->observations, layout->size(), search);
  const bool adopted = r.outcome == InferenceOutcome::kAdopted;

  if (options.json) {
    nlohmann::json out;
    out["adopted"] = adopted;
    out["outcome"] = InferenceOutcomeName(r.outcome);
    out["reason"] = r.reason;
    out["plan"] = r.spec.empty() ? nlohmann::json() : nlohmann::json(r.spec);
    out["kind"] = r.spec.empty() ? nlohmann::json() : nlohmann::json(SamplerKindName(r.kind));
    out["seed_plus_epoch"] = r.seed;
    out["world"] = r.world;
    out["epoch"] = r.epoch;
    out["rank"] = r.rank;
    nlohmann::json readers = nlohmann::json::array();
    for (const ReaderRank& rr : r.readers) {
      readers.push_back({{"reader", rr.reader},
                         {"rank", rr.rank},
                         {"matches", rr.matches},
                         {"mismatches", rr.mismatches}});
    }
    out["readers"] = std::move(readers);
    out["rivals"] = r.rivals;
    out["trace_lines"] = trace->lines;
    out["pids"] = trace->pids;
    out["not_in_dataset"] = trace->not_in_dataset;
    out["num_samples"] = layout->size();
    out["observations"] = r.observations;
    out["duplicates"] = r.duplicates;
    out["anchors"] = r.anchors;
    out["matches"] = r.matches;
    out["mismatches"] = r.mismatches;
    out["min_evidence"] = r.min_evidence;
    out["match_probability"] = r.match_probability;
    out["false_adoption_bound"] = r.false_adoption_bound;
    out["candidates"] = r.candidates;
    out["seeds_scanned"] = r.seeds_scanned;
    out["survivors"] = r.survivors;
    out["other_samplers_skipped"] = r.other_samplers_skipped;
    out["threads"] = search.threads;
    out["seconds"] = r.seconds;
    printf("%s\n", out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
    return adopted ? kExitOk : kExitFailed;
  }
  if (!adopted) {
    printf("no plan adopted (%s): %s\n", InferenceOutcomeName(r.outcome), r.reason.c_str());
    printf("trace: %llu paths, %llu not in the dataset of %llu samples, %llu readers\n",
           static_cast<unsigned long long>(trace->lines),
           static_cast<unsigned long long>(trace->not_in_dataset),
           static_cast<unsigned long long>(layout->size()),
           static_cast<unsigned long long>(r.reader_count));
    return kExitFailed;
  }
  printf("plan: %s\n", r.spec.c_str());
  printf("epoch: %llu\n", static_cast<unsigned long long>(r.epoch));
  printf("rank: %u\n", r.rank);
  if (r.kind == SamplerKind::kTorchDistributed) {
    printf(
        "note: only seed + epoch = %llu is visible: seed=%llu with --epoch 0 reproduces the "
        "trace, as does seed=S with --epoch %llu-S for any S <= %llu\n",
        static_cast<unsigned long long>(r.seed), static_cast<unsigned long long>(r.seed),
        static_cast<unsigned long long>(r.seed), static_cast<unsigned long long>(r.seed));
  }
  for (const ReaderRank& rr : r.readers) {
    printf("reader %llu: rank %u (%llu matches, %llu mismatches)\n",
           static_cast<unsigned long long>(rr.reader), rr.rank,
           static_cast<unsigned long long>(rr.matches),
           static_cast<unsigned long long>(rr.mismatches));
  }
  printf("evidence: %s\n", r.reason.c_str());
  printf("search: %.2f s, %llu seeds scanned, %llu survived the first positions%s\n", r.seconds,
         static_cast<unsigned long long>(r.seeds_scanned),
         static_cast<unsigned long long>(r.survivors),
         r.other_samplers_skipped ? "; the other samplers not searched (one class found)" : "");
  std::string show = "clairfs plan show --backing " + options.backing;
  if (options.layout != "imagefolder") show += " --layout " + options.layout;
  if (!options.layout_root.empty()) show += " --layout-root " + options.layout_root;
  show += " --plan " + r.spec + " --epoch " + std::to_string(r.epoch) + " --rank " +
          std::to_string(r.rank);
  printf("show: %s\n", show.c_str());
  return kExitOk;
}

}  // namespace

void RegisterPlanDetect(CLI::App* plan) {
  auto options = std::make_shared<PlanDetectOptions>();
  CLI::App* detect = AddCommand(
      plan, "detect",
      "Find the plan a recorded trace of opens follows, offline: the sampler, seed, world and\n"
      "rank that reproduce it, printed as a spec `plan show` accepts with --epoch and --rank.\n\n"
      "The trace is one opened path per line, relative to the backing root or to the layout\n"
      "root (or absolute under the backing root), as escaped names; with a leading pid column\n"
      "('PID PATH' on every line) each pid is one reader, i.e. one rank (map DataLoader\n"
      "workers to their rank's process). It must start at an epoch's start. '#' lines and\n"
      "paths outside the dataset are skipped; --trace - reads stdin. An absolute path is\n"
      "matched by its trailing components (a trace taken through a mount point works).\n"
      "Instead of --trace, --darshan takes Darshan logs with DXT_POSIX traces (the job run\n"
      "with DXT_ENABLE_IO_TRACE=1): each file's first read by each rank of each log is an\n"
      "open, in time order; a rank of a log is a reader.\n\n"
      "Candidates: torch-distributed (shuffle on) with seed + epoch below --max-seed or a\n"
      "popular seed plus up to 127 epochs, world 1..--max-world, any rank (only seed + epoch is\n"
      "visible: the spec is printed with that as the seed, epoch 0); torch-random, numpy and\n"
      "numpy-rng at their first epoch over popular seeds (0, 1, 42, 123, 1234, 2024, 3407, ...).\n"
      "A plan is adopted only when exactly one candidate class explains the opens with enough\n"
      "matches that a wrong one would do so with probability below 1e-9 (docs/PLANNER.md,\n"
      "\"Plan inference\").\n\n"
      "Exit codes: 0 adopted; 1 none (the reason: too few opens, no candidate, several\n"
      "candidates, dataset too small), or the tree or trace could not be read; 2 usage.\n\n"
      "Example:\n"
      "  clairfs plan detect --backing /pfs/imagenet --layout-root train --trace opens.txt");
  detect->add_option("--backing", options->backing, "Backing root of the dataset")
      ->type_name("DIR")
      ->required();
  detect
      ->add_option("--layout", options->layout,
                   "Sample numbering: imagefolder (default), sorted or list:FILE")
      ->type_name("LAYOUT");
  detect
      ->add_option("--layout-root", options->layout_root,
                   "Dataset directory below the backing root (e.g. train)")
      ->type_name("SUBDIR");
  CLI::Option* trace =
      detect->add_option("--trace", options->trace, "The opened paths, one per line ('-': stdin)")
          ->type_name("FILE");
  CLI::Option* darshan =
      detect
          ->add_option("--darshan", options->darshan,
                       "Darshan logs whose DXT_POSIX traces are the trace (one per process of a "
                       "non-MPI job; all from one job)")
          ->type_name("LOG")
          ->expected(1, -1)
          ->excludes(trace);
  trace->excludes(darshan);

  detect
      ->add_option("--window", options->window,
                   "Steps a reader's opens may run ahead of its furthest step (default 256: "
                   "num_workers x prefetch_factor x batch_size)")
      ->type_name("N")
      ->transform(Count(1, 1 << 20));
  detect->add_option("--max-world", options->max_world, "Largest world searched (default 1024)")
      ->type_name("W")
      ->transform(Count(1, 65535));
  detect
      ->add_option("--max-seed", options->max_seed,
                   "torch-distributed seed + epoch searched below this (default 1048576)")
      ->type_name("S")
      ->transform(Count(0, uint64_t{1} << 32));
  detect
      ->add_option("--threads", options->threads,
                   "Threads that scan the seeds (default: the CPUs this process may run on, at "
                   "most 8)")
      ->type_name("N")
      ->transform(Count(1, 256));
  detect->add_flag("--json", options->json,
                   "Print one JSON object: adopted, outcome, reason, plan, epoch, rank, world, "
                   "readers, the evidence and the search's cost");
  detect->callback([options] {
    if (options->trace.empty() && options->darshan.empty()) {
      SetExitCode(UsageError(kPlanDetectCommand, "--trace FILE or --darshan LOG... is needed"));
      return;
    }
    SetExitCode(RunPlanDetect(*options));
  });
}

}  // namespace clairfs::cli
