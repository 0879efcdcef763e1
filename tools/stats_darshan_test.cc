// Unit tests of the Darshan log of a mount's own traffic, built from stats and status replies.
#include "tools/stats_darshan.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "planner/darshan/darshan_format.h"
#include "planner/darshan/darshan_reader.h"
#include "planner/darshan/darshan_writer.h"

namespace clairfs::cli {
namespace {

using nlohmann::json;

json Source(int64_t opens, int64_t reads, int64_t bytes) {
  return {{"opens", opens},
          {"reads", reads},
          {"bytes_read", bytes},
          {"max_byte_read", bytes - 1},
          {"consec_reads", reads > 0 ? reads - 1 : 0},
          {"seq_reads", reads > 0 ? reads - 1 : 0},
          {"size_read", {0, 0, 0, 0, reads, 0, 0, 0, 0, 0}},
          {"read_time", 0.5},
          {"read_busy_time", 0.25},
          {"max_read_time", 0.0},
          {"max_read_time_size", 0},
          {"meta_time", 0.0},
          {"file_not_aligned", 0},
          {"access_sizes", json::array()},
          {"strides", json::array()},
          {"open_start", -1.0},
          {"open_end", -1.0},
          {"read_start", -1.0},
          {"read_end", -1.0},
          {"close_start", -1.0},
          {"close_end", -1.0}};
}

json Status() {
  return {{"owner_uid", 1000},
          {"version", "0.1.0"},
          {"backing", "/pfs/data"},
          {"mountpoint", "/mnt/ds"},
          {"pid", 4242}};
}

// Counters by darshan-parser name, from the log read back.
struct Decoded {
  darshan::DarshanLog log;
  std::map<std::string, int64_t> ints;
  std::map<std::string, double> floats;
};

Decoded BuildAndRead(const json& stats, const json& status = Status()) {
  Decoded d;
  auto log = MountDarshanLog(status, stats, 77);
  EXPECT_TRUE(log.ok()) << log.status().message();
  if (!log.ok()) return d;
  auto bytes = darshan::EncodeDarshanLog(*log);
  EXPECT_TRUE(bytes.ok()) << bytes.status().message();
  auto back = darshan::ParseDarshanLog(*bytes);
  EXPECT_TRUE(back.ok());
  d.log = *back;
  if (!d.log.posix.empty()) {
    const darshan::PosixRecord& r = d.log.posix[0];
    for (int i = 0; i < darshan::kPosixCounters; ++i) {
      d.ints[std::string(darshan::kPosixCounterNames[i])] = r.counters[i];
    }
    for (int i = 0; i < darshan::kPosixFCounters; ++i) {
      d.floats[std::string(darshan::kPosixFCounterNames[i])] = r.fcounters[i];
    }
  }
  return d;
}

TEST(StatsDarshan, OneProcessLogWithWhatTheDaemonMeasuresAndMinusOneForTheRest) {
  json cache = Source(2, 10, 1310720);
  cache["max_read_time"] = 0.125;
  cache["max_read_time_size"] = 131072;
  cache["meta_time"] = 0.002;
  cache["file_not_aligned"] = 1;
  cache["access_sizes"] = {{131072, 9}, {4096, 1}};
  cache["strides"] = {{0, 9}, {8192, 1}};
  cache["open_start"] = 1.5;
  cache["open_end"] = 1.501;
  cache["read_start"] = 1.6;
  cache["read_end"] = 2.0;
  json backing = Source(1, 3, 12288);
  backing["max_read_time"] = 0.25;
  backing["max_read_time_size"] = 4096;
  backing["meta_time"] = 0.001;
  backing["access_sizes"] = {{4096, 3}, {65536, 1}, {100, 1}, {200, 1}};
  backing["strides"] = {{0, 3}};
  json stats = {{"files", {{{"path", "train/a.npz"}, {"cache", cache}, {"backing", backing}}}},
                {"totals", {{"cache", cache}, {"backing", backing}}},
                {"start_time_ns", 1700000000123456789ULL},
                {"elapsed_seconds", 10.5},
                {"file_alignment", 4096}};
  Decoded d = BuildAndRead(stats);
  ASSERT_EQ(d.log.posix.size(), 1u);
  const darshan::DarshanLog& log = d.log;
  EXPECT_EQ(log.job.nprocs, 1);
  EXPECT_EQ(log.job.jobid, 77);
  EXPECT_EQ(log.job.uid, 1000);
  EXPECT_EQ(log.posix[0].rank, 0);  // one process: rank 0, not -1 (shared)
  EXPECT_EQ(*log.FindName(log.posix[0].id), "/mnt/ds/train/a.npz");
  ASSERT_EQ(log.mounts.size(), 1u);
  EXPECT_EQ(log.mounts[0].path, "/mnt/ds");
  EXPECT_EQ(log.mounts[0].fs_type, "fuse.clairfs");

  EXPECT_EQ(d.ints["POSIX_OPENS"], 3);
  EXPECT_EQ(d.ints["POSIX_READS"], 13);
  EXPECT_EQ(d.ints["POSIX_BYTES_READ"], 1310720 + 12288);
  EXPECT_EQ(d.ints["POSIX_MAX_BYTE_READ"], 1310719);
  EXPECT_EQ(d.ints["POSIX_SIZE_READ_100K_1M"], 13);
  // The slowest read was the backing store's, 4096 bytes.
  EXPECT_DOUBLE_EQ(d.floats["POSIX_F_MAX_READ_TIME"], 0.25);
  EXPECT_EQ(d.ints["POSIX_MAX_READ_TIME_SIZE"], 4096);
  EXPECT_DOUBLE_EQ(d.floats["POSIX_F_META_TIME"], 0.003);
  EXPECT_DOUBLE_EQ(d.floats["POSIX_F_READ_TIME"], 0.5);  // busy time, overlaps counted once
  // Common values over both sources: counts first, then the larger value; 0 takes no slot.
  EXPECT_EQ(d.ints["POSIX_ACCESS1_ACCESS"], 131072);
  EXPECT_EQ(d.ints["POSIX_ACCESS1_COUNT"], 9);
  EXPECT_EQ(d.ints["POSIX_ACCESS2_ACCESS"], 4096);
  EXPECT_EQ(d.ints["POSIX_ACCESS2_COUNT"], 4);
  EXPECT_EQ(d.ints["POSIX_ACCESS3_ACCESS"], 65536);
  EXPECT_EQ(d.ints["POSIX_ACCESS4_ACCESS"], 200);
  EXPECT_EQ(d.ints["POSIX_ACCESS4_COUNT"], 1);
  EXPECT_EQ(d.ints["POSIX_STRIDE1_STRIDE"], 8192);
  EXPECT_EQ(d.ints["POSIX_STRIDE1_COUNT"], 1);
  EXPECT_EQ(d.ints["POSIX_STRIDE2_STRIDE"], 0);
  EXPECT_EQ(d.ints["POSIX_STRIDE2_COUNT"], 0);
  EXPECT_EQ(d.ints["POSIX_FILE_ALIGNMENT"], 4096);
  EXPECT_EQ(d.ints["POSIX_FILE_NOT_ALIGNED"], 1);
  // Not visible to a FUSE daemon: -1.
  for (const char* name :
       {"POSIX_FILENOS", "POSIX_DUPS", "POSIX_SEEKS", "POSIX_STATS", "POSIX_MMAPS", "POSIX_FSYNCS",
        "POSIX_FDSYNCS", "POSIX_MEM_NOT_ALIGNED", "POSIX_MEM_ALIGNMENT"}) {
    EXPECT_EQ(d.ints[name], -1) << name;
  }
  // Impossible on a read-only mount: 0.
  for (const char* name : {"POSIX_WRITES", "POSIX_BYTES_WRITTEN", "POSIX_RENAME_SOURCES",
                           "POSIX_RENAME_TARGETS", "POSIX_RW_SWITCHES", "POSIX_MODE"}) {
    EXPECT_EQ(d.ints[name], 0) << name;
  }
  EXPECT_DOUBLE_EQ(d.floats["POSIX_F_OPEN_START_TIMESTAMP"], 1.5);
  EXPECT_DOUBLE_EQ(d.floats["POSIX_F_READ_END_TIMESTAMP"], 2.0);
  EXPECT_EQ(log.job.start_time_sec, 1700000000);
  EXPECT_EQ(log.job.start_time_nsec, 123456789);
  EXPECT_EQ(log.job.end_time_sec, 1700000010);
}

// The log's metadata says in which open mode the mount counted (no-open: opens are first READs).
TEST(StatsDarshan, TheMetadataSaysWhatAnOpenWasForTheMountsOpenMode) {
  json stats = {{"files", json::array()},
                {"totals", {{"cache", Source(0, 0, 0)}, {"backing", Source(0, 0, 0)}}},
                {"start_time_ns", 0},
                {"elapsed_seconds", 1.0}};
  json status = Status();
  EXPECT_NE(BuildAndRead(stats, status).log.job.metadata.find("clairfs_open_mode=open: "),
            std::string::npos);
  status["open_mode"] = {{"mode", "no-open"}};
  EXPECT_NE(BuildAndRead(stats, status).log.job.metadata.find("clairfs_open_mode=no-open: "),
            std::string::npos);
}

// Names cross the control socket escaped; the log holds the raw bytes. Text fields of the log
// (metadata, command line) keep them escaped, and a mountpoint with a space, which Darshan's
// mount table cannot hold, is recorded by its leading part.
TEST(StatsDarshan, NamesAreRawInRecordsAndEscapedInText) {
  json status = Status();
  status["mountpoint"] = "/mnt/my data";
  status["backing"] = "/pfs/new\\x0aline";
  json stats = {{"files",
                 {{{"path", "bad\\xff\\xfe\\x0aname.npz"},
                   {"cache", Source(1, 1, 10)},
                   {"backing", Source(0, 0, 0)}}}},
                {"totals", {{"cache", Source(1, 1, 10)}, {"backing", Source(0, 0, 0)}}},
                {"start_time_ns", 0},
                {"elapsed_seconds", 1.0}};
  Decoded d = BuildAndRead(stats, status);
  ASSERT_EQ(d.log.posix.size(), 1u);
  EXPECT_EQ(*d.log.FindName(d.log.posix[0].id), "/mnt/my data/bad\xff\xfe\nname.npz");
  EXPECT_EQ(d.log.mounts[0].path, "/mnt");
  EXPECT_NE(d.log.job.metadata.find("clairfs_backing=/pfs/new\\x0aline\n"), std::string::npos);
  EXPECT_NE(d.log.job.exe.find("/pfs/new\\x0aline /mnt/my data (pid 4242)"), std::string::npos)
      << d.log.job.exe;
  // No file_alignment in the reply (an older daemon): not monitored.
  EXPECT_EQ(d.ints["POSIX_FILE_ALIGNMENT"], -1);
  EXPECT_EQ(d.ints["POSIX_FILE_NOT_ALIGNED"], -1);
}

TEST(StatsDarshan, AReplyWithoutItsFieldsIsAnError) {
  auto log = MountDarshanLog(Status(), json::object(), 0);
  ASSERT_FALSE(log.ok());
  EXPECT_NE(log.status().message().find("stats reply"), std::string::npos);
}

}  // namespace
}  // namespace clairfs::cli
