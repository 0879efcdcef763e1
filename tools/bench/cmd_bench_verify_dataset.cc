// `clairfs bench verify-dataset DIR`: reads every regular file under DIR and checks each byte
// and its length against the synthetic content of its relative path (synthetic_content.h).
// Point it at a clairfs mount (or a pfs-emu mount) of a dataset made by `bench make-dataset` to
// prove that what readers get is exactly what was written, without a second copy to compare.
//
// Prints a summary on stdout (or JSON with --json); progress on a terminal. Symbolic links are
// not followed and not counted. Exit codes: 0 every file correct, 1 a file is wrong or
// unreadable or DIR holds no file, 2 bad arguments.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <memory>

#include <nlohmann/json.hpp>

#include "planner/base/units.h"
#include "tools/bench/cmd_bench.h"
#include "tools/bench/read_workload.h"
#include "tools/cli/cli.h"
#include "tools/cli/progress_meter.h"

namespace clairfs::cli {
namespace {

constexpr const char* kBenchVerifyDatasetCommand = "bench verify-dataset";

struct VerifyArgs {
  std::string dir;
  int threads = 4;
  bool json = false;
};

// Every regular file under `dir` with its size, sorted by relative path.
Result<std::vector<SyntheticFile>> ListFiles(const std::string& dir) {
  namespace fsys = std::filesystem;
  std::error_code ec;
  if (!fsys::is_directory(dir, ec)) {
    return Status::Error(ENOTDIR, "'" + dir + "' is not a directory");
  }
  std::vector<SyntheticFile> files;
  fsys::recursive_directory_iterator it(dir, ec);
  if (ec) return Status::FromErrno(ec.value(), "list " + dir);
  for (; it != fsys::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return Status::FromErrno(ec.value(), "list " + dir);
    fsys::file_status st = it->symlink_status(ec);
    if (ec) return Status::FromErrno(ec.value(), "stat " + it->path().string());
    if (!fsys::is_regular_file(st)) continue;
    uint64_t size = it->file_size(ec);
    if (ec) return Status::FromErrno(ec.value(), "stat " + it->path().string());
    files.push_back({fsys::relative(it->path(), dir).generic_string(), size});
  }
  std::sort(files.begin(), files.end(),
            [](const SyntheticFile& a, const SyntheticFile& b) { return a.relpath < b.relpath; });
  return files;
}

int Run(const VerifyArgs& args) {
  auto files = ListFiles(args.dir);
  if (!files.ok()) return Fail(kBenchVerifyDatasetCommand, files.status());
  if (files->empty()) {
    fprintf(stderr, "clairfs %s: no files under '%s'\n", kBenchVerifyDatasetCommand,
            args.dir.c_str());
    return kExitFailed;
  }
  ProgressMeter meter("verify-dataset", files->size(), TotalSize(*files),
                      StderrIsTerminal() && !args.json);
  ReadResult result = CheckFiles(args.dir, *files, args.threads,
                                 [&meter](uint64_t f, uint64_t b) { meter.Update(f, b); });
  meter.Finish();
  double rate = result.seconds > 0 ? static_cast<double>(result.bytes) / result.seconds : 0;
  if (args.json) {
    nlohmann::json out = {{"dir", args.dir},
                          {"files", result.files},
                          {"bytes", result.bytes},
                          {"seconds", result.seconds},
                          {"failed_files", result.failed_files},
                          {"errors", result.errors}};
    printf("%s\n", out.dump().c_str());
  } else {
    printf("verified %llu files, %s in %.2f s (%s): %s\n",
           static_cast<unsigned long long>(result.files), FormatBytes(result.bytes).c_str(),
           result.seconds, FormatRate(rate).c_str(),
           result.failed_files == 0
               ? "all correct"
               : (std::to_string(result.failed_files) + " wrong or unreadable").c_str());
    for (const auto& e : result.errors) printf("  %s\n", e.c_str());
  }
  return result.failed_files == 0 ? kExitOk : kExitFailed;
}

}  // namespace

void RegisterBenchVerifyDataset(CLI::App& bench) {
  auto args = std::make_shared<VerifyArgs>();
  CLI::App* cmd = AddCommand(&bench, "verify-dataset",
                             "Check every byte of a dataset made by `bench make-dataset` (e.g. "
                             "read through a clairfs mount) against its expected content");
  cmd->add_option("DIR", args->dir, "Dataset root (as given to make-dataset, or a mount of it)")
      ->required();
  cmd->add_option("--threads", args->threads, "Reader threads (default 4)")
      ->transform(Count(1, 256));
  cmd->add_flag("--json", args->json, "Print one JSON object; no progress");
  cmd->callback([args]() { SetExitCode(Run(*args)); });
}

}  // namespace clairfs::cli
