// Reporting for `clairfs bench peers` (see bench_peers_report.h).
#include "tools/bench/bench_peers_report.h"

#include <algorithm>
#include <cstdio>
#include <string>

#include "planner/base/units.h"
#include "tools/bench/bench_support.h"

namespace clairfs {
namespace {

const nlohmann::json* FindMode(const nlohmann::json& result, const std::string& mode) {
  if (!result.contains("modes")) return nullptr;
  for (const auto& m : result["modes"]) {
    if (m.value("mode", "") == mode) return &m;
  }
  return nullptr;
}

double Percent(uint64_t part, uint64_t whole) {
  return whole ? 100.0 * static_cast<double>(part) / static_cast<double>(whole) : 0.0;
}

}  // namespace

nlohmann::json PeersTargets(const nlohmann::json& result) {
  nlohmann::json t = {{"pfs_from_epoch2", nullptr},
                      {"pfs_job", nullptr},
                      {"steady_speedup", nullptr},
                      {"verified", nullptr}};
  const uint64_t dataset = result.value("dataset_bytes", uint64_t{0});
  const nlohmann::json* peers = FindMode(result, "peers");
  const nlohmann::json* base = FindMode(result, "baseline");
  if (peers != nullptr) {
    nlohmann::json per_epoch = nlohmann::json::array();
    double largest = 0;
    for (const auto& p : (*peers)["phases"]) {
      const std::string name = p["phase"];
      if (name == "setup" || name == "end" || name == "1") continue;
      const double percent = Percent(p["pfs_bytes"].get<uint64_t>(), dataset);
      largest = std::max(largest, percent);
      per_epoch.push_back({{"epoch", std::stoi(name)}, {"percent", percent}});
    }
    if (!per_epoch.empty()) {
      t["pfs_from_epoch2"] = {{"epochs", per_epoch},
                              {"largest_percent", largest},
                              {"target_percent", 5.0},
                              {"met", largest <= 5.0}};
    }
    const double ratio = dataset
                             ? static_cast<double>((*peers)["job"]["pfs_bytes"].get<uint64_t>()) /
                                   static_cast<double>(dataset)
                             : 0.0;
    t["pfs_job"] = {{"ratio", ratio}, {"target", 1.15}, {"met", ratio <= 1.15}};
    if (base != nullptr && dataset) {
      t["pfs_job"]["baseline_ratio"] =
          static_cast<double>((*base)["job"]["pfs_bytes"].get<uint64_t>()) /
          static_cast<double>(dataset);
    }
  }
  if (peers != nullptr && base != nullptr) {
    const double b = (*base)["steady_seconds"], p = (*peers)["steady_seconds"];
    const double speedup = p > 0 ? b / p : 0.0;
    t["steady_speedup"] = {{"baseline_seconds", b},
                           {"peers_seconds", p},
                           {"speedup", speedup},
                           {"target", 2.0},
                           {"met", speedup >= 2.0}};
  }
  uint64_t verified = 0, expected = 0;
  for (const auto& m : result.value("modes", nlohmann::json::array())) {
    verified += m["job"]["bytes_verified"].get<uint64_t>();
    expected += m["job"]["bytes_expected"].get<uint64_t>();
  }
  if (expected > 0) {
    t["verified"] = {
        {"bytes_verified", verified}, {"bytes_expected", expected}, {"met", verified == expected}};
  }
  return t;
}

void PrintPeersTable(const nlohmann::json& r) {
  const uint64_t dataset = r["dataset_bytes"];
  printf(
      "clairfs bench peers: %d nodes (daemon, cache of %d%% = %s, mount and %d reader threads "
      "each), %s files (%s), torch-distributed world %d, %d epochs\n",
      r["nodes"].get<int>(), r["cache_percent"].get<int>(),
      FormatBytes(r["capacity_bytes"].get<uint64_t>()).c_str(), r["threads"].get<int>(),
      r["files"].dump().c_str(), FormatBytes(dataset).c_str(), r["nodes"].get<int>(),
      r["epochs"].get<int>());
  printf("PFS: one emulator, %s ms per open, %s MB/s in all; work per sample %.1f ms\n",
         r["open_latency_ms"].get<std::string>().c_str(),
         r["bandwidth_mbps"].get<std::string>().c_str(), r["work_ms"].get<double>());
  printf("load average at start %s, at end %s\n\n", r["loadavg_start"].get<std::string>().c_str(),
         r.value("loadavg_end", std::string("?")).c_str());
  printf("%-9s %-6s %8s %17s %11s %11s %11s %10s %22s\n", "mode", "phase", "time", "PFS bytes",
         "from local", "from peers", "from PFS", "hits/opens", "CPU-s dmn+agt+rdr=sum");
  for (const auto& m : r["modes"]) {
    auto row = [&](const nlohmann::json& p, const std::string& phase) {
      const uint64_t pfs = p["pfs_bytes"];
      char pfs_text[48];
      snprintf(pfs_text, sizeof(pfs_text), "%s (%4.1f%%)", FormatBytes(pfs).c_str(),
               Percent(pfs, dataset));
      char cpu[64];
      snprintf(cpu, sizeof(cpu), "%.1f+%.1f+%.1f=%.1f", p["cpu"]["daemons"].get<double>(),
               p["cpu"]["agents"].get<double>(), p["cpu"]["readers"].get<double>(),
               p["cpu"]["total"].get<double>());
      const uint64_t hits = p["hits"], misses = p["misses"];
      char opens[32];
      snprintf(opens, sizeof(opens), "%llu/%llu", static_cast<unsigned long long>(hits),
               static_cast<unsigned long long>(hits + misses));
      printf("%-9s %-6s %7.2fs %17s %11s %11s %11s %10s %22s\n",
             m["mode"].get<std::string>().c_str(), phase.c_str(), p["seconds"].get<double>(),
             pfs_text, FormatBytes(p["bytes_from_local"].get<uint64_t>()).c_str(),
             FormatBytes(p["bytes_from_peers"].get<uint64_t>()).c_str(),
             FormatBytes(p["bytes_from_pfs"].get<uint64_t>()).c_str(), opens, cpu);
    };
    for (const auto& p : m["phases"]) row(p, p["phase"]);
    row(m["job"], "job");
    printf("%-9s steady epoch time (median of epochs >= 2): %.2f s\n\n",
           m["mode"].get<std::string>().c_str(), m["steady_seconds"].get<double>());
  }
  printf(
      "PFS bytes are counted at the emulator; from local / peers / PFS are the daemons' read "
      "counters (reads served from copies staged from the PFS by the node itself, from copies "
      "pulled from a peer, and from the PFS on a miss). CPU-seconds: the daemons, the agents "
      "(mpirun and its ranks) and the reader threads; the emulator's own: see --json.\n\n");
  const nlohmann::json& t = r["targets"];
  printf("targets (issue 19):\n");
  if (t["pfs_from_epoch2"].is_object()) {
    std::string each;
    for (const auto& e : t["pfs_from_epoch2"]["epochs"]) {
      char buf[48];
      snprintf(buf, sizeof(buf), "%s%d: %.1f%%", each.empty() ? "" : ", ", e["epoch"].get<int>(),
               e["percent"].get<double>());
      each += buf;
    }
    printf(
        "  PFS bytes per epoch from epoch 2, with peers: at most %.1f%% of the dataset (%s) "
        "(target <= 5%%): %s\n",
        t["pfs_from_epoch2"]["largest_percent"].get<double>(), each.c_str(),
        MetText(t["pfs_from_epoch2"]));
  }
  if (t["pfs_job"].is_object()) {
    std::string without;
    if (t["pfs_job"].contains("baseline_ratio")) {
      char buf[64];
      snprintf(buf, sizeof(buf), "; without peers %.2fx",
               t["pfs_job"]["baseline_ratio"].get<double>());
      without = buf;
    }
    printf("  PFS bytes over the job, with peers: %.2fx the dataset (target <= 1.15x)%s: %s\n",
           t["pfs_job"]["ratio"].get<double>(), without.c_str(), MetText(t["pfs_job"]));
  }
  if (t["steady_speedup"].is_object()) {
    printf(
        "  steady epoch speed-up with peers: %.2fx (%.2f s without, %.2f s with) "
        "(target >= 2x): %s\n",
        t["steady_speedup"]["speedup"].get<double>(),
        t["steady_speedup"]["baseline_seconds"].get<double>(),
        t["steady_speedup"]["peers_seconds"].get<double>(), MetText(t["steady_speedup"]));
  }
  if (t["verified"].is_object()) {
    printf("  every byte verified: %s of %s (target: all): %s\n",
           t["verified"]["bytes_verified"].dump().c_str(),
           t["verified"]["bytes_expected"].dump().c_str(), MetText(t["verified"]));
  }
}

}  // namespace clairfs
