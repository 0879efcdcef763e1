// Unit tests of the per-file I/O counters.
#include "fs/file_stats.h"

#include <gtest/gtest.h>

#include <thread>
#include <utility>
#include <vector>

namespace clairfs {
namespace {

TEST(FileStats, CountsReadsLikeDarshan) {
  OpenFileStats open;
  open.OnOpen(1.0, 1.5);
  open.OnRead(0, 4096, 2.0, 2.1);     // first read: neither consecutive nor sequential
  open.OnRead(4096, 4096, 2.2, 2.3);  // consecutive and sequential
  open.OnRead(16384, 50, 2.4, 2.45);  // sequential only
  open.OnRead(0, 200000, 2.5, 3.0);   // backwards
  FileIoCounters c = open.OnClose(4.0, 4.1);
  EXPECT_EQ(c.opens, 1u);
  EXPECT_EQ(c.reads, 4u);
  EXPECT_EQ(c.bytes_read, 4096u + 4096 + 50 + 200000);
  EXPECT_EQ(c.max_byte_read, 199999);
  EXPECT_EQ(c.consec_reads, 1u);
  EXPECT_EQ(c.seq_reads, 2u);
  EXPECT_EQ(c.size_read[0], 1u);  // 50 bytes: 0-100
  EXPECT_EQ(c.size_read[2], 2u);  // 4096: 1K-10K
  EXPECT_EQ(c.size_read[4], 1u);  // 200000: 100K-1M
  EXPECT_NEAR(c.read_time, 0.1 + 0.1 + 0.05 + 0.5, 1e-9);
  EXPECT_DOUBLE_EQ(c.open_start, 1.0);
  EXPECT_DOUBLE_EQ(c.read_start, 2.0);
  EXPECT_DOUBLE_EQ(c.read_end, 3.0);
  EXPECT_DOUBLE_EQ(c.close_end, 4.1);
}

// What a Darshan log of the mount needs beyond the basic counts: the longest read and its size,
// time in open and release, access sizes and strides as Darshan's common values, reads not
// aligned to the mount's block size, and read time with overlapping requests counted once.
TEST(FileStats, CountsWhatDarshanDerivesFromEachRead) {
  OpenFileStats open;
  open.OnOpen(1.0, 1.25);
  open.OnRead(0, 131072, 2.0, 2.5);       // first read: stride 0
  open.OnRead(131072, 131072, 2.4, 2.6);  // consecutive, overlaps the first: 0.1 s more busy
  open.OnRead(270336, 4096, 3.0, 3.05);   // sequential, 8192 bytes past the previous end
  open.OnRead(100, 50, 3.1, 3.2);         // backwards: stride 0, not aligned
  FileIoCounters c = open.OnClose(4.0, 4.5);
  EXPECT_DOUBLE_EQ(c.meta_time, 0.25 + 0.5);
  EXPECT_DOUBLE_EQ(c.max_read_time, 0.5);
  EXPECT_EQ(c.max_read_time_size, 131072);
  EXPECT_EQ(c.file_not_aligned, 1u);
  EXPECT_NEAR(c.read_time, 0.5 + 0.2 + 0.05 + 0.1, 1e-9);
  EXPECT_NEAR(c.read_busy_time, 0.5 + 0.1 + 0.05 + 0.1, 1e-9);
  using Counts = std::vector<std::pair<int64_t, uint64_t>>;
  EXPECT_EQ(c.access_sizes.counts, (Counts{{131072, 2}, {4096, 1}, {50, 1}}));
  EXPECT_EQ(c.strides.counts, (Counts{{0, 3}, {8192, 1}}));

  // Merging keeps the slowest read's size with its time, and adds the common values.
  FileIoCounters other;
  other.max_read_time = 0.75;
  other.max_read_time_size = 77;
  other.meta_time = 1;
  other.access_sizes.Add(4096, 5);
  c.Merge(other);
  EXPECT_DOUBLE_EQ(c.max_read_time, 0.75);
  EXPECT_EQ(c.max_read_time_size, 77);
  EXPECT_DOUBLE_EQ(c.meta_time, 1.75);
  EXPECT_EQ(c.access_sizes.counts, (Counts{{131072, 2}, {4096, 6}, {50, 1}}));
}

TEST(FileStats, CommonValuesKeepAtMostDarshansNumberOfDistinctValues) {
  CommonValues v;
  for (int64_t i = 1; i <= 40; ++i) v.Add(i);
  ASSERT_EQ(v.counts.size(), kMaxCommonValues);
  v.Add(1, 4);  // a value held is still counted
  v.Add(1000);  // a new one is not
  EXPECT_EQ(v.counts[0], (std::pair<int64_t, uint64_t>{1, 5}));
  EXPECT_EQ(v.counts.back().first, static_cast<int64_t>(kMaxCommonValues));
}

TEST(FileStats, BucketsMatchDarshansBoundaries) {
  EXPECT_EQ(FileIoCounters::SizeBucket(0), 0);
  EXPECT_EQ(FileIoCounters::SizeBucket(100), 0);
  EXPECT_EQ(FileIoCounters::SizeBucket(101), 1);
  EXPECT_EQ(FileIoCounters::SizeBucket(1 << 20), 4);
  EXPECT_EQ(FileIoCounters::SizeBucket((1 << 20) + 1), 5);
  EXPECT_EQ(FileIoCounters::SizeBucket(uint64_t{5} << 30), 9);
}

TEST(FileStats, TableMergesConcurrentClosesPerSource) {
  FileStatsTable table;
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 1000; ++i) {
        OpenFileStats open;
        open.OnOpen(0, 0);
        open.OnRead(0, 10, 0, 0);
        table.Merge("f" + std::to_string(i % 10), t % 2 ? ReadSource::kCache : ReadSource::kBacking,
                    open.OnClose(0, 0));
      }
    });
  }
  for (auto& t : threads) t.join();
  auto rows = table.Snapshot();
  ASSERT_EQ(rows.size(), 10u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.by_source[0].opens, 200u);
    EXPECT_EQ(r.by_source[1].opens, 200u);
    EXPECT_EQ(r.by_source[0].bytes_read + r.by_source[1].bytes_read, 4000u);
  }
}

}  // namespace
}  // namespace clairfs
