// A mount's own traffic as a Darshan log (see stats_darshan.h).
#include "tools/stats_darshan.h"

#include <algorithm>
#include <array>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "planner/base/name_escape.h"
#include "planner/darshan/darshan_writer.h"

namespace clairfs::cli {
namespace {

using nlohmann::json;

const char* const kSizeBucketNames[] = {"POSIX_SIZE_READ_0_100",   "POSIX_SIZE_READ_100_1K",
                                        "POSIX_SIZE_READ_1K_10K",  "POSIX_SIZE_READ_10K_100K",
                                        "POSIX_SIZE_READ_100K_1M", "POSIX_SIZE_READ_1M_4M",
                                        "POSIX_SIZE_READ_4M_10M",  "POSIX_SIZE_READ_10M_100M",
                                        "POSIX_SIZE_READ_100M_1G", "POSIX_SIZE_READ_1G_PLUS"};

// Counters a FUSE daemon cannot see: the calls never reach it (seeks, stats of a file, mmaps
// served from the page cache, fsyncs, descriptor duplication) or it never sees the caller's
// buffers (memory alignment).
const char* const kNotMonitored[] = {
    "POSIX_FILENOS", "POSIX_DUPS",    "POSIX_SEEKS",           "POSIX_STATS",         "POSIX_MMAPS",
    "POSIX_FSYNCS",  "POSIX_FDSYNCS", "POSIX_MEM_NOT_ALIGNED", "POSIX_MEM_ALIGNMENT",
};

// A name that crossed the control socket: escaped (planner/name_escape.h); a reply from a
// daemon that sent it raw is taken as it is.
std::string RawName(const std::string& shown) {
  Result<std::string> raw = UnescapeName(shown);
  return raw.ok() ? *raw : shown;
}

// Darshan's common-value slots: the four commonest values, most frequent first and the larger
// value first among equal counts; 0 never takes a slot (DARSHAN_UPDATE_COMMON_VAL_COUNTERS).
void SetCommonValues(const std::map<int64_t, int64_t>& counts, const std::string& first_value,
                     const std::string& value_suffix, const std::string& count_suffix,
                     std::map<std::string, int64_t>* out) {
  std::vector<std::pair<int64_t, int64_t>> sorted;  // value, count
  for (const auto& [value, count] : counts) {
    if (value != 0) sorted.emplace_back(value, count);
  }
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) {
    return a.second != b.second ? a.second > b.second : a.first > b.first;
  });
  for (size_t i = 0; i < 4; ++i) {
    const std::string slot = first_value + std::to_string(i + 1);
    (*out)[slot + value_suffix] = i < sorted.size() ? sorted[i].first : 0;
    (*out)[slot + count_suffix] = i < sorted.size() ? sorted[i].second : 0;
  }
}

void AddCommonValues(const json& list, std::map<int64_t, int64_t>* counts) {
  if (!list.is_array()) return;
  for (const json& pair : list) {
    if (pair.is_array() && pair.size() == 2) {
      (*counts)[pair[0].get<int64_t>()] += pair[1].get<int64_t>();
    }
  }
}

// Sums the cache and backing counters of one file into Darshan's POSIX counters.
darshan::FileCounters ToDarshan(const std::string& mountpoint, const json& row,
                                int64_t file_alignment) {
  darshan::FileCounters fc;
  fc.path = mountpoint + "/" + RawName(row.at("path").get<std::string>());
  fc.rank = 0;
  auto& c = fc.counters;
  auto& f = fc.fcounters;
  for (const char* name : kNotMonitored) c[name] = -1;
  double open_start = -1, open_end = -1, read_start = -1, read_end = -1, close_start = -1,
         close_end = -1;
  auto min_of = [](double* slot, double v) {
    if (v >= 0 && (*slot < 0 || v < *slot)) *slot = v;
  };
  auto max_of = [](double* slot, double v) {
    if (v > *slot) *slot = v;
  };
  int64_t max_byte = -1;
  double max_read_time = 0;
  int64_t max_read_time_size = 0;
  std::map<int64_t, int64_t> access_sizes, strides;
  for (const char* source : {"cache", "backing"}) {
    const json& s = row.at(source);
    c["POSIX_OPENS"] += s.value("opens", int64_t{0});
    c["POSIX_READS"] += s.value("reads", int64_t{0});
    c["POSIX_BYTES_READ"] += s.value("bytes_read", int64_t{0});
    c["POSIX_CONSEC_READS"] += s.value("consec_reads", int64_t{0});
    c["POSIX_SEQ_READS"] += s.value("seq_reads", int64_t{0});
    c["POSIX_FILE_NOT_ALIGNED"] += s.value("file_not_aligned", int64_t{0});
    max_byte = std::max(max_byte, s.value("max_byte_read", int64_t{-1}));
    const json& hist = s.at("size_read");
    for (size_t i = 0; i < hist.size() && i < 10; ++i) {
      c[kSizeBucketNames[i]] += hist[i].get<int64_t>();
    }
    AddCommonValues(s.value("access_sizes", json::array()), &access_sizes);
    AddCommonValues(s.value("strides", json::array()), &strides);
    // Darshan's F_READ_TIME counts overlapping reads once; older daemons report only the sum.
    f["POSIX_F_READ_TIME"] += s.value("read_busy_time", s.value("read_time", 0.0));
    f["POSIX_F_META_TIME"] += s.value("meta_time", 0.0);
    const double slowest = s.value("max_read_time", 0.0);
    if (slowest > max_read_time) {
      max_read_time = slowest;
      max_read_time_size = s.value("max_read_time_size", int64_t{0});
    }
    min_of(&open_start, s.value("open_start", -1.0));
    max_of(&open_end, s.value("open_end", -1.0));
    min_of(&read_start, s.value("read_start", -1.0));
    max_of(&read_end, s.value("read_end", -1.0));
    min_of(&close_start, s.value("close_start", -1.0));
    max_of(&close_end, s.value("close_end", -1.0));
  }
  c["POSIX_MAX_BYTE_READ"] = std::max<int64_t>(0, max_byte);
  // Every open is read-only (the mount refuses O_CREAT), so open(2) had no mode argument.
  c["POSIX_MODE"] = 0;
  c["POSIX_FILE_ALIGNMENT"] = file_alignment;
  if (file_alignment <= 0) c["POSIX_FILE_NOT_ALIGNED"] = -1;
  c["POSIX_MAX_READ_TIME_SIZE"] = max_read_time_size;
  SetCommonValues(access_sizes, "POSIX_ACCESS", "_ACCESS", "_COUNT", &c);
  SetCommonValues(strides, "POSIX_STRIDE", "_STRIDE", "_COUNT", &c);
  f["POSIX_F_MAX_READ_TIME"] = max_read_time;
  f["POSIX_F_OPEN_START_TIMESTAMP"] = std::max(0.0, open_start);
  f["POSIX_F_OPEN_END_TIMESTAMP"] = std::max(0.0, open_end);
  f["POSIX_F_READ_START_TIMESTAMP"] = std::max(0.0, read_start);
  f["POSIX_F_READ_END_TIMESTAMP"] = std::max(0.0, read_end);
  f["POSIX_F_CLOSE_START_TIMESTAMP"] = std::max(0.0, close_start);
  f["POSIX_F_CLOSE_END_TIMESTAMP"] = std::max(0.0, close_end);
  return fc;
}

