// `clairfs darshan import MOUNTPOINT LOG|DIR... [--strip-prefix P] [--replace] [--json]
// [--skip-bad]` and `clairfs darshan import --cache DIR --backing DIR LOG|DIR... [...]`: store the
// heat of Darshan logs in a cache's index, keyed by the dataset's paths, where the mount's heat
// eviction policy and `clairfs stage --hot` use it.
//
// This command reads the logs (the daemon never opens them) and uploads the merged per-path
// counters through the heat_import_* control ops (fs/heat_handlers.h), which map the logged
// paths onto the manifest (--strip-prefix, else a detected prefix) and store them. Offline
// (--cache, no mount running) the command opens the cache as the daemon does (cache lock, index,
// a fresh listing of --backing) and serves the same ops in-process, so both modes share
// validation, mapping and reporting. A cache held by a running daemon is refused, naming it. A
// --cache directory that does not exist yet is created, and removed again if the import fails.
// Paths are sent to the daemon escaped (planner/name_escape.h) and printed escaped.
//
// Semantics: by default heat is merged (counters added per path) with what is stored, and logs
// imported before (same content) are skipped, so importing a directory again adds only its new
// logs; --replace drops all stored heat first. Exit codes: 0 imported (or nothing new), 1
// failed (unreadable log without --skip-bad, no logged path in the dataset, daemon refused), 2
// usage.
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/cache_opener.h"
#include "cache/heat_store.h"
#include "cache/index_db.h"
#include "cache/manifest.h"
#include "fs/control/control_server.h"
#include "fs/control/heat_handlers.h"
#include "planner/base/name_escape.h"
#include "planner/base/units.h"
#include "planner/heat.h"
#include "tools/cli/cli.h"
#include "tools/cli/control_client.h"
#include "tools/cmd_darshan.h"
#include "tools/created_directory.h"

