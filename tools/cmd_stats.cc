// `clairfs stats`: per-file and total I/O counters of a mount, and the same as a Darshan log.
//
// The Darshan log (format 3.41, POSIX module) has one record per file read through the mount,
// with the cache and backing-store counters summed; the split by source is kept in the log's
// metadata totals and in --json. Such logs can be fed back as heat (`clairfs darshan top`).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <memory>

#include "planner/darshan_writer.h"
#include "planner/name_escape.h"
#include "planner/units.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/control_client.h"

namespace clairfs::cli {
namespace {

struct StatsArgs {
  std::string mountpoint;
  size_t top = 20;
  bool json = false;
  std::string darshan;
};

const char* const kSizeBucketNames[] = {"POSIX_SIZE_READ_0_100",   "POSIX_SIZE_READ_100_1K",
                                        "POSIX_SIZE_READ_1K_10K",  "POSIX_SIZE_READ_10K_100K",
                                        "POSIX_SIZE_READ_100K_1M", "POSIX_SIZE_READ_1M_4M",
                                        "POSIX_SIZE_READ_4M_10M",  "POSIX_SIZE_READ_10M_100M",
                                        "POSIX_SIZE_READ_100M_1G", "POSIX_SIZE_READ_1G_PLUS"};

// The raw bytes of a name the daemon sent escaped (a Darshan log records names as bytes).
std::string Raw(const std::string& escaped) {
  auto raw = UnescapeName(escaped);
  return raw.ok() ? *raw : escaped;
}

// Sums the cache and backing counters of one file into Darshan's POSIX counters.
darshan::FileCounters ToDarshan(const std::string& mountpoint, const nlohmann::json& row) {
  darshan::FileCounters fc;
  fc.path = mountpoint + "/" + Raw(row.at("path").get<std::string>());
  auto& c = fc.counters;
  auto& f = fc.fcounters;
  double open_start = -1, open_end = -1, read_start = -1, read_end = -1, close_start = -1,
         close_end = -1;
  auto min_of = [](double* slot, double v) {
    if (v >= 0 && (*slot < 0 || v < *slot)) *slot = v;
  };
  auto max_of = [](double* slot, double v) {
    if (v > *slot) *slot = v;
  };
  int64_t max_byte = -1;
  for (const char* source : {"cache", "backing"}) {
    const nlohmann::json& s = row.at(source);
    c["POSIX_OPENS"] += s.value("opens", int64_t{0});
    c["POSIX_READS"] += s.value("reads", int64_t{0});
    c["POSIX_BYTES_READ"] += s.value("bytes_read", int64_t{0});
    c["POSIX_CONSEC_READS"] += s.value("consec_reads", int64_t{0});
    c["POSIX_SEQ_READS"] += s.value("seq_reads", int64_t{0});
    max_byte = std::max(max_byte, s.value("max_byte_read", int64_t{-1}));
    const auto& hist = s.at("size_read");
    for (size_t i = 0; i < hist.size() && i < 10; ++i) {
      c[kSizeBucketNames[i]] += hist[i].get<int64_t>();
    }
    f["POSIX_F_READ_TIME"] += s.value("read_time", 0.0);
    max_of(&f["POSIX_F_MAX_READ_TIME"], s.value("max_read_time", 0.0));
    min_of(&open_start, s.value("open_start", -1.0));
    max_of(&open_end, s.value("open_end", -1.0));
    min_of(&read_start, s.value("read_start", -1.0));
    max_of(&read_end, s.value("read_end", -1.0));
    min_of(&close_start, s.value("close_start", -1.0));
    max_of(&close_end, s.value("close_end", -1.0));
  }
  c["POSIX_MAX_BYTE_READ"] = std::max<int64_t>(0, max_byte);
  c["POSIX_MODE"] = 0444;
  f["POSIX_F_OPEN_START_TIMESTAMP"] = std::max(0.0, open_start);
  f["POSIX_F_OPEN_END_TIMESTAMP"] = std::max(0.0, open_end);
  f["POSIX_F_READ_START_TIMESTAMP"] = std::max(0.0, read_start);
  f["POSIX_F_READ_END_TIMESTAMP"] = std::max(0.0, read_end);
  f["POSIX_F_CLOSE_START_TIMESTAMP"] = std::max(0.0, close_start);
  f["POSIX_F_CLOSE_END_TIMESTAMP"] = std::max(0.0, close_end);
  return fc;
}

Status WriteDarshan(const std::string& out, const nlohmann::json& status,
                    const nlohmann::json& stats) {
  darshan::JobDescription job;
  job.uid = status.value("owner_uid", int64_t{0});
  const char* slurm_job = getenv("SLURM_JOB_ID");
  job.jobid = slurm_job != nullptr ? std::atoll(slurm_job) : 0;
  job.nprocs = 1;
  uint64_t start_ns = stats.value("start_time_ns", uint64_t{0});
  uint64_t end_ns = start_ns + static_cast<uint64_t>(stats.value("elapsed_seconds", 0.0) * 1e9);
  job.start_time_sec = static_cast<int64_t>(start_ns / 1000000000ULL);
  job.start_time_nsec = static_cast<int64_t>(start_ns % 1000000000ULL);
  job.end_time_sec = static_cast<int64_t>(end_ns / 1000000000ULL);
  job.end_time_nsec = static_cast<int64_t>(end_ns % 1000000000ULL);
  const auto& totals = stats.at("totals");
  job.metadata = {
      {"lib_ver", "clairfs-" + status.value("version", std::string("?"))},
      {"clairfs_note",
       "recorded by the clairfs FUSE daemon: counts requests that reached the daemon "
       "(reads served by the kernel page cache are not seen) split at the FUSE max read size; "
       "read counts are estimated for files opened in kernel passthrough mode (the whole file "
       "counted as one read at open)"},
      {"clairfs_backing", Raw(status.value("backing", std::string()))},
      {"clairfs_bytes_from_cache",
       std::to_string(totals.at("cache").value("bytes_read", uint64_t{0}))},
      {"clairfs_bytes_from_backing",
       std::to_string(totals.at("backing").value("bytes_read", uint64_t{0}))}};
  std::string mountpoint = Raw(status.value("mountpoint", std::string()));
  job.exe = "clairfs-fuse-daemon mount " + Raw(status.value("backing", std::string())) + " " +
            mountpoint + " (pid " + std::to_string(status.value("pid", 0)) + ")";
  job.mounts = {{"fuse.clairfs", mountpoint}};
  std::vector<darshan::FileCounters> files;
  for (const auto& row : stats.at("files")) files.push_back(ToDarshan(mountpoint, row));
  auto log = darshan::BuildPosixLog(job, files);
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
  if (!stats.value("per_file", true)) {
    printf("(per-file counters are shown only to root and the user who mounted)\n");
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
      "file is closed. With --darshan, writes them as a Darshan log (format 3.41).\n"
      "Per-file rows are shown to root and the user who mounted only; other users of an\n"
      "allow_other mount get the totals, those of a private mount nothing.");
  cmd->add_option("MOUNTPOINT", args->mountpoint, "The mountpoint")->required();
  cmd->add_option("--top", args->top, "Files to list, most bytes read first (0 = all; 20)");
  cmd->add_flag("--json", args->json,
                "Print the counters as JSON (paths escaped: see README \"Names with any bytes\")");
  cmd->add_option("--darshan", args->darshan,
                  "Write a Darshan log of every file's counters to this new file")
      ->type_name("OUT.darshan");
  cmd->callback([args]() { SetExitCode(RunStats(*args)); });
}

}  // namespace clairfs::cli
