// Status report: gathers counters from every layer into one JSON object (see status_report.h).
#include "fs/control/status_report.h"

#include "fs/control/stats_report.h"
#include "planner/base/name_escape.h"

#include <sys/statvfs.h>
#include <unistd.h>

namespace clairfs {
namespace {

// passthrough.held_ahead: null until the warm-up started (never, without passthrough).
nlohmann::json HeldAheadJson(const HeldCopyWarmup* warmup) {
  if (warmup == nullptr) return nullptr;
  const HeldCopyWarmup::Stats s = warmup->stats();
  if (!s.started) return nullptr;
  return {{"held", s.held},
          {"files_looked_at", s.scanned},
          {"done", s.done},
          {"seconds", s.seconds},
          {"held_when_staged", s.held_when_staged}};
}

// list_ahead: null until the walk started (never with --list-ahead off).
nlohmann::json ListAheadJson(const ListAhead* list_ahead) {
  if (list_ahead == nullptr) return nullptr;
  const ListAhead::Stats s = list_ahead->stats();
  if (!s.started) return nullptr;
  return {{"names", s.names},
          {"directories", s.directories},
          {"failed_directories", s.failed_directories},
          {"done", s.done},
          {"stopped", s.stopped},
          {"seconds", s.seconds}};
}

}  // namespace

nlohmann::json SanitizedStrings(nlohmann::json j) {
  if (j.is_string()) return SanitizeText(j.get<std::string>());
  if (j.is_structured()) {
    for (auto& item : j) item = SanitizedStrings(std::move(item));
  }
  return j;
}

nlohmann::json BuildStatus(const StatusSources& s) {
  using nlohmann::json;
  ContentStoreStats store = s.store->stats();
  StagerStats stager = s.stager->stats();
  MountCounters& c = s.fs->counters();
  const ManifestSummary& m = s.manifest->summary();
  struct statvfs vfs {};
  uint64_t device_free = 0, device_size = 0;
  if (statvfs(s.cache.c_str(), &vfs) == 0) {
    device_free = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
    device_size = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  }
  uint64_t hits = c.hits.Get(), misses = c.misses.Get();
  double uptime =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - s.started).count();
  json j;
  j["version"] = CLAIRFS_VERSION_STRING;
  j["pid"] = getpid();
  j["sched_policy"] = s.request_sched;
  j["uptime_seconds"] = uptime;
  j["mountpoint"] = EscapeName(s.mountpoint);
  j["backing"] = EscapeName(s.backing);
  j["cache_dir"] = EscapeName(s.cache);
  j["owner_uid"] = getuid();
  j["read_through"] = s.fs->config().read_through;
  j["revalidate"] = s.fs->config().revalidate == Revalidate::kOpen ? "open" : "never";
  j["capacity_bytes"] = store.capacity;
  j["used_bytes"] = store.used_bytes;
  j["reserved_bytes"] = store.reserved_bytes;
  j["min_free_bytes"] = s.min_free;
  j["device_free_bytes"] = device_free;
  j["device_size_bytes"] = device_size;
  j["dataset_files"] = m.files;
  j["dataset_bytes"] = m.bytes;
  j["staged_files"] = store.files;
  j["staged_percent_files"] = m.files ? 100.0 * static_cast<double>(store.files) / m.files : 0.0;
  j["opens"] = c.opens.Get();
  j["hits"] = hits;
  j["misses"] = misses;
  j["hit_ratio"] =
      hits + misses ? static_cast<double>(hits) / static_cast<double>(hits + misses) : 0.0;
  // Why the misses missed, as the mount could tell at each (docs/ADMIN.md, "Why opens miss").
  j["miss_causes"] = {{"unplanned", c.misses_unplanned.Get()},
                      {"copy_queued", c.misses_copy_queued.Get()},
                      {"copy_in_flight", c.misses_copy_in_flight.Get()},
                      {"left_to_reader", c.misses_left_to_reader.Get()},
                      {"not_staged_ahead", c.misses_not_staged_ahead.Get()}};
  j["reads"] = c.reads.Get();
  j["bytes_from_cache"] = c.bytes_from_cache.Get();
  j["bytes_from_backing"] = c.bytes_from_backing.Get();
  j["hits_peer_copies"] = c.hits_peer_copies.Get();
  j["bytes_from_peer_copies"] = c.bytes_from_peer_copies.Get();
  j["backing_errors"] = c.backing_errors.Get();
  j["stale_detected"] = c.stale_detected.Get();
  j["stale_at_mount"] = c.stale_at_mount.Get();
  j["not_as_listed"] = c.not_as_listed.Get();
  j["copy_read_fallbacks"] = c.copy_read_fallbacks.Get();
  j["evictions"] = store.evictions;
  j["evicted_bytes"] = store.evicted_bytes;
  j["staging"] = {
      {"queued", stager.queued},
      {"in_flight", stager.in_flight},
      {"files_staged", stager.files_staged},
      {"bytes_staged", stager.bytes_staged},
      {"failures", stager.failures},
      {"skipped", stager.skipped},
      // Copies put off because their file changed within the settle time (--stage-settle),
      // and those waiting for it now (part of queued).
      {"deferred_unsettled", stager.deferred_unsettled},
      {"deferred", stager.deferred},
      {"settle_seconds", static_cast<double>(stager.settle_ns) / 1e9},
      {"bytes_per_second", uptime > 0 ? static_cast<double>(stager.bytes_staged) / uptime : 0.0}};
  j["read_requests"] = c.read_requests.Get();
  j["open_requests"] = c.open_requests.Get();
  j["flush_requests"] = c.flush_requests.Get();
  j["release_requests"] = c.release_requests.Get();
  const bool no_open = s.fs->config().no_open;
  j["open_mode"] = {
      {"mode", no_open ? "no-open" : "open"},
      {"kept_files", no_open ? s.fs->kept_files() : 0},
      {"kept_files_limit", no_open ? s.fs->kept_files_bound() : 0},
      {"note", no_open ? "opens and reads the kernel's page cache serves are not seen: an open "
                         "is a file's first READ (at offset 0) that reaches the daemon"
                       : "every open reaches the daemon"}};
  j["lookups"] = c.lookups.Get();  // LOOKUP requests: names the kernel did not know yet
  j["passthrough_opens"] = c.passthrough_opens.Get();
  j["held_copy_opens"] = c.held_copy_opens.Get();
  bool passthrough_on = s.passthrough != nullptr && s.passthrough->on();
  j["passthrough"] = {
      {"state", passthrough_on ? "on" : "off"},
      {"reason", s.passthrough != nullptr ? s.passthrough->reason() : "not available"},
      {"held_copies", s.passthrough != nullptr ? s.passthrough->held_copies() : 0},
      {"held_copies_limit", KernelPassthrough::EffectiveHeldCopies(s.held_copies)},
      {"held_ahead", HeldAheadJson(s.held_warmup)},
      {"note",
       "the kernel reads passthrough files without the daemon: their reads are not counted, "
       "and bytes_from_cache is estimated as the whole file at each passthrough open"}};
  j["list_ahead"] = ListAheadJson(s.list_ahead);
  j["peers"] = s.peers ? s.peers() : nlohmann::json(nullptr);
  const bool uring_on = s.transport != nullptr && s.transport->uring();
  j["fuse_transport"] = {
      {"state", uring_on ? "io_uring" : "dev_fuse"},
      {"reason", s.transport != nullptr ? s.transport->reason() : "not available"},
      {"queues", s.transport != nullptr ? s.transport->queues() : 0},
      {"threads_per_queue", s.transport != nullptr ? s.transport->threads_per_queue() : 0},
      {"ring_requests", s.transport != nullptr ? s.transport->ring_requests() : 0},
      {"ring_unanswered", s.transport != nullptr ? s.transport->ring_unanswered() : 0},
      {"note",
       "FORGET, INTERRUPT and notifications always use /dev/fuse; ring_requests counts the "
       "requests that arrived over io_uring"}};
  if (s.backing_calls != nullptr) {
    const BackingCallState& b = *s.backing_calls;
    j["backing_calls"] = {
        {"state", s.backing_threads > 0 ? "on" : "off"},
        {"deferred", b.deferred()},
        {"in_flight", b.in_flight()},
        {"max_in_flight", b.max_in_flight()},
        {"queued", b.queued()},
        {"threads", b.threads()},
        {"threads_limit", s.backing_threads},
        {"cancelled", b.cancelled()},
        {"note",
         "opens and reads that must reach the backing store, answered off the request threads "
         "(requests that arrived over io_uring are not); in_flight includes queued"}};
  } else {
    j["backing_calls"] = nullptr;
  }
  j["plan"] = s.plan ? SanitizedStrings(s.plan()) : nlohmann::json(nullptr);
  j["eviction"] = s.store->policy()->name();
  if (s.heat != nullptr) {
    const HeatSummary heat = s.heat->summary();
    j["heat"] = {{"files", heat.files},
                 {"files_hot", heat.files_hot},
                 {"logs", heat.logs},
                 {"imported_at_ns", heat.imported_at_ns}};
  } else {
    j["heat"] = nullptr;
  }
  j["counters_note"] =
      "counts what reaches the daemon; reads served by the kernel page cache are not seen";
  return j;
}

void RegisterStatusHandlers(ControlServer* server, StatusSources sources) {
  server->AddHandler(
      "status", ControlAccess::kAnyone, {},
      [sources](const nlohmann::json&, const PeerCredentials&, nlohmann::json* reply) {
        *reply = BuildStatus(sources);
        return Status::Ok();
      });
  RegisterStatsHandler(server, sources.fs, getuid(), sources.allow_other);
}

}  // namespace clairfs
