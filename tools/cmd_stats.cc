// `clairfs stats`: per-file and total I/O counters of a mount, and the same as a Darshan log.
//
// The Darshan log (format 3.41, POSIX module; built in tools/stats_darshan.h) has one record per
// file read through the mount, with the cache and backing-store counters summed; the split by
// source is kept in the log's metadata totals and in --json. Such logs can be fed back as heat
// (`clairfs darshan top`).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>

#include "planner/base/units.h"
#include "planner/darshan/darshan_writer.h"
#include "tools/cli/cli.h"
#include "tools/cli/control_client.h"
#include "tools/commands.h"
#include "tools/stats_darshan.h"

namespace clairfs::cli {
namespace {

struct StatsArgs {
  std::string mountpoint;
  size_t top = 20;
  bool json = false;
  std::string darshan;
};

Status WriteDarshan(const std::string& out, const nlohmann::json& status,
                    const nlohmann::json& stats) {
  const char* slurm_job = getenv("SLURM_JOB_ID");
  auto log = MountDarshanLog(status, stats, slurm_job != nullptr ? std::atoll(slurm_job) : 0);
  if (!log.ok()) return log.status();
  return darshan::WriteDarshanLogFile(out, *log);
}

void PrintHuman(const nlohmann::json& stats, size_t top) {
  const auto& t = stats.at("totals");
  for (const char* source : {"cache", "backing"}) {
    const auto& s = t.at(source);
    printf("%-8s %8llu opens %10llu reads %12s read, %.3f s reading\n", source,
           static_cast<unsigned long long>(s.value("opens", uint64_t{0})),
           static_cast<unsigned long long>(s.value("reads", uint64_t{0})),
           FormatBytes(s.value("bytes_read", uint64_t{0})).c_str(), s.value("read_time", 0.0));
  }
  printf("\n%-60s %6s %8s %12s %12s\n", "file (top by bytes read)", "opens", "reads", "from cache",
         "from backing");
  size_t shown = 0;
  for (const auto& row : stats.at("files")) {
    if (top != 0 && shown++ >= top) break;
    const auto& c = row.at("cache");
    const auto& b = row.at("backing");
    printf("%-60s %6llu %8llu %12s %12s\n", row.value("path", std::string()).c_str(),
           static_cast<unsigned long long>(c.value("opens", uint64_t{0}) +
                                           b.value("opens", uint64_t{0})),
           static_cast<unsigned long long>(c.value("reads", uint64_t{0}) +
                                           b.value("reads", uint64_t{0})),
           FormatBytes(c.value("bytes_read", uint64_t{0})).c_str(),
           FormatBytes(b.value("bytes_read", uint64_t{0})).c_str());
  }
  printf("\n%llu files have counters. Note: %s\n",
         static_cast<unsigned long long>(stats.value("files_with_counters", uint64_t{0})),
         stats.value("note", std::string()).c_str());
}

int RunStats(const StatsArgs& a) {
  auto client = ControlClient::Connect(a.mountpoint);
  if (!client.ok()) return Fail("stats", client.status());
  size_t top = a.darshan.empty() ? a.top : 0;
  auto stats = client->Call({{"op", "stats"}, {"top", top}});
  if (!stats.ok()) return Fail("stats", stats.status());
  if (!a.darshan.empty()) {
    auto status = client->Call({{"op", "status"}});
    if (!status.ok()) return Fail("stats", status.status());
    Status st = WriteDarshan(a.darshan, *status, *stats);
    if (!st.ok()) return Fail("stats", st.WithContext("write " + a.darshan));
    if (!a.json) {
      printf("wrote %s: %zu file records\n", a.darshan.c_str(), (*stats)["files"].size());
    }
  }
  stats->erase("ok");
  if (a.json) {
    printf("%s\n", stats->dump(2).c_str());
  } else if (a.darshan.empty()) {
    PrintHuman(*stats, a.top);
  }
  return kExitOk;
}

}  // namespace

void RegisterStats(CLI::App& app) {
  auto args = std::make_shared<StatsArgs>();
  CLI::App* cmd = AddCommand(
      &app, "stats",
      "Per-file and total I/O counters of a mount (Darshan POSIX-style: opens, reads, bytes,\n"
      "max byte, size histogram, consecutive/sequential reads, read time, timestamps), split by\n"
      "source (local cache or backing store). Counts what reaches the daemon, merged when each\n"
      "file is closed. With --darshan, writes them as a Darshan log (format 3.41).");
  cmd->add_option("MOUNTPOINT", args->mountpoint, "The mountpoint")->required();
  cmd->add_option("--top", args->top, "Files to list, most bytes read first (0 = all; 20)");
  cmd->add_flag("--json", args->json, "Print the counters as JSON");
  cmd->add_option("--darshan", args->darshan,
                  "Write a Darshan log of every file's counters to this new file")
      ->type_name("OUT.darshan");
  cmd->callback([args]() { SetExitCode(RunStats(*args)); });
}

}  // namespace clairfs::cli
