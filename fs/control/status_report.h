// The control socket's read-only reports: "status" (the JSON that `clairfs status` prints).
//
// Field names of the status object are part of the CLI's --json contract (documented in
// README.md): add fields, never rename or remove them. Paths (mountpoint, backing, cache_dir) are
// escaped names (planner/name_escape.h); the plan's strings (its spec, why it was dropped) pass
// through SanitizeText. Everyone may read it: it holds aggregates only.
#pragma once

#include <chrono>
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "cache/content_store.h"
#include "cache/heat_store.h"
#include "cache/manifest.h"
#include "cache/stager.h"
#include "fs/control/control_server.h"
#include "fs/filesystem.h"
#include "fs/fuse/backing_calls.h"
#include "fs/fuse/fuse_uring_transport.h"
#include "fs/fuse/held_copy_warmup.h"
#include "fs/fuse/list_ahead.h"
#include "fs/fuse/passthrough.h"

namespace clairfs {

struct StatusSources {
  // Of the mount's options, what status reports besides what the sources below know.
  uint64_t min_free = 0;
  uint64_t held_copies = 0;  // --held-copies as given
  bool allow_other = false;
  std::string backing;
  std::string mountpoint;
  std::string cache;
  Manifest* manifest;
  ContentStore* store;
  Stager* stager;
  FileSystem* fs;
  std::chrono::steady_clock::time_point started;
  const PassthroughState* passthrough = nullptr;  // null: reported as off
  std::function<nlohmann::json()> plan;  // the "plan" object (null without a plan); may be empty
  const HeatStore* heat = nullptr;       // null: "heat" is reported as null
  const FuseTransportState* transport = nullptr;  // null: reported as /dev/fuse
  std::string request_sched;  // CPU policy of the request-serving threads (fs/sched_policy.h)
  const HeldCopyWarmup* held_warmup = nullptr;      // null: "held_ahead" is reported as null
  const ListAhead* list_ahead = nullptr;            // null: "list_ahead" is reported as null
  std::function<nlohmann::json()> peers = nullptr;  // the "peers" object (null: no peer port)
  const BackingCallState* backing_calls = nullptr;  // null: "backing_calls" reported as null
  int backing_threads = 0;                          // --backing-threads (0: off)
};

nlohmann::json BuildStatus(const StatusSources& sources);
// `j` with every string in it passed through SanitizeText (for text that quotes names).
nlohmann::json SanitizedStrings(nlohmann::json j);
void RegisterStatusHandlers(ControlServer* server, StatusSources sources);

}  // namespace clairfs
