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
#include "fs/control_server.h"
#include "fs/filesystem.h"
#include "fs/fuse_uring_transport.h"
#include "fs/held_copy_warmup.h"
#include "fs/list_ahead.h"
#include "fs/mount_options.h"
#include "fs/passthrough.h"

namespace clairfs {

struct StatusSources {
  const MountOptions* options;
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
  const HeldCopyWarmup* held_warmup = nullptr;  // null: "held_ahead" is reported as null
  const ListAhead* list_ahead = nullptr;        // null: "list_ahead" is reported as null
};

nlohmann::json BuildStatus(const StatusSources& sources);
// `j` with every string in it passed through SanitizeText (for text that quotes names).
nlohmann::json SanitizedStrings(nlohmann::json j);
void RegisterStatusHandlers(ControlServer* server, StatusSources sources);

}  // namespace clairfs
