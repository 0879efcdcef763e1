// Per-file I/O counters: per-open accumulation and the sharded per-mount table (see
// file_stats.h).
#include "fs/file_stats.h"

#include <algorithm>
#include <functional>

namespace clairfs {
namespace {

void KeepMin(double* slot, double value) {
  if (value >= 0 && (*slot < 0 || value < *slot)) *slot = value;
}
void KeepMax(double* slot, double value) {
  if (value >= 0 && value > *slot) *slot = value;
}

}  // namespace

const char* ReadSourceName(ReadSource source) {
  return source == ReadSource::kCache ? "cache" : "backing";
}

int FileIoCounters::SizeBucket(uint64_t bytes) {
  static const uint64_t kLimits[kSizeBuckets - 1] = {
      100, 1024, 10 * 1024, 100 * 1024, 1024 * 1024, 4 << 20, 10 << 20, 100 << 20, 1 << 30};
  for (int i = 0; i < kSizeBuckets - 1; ++i) {
    if (bytes <= kLimits[i]) return i;
  }
  return kSizeBuckets - 1;
}

void CommonValues::Add(int64_t value, uint64_t times) {
  for (auto& [v, count] : counts) {
    if (v == value) {
      count += times;
      return;
    }
  }
  if (counts.size() < kMaxCommonValues) counts.emplace_back(value, times);
}

void CommonValues::Merge(const CommonValues& other) {
  for (const auto& [value, count] : other.counts) Add(value, count);
}

void FileIoCounters::Merge(const FileIoCounters& o) {
  opens += o.opens;
  reads += o.reads;
  bytes_read += o.bytes_read;
  max_byte_read = std::max(max_byte_read, o.max_byte_read);
  consec_reads += o.consec_reads;
  seq_reads += o.seq_reads;
  for (int i = 0; i < kSizeBuckets; ++i) size_read[i] += o.size_read[i];
  read_time += o.read_time;
  read_busy_time += o.read_busy_time;
  if (o.max_read_time > max_read_time) {
    max_read_time = o.max_read_time;
    max_read_time_size = o.max_read_time_size;
  }
  meta_time += o.meta_time;
  file_not_aligned += o.file_not_aligned;
  access_sizes.Merge(o.access_sizes);
  strides.Merge(o.strides);
  KeepMin(&open_start, o.open_start);
  KeepMax(&open_end, o.open_end);
  KeepMin(&read_start, o.read_start);
  KeepMax(&read_end, o.read_end);
  KeepMin(&close_start, o.close_start);
  KeepMax(&close_end, o.close_end);
}

void OpenFileStats::OnOpen(double start, double end) {
  std::lock_guard<std::mutex> lock(mu_);
  ++counters_.opens;
  KeepMin(&counters_.open_start, start);
  KeepMax(&counters_.open_end, end);
  counters_.meta_time += std::max(0.0, end - start);
  next_offset_ = -1;  // strides and consecutive reads are counted within one open
}

void OpenFileStats::OnRead(uint64_t offset, uint64_t bytes, double start, double end) {
  std::lock_guard<std::mutex> lock(mu_);
  FileIoCounters& c = counters_;
  ++c.reads;
  c.bytes_read += bytes;
  if (bytes > 0) {
    c.max_byte_read = std::max<int64_t>(c.max_byte_read, static_cast<int64_t>(offset + bytes - 1));
  }
  const int64_t at = static_cast<int64_t>(offset);
  int64_t stride = 0;
  if (next_offset_ >= 0) {
    if (at == next_offset_) ++c.consec_reads;
    if (at >= next_offset_) {
      ++c.seq_reads;
      stride = at - next_offset_;
    }
  }
  next_offset_ = static_cast<int64_t>(offset + bytes);
  ++c.size_read[FileIoCounters::SizeBucket(bytes)];
  c.access_sizes.Add(static_cast<int64_t>(bytes));
  c.strides.Add(stride);
  if (at % kFileAlignment != 0) ++c.file_not_aligned;
  c.read_time += end - start;
  // Darshan's DARSHAN_TIMER_INC_NO_OVERLAP: only the part after the latest end so far counts.
  if (start >= last_read_end_) {
    c.read_busy_time += end - start;
  } else if (end > last_read_end_) {
    c.read_busy_time += end - last_read_end_;
  }
  last_read_end_ = std::max(last_read_end_, end);
  if (end - start > c.max_read_time) {
    c.max_read_time = end - start;
    c.max_read_time_size = static_cast<int64_t>(bytes);
  }
  KeepMin(&c.read_start, start);
  KeepMax(&c.read_end, end);
}

FileIoCounters OpenFileStats::Peek() {
  std::lock_guard<std::mutex> lock(mu_);
  return counters_;
}

FileIoCounters OpenFileStats::OnClose(double start, double end) {
  std::lock_guard<std::mutex> lock(mu_);
  counters_.close_start = start;
  counters_.close_end = end;
  counters_.meta_time += std::max(0.0, end - start);
  return counters_;
}

void FileStatsTable::Merge(const std::string& path, ReadSource source,
                           const FileIoCounters& counters) {
  Shard& shard = shards_[std::hash<std::string>()(path) % kShards];
  std::lock_guard<std::mutex> lock(shard.mu);
  shard.rows[path][static_cast<int>(source)].Merge(counters);
}

std::vector<FileStatsRow> FileStatsTable::Snapshot() const {
  std::vector<FileStatsRow> rows;
  for (const Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    for (const auto& [path, by_source] : shard.rows) rows.push_back({path, by_source});
  }
  return rows;
}

}  // namespace clairfs
