// The table of `clairfs bench passthrough` (see bench_passthrough_report.h).
#include "tools/bench/bench_passthrough_report.h"

#include <cstdio>
#include <string>

#include "planner/base/units.h"

namespace clairfs::cli {
namespace {

std::string Workload(const std::string& ds, const std::string& when) {
  const std::string what = when == "fresh"    ? "first read, fresh mount"
                           : when == "listed" ? "listed + first read, fresh"
                           : when == "staged" ? "first read, staged while mounted"
                                              : "second read (warm)";
  return std::string(ds == "big" ? "big file" : "small files") + ", " + what;
}

// The mode's name in the rows: "on", or "on/ring" when transports were compared.
std::string Label(const nlohmann::json& m) { return m.value("label", m.value("passthrough", "")); }

}  // namespace

void PrintPassthroughTable(const nlohmann::json& r) {
  const auto& machine = r["machine"];
  printf(
      "passthrough: big = 1 staged file of %s (1 reader); small = %llu staged files of %s (%d "
      "reader threads, open+read+close); median of %d\n",
      FormatBytes(r["big_size"]).c_str(), static_cast<unsigned long long>(r["files"]),
      FormatBytes(r["file_size"]).c_str(), static_cast<int>(r["threads"]),
      static_cast<int>(r["repeat"]));
  printf("kernel %s, %d cores, %s RAM; load average %s at start, %s at end\n",
         std::string(machine["kernel"]).c_str(), static_cast<int>(machine["cores"]),
         FormatBytes(machine["memory_bytes"]).c_str(),
         std::string(machine["load_average_start"]).c_str(),
         std::string(machine["load_average_end"]).c_str());

  printf("FUSE transport of each mode's mounts:");
  for (const auto& m : r["modes"]) {
    printf(" %s %s;", Label(m).c_str(),
           m.value("fuse_transport", "") == "io_uring" ? "io_uring" : "/dev/fuse");
  }
  printf("\n");

  printf("\n%-15s %-42s %10s %13s %8s %8s\n", "mode", "read (direct: the staged copies, warm)",
         "direct", "through mount", "ratio", "READs");
  for (const auto& m : r["modes"]) {
    for (const char* ds : {"big", "small"}) {
      for (const char* when : {"fresh", "warm", "listed", "staged"}) {
        if (!m[ds].contains(when)) continue;
        const auto& p = m[ds][when];
        printf("%-15s %-42s %8.3f s %11.3f s %7.2fx %8llu\n", Label(m).c_str(),
               Workload(ds, when).c_str(), static_cast<double>(p["direct_seconds"]),
               static_cast<double>(p["mount_seconds"]), static_cast<double>(p["ratio"]),
               static_cast<unsigned long long>(p["read_requests"]));
      }
    }
  }

  printf("\npage cache after one read through a fresh mount (MB; medians, min..max of the runs)\n");
  printf("%-15s %-12s %8s %8s %8s %8s %18s %8s %18s\n", "mode", "data", "read N", "Cached+",
         "copies+", "mount's", "(runs)", "own / N", "idle window");
  for (const auto& m : r["modes"]) {
    for (const char* ds : {"big", "small"}) {
      const auto& g = m[ds]["growth"];
      auto mb = [&](const char* key) { return static_cast<double>(g[key]) / 1e6; };
      char runs[64], idle[64];
      snprintf(runs, sizeof(runs), "%.1f..%.1f", mb("mount_growth_min_bytes"),
               mb("mount_growth_max_bytes"));
      snprintf(idle, sizeof(idle), "%.1f..%.1f", mb("idle_growth_min_bytes"),
               mb("idle_growth_max_bytes"));
      printf("%-15s %-12s %8.1f %8.1f %8.1f %8.1f %18s %8.4f %18s\n", Label(m).c_str(),
             ds == std::string("big") ? "big file" : "small files", mb("bytes_read"),
             mb("cached_growth_bytes"), mb("copies_added_bytes"), mb("mount_growth_bytes"), runs,
             static_cast<double>(g["growth_per_byte_read"]), idle);
    }
  }
  printf(
      "(mount's = Cached+ minus copies+; idle window: how much Cached moved with no read, for as "
      "long as a read takes, just before each read)\n");

  printf("\ntargets (issue #7; no-open: issue 21)\n");
  for (const auto& m : r["modes"]) {
    for (const auto& t : m["targets"]) {
      printf("%-15s %-56s %-10s %8.4f  %s\n", Label(m).c_str(), std::string(t["what"]).c_str(),
             std::string(t["target"]).c_str(), static_cast<double>(t["value"]),
             t["met"].get<bool>() ? "met" : "MISSED");
    }
  }

  const auto& c = r["counters"];
  printf(
      "\nread-path counters, timed in process (CPU ns per call): per READ %.1f (1 thread), %.1f "
      "(2 threads, different files), of which 2 clock reads %.1f; per passthrough open %.1f; "
      "per release (either mode) %.1f\n",
      static_cast<double>(c["read_ns_1_thread"]), static_cast<double>(c["read_ns_2_threads"]),
      2 * static_cast<double>(c["elapsed_ns"]), static_cast<double>(c["passthrough_open_ns"]),
      static_cast<double>(c["release_ns"]));
  printf("%-15s %-42s %8s %9s %11s %11s %9s %9s %9s %9s\n", "mode", "per file read", "READs",
         "counters", "reader", "daemon CPU", "of reader", "of daemon", "B/READ", "reader/READ");
  for (const auto& m : r["modes"]) {
    for (const char* ds : {"big", "small"}) {
      for (const char* when : {"fresh", "warm"}) {
        const auto& s = m[ds]["counter_share"][when];
        std::string per_read = "-";
        std::string bytes_per_read = "-";
        // Per READ only where the file's bytes went through the daemon at all.
        if (static_cast<double>(s["read_requests_per_file"]) >= 1) {
          char buf[64];
          snprintf(buf, sizeof(buf), "%.0f", static_cast<double>(s["bytes_per_read_request"]));
          bytes_per_read = buf;
          snprintf(buf, sizeof(buf), "%.1f us",
                   static_cast<double>(s["reader_ns_per_read_request"]) / 1e3);
          per_read = buf;
        }
        printf("%-15s %-42s %8.2f %6.0f ns %8.1f us %8.1f us %8.4f%% %8.4f%% %9s %11s\n",
               Label(m).c_str(), Workload(ds, when).c_str(),
               static_cast<double>(s["read_requests_per_file"]),
               static_cast<double>(s["counter_ns_per_file"]),
               static_cast<double>(s["reader_ns_per_file"]) / 1e3,
               static_cast<double>(s["daemon_cpu_ns_per_file"]) / 1e3,
               100 * static_cast<double>(s["share_of_reader_time"]),
               100 * static_cast<double>(s["share_of_daemon_cpu"]), bytes_per_read.c_str(),
               per_read.c_str());
      }
    }
  }
  printf(
      "(reader: the readers' thread time per file, wall time x threads / files; daemon CPU: "
      "/proc/PID/stat, 10 ms ticks)\n");
}

}  // namespace clairfs::cli
