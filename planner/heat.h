// Heat: how hot each dataset file was in earlier runs, merged from any number of Darshan logs.
//
// Per absolute path, POSIX and STDIO records of every log (per-process logs of one job, logs of
// many jobs, per-rank records of MPI jobs) are summed: bytes read, reads, opens, read time; the
// highest byte read is the maximum. From those:
//   rereads        = bytes_read / (max_byte_read + 1)   how many times the file was read over
//   heat_per_byte  = (bytes_read + kOpCostBytes * (reads + opens)) / (max_byte_read + 1)
// heat_per_byte is what staging a byte of the file saves on the parallel filesystem: the bytes
// that would be read from it again, plus a fixed cost per operation, because (as tf-Darshan
// found) many small reads of small files, not big files, make PFS reads slow. Files never read
// score 0. Counters Darshan did not monitor (-1) count as 0.
//
// Paths are mapped onto the backing root: with `strip_prefix`, by removing that prefix; with
// only `backing_root`, by detecting the prefix (the ancestor directory of the log paths that,
// removed, makes the most of them exist under the backing root, judged on a sample). Paths
// outside the prefix or missing from the backing root are counted and some are listed, never
// silently dropped. Special names (<STDIN>, heatmap:POSIX, anything not absolute) are skipped
// and counted.
//
// LoadHeat is three steps that callers may also run apart (`clairfs darshan import` reads the
// logs on the client and maps the paths onto the mount's manifest in the daemon):
// ExpandHeatInputs (which files), ReadHeatLogs (absolute path -> merged counters), MapHeat
// (prefix, matching, ranking). Stored heat is merged again with MergeHeatCounters.
//
// Thread-safety: pure functions over their inputs; LoadHeat, ReadHeatLogs and HeatLogId read
// log files and, when `backing_root` is set, LoadHeat and MapHeat stat files below it.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "planner/base/status.h"
#include "planner/darshan/darshan_log.h"
#include "planner/darshan/darshan_reader.h"

namespace clairfs {

// Bytes of PFS transfer one read or open is worth in heat_per_byte.
constexpr double kOpCostBytes = 64 * 1024;

struct HeatCounters {
  uint64_t bytes_read = 0;
  uint64_t reads = 0;
  uint64_t opens = 0;
  int64_t max_byte_read = -1;  // -1: nothing read
  double read_time = 0;        // seconds
  uint64_t records = 0;        // Darshan records merged into this entry
};

struct HeatRecord {
  std::string path;  // relative to the backing root when mapped, else the absolute PFS path
  HeatCounters counters;
  double rereads = 0;
  double heat_per_byte = 0;
};

struct HeatTable {
  std::vector<HeatRecord> files;  // hottest first (heat_per_byte, then bytes read, then path)
  std::string prefix;             // prefix stripped from PFS paths ("" if none)
  bool prefix_detected = false;   // found by detection, not given
  size_t logs = 0;
  size_t records = 0;
  size_t special_names = 0;    // records of <STDIN> and such
  size_t unnamed_records = 0;  // record ids missing from their log's name map
  size_t unmatched_paths = 0;  // outside the prefix or missing from the backing root
  std::vector<std::string> unmatched_examples;  // first few, sorted
  std::vector<std::string> skipped_logs;        // "path: error" (with skip_bad_logs)
};

struct HeatOptions {
  std::string backing_root;  // empty: do not map onto a backing root
  std::string strip_prefix;  // empty: detect (when backing_root is set) or keep absolute paths
  // Whether `relative` exists under the backing root; defaults to stat() below backing_root.
  std::function<bool(const std::string& relative)> exists;
  bool skip_bad_logs = false;  // a corrupt log is an error unless this is set
  size_t detection_sample = 1000;
  // Called after each log is read (logs done, logs in all), e.g. for a progress line.
  std::function<void(size_t done, size_t total)> progress;
  size_t max_unmatched_examples = 10;
};

// Counters merged from several sources: sums, the highest byte read is the maximum.
void MergeHeatCounters(HeatCounters* into, const HeatCounters& from);
// bytes_read / (max_byte_read + 1); 0 if nothing was read.
double HeatRereads(const HeatCounters& counters);
// (bytes_read + kOpCostBytes * (reads + opens)) / (max_byte_read + 1); 0 if nothing was read.
double HeatPerByte(const HeatCounters& counters);

// Adds every POSIX and STDIO record of `log` to `by_path` (keyed by absolute path).
void AccumulateHeat(const darshan::DarshanLog& log, std::map<std::string, HeatCounters>* by_path,
                    size_t* special_names, size_t* unnamed_records);

// The prefix (an ancestor directory, "" = "/") whose removal makes the most of `paths` exist;
// "" and 0 matches if none does. Ties go to the shorter prefix (the longer relative path).
struct PrefixGuess {
  std::string prefix;
  size_t matches = 0;
  size_t sampled = 0;
};
PrefixGuess DetectStripPrefix(const std::vector<std::string>& paths,
                              const std::function<bool(const std::string&)>& exists, size_t sample);

// Ranks merged counters (already keyed by final path).
HeatTable RankHeat(std::map<std::string, HeatCounters> by_path);

// Log files named by `inputs`: files as given, directories as every *.darshan below them
// (sorted). ENOENT and such name the input.
Result<std::vector<std::string>> ExpandHeatInputs(const std::vector<std::string>& inputs);

// Counters of every log merged per absolute path, before any mapping.
struct RawHeat {
  std::map<std::string, HeatCounters> by_path;
  size_t logs = 0;  // logs read
  size_t records = 0;
  size_t special_names = 0;
  size_t unnamed_records = 0;
  std::vector<std::string> skipped_logs;  // "path: error" (with skip_bad_logs)
};
// Reads `log_files` (options: skip_bad_logs, progress).
Result<RawHeat> ReadHeatLogs(const std::vector<std::string>& log_files, const HeatOptions& options);

// Maps raw heat onto the backing root (options: backing_root, strip_prefix, exists,
// detection_sample, max_unmatched_examples) and ranks it; the log counts are carried over.
HeatTable MapHeat(RawHeat raw, const HeatOptions& options);

// Expands `inputs` (log files, or directories meaning every *.darshan below them), reads every
// log and returns the ranked, mapped table.
Result<HeatTable> LoadHeat(const std::vector<std::string>& inputs, const HeatOptions& options);

// An identity of a log file's content ("<fnv1a64 hex>-<size>"), so that importing the same log
// twice can be recognised. Reads the file.
Result<std::string> HeatLogId(const std::string& path);

}  // namespace clairfs
