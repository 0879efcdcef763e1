// Heat ops on the control socket: import Darshan heat into the cache index, and report it.
//
// A client (`clairfs darshan import`) reads the Darshan logs itself (the daemon never opens
// them: they are the caller's files) and uploads the merged per-path counters in pieces, because
// one request line is at most ControlServer::kMaxRequestBytes:
//
//   heat_import_begin  (owner)  {replace, strip_prefix} -> {session}
//   heat_import_add    (owner)  {session, check_logs: [log id], logs: [log id], files: [[abs path,
//                               bytes_read, reads, opens, max_byte_read, read_time, records]]}
//                               -> {known_logs: [ids among check_logs and logs already stored]}
//                               check_logs only asks; logs are recorded as imported at commit
//   heat_import_commit (owner)  {session} -> {prefix, prefix_detected, files_matched,
//                               unmatched: {count, examples}, files_new, files_merged,
//                               files_total, files_dropped, logs_new, logs_total, replace}
//   heat_status        (anyone) {} -> {files, files_hot, logs, imported_at_ns}
//
// Paths (files' abs path, strip_prefix, the reply's prefix and examples) are EscapeName'd text
// (planner/name_escape.h): logged names are any bytes; heat is keyed by the raw bytes.
// The client asks which of its logs are known (check_logs), reads only the others, and names the
// ones it read (logs) with their files. Logs already imported are never recorded twice; with
// replace nothing counts as known. A commit with nothing uploaded and no replace changes nothing.
// At commit the logged absolute paths are mapped onto the mount's manifest (planner/heat.h MapHeat:
// --strip-prefix, else the prefix detected against the manifest), and the matched counters are
// stored with HeatStore::Import (merge, or replace). A commit where no logged path matches a file
// of the dataset stores nothing and fails (ENOENT), naming a few paths. Files uploaded in several
// pieces for one path are merged.
//
// Sessions live in memory: at most kMaxHeatSessions at once (the oldest is dropped for a new
// one), each forgotten at commit or after kHeatSessionIdleSeconds without a request.
// Thread-safety: handlers run on client threads; sessions have their own mutex; commits are
// serialised by HeatStore. `on_import` runs after each successful commit (the daemon hands the
// new heat to its eviction policy).
#pragma once

#include <functional>

#include "cache/heat_store.h"
#include "cache/manifest.h"
#include "fs/control/control_server.h"

namespace clairfs {

constexpr size_t kMaxHeatSessions = 4;
constexpr int kHeatSessionIdleSeconds = 600;
// Paths uploaded per session: bounds a session's memory.
constexpr size_t kMaxHeatSessionFiles = 50'000'000;

struct HeatSources {
  Manifest* manifest;
  HeatStore* heat;
  std::function<void()> on_import;  // may be empty
};

void RegisterHeatHandlers(ControlServer* server, HeatSources sources);

}  // namespace clairfs
