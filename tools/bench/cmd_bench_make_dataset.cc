// `clairfs bench make-dataset DIR`: writes a deterministic synthetic dataset whose every byte can
// be verified from the file's name (planner/synthetic_dataset.h, planner/synthetic_content.h).
//
// Prints a summary (files, bytes, median size) on stdout, or one JSON object with --json;
// progress on stderr only when it is a terminal and --json is not given. Exit codes: 0 written,
// 1 I/O failure or DIR holds foreign files, 2 bad arguments.
#include <chrono>
#include <cstdio>
#include <memory>

#include <nlohmann/json.hpp>

#include "planner/base/units.h"
#include "planner/synthetic_dataset.h"
#include "tools/bench/cmd_bench.h"
#include "tools/bench/dataset_writer.h"
#include "tools/cli/cli.h"
#include "tools/cli/progress_meter.h"

namespace clairfs::cli {
namespace {

constexpr const char* kBenchMakeDatasetCommand = "bench make-dataset";
constexpr uint64_t kDefaultClasses = 1000;  // ImageNet-1k

struct MakeDatasetArgs {
  std::string dir;
  std::string layout;  // empty: imagefolder (or shards when --sizes shards:...)
  uint64_t files = 0;
  uint64_t classes = 0;  // 0: min(1000, files)
  std::string sizes = "imagenet";
  uint64_t seed = 0;
  bool json = false;
  bool force = false;
  CLI::Option* files_option = nullptr;
  CLI::Option* classes_option = nullptr;
};

// Turns the flags into a spec; every error is a usage error (EINVAL).
Result<SyntheticSpec> BuildSpec(const MakeDatasetArgs& args) {
  SyntheticSpec spec;
  auto sizes = ParseSyntheticSizes(args.sizes);
  if (!sizes.ok()) return sizes.status();
  spec.sizes = *sizes;
  spec.seed = args.seed;
  if (spec.sizes.kind == SyntheticSizes::Kind::kShards) {
    if (!args.layout.empty()) {
      return Status::Invalid(
          "--layout does not apply to --sizes shards:COUNTxSIZE (shards are "
          "written as DIR/shard_NNNN.tar)");
    }
    if (args.classes_option->count() > 0) {
      return Status::Invalid("--classes does not apply to --sizes shards:COUNTxSIZE");
    }
    spec.layout = SyntheticLayout::kShards;
    spec.files = spec.sizes.shard_count;  // COUNT overrides --files
    return spec;
  }
  auto layout = ParseSyntheticLayout(args.layout.empty() ? "imagefolder" : args.layout);
  if (!layout.ok()) return layout.status();
  spec.layout = *layout;
  if (args.files_option->count() == 0) {
    return Status::Invalid("--files N is required (unless --sizes shards:COUNTxSIZE)");
  }
  spec.files = args.files;
  if (spec.layout == SyntheticLayout::kImageFolder) {
    spec.classes =
        args.classes_option->count() > 0 ? args.classes : std::min(kDefaultClasses, args.files);
  } else if (args.classes_option->count() > 0) {
    return Status::Invalid("--classes applies only to --layout imagefolder");
  }
  return spec;
}

int Run(const MakeDatasetArgs& args) {
  auto spec = BuildSpec(args);
  if (!spec.ok()) return Fail(kBenchMakeDatasetCommand, spec.status());
  auto files = PlanSyntheticDataset(*spec);
  if (!files.ok()) return Fail(kBenchMakeDatasetCommand, files.status());
  const uint64_t total_bytes = TotalSize(*files);
  const uint64_t median = MedianSize(*files);

  ProgressMeter meter("make-dataset", files->size(), total_bytes, StderrIsTerminal() && !args.json);
  DatasetWriteOptions options;
  options.force = args.force;
  options.progress = [&meter](uint64_t f, uint64_t b) { meter.Update(f, b); };
  auto start = std::chrono::steady_clock::now();
  auto stats = WriteSyntheticDataset(args.dir, *files, options);
  meter.Finish();
  if (!stats.ok()) {
    // A non-empty foreign directory is not a usage error but a refusal: exit 1.
    fprintf(stderr, "clairfs %s: %s\n", kBenchMakeDatasetCommand, stats.status().message().c_str());
    return kExitFailed;
  }
  double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  double write_rate = seconds > 0 ? static_cast<double>(stats->written_bytes) / seconds : 0;

  if (args.json) {
    nlohmann::json out = {
        {"dir", args.dir},
        {"layout", SyntheticLayoutName(spec->layout)},
        {"sizes", FormatSyntheticSizes(spec->sizes)},
        {"seed", spec->seed},
        {"files", files->size()},
        {"classes", spec->layout == SyntheticLayout::kImageFolder ? spec->classes : 0},
        {"total_bytes", total_bytes},
        {"median_bytes", median},
        {"written_files", stats->written_files},
        {"written_bytes", stats->written_bytes},
        {"reused_files", stats->reused_files},
        {"removed_files", stats->removed_files},
        {"foreign_entries", stats->foreign_entries},
        {"seconds", seconds},
    };
    printf("%s\n", out.dump().c_str());
  } else {
    printf("%s dataset in %s: %llu files, %s, median %s (sizes %s, seed %llu)\n",
           SyntheticLayoutName(spec->layout), args.dir.c_str(),
           static_cast<unsigned long long>(files->size()), FormatBytes(total_bytes).c_str(),
           FormatBytes(median).c_str(), FormatSyntheticSizes(spec->sizes).c_str(),
           static_cast<unsigned long long>(spec->seed));
    printf("wrote %llu files (%s) in %.1f s (%s); kept %llu already present; removed %llu stale\n",
           static_cast<unsigned long long>(stats->written_files),
           FormatBytes(stats->written_bytes).c_str(), seconds, FormatRate(write_rate).c_str(),
           static_cast<unsigned long long>(stats->reused_files),
           static_cast<unsigned long long>(stats->removed_files));
    if (stats->foreign_entries > 0) {
      printf("left %llu foreign entries in place (--force)\n",
             static_cast<unsigned long long>(stats->foreign_entries));
    }
  }
  return kExitOk;
}

}  // namespace

void RegisterBenchMakeDataset(CLI::App& bench) {
  auto args = std::make_shared<MakeDatasetArgs>();
  CLI::App* cmd = AddCommand(
      &bench, "make-dataset",
      "Write a deterministic synthetic dataset into DIR. Same arguments, same tree; every byte "
      "is a function of the file's relative path, so readers can verify what they read.");
  cmd->add_option("DIR", args->dir, "Target directory (created if missing)")->required();
  cmd->add_option("--layout", args->layout,
                  "imagefolder (DIR/class_NNNN/img_NNNNNNNN.jpg, default) or flat "
                  "(DIR/file_NNNNNNNN.bin)")
      ->type_name("LAYOUT");
  args->files_option = cmd->add_option("--files", args->files, "Number of files (not with shards)")
                           ->type_name("N")
                           ->transform(Count(1, kMaxSyntheticFiles));
  args->classes_option =
      cmd->add_option("--classes", args->classes,
                      "Classes for imagefolder (default: 1000, or N if fewer files)")
          ->type_name("C")
          ->transform(Count(1, kMaxSyntheticFiles));
  cmd->add_option("--sizes", args->sizes,
                  "imagenet (lognormal, median 110 KiB, default), fixed:SIZE (e.g. fixed:110K) or "
                  "shards:COUNTxSIZE (e.g. 4x256M; COUNT overrides --files)")
      ->type_name("MODEL");
  cmd->add_option("--seed", args->seed, "Seed of the size distribution (default 0)")
      ->transform(Count(0, UINT64_MAX));
  cmd->add_flag("--json", args->json, "Print the summary as one JSON object; no progress");
  cmd->add_flag("--force", args->force,
                "Write into DIR even if it holds files that are not a previous dataset");
  cmd->callback([args]() { SetExitCode(Run(*args)); });
}

}  // namespace clairfs::cli