// Darshan's mount table cannot hold whitespace: a mountpoint with some is recorded as its
// longest leading part without (at least "/").
std::string MountTablePath(const std::string& mountpoint) {
  size_t cut = mountpoint.find_first_of(" \t\n\r\f\v");
  if (cut == std::string::npos) return mountpoint;
  size_t slash = mountpoint.rfind('/', cut);
  return slash == std::string::npos || slash == 0 ? "/" : mountpoint.substr(0, slash);
}

}  // namespace

Result<darshan::DarshanLog> MountDarshanLog(const json& status, const json& stats, int64_t jobid) {
  try {
    darshan::JobDescription job;
    job.uid = status.value("owner_uid", int64_t{0});
    job.jobid = jobid;
    job.nprocs = 1;
    const uint64_t start_ns = stats.value("start_time_ns", uint64_t{0});
    const uint64_t end_ns =
        start_ns + static_cast<uint64_t>(stats.value("elapsed_seconds", 0.0) * 1e9);
    job.start_time_sec = static_cast<int64_t>(start_ns / 1000000000ULL);
    job.start_time_nsec = static_cast<int64_t>(start_ns % 1000000000ULL);
    job.end_time_sec = static_cast<int64_t>(end_ns / 1000000000ULL);
    job.end_time_nsec = static_cast<int64_t>(end_ns % 1000000000ULL);
    const json& totals = stats.at("totals");
    // Text fields: the metadata is key=value lines and the command line one line, so names in
    // them stay escaped.
    std::string backing = EscapeName(RawName(status.value("backing", std::string())));
    if (backing.size() > 300) backing = backing.substr(0, 300) + "...";  // 1023 bytes in all
    const std::string mountpoint = RawName(status.value("mountpoint", std::string()));
    job.metadata = {
        {"lib_ver", "clairfs-" + status.value("version", std::string("?"))},
        {"clairfs_note",
         "recorded by the clairfs FUSE daemon: counts requests that reached the daemon (reads "
         "served by the kernel page cache are not seen) split at the FUSE max read size; read "
         "counts are estimated for files opened in kernel passthrough mode (the whole file "
         "counted as one read at open); one process, rank 0; -1: not visible to a FUSE daemon"},
        {"clairfs_open_mode",
         status.contains("open_mode") &&
                 status["open_mode"].value("mode", std::string("open")) == "no-open"
             ? "no-open: an open is a file's first READ that reached the daemon; the page "
               "cache's are not seen"
             : "open: every open reached the daemon"},
        {"clairfs_backing", backing},
        {"clairfs_bytes_from_cache",
         std::to_string(totals.at("cache").value("bytes_read", uint64_t{0}))},
        {"clairfs_bytes_from_backing",
         std::to_string(totals.at("backing").value("bytes_read", uint64_t{0}))}};
    job.exe = "clairfs-fuse-daemon mount " + backing + " " + EscapeName(mountpoint) + " (pid " +
              std::to_string(status.value("pid", 0)) + ")";
    job.mounts = {{"fuse.clairfs", MountTablePath(mountpoint)}};
    const int64_t file_alignment = stats.value("file_alignment", int64_t{-1});
    std::vector<darshan::FileCounters> files;
    for (const json& row : stats.at("files")) {
      files.push_back(ToDarshan(mountpoint, row, file_alignment));
    }
    return darshan::BuildPosixLog(job, files);
  } catch (const json::exception& e) {
    return Status::Invalid(std::string("the daemon's stats reply lacks a field: ") + e.what());
  }
}

}  // namespace clairfs::cli
