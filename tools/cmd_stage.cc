// `clairfs stage`: copy files of a mount's dataset into its cache now, optionally waiting.
//
// Online, the request goes to the mount's daemon ("stage", then "stage_progress" polls for
// --wait). With --offline no mount runs: the command opens the cache itself exactly as the mount
// daemon does (cache lock, index, fresh manifest listing, content store with recovery and stale
// copies dropped, stager) and serves the same two ops in-process, so both modes share validation,
// expansion and progress reporting. A later mount on that cache finds the copies staged: its own
// listing yields the same identities as long as the backing files did not change.
//
// --hot (online only) stages the files under the PATHs that have imported Darshan heat, hottest
// per byte first; --fit keeps to the room left without evicting (fs/admin_handlers.h).
//
// --wait succeeds only if every file was staged and is still staged when the request finishes: a
// request larger than the cache evicts its own earlier files to make room for later ones, and the
// command says how many, and what else was evicted, and exits 1.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "cache/cache_opener.h"
#include "cache/content_store.h"
#include "cache/eviction_policy.h"
#include "cache/stager.h"
#include "fs/control/admin_handlers.h"
#include "fs/control/control_server.h"
#include "planner/base/name_escape.h"
#include "planner/base/units.h"
#include "tools/admin_paths.h"
#include "tools/cli/cli.h"
#include "tools/cli/control_client.h"
#include "tools/cli/progress_meter.h"
#include "tools/commands.h"

