// `clairfs status`: what a mount has staged and served, from its daemon's control socket.
#include <cstdio>
#include <memory>
#include <string>

#include "planner/base/units.h"
#include "tools/cli/cli.h"
#include "tools/cli/control_client.h"
#include "tools/commands.h"

namespace clairfs::cli {
namespace {

struct StatusArgs {
  std::string mountpoint;
  bool json = false;
};

std::string Duration(double seconds) {
  char buf[64];
  long s = static_cast<long>(seconds);
  if (s >= 86400)
    snprintf(buf, sizeof(buf), "%ldd %ldh", s / 86400, (s % 86400) / 3600);
  else if (s >= 3600)
    snprintf(buf, sizeof(buf), "%ldh %ldm", s / 3600, (s % 3600) / 60);
  else if (s >= 60)
    snprintf(buf, sizeof(buf), "%ldm %lds", s / 60, s % 60);
  else
    snprintf(buf, sizeof(buf), "%lds", s);
  return buf;
}

// The peer tier (docs/PEERS.md): the key, the agent when one is attached, and what peers brought.
// `--plan auto`: the search, or what it adopted.
void PrintPlanInference(const nlohmann::json& inference) {
  const std::string state = inference.value("state", "");
  if (state == "adopted") {
    printf("plan auto   %s\n", inference.value("summary", "").c_str());
    return;
  }
  std::string line = "plan        auto: " + state + " (" +
                     std::to_string(inference.value("trace_opens", uint64_t{0})) + " opens from " +
                     std::to_string(inference.value("readers", uint64_t{0})) + " readers, " +
                     std::to_string(inference.value("searches", uint64_t{0})) + " searches";
  char cpu[64];
  snprintf(cpu, sizeof cpu, ", %.1f s CPU", inference.value("search_cpu_seconds", 0.0));
  line += cpu;
  line += ")";
  if (!inference.value("last_outcome", "").empty()) {
    line += "; last: " + inference.value("last_outcome", "") + ": " +
            inference.value("last_reason", "");
  }
  if (!inference.value("layout_error", "").empty()) {
    line += "; " + inference.value("layout_error", "");
  }
  printf("%s\n", line.c_str());
}

void PrintPeers(const nlohmann::json& j) {
  if (!j.contains("peers") || !j["peers"].is_object()) return;
  const auto& p = j["peers"];
  auto n = [&](const nlohmann::json& o, const char* key) {
    return static_cast<unsigned long long>(o.value(key, uint64_t{0}));
  };
  if (p.value("key", "") != "present") {
    printf("peers       off: %s\n", p.value("key", "").c_str());
    return;
  }
  const auto received = p.value("received", nlohmann::json::object());
  const auto wants = p.value("wants", nlohmann::json::object());
  if (!p.value("attached", false)) {
    printf(
        "peers       no agent attached (%s); %llu files (%llu bytes) came from peers, %llu "
        "served to them\n",
        p.value("last_detach", std::string("none yet")).c_str(), n(received, "files"),
        n(received, "bytes"), n(p, "copies_served"));
    return;
  }
  const auto agent = p.value("agent", nlohmann::json::object());
  printf(
      "peers       agent pid %llu attached: rank %llu of %llu, %llu live, %llu suspected; "
      "%llu files held here\n",
      n(p, "agent_pid"), n(agent, "rank"), n(agent, "ranks"), n(agent, "live"),
      n(agent, "suspected"), n(p, "held_files"));
  printf(
      "peer files  %llu received (%llu bytes, %llu rejected), %llu served; wants: %llu "
      "delivered, %llu to the PFS (%llu failed, %llu past deadline), %llu in flight\n",
      n(received, "files"), n(received, "bytes"), n(received, "rejected"), n(p, "copies_served"),
      n(wants, "delivered"), n(wants, "failed") + n(wants, "expired"), n(wants, "failed"),
      n(wants, "expired"), n(wants, "taken"));
}

void PrintHuman(const nlohmann::json& j) {
  auto u = [&](const char* key) { return j.value(key, uint64_t{0}); };
  printf("mount       %s  <-  %s\n", j.value("mountpoint", "").c_str(),
         j.value("backing", "").c_str());
  printf("daemon      pid %d, clairfs %s, up %s\n", j.value("pid", 0),
         j.value("version", "").c_str(), Duration(j.value("uptime_seconds", 0.0)).c_str());
  std::string capacity = u("capacity_bytes") ? FormatBytes(u("capacity_bytes")) : "device";
  printf("cache       %s: %s used of %s (device free %s, keep %s free)\n",
         j.value("cache_dir", "").c_str(), FormatBytes(u("used_bytes")).c_str(), capacity.c_str(),
         FormatBytes(u("device_free_bytes")).c_str(), FormatBytes(u("min_free_bytes")).c_str());
  printf("staged      %llu of %llu files (%.1f%%); dataset %s\n",
         static_cast<unsigned long long>(u("staged_files")),
         static_cast<unsigned long long>(u("dataset_files")), j.value("staged_percent_files", 0.0),
         FormatBytes(u("dataset_bytes")).c_str());
  printf("opens       %llu: %llu hits, %llu misses (hit ratio %.1f%%)\n",
         static_cast<unsigned long long>(u("opens")), static_cast<unsigned long long>(u("hits")),
         static_cast<unsigned long long>(u("misses")), 100.0 * j.value("hit_ratio", 0.0));
  if (u("misses") > 0 && j.contains("miss_causes") && j["miss_causes"].is_object()) {
    // In a fixed order, each cause with a count (docs/ADMIN.md, "Why opens miss").
    const auto& m = j["miss_causes"];
    std::string causes;
    for (const auto& [key, text] :
         {std::pair<const char*, const char*>{"copy_in_flight", "copy in flight (reader won)"},
          {"copy_queued", "copy queued, not started"},
          {"left_to_reader", "left to the reader"},
          {"not_staged_ahead", "planned, not staged ahead"},
          {"unplanned", "no plan for it"}}) {
      const uint64_t n = m.value(key, uint64_t{0});
      if (n == 0) continue;
      causes += (causes.empty() ? "" : ", ") + std::to_string(n) + " " + text;
    }
    if (!causes.empty()) printf("missed      %s\n", causes.c_str());
  }
  if (j.contains("open_mode") && j["open_mode"].value("mode", "open") == "no-open") {
    const auto& m = j["open_mode"];
    printf(
        "open mode   no-open: an open is a file's first READ that reaches the daemon (the kernel's "
        "page cache serves the rest unseen); %llu files kept open of %llu\n",
        static_cast<unsigned long long>(m.value("kept_files", uint64_t{0})),
        static_cast<unsigned long long>(m.value("kept_files_limit", uint64_t{0})));
  }
  if (j.contains("list_ahead") && j["list_ahead"].is_object()) {
    const auto& l = j["list_ahead"];
    const uint64_t failed = l.value("failed_directories", uint64_t{0});
    printf("names       %llu listed for the kernel at mount (%llu directories%s%s)\n",
           static_cast<unsigned long long>(l.value("names", uint64_t{0})),
           static_cast<unsigned long long>(l.value("directories", uint64_t{0})),
           failed > 0 ? (", " + std::to_string(failed) + " could not be listed").c_str() : "",
           l.value("done", false) ? "" : ", still listing");
  }
  printf(
      "bytes read  %s from cache (%s of it from copies peers brought), %s from the backing "
      "store\n",
      FormatBytes(u("bytes_from_cache")).c_str(), FormatBytes(u("bytes_from_peer_copies")).c_str(),
      FormatBytes(u("bytes_from_backing")).c_str());
  printf(
      "changes     --revalidate %s: %llu opens found the file changed, %llu refused it as not the "
      "listed version; %llu staged copies dropped at mount (changed or gone since staged)\n",
      j.value("revalidate", "never").c_str(), static_cast<unsigned long long>(u("stale_detected")),
      static_cast<unsigned long long>(u("not_as_listed")),
      static_cast<unsigned long long>(u("stale_at_mount")));
  if (u("copy_read_fallbacks") > 0) {
    printf(
        "copies      %llu opens or reads found a staged copy unreadable (its device failed?) "
        "and were served from the backing store\n",
        static_cast<unsigned long long>(u("copy_read_fallbacks")));
  }
  const auto& s = j["staging"];
  printf(
      "staging     %llu queued, %llu in flight; %llu files (%s) staged, %llu failed, "
      "%llu skipped\n",
      static_cast<unsigned long long>(s.value("queued", uint64_t{0})),
      static_cast<unsigned long long>(s.value("in_flight", uint64_t{0})),
      static_cast<unsigned long long>(s.value("files_staged", uint64_t{0})),
      FormatBytes(s.value("bytes_staged", uint64_t{0})).c_str(),
      static_cast<unsigned long long>(s.value("failures", uint64_t{0})),
      static_cast<unsigned long long>(s.value("skipped", uint64_t{0})));
  if (s.value("deferred_unsettled", uint64_t{0}) > 0) {
    printf(
        "            %llu copies put off because their file had changed within the last %.3g s "
        "(--stage-settle), %llu waiting for it now\n",
        static_cast<unsigned long long>(s.value("deferred_unsettled", uint64_t{0})),
        s.value("settle_seconds", 0.0),
        static_cast<unsigned long long>(s.value("deferred", uint64_t{0})));
  }
  if (j.contains("passthrough")) {
    const auto& p = j["passthrough"];
    if (p.value("state", "off") == "on") {
      printf(
          "passthrough on: %llu opens read by the kernel (read counts estimated for them), %llu "
          "of them of a copy it already held; %llu copies held of %llu",
          static_cast<unsigned long long>(u("passthrough_opens")),
          static_cast<unsigned long long>(u("held_copy_opens")),
          static_cast<unsigned long long>(p.value("held_copies", uint64_t{0})),
          static_cast<unsigned long long>(p.value("held_copies_limit", uint64_t{0})));
      const nlohmann::json ahead = p.value("held_ahead", nlohmann::json());
      if (ahead.is_object()) {
        printf(" (%llu held ahead at mount%s, %llu as they were staged)",
               static_cast<unsigned long long>(ahead.value("held", uint64_t{0})),
               ahead.value("done", false) ? "" : ", still holding",
               static_cast<unsigned long long>(ahead.value("held_when_staged", uint64_t{0})));
      }
      printf("\n");
    } else {
      printf("passthrough off (%s)\n", p.value("reason", "").c_str());
    }
  }
  if (j.contains("fuse_transport")) {
    const auto& t = j["fuse_transport"];
    const std::string sched = j.value("sched_policy", "");
    if (t.value("state", "") == "io_uring") {
      printf("transport   io_uring: %d queues x %d threads, %llu requests over the ring",
             t.value("queues", 0), t.value("threads_per_queue", 0),
             static_cast<unsigned long long>(t.value("ring_requests", uint64_t{0})));
    } else {
      printf("transport   /dev/fuse (%s)", t.value("reason", "").c_str());
    }
    printf("; threads scheduled %s\n", sched.c_str());
  }
  PrintPeers(j);
  printf("evictions   %llu (%s)", static_cast<unsigned long long>(u("evictions")),
         FormatBytes(u("evicted_bytes")).c_str());
  if (j.contains("eviction")) printf(", policy %s", j.value("eviction", "").c_str());
  printf("\n");
  if (j.contains("heat") && j["heat"].is_object() && j["heat"].value("files", uint64_t{0}) > 0) {
    const auto& h = j["heat"];
    printf("heat        %llu files with heat (%llu hot) from %llu Darshan logs\n",
           static_cast<unsigned long long>(h.value("files", uint64_t{0})),
           static_cast<unsigned long long>(h.value("files_hot", uint64_t{0})),
           static_cast<unsigned long long>(h.value("logs", uint64_t{0})));
  }
  if (j.contains("plan") && j["plan"].is_object() && j["plan"].contains("inference")) {
    PrintPlanInference(j["plan"]["inference"]);
  }
  if (j.contains("plan") && j["plan"].is_object() && j["plan"].value("spec", "") != "auto") {
    const auto& p = j["plan"];
    std::string ranks;
    for (const auto& r : p.value("ranks", nlohmann::json::array())) {
      ranks += " " + std::to_string(r.value("rank", 0)) + "@" +
               std::to_string(r.value("epoch", uint64_t{0})) + ":" +
               std::to_string(r.value("cursor", uint64_t{0}));
    }
    const std::string state =
        p.value("dropped", false) ? "dropped (" + p.value("dropped_reason", "") + ")" : "active";
    printf(
        "plan        %s: %s, epoch %llu, staged %llu files ahead, %llu prefetched, %llu "
        "mismatches\n",
        p.value("spec", "").c_str(), state.c_str(),
        static_cast<unsigned long long>(p.value("epoch", uint64_t{0})),
        static_cast<unsigned long long>(p.value("lead_files", uint64_t{0})),
        static_cast<unsigned long long>(p.value("prefetched_files", uint64_t{0})),
        static_cast<unsigned long long>(p.value("mismatches", uint64_t{0})));
    printf("plan ranks  (rank@epoch:cursor)%s\n", ranks.c_str());
    if (p.value("awaiting_peer_agents", false)) {
      printf(
          "plan        waiting for the job's peer agents: only the first epoch is staged until "
          "one attaches (docs/PEERS.md)\n");
    }
  }
  printf(
      "note        counters count what reaches the daemon; reads served by the kernel page "
      "cache are not seen\n");
}

int RunStatus(const StatusArgs& a) {
  auto client = ControlClient::Connect(a.mountpoint);
  if (!client.ok()) return Fail("status", client.status());
  auto reply = client->Call({{"op", "status"}});
  if (!reply.ok()) return Fail("status", reply.status());
  reply->erase("ok");
  if (a.json) {
    printf("%s\n", reply->dump(2).c_str());
  } else {
    PrintHuman(*reply);
  }
  return kExitOk;
}

}  // namespace

void RegisterStatus(CLI::App& app) {
  auto args = std::make_shared<StatusArgs>();
  CLI::App* cmd = AddCommand(&app, "status",
                             "Show a mount's cache use, hits and misses, bytes served from the "
                             "cache and the backing store, staging queue and evictions.");
  cmd->add_option("MOUNTPOINT", args->mountpoint, "The mountpoint")->required();
  cmd->add_flag("--json", args->json, "Print the status object (field names are stable)");
  cmd->callback([args]() { SetExitCode(RunStatus(*args)); });
}

}  // namespace clairfs::cli
