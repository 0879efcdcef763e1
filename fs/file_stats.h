// Per-file I/O counters of a mount, in the spirit of Darshan's POSIX module, split by source.
//
// Each open file handle accumulates its own counters (OpenFileStats: one small mutex per handle,
// taken only by the reads of that one open), and merges them into the mount's FileStatsTable at
// release: the read path never takes a lock shared by all readers. The table is sharded by path.
// Times are seconds since the mount started (Darshan's timestamps are relative to the job start).
// Counters see requests that reach the daemon: reads the kernel page cache serves are not seen.
//
// Semantics (as Darshan's POSIX module counts them): a read is consecutive if it starts where the
// previous read of the same open ended, sequential if it starts at or after that point;
// max_byte_read is the highest byte offset read; the size histogram buckets are Darshan's
// (0-100, 100-1K, ... 1G+). Also as Darshan counts them: the read that took longest and its
// size; access sizes and strides (the gap from the end of the previous read of the same open to
// the next, 0 for the first read and for reads that do not move forward) as common values, at
// most kMaxCommonValues distinct ones per file, a new value past that not counted; reads whose
// offset is not a multiple of kFileAlignment. meta_time is the time spent in open and release.
// Reads are the FUSE requests the daemon serves, split at max_read. Thread-safe.
#pragma once

#include <array>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace clairfs {

enum class ReadSource : int { kCache = 0, kBacking = 1 };
constexpr int kReadSources = 2;
const char* ReadSourceName(ReadSource source);

constexpr int kSizeBuckets = 10;

// The block size the mount reports (statfs f_bsize, st_blksize): what Darshan records as a
// file's POSIX_FILE_ALIGNMENT.
constexpr int64_t kFileAlignment = 4096;
// As Darshan's runtime (DARSHAN_COMMON_VAL_MAX_RUNTIME_COUNT).
constexpr size_t kMaxCommonValues = 32;

// Darshan's common-value counters: how often each value (an access size, a stride) occurred.
struct CommonValues {
  std::vector<std::pair<int64_t, uint64_t>> counts;  // value, count; in first-seen order

  // Counts `value` `times` more; a value not seen before is dropped once kMaxCommonValues
  // distinct values are held.
  void Add(int64_t value, uint64_t times = 1);
  void Merge(const CommonValues& other);
};

struct FileIoCounters {
  uint64_t opens = 0;
  uint64_t reads = 0;
  uint64_t bytes_read = 0;
  int64_t max_byte_read = -1;  // -1: nothing read
  uint64_t consec_reads = 0;
  uint64_t seq_reads = 0;
  std::array<uint64_t, kSizeBuckets> size_read{};
  double read_time = 0;  // seconds spent reading in the daemon, summed over requests
  // Seconds during which a read of the open was in progress: concurrent requests of one open
  // (the kernel's readahead) count once, as Darshan counts POSIX_F_READ_TIME.
  double read_busy_time = 0;
  double max_read_time = 0;
  int64_t max_read_time_size = 0;  // bytes of the read that took max_read_time
  double meta_time = 0;            // seconds spent in open and release
  uint64_t file_not_aligned = 0;   // reads at an offset that is not a multiple of kFileAlignment
  CommonValues access_sizes;
  CommonValues strides;
  double open_start = -1, open_end = -1;  // first open start, last open end
  double read_start = -1, read_end = -1;  // first read start, last read end
  double close_start = -1, close_end = -1;

  void Merge(const FileIoCounters& other);
  // Index into size_read for a read of `bytes` (Darshan's buckets).
  static int SizeBucket(uint64_t bytes);
};

// The counters of one open, updated by its reads. A file kept open on a no-open mount
// (fs/kept_files.h) is one OpenFileStats over many uses: each use's first read calls OnOpen again.
class OpenFileStats {
 public:
  void OnOpen(double start, double end);
  // The counters so far, for a report while the file is still open.
  FileIoCounters Peek();
  void OnRead(uint64_t offset, uint64_t bytes, double start, double end);
  // Marks the close and returns the counters to merge.
  FileIoCounters OnClose(double start, double end);

 private:
  std::mutex mu_;  // guards the fields below (only this open's reads contend)
  FileIoCounters counters_;
  int64_t next_offset_ = -1;   // end of the previous read
  double last_read_end_ = -1;  // latest end of a read so far, for read_busy_time
};

struct FileStatsRow {
  std::string path;
  std::array<FileIoCounters, kReadSources> by_source;
};

class FileStatsTable {
 public:
  void Merge(const std::string& path, ReadSource source, const FileIoCounters& counters);
  // Every file with counters, in no particular order.
  std::vector<FileStatsRow> Snapshot() const;

 private:
  static constexpr size_t kShards = 16;
  struct Shard {
    mutable std::mutex mu;  // guards rows
    std::unordered_map<std::string, std::array<FileIoCounters, kReadSources>> rows;
  };
  Shard shards_[kShards];
};

}  // namespace clairfs