namespace clairfs::cli {
namespace {

constexpr const char* kDarshanImportCommand = "darshan import";
// Upload pieces stay well below ControlServer::kMaxRequestBytes.
constexpr size_t kChunkBytes = 256 * 1024;
constexpr size_t kIdsPerRequest = 2000;

struct ImportArgs {
  std::vector<std::string> positional;  // MOUNTPOINT LOG... (online) or LOG... (offline)
  std::string cache;
  std::string backing;
  std::string strip_prefix;
  bool replace = false;
  bool json = false;
  bool skip_bad = false;
  int threads = 8;
};

using CallFn = std::function<Result<nlohmann::json>(const nlohmann::json&)>;

// Reads the logs and runs the import session; returns the report (client and daemon facts).
Result<nlohmann::json> Import(const CallFn& call, const std::vector<std::string>& inputs,
                              const ImportArgs& a) {
  auto logs = ExpandHeatInputs(inputs);
  if (!logs.ok()) return logs.status();
  if (logs->empty()) return Status::Error(ENOENT, "no Darshan logs (*.darshan) in the inputs");
  std::vector<std::string> ids;
  ids.reserve(logs->size());
  for (const std::string& log : *logs) {
    auto id = HeatLogId(log);
    if (!id.ok()) return id.status();
    ids.push_back(*id);
  }
  // Paths cross the control socket escaped (fs/heat_handlers.h); the daemon keys heat by the
  // raw bytes again.
  auto begin = call({{"op", "heat_import_begin"},
                     {"replace", a.replace},
                     {"strip_prefix", EscapeName(a.strip_prefix)}});
  if (!begin.ok()) return begin.status();
  const uint64_t session = begin->value("session", uint64_t{0});

  std::set<std::string> known;
  for (size_t i = 0; i < ids.size(); i += kIdsPerRequest) {
    std::vector<std::string> part(ids.begin() + i,
                                  ids.begin() + std::min(ids.size(), i + kIdsPerRequest));
    auto reply = call({{"op", "heat_import_add"}, {"session", session}, {"check_logs", part}});
    if (!reply.ok()) return reply.status();
    for (const auto& k : (*reply)["known_logs"]) known.insert(k.get<std::string>());
  }
  // Read only logs not imported before; a duplicate of one being read (same content twice in
  // the inputs) is read once.
  std::vector<std::string> to_read, read_ids;
  std::set<std::string> taken;
  size_t already = 0, duplicates = 0;
  for (size_t i = 0; i < logs->size(); ++i) {
    if (known.count(ids[i])) {
      ++already;
    } else if (!taken.insert(ids[i]).second) {
      ++duplicates;
    } else {
      to_read.push_back((*logs)[i]);
      read_ids.push_back(ids[i]);
    }
  }
  HeatOptions options;
  options.skip_bad_logs = a.skip_bad;
  const bool show_progress = StderrIsTerminal() && !a.json;
  if (show_progress) {
    options.progress = [](size_t done, size_t total) {
      fprintf(stderr, "\r  reading logs: %zu/%zu", done, total);
      if (done == total) fprintf(stderr, "\r\033[K");
    };
  }
  std::vector<std::string> good_ids;
  RawHeat raw;
  // Read one log at a time so that the ids of skipped (bad) logs are never recorded.
  for (size_t i = 0; i < to_read.size(); ++i) {
    HeatOptions one = options;
    one.progress = nullptr;
    auto part = ReadHeatLogs({to_read[i]}, one);
    if (!part.ok()) return part.status();
    if (part->logs == 1) good_ids.push_back(read_ids[i]);
    raw.logs += part->logs;
    raw.records += part->records;
    raw.special_names += part->special_names;
    raw.unnamed_records += part->unnamed_records;
    for (auto& s : part->skipped_logs) raw.skipped_logs.push_back(std::move(s));
    for (const auto& [path, counters] : part->by_path) {
      MergeHeatCounters(&raw.by_path[path], counters);
    }
    if (options.progress) options.progress(i + 1, to_read.size());
  }

  // Upload: the log ids first, then the files in pieces.
  for (size_t i = 0; i < good_ids.size(); i += kIdsPerRequest) {
    std::vector<std::string> part(good_ids.begin() + i,
                                  good_ids.begin() + std::min(good_ids.size(), i + kIdsPerRequest));
    auto reply = call({{"op", "heat_import_add"}, {"session", session}, {"logs", part}});
    if (!reply.ok()) return reply.status();
  }
  nlohmann::json rows = nlohmann::json::array();
  size_t bytes = 0;
  auto flush = [&]() -> Status {
    if (rows.empty()) return Status::Ok();
    auto reply = call({{"op", "heat_import_add"}, {"session", session}, {"files", rows}});
    rows = nlohmann::json::array();
    bytes = 0;
    return reply.ok() ? Status::Ok() : reply.status();
  };
  for (const auto& [path, c] : raw.by_path) {
    std::string shown = EscapeName(path);
    bytes += shown.size() + 100;
    rows.push_back({std::move(shown), c.bytes_read, c.reads, c.opens, c.max_byte_read, c.read_time,
                    c.records});
    if (bytes >= kChunkBytes) CLAIRFS_RETURN_IF_ERROR(flush());
  }
  CLAIRFS_RETURN_IF_ERROR(flush());
  auto committed = call({{"op", "heat_import_commit"}, {"session", session}});
  if (!committed.ok()) return committed.status();
  nlohmann::json report = std::move(*committed);
  report.erase("ok");
  nlohmann::json skipped = nlohmann::json::array();
  for (const std::string& m : raw.skipped_logs) skipped.push_back(SanitizeText(m));
  report["logs"] = {{"found", logs->size()},
                    {"already_imported", already},
                    {"duplicates", duplicates},
                    {"read", raw.logs},
                    {"skipped_bad", skipped}};
  report["records"] = raw.records;
  report["paths_logged"] = raw.by_path.size();
  report["special_names"] = raw.special_names;
  report["unnamed_records"] = raw.unnamed_records;
  return report;
}

void PrintReport(const nlohmann::json& r) {
  const auto& logs = r["logs"];
  const uint64_t already = logs.value("already_imported", uint64_t{0});
  const uint64_t read = logs.value("read", uint64_t{0});
  printf(
      "read %llu logs (%llu found, %llu imported before and skipped%s): %llu records, %llu "
      "paths\n",
      static_cast<unsigned long long>(read),
      static_cast<unsigned long long>(logs.value("found", uint64_t{0})),
      static_cast<unsigned long long>(already),
      logs.value("duplicates", uint64_t{0}) > 0 ? ", duplicates read once" : "",
      static_cast<unsigned long long>(r.value("records", uint64_t{0})),
      static_cast<unsigned long long>(r.value("paths_logged", uint64_t{0})));
  if (read == 0 && !r.value("replace", false)) {
    printf("nothing new to import\n");
  } else {
    const std::string prefix = r.value("prefix", "");
    printf("matched %llu files of the dataset (prefix %s, %s): %llu new, %llu merged%s\n",
           static_cast<unsigned long long>(r.value("files_matched", uint64_t{0})), prefix.c_str(),
           r.value("prefix_detected", false) ? "detected" : "given",
           static_cast<unsigned long long>(r.value("files_new", uint64_t{0})),
           static_cast<unsigned long long>(r.value("files_merged", uint64_t{0})),
           r.value("replace", false) ? " (replaced the stored heat)" : "");
  }
  printf("stored: %llu files with heat from %llu logs\n",
         static_cast<unsigned long long>(r.value("files_total", uint64_t{0})),
         static_cast<unsigned long long>(r.value("logs_total", uint64_t{0})));
  const auto& unmatched = r["unmatched"];
  if (unmatched.value("count", uint64_t{0}) > 0) {
    printf("%llu logged paths matched no file of the dataset, e.g.:\n",
           static_cast<unsigned long long>(unmatched.value("count", uint64_t{0})));
    for (const auto& e : unmatched["examples"]) printf("  %s\n", e.get<std::string>().c_str());
  }
  const uint64_t special = r.value("special_names", uint64_t{0});
  const uint64_t unnamed = r.value("unnamed_records", uint64_t{0});
  if (special + unnamed > 0) {
    printf("skipped %llu records of special names (<STDIN> and such) and %llu without a name\n",
           static_cast<unsigned long long>(special), static_cast<unsigned long long>(unnamed));
  }
  for (const auto& s : logs["skipped_bad"]) {
    printf("skipped unreadable log: %s\n", s.get<std::string>().c_str());
  }
}

// Every failure past the usage checks is a failed import (exit 1), whatever its errno: a
// corrupt log is EINVAL, and still not a usage error.
int Failed(const Status& status) {
  fprintf(stderr, "clairfs %s: %s\n", kDarshanImportCommand,
          SanitizeText(status.message()).c_str());
  return kExitFailed;
}

int Report(const Result<nlohmann::json>& report, bool json) {
  if (!report.ok()) return Failed(report.status());
  if (json) {
    printf("%s\n", report->dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else {
    PrintReport(*report);
  }
  return kExitOk;
}

Result<std::string> RealPath(const std::string& path, const std::string& what) {
  char* real = realpath(path.c_str(), nullptr);
  if (real == nullptr) return Status::FromErrno(errno, what + " " + EscapeName(path));
  std::string out(real);
  free(real);
  return out;
}

// Opens the cache as the daemon does (lock, index, a fresh listing of `backing`) and runs the
// import ops in-process. Everything it opened is closed when it returns.
int ImportOffline(const ImportArgs& a, const std::string& backing, const std::string& cache) {
  Env* env = Env::Default();
  auto tree = BackingTree::Open(backing, env);
  if (!tree.ok()) return Failed(tree.status());
  // Opened as the mount daemon opens it (cache/cache_opener.h), without the content store: an
  // import touches only the manifest and the heat.
  CacheOpenOptions open;
  open.cache_dir = cache;
  open.listing = ManifestListing::kRescan;
  open.backing = *tree;
  open.scan_threads = a.threads;
  open.open_heat = true;
  open.open_store = false;
  auto opened = OpenCache(std::move(open), env);
  if (!opened.ok()) {
    if (opened.status().code() == EBUSY) {
      return Failed(Status::Error(EBUSY, opened.status().message() +
                                             "; while it is mounted, import through the "
                                             "mountpoint: clairfs darshan import "
                                             "MOUNTPOINT LOG..."));
    }
    return Failed(opened.status());
  }
  // The heat ops in-process: never started, so no socket; the caller is the owner.
  ControlServer server("", getuid());
  RegisterHeatHandlers(&server, HeatSources{opened->manifest.get(), opened->heat.get(), nullptr});
  PeerCredentials self{getpid(), getuid(), getgid()};
  CallFn call = [&](const nlohmann::json& request) -> Result<nlohmann::json> {
    nlohmann::json reply = nlohmann::json::parse(server.HandleLine(request.dump(), self));
    if (reply.value("ok", false)) return reply;
    return Status::Error(reply.value("errno", EIO), reply.value("error", std::string("error")));
  };
  int code = Report(Import(call, a.positional, a), a.json);
  Status flush = opened->Close();
  if (!flush.ok()) return Failed(flush);
  return code;
}

// A cache directory that did not exist before the command is created for it, and removed again
// if the import fails: a failed import leaves no new cache behind.
int RunOffline(const ImportArgs& a) {
  if (a.backing.empty()) {
    return UsageError(kDarshanImportCommand,
                      "--cache needs --backing DIR (the dataset the cache fronts)");
  }
  if (a.positional.empty()) return UsageError(kDarshanImportCommand, "no LOG or DIR given");
  auto backing = RealPath(a.backing, "backing");
  if (!backing.ok()) return Failed(backing.status());
  auto made = CreatedDirectory::Make(a.cache, 0700);
  if (!made.ok()) return Failed(made.status().WithContext("cache"));
  auto cache = RealPath(a.cache, "cache");
  const int code = cache.ok() ? ImportOffline(a, *backing, *cache) : Failed(cache.status());
  if (code != kExitOk && (*made)->created()) {
    Status removed = (*made)->Remove();
    if (!removed.ok()) {
      fprintf(stderr, "clairfs %s: could not remove the new cache directory: %s\n",
              kDarshanImportCommand, SanitizeText(removed.message()).c_str());
    }
  }
  return code;
}

int RunImport(const ImportArgs& a) {
  if (!a.strip_prefix.empty() && a.strip_prefix[0] != '/') {
    return UsageError(kDarshanImportCommand, "--strip-prefix must be an absolute path");
  }
  if (!a.cache.empty()) return RunOffline(a);
  if (!a.backing.empty()) return UsageError(kDarshanImportCommand, "--backing goes with --cache");
  if (a.positional.size() < 2) {
    return UsageError(kDarshanImportCommand,
                      "give MOUNTPOINT and at least one LOG or DIR (or --cache DIR "
                      "--backing DIR for an unmounted cache)");
  }
  const std::string& mountpoint = a.positional[0];
  auto client = ControlClient::Connect(mountpoint, /*timeout_ms=*/600000);
  if (!client.ok()) return Failed(client.status());
  CallFn call = [&](const nlohmann::json& r) { return client->Call(r); };
  std::vector<std::string> inputs(a.positional.begin() + 1, a.positional.end());
  return Report(Import(call, inputs, a), a.json);
}

}  // namespace

void RegisterDarshanImport(CLI::App* darshan) {
  auto args = std::make_shared<ImportArgs>();
  CLI::App* cmd = AddCommand(
      darshan, "import",
      "Store the heat of Darshan logs in a mount's cache index (used by heat eviction and "
      "clairfs stage --hot). Usage: clairfs darshan import MOUNTPOINT LOG|DIR... or clairfs "
      "darshan import --cache DIR --backing DIR LOG|DIR...");
  cmd->add_option("ARGS", args->positional,
                  "MOUNTPOINT then Darshan logs or directories of *.darshan files (with --cache: "
                  "only the logs)")
      ->required();
  cmd->add_option("--strip-prefix", args->strip_prefix,
                  "Remove this prefix from logged paths to get dataset paths (default: detected "
                  "against the dataset)");
  cmd->add_flag("--replace", args->replace,
                "Drop all stored heat first (default: add to it; logs imported before are "
                "skipped)");
  cmd->add_flag("--json", args->json, "Print the report as JSON");
  cmd->add_flag("--skip-bad", args->skip_bad, "Skip unreadable logs (listed) instead of failing");
  cmd->add_option("--cache", args->cache,
                  "Import into this unmounted cache (refused while a daemon holds it); created "
                  "if missing, and then removed again if the import fails")
      ->type_name("DIR");
  cmd->add_option("--backing", args->backing, "With --cache: the backing directory")
      ->type_name("DIR");
  cmd->add_option("--threads", args->threads, "With --cache: listing threads (8)")
      ->check(CLI::Range(1, 256));
  cmd->callback([args] { SetExitCode(RunImport(*args)); });
}

}  // namespace clairfs::cli