namespace clairfs::cli {
namespace {

struct StageArgs {
  std::vector<std::string> positional;  // MOUNTPOINT PATH... (online) or PATH... (offline)
  std::string from_file;
  bool null_list = false;  // -0: --from-file holds raw names ended by NUL bytes
  bool wait = false;
  std::string priority = "high";
  bool json = false;
  bool offline = false;
  std::string backing;
  std::string cache;
  std::string capacity;
  int threads = 8;
  bool hot = false;
  bool fit = false;
};

using CallFn = std::function<Result<nlohmann::json>(const nlohmann::json&)>;

// Sends the stage request and, if asked, polls until done. Returns the exit code.
int StageAndWait(const CallFn& call, const std::vector<std::string>& paths, const StageArgs& a) {
  auto started = std::chrono::steady_clock::now();
  nlohmann::json request = {
      {"op", "stage"}, {"paths", EscapePaths(paths)}, {"priority", a.priority}};
  if (a.hot) {
    request["hot"] = true;
    request["fit"] = a.fit;
  }
  auto reply = call(request);
  if (!reply.ok()) return Fail("stage", reply.status());
  uint64_t id = reply->value("id", uint64_t{0});
  uint64_t files = reply->value("files", uint64_t{0});
  uint64_t bytes = reply->value("bytes", uint64_t{0});
  const nlohmann::json hot = reply->value("hot", nlohmann::json(nullptr));
  if (!a.json && hot.is_object()) {
    printf("hot: %llu files with heat, %llu without (not staged)",
           static_cast<unsigned long long>(hot.value("hot_files", uint64_t{0})),
           static_cast<unsigned long long>(hot.value("not_hot", uint64_t{0})));
    if (a.fit) {
      printf(", %llu left out (no room without evicting)",
             static_cast<unsigned long long>(hot.value("no_room", uint64_t{0})));
    }
    printf("\n");
  }
  if (!a.wait) {
    reply->erase("ok");
    if (a.json) {
      printf("%s\n", reply->dump(2).c_str());
    } else {
      printf("stage request %llu: %llu files (%s) queued, %llu already staged\n",
             static_cast<unsigned long long>(id), static_cast<unsigned long long>(files),
             FormatBytes(bytes).c_str(),
             static_cast<unsigned long long>(reply->value("already_staged", uint64_t{0})));
    }
    return kExitOk;
  }
  ProgressMeter meter("staging", files, bytes, StderrIsTerminal() && !a.json);
  nlohmann::json progress;
  while (true) {
    auto p = call({{"op", "stage_progress"}, {"id", id}});
    if (!p.ok()) {
      meter.Finish();
      return Fail("stage", p.status());
    }
    progress = std::move(*p);
    meter.Update(progress.value("files_done", uint64_t{0}) +
                     progress.value("files_failed", uint64_t{0}) +
                     progress.value("files_skipped", uint64_t{0}),
                 progress.value("bytes_done", uint64_t{0}));
    if (progress.value("done", false)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  meter.Finish();
  double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  progress.erase("ok");
  progress["seconds"] = seconds;
  if (hot.is_object()) progress["hot"] = hot;
  uint64_t failed = progress.value("files_failed", uint64_t{0});
  uint64_t skipped = progress.value("files_skipped", uint64_t{0});
  const uint64_t done_files = progress.value("files_done", uint64_t{0});
  const uint64_t evicted_again = progress.value("files_evicted_again", uint64_t{0});
  const uint64_t evictions = progress.value("evictions_while_staging", uint64_t{0});
  const uint64_t capacity = progress.value("capacity_bytes", uint64_t{0});
  if (a.json) {
    printf("%s\n", progress.dump(2).c_str());
  } else {
    uint64_t done_bytes = progress.value("bytes_done", uint64_t{0});
    printf("staged %llu of %llu files (%s) in %.1f s (%.1f MB/s), %llu failed",
           static_cast<unsigned long long>(progress.value("files_done", uint64_t{0})),
           static_cast<unsigned long long>(files), FormatBytes(done_bytes).c_str(), seconds,
           seconds > 0 ? static_cast<double>(done_bytes) / seconds / 1e6 : 0.0,
           static_cast<unsigned long long>(failed));
    if (skipped > 0) {
      printf(", %llu skipped (no room without evicting hotter copies)",
             static_cast<unsigned long long>(skipped));
    }
    printf("\n");
    if (evictions > 0) {
      const uint64_t others = evictions > evicted_again ? evictions - evicted_again : 0;
      printf(
          "to make room the cache evicted %llu copies while staging: %llu of this request's "
          "own files and %llu others\n",
          static_cast<unsigned long long>(evictions),
          static_cast<unsigned long long>(std::min(evicted_again, evictions)),
          static_cast<unsigned long long>(others));
    }
  }
  if (evicted_again > 0) {
    fprintf(stderr,
            "clairfs stage: only %llu of the %llu staged files stayed: %llu were evicted again to "
            "make room for later ones; the request (%s) does not fit the cache (capacity %s)\n",
            static_cast<unsigned long long>(done_files - evicted_again),
            static_cast<unsigned long long>(done_files),
            static_cast<unsigned long long>(evicted_again), FormatBytes(bytes).c_str(),
            capacity > 0 ? FormatBytes(capacity).c_str() : "the device");
  }
  if (failed == 0) return evicted_again == 0 ? kExitOk : kExitFailed;
  for (const auto& f : progress["failed"]) {
    fprintf(stderr, "clairfs stage: %s: %s\n", f.value("path", "").c_str(),
            f.value("error", "").c_str());
  }
  if (failed > progress["failed"].size()) {
    fprintf(stderr, "clairfs stage: ... and %llu more failed files\n",
            static_cast<unsigned long long>(failed - progress["failed"].size()));
  }
  return kExitFailed;
}

int RunOffline(const StageArgs& a, std::vector<std::string> paths) {
  if (a.backing.empty() || a.cache.empty()) {
    return UsageError("stage", "--offline needs --backing DIR and --cache DIR");
  }
  uint64_t capacity = 0;
  if (!a.capacity.empty()) {
    auto c = ParseSize(a.capacity);
    if (!c.ok()) return UsageError("stage", "--capacity: " + c.status().message());
    capacity = *c;
  }
  Env* env = Env::Default();
  char* real = realpath(a.backing.c_str(), nullptr);
  if (real == nullptr) return Fail("stage", Status::FromErrno(errno, "backing " + a.backing));
  std::string backing(real);
  free(real);
  if (mkdir(a.cache.c_str(), 0700) != 0 && errno != EEXIST) {
    return Fail("stage", Status::FromErrno(errno, "cache directory " + a.cache));
  }
  real = realpath(a.cache.c_str(), nullptr);
  if (real == nullptr) return Fail("stage", Status::FromErrno(errno, "cache " + a.cache));
  std::string cache(real);
  free(real);

  // Opened as the mount daemon opens it (cache/cache_opener.h).
  auto tree = BackingTree::Open(backing, env);
  if (!tree.ok()) return Fail("stage", tree.status());
  CacheOpenOptions open;
  open.cache_dir = cache;
  open.listing = ManifestListing::kRescan;
  open.backing = *tree;
  open.scan_threads = a.threads;
  open.store_options = ContentStoreOptions{capacity, 0, nullptr};
  auto opened = OpenCache(std::move(open), env);
  if (!opened.ok()) return Fail("stage", opened.status());
  Manifest* m = opened->manifest.get();
  ContentStore* store = opened->store.get();
  StagerOptions stager_options;
  stager_options.backing_root = backing;
  stager_options.backing = *tree;
  stager_options.threads = a.threads;
  auto stager = std::make_unique<Stager>(stager_options, store, env);

  // The admin ops in-process: never started, so no socket; the caller is the owner.
  ControlServer server("", getuid());
  RegisterAdminHandlers(
      &server, AdminSources{backing, m, store, stager.get(), nullptr, nullptr, getuid(), false});
  PeerCredentials self{getpid(), getuid(), getgid()};
  CallFn call = [&](const nlohmann::json& request) -> Result<nlohmann::json> {
    nlohmann::json reply = nlohmann::json::parse(server.HandleLine(request.dump(), self));
    if (reply.value("ok", false)) return reply;
    return Status::Error(reply.value("errno", EIO), reply.value("error", std::string("error")));
  };
  StageArgs waiting = a;
  waiting.wait = true;  // offline staging always finishes before the command returns
  int code = StageAndWait(call, ToMountPaths(backing, backing, paths), waiting);
  stager->Shutdown();
  stager.reset();
  Status flush = opened->Close();
  if (!flush.ok()) return Fail("stage", flush);
  return code;
}

int RunStage(const StageArgs& a) {
  if (a.priority != "high" && a.priority != "normal" && a.priority != "low") {
    return UsageError("stage", "--priority must be high, normal or low");
  }
  if (a.fit && !a.hot) return UsageError("stage", "--fit goes with --hot");
  if (a.hot && a.offline) {
    return UsageError("stage", "--hot needs a running mount (import heat, then stage --hot)");
  }
  if (a.null_list && a.from_file.empty()) return UsageError("stage", "-0 goes with --from-file");
  std::vector<std::string> typed;
  std::string mountpoint;
  if (a.offline) {
    typed = a.positional;
  } else {
    if (!a.backing.empty() || !a.cache.empty() || !a.capacity.empty()) {
      return UsageError("stage", "--backing, --cache and --capacity go with --offline");
    }
    if (a.positional.empty()) return UsageError("stage", "MOUNTPOINT is required");
    mountpoint = a.positional[0];
    typed.assign(a.positional.begin() + 1, a.positional.end());
  }
  auto unescaped = UnescapeArguments(typed);
  if (!unescaped.ok()) return Fail("stage", unescaped.status());
  std::vector<std::string> paths = std::move(*unescaped);
  if (!a.from_file.empty()) {
    auto listed = ReadPathList(a.from_file, a.null_list);
    if (!listed.ok()) return Fail("stage", listed.status());
    if (listed->empty()) {
      return UsageError("stage", "path list " + SanitizeText(a.from_file) + " is empty");
    }
    paths.insert(paths.end(), listed->begin(), listed->end());
  }
  if (paths.empty()) paths.push_back(".");  // the whole dataset
  if (paths.size() > kMaxRequestPaths) {
    return UsageError("stage", "at most " + std::to_string(kMaxRequestPaths) +
                                   " paths per request (name directories instead)");
  }
  if (a.offline) return RunOffline(a, paths);

  auto client = ControlClient::Connect(mountpoint);
  if (!client.ok()) return Fail("stage", client.status());
  auto canonical = CanonicalMountpoint(mountpoint);
  if (!canonical.ok()) return Fail("stage", canonical.status());
  CallFn call = [&](const nlohmann::json& r) { return client->Call(r); };
  return StageAndWait(call, ToMountPaths(mountpoint, *canonical, paths), a);
}

}  // namespace

void RegisterStage(CLI::App& app) {
  auto args = std::make_shared<StageArgs>();
  CLI::App* cmd = AddCommand(
      &app, "stage",
      "Copy files of a mount's dataset into its cache now (no PATH: the whole dataset). "
      "Usage: clairfs stage MOUNTPOINT [PATH...] or clairfs stage --offline --backing DIR "
      "--cache DIR [PATH...]");
  cmd->add_option("ARGS", args->positional,
                  "MOUNTPOINT then PATHs relative to the mount or absolute under it (with "
                  "--offline: PATHs relative to --backing); directories stage recursively. Names "
                  "are escaped (\\\\ for a backslash, \\xHH for any byte; see README \"Names "
                  "with any bytes\"); raw bytes work too");
  cmd->add_option("--from-file", args->from_file,
                  "Also stage the paths listed in FILE (- for standard input): one escaped name a "
                  "line, or with -0 raw names each ended by a NUL byte")
      ->type_name("FILE");
  cmd->add_flag("-0,--null", args->null_list,
                "--from-file holds raw names separated by NUL bytes (as `clairfs ls -0` and "
                "`find -print0` write them)");
  cmd->add_flag("--wait", args->wait,
                "Wait until every file is staged or failed; exit 1 if any failed or was evicted "
                "again to make room for later files of the request (it does not fit the cache)");
  cmd->add_option("--priority", args->priority, "Queue priority (default high)")
      ->type_name("high|normal|low");
  cmd->add_flag("--hot", args->hot,
                "Stage the files with imported Darshan heat, hottest per byte first (files "
                "without heat are not staged; colder copies may be evicted, hotter never)");
  cmd->add_flag("--fit", args->fit,
                "With --hot: only the hottest files that fit in the room left; never evicts");
  cmd->add_flag("--json", args->json, "Print the reply (or the final progress) as JSON");
  cmd->add_flag("--offline", args->offline,
                "Fill a cache with no mount running (refused while a daemon holds the cache)");
  cmd->add_option("--backing", args->backing, "With --offline: the backing directory")
      ->type_name("DIR");
  cmd->add_option("--cache", args->cache, "With --offline: the cache directory")->type_name("DIR");
  cmd->add_option("--capacity", args->capacity,
                  "With --offline: cache capacity (e.g. 800G; default: the device)")
      ->type_name("SIZE");
  cmd->add_option("--threads", args->threads, "With --offline: copy and listing threads (8)")
      ->check(CLI::Range(1, 256));
  cmd->callback([args]() { SetExitCode(RunStage(*args)); });
}

}  // namespace clairfs::cli
