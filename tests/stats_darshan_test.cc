// Integration test of the Darshan log of a mount's own traffic (`clairfs stats --darshan`): a
// one-process log (nprocs 1, records of rank 0) whose counters are what the daemon measured,
// -1 where it cannot see, so that darshan-parser --perf derives a bandwidth from it; names are
// the raw bytes, whatever they are. Read back with clairfs's own reader.
#include <unistd.h>

#include <gtest/gtest.h>

#include <map>
#include <string>

#include "planner/darshan/darshan_format.h"
#include "planner/darshan/darshan_reader.h"
#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

using darshan::PosixRecord;

int64_t Int(const PosixRecord& r, const std::string& name) {
  for (int i = 0; i < darshan::kPosixCounters; ++i) {
    if (darshan::kPosixCounterNames[i] == name) return r.counters[i];
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

double Float(const PosixRecord& r, const std::string& name) {
  for (int i = 0; i < darshan::kPosixFCounters; ++i) {
    if (darshan::kPosixFCounterNames[i] == name) return r.fcounters[i];
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

class StatsDarshanTest : public MountDirsTest {};

TEST_F(StatsDarshanTest, OwnLogIsAOneProcessLogOfMeasuredCounters) {
  const std::string odd = "odd\xff\xfe\nname.bin";
  WriteFile(backing_ + "/train/big.bin", RandomBytes(3 << 20, 1));
  WriteFile(backing_ + "/train/small.bin", RandomBytes(9000, 2));
  WriteFile(backing_ + "/" + odd, RandomBytes(20000, 3));
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  ASSERT_EQ(ReadFile(mnt_ + "/train/big.bin").size(), size_t{3} << 20);
  ASSERT_EQ(ReadFile(mnt_ + "/train/small.bin").size(), 9000u);
  ASSERT_EQ(ReadFile(mnt_ + "/" + odd).size(), 20000u);
  // Counters merge at RELEASE, which reaches the daemon after close() returns.
  for (int i = 0; i < 200; ++i) {
    CommandResult r = testing::Run({ClairfsBin(), "stats", mnt_, "--json"});
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (!j.is_discarded() && j["files_with_counters"] == 3) break;
    usleep(50000);
  }
  const std::string out = dir_ / "own.darshan";
  CommandResult r = testing::Run({ClairfsBin(), "stats", mnt_, "--darshan", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  ASSERT_EQ(m.Umount().exit_code, 0);

  auto log = darshan::ReadDarshanLogFile(out);
  ASSERT_TRUE(log.ok()) << log.status().message();
  EXPECT_EQ(log->job.nprocs, 1);
  ASSERT_EQ(log->posix.size(), 3u);
  std::map<std::string, const PosixRecord*> by_name;
  int64_t bytes = 0;
  double io_time = 0;
  for (const PosixRecord& rec : log->posix) {
    const std::string* name = log->FindName(rec.id);
    ASSERT_NE(name, nullptr);
    SCOPED_TRACE(*name);
    by_name[*name] = &rec;
    EXPECT_EQ(rec.rank, 0);
    EXPECT_GE(Int(rec, "POSIX_OPENS"), 1);
    EXPECT_GT(Float(rec, "POSIX_F_META_TIME"), 0);  // opens and releases take time
    ASSERT_GT(Int(rec, "POSIX_READS"), 0);
    if (Float(rec, "POSIX_F_MAX_READ_TIME") > 0) {
      EXPECT_GT(Int(rec, "POSIX_MAX_READ_TIME_SIZE"), 0);
    }
    // The commonest access size is a size the daemon served, counted at most once per read.
    EXPECT_GT(Int(rec, "POSIX_ACCESS1_ACCESS"), 0);
    EXPECT_GT(Int(rec, "POSIX_ACCESS1_COUNT"), 0);
    int64_t counted = 0;
    for (int i = 1; i <= 4; ++i) {
      counted += Int(rec, "POSIX_ACCESS" + std::to_string(i) + "_COUNT");
    }
    EXPECT_LE(counted, Int(rec, "POSIX_READS"));
    EXPECT_EQ(Int(rec, "POSIX_FILE_ALIGNMENT"), 4096);
    EXPECT_GE(Int(rec, "POSIX_FILE_NOT_ALIGNED"), 0);
    for (const char* unseen : {"POSIX_SEEKS", "POSIX_STATS", "POSIX_MMAPS", "POSIX_FILENOS",
                               "POSIX_DUPS", "POSIX_MEM_ALIGNMENT", "POSIX_MEM_NOT_ALIGNED"}) {
      EXPECT_EQ(Int(rec, unseen), -1) << unseen;
    }
    EXPECT_EQ(Int(rec, "POSIX_WRITES"), 0);
    bytes += Int(rec, "POSIX_BYTES_READ") + Int(rec, "POSIX_BYTES_WRITTEN");
    io_time += Float(rec, "POSIX_F_META_TIME") + Float(rec, "POSIX_F_READ_TIME") +
               Float(rec, "POSIX_F_WRITE_TIME");
  }
  // Each file read once; the counters count what reaches the daemon, and a page the kernel
  // dropped under memory pressure between its readahead and its read is read again (seen once in
  // CI's ASan stage: 4,096 bytes more). So each file's bytes are its size and at most two pages
  // more: a file counted twice, or left out, fails.
  const std::map<std::string, int64_t> sizes = {{mnt_ + "/train/big.bin", 3 << 20},
                                                {mnt_ + "/train/small.bin", 9000},
                                                {mnt_ + "/" + odd, 20000}};
  for (const auto& [name, size] : sizes) {
    SCOPED_TRACE(name);
    ASSERT_EQ(by_name.count(name), 1u);
    EXPECT_GE(Int(*by_name[name], "POSIX_BYTES_READ"), size);
    EXPECT_LE(Int(*by_name[name], "POSIX_BYTES_READ"), size + 2 * 4096);
  }
  // darshan-parser --perf for records of rank 0 of a one-process log: agg_perf_by_slowest =
  // total bytes / the rank's meta + read + write time. With shared (rank -1) records it would
  // be bytes / POSIX_F_SLOWEST_RANK_TIME, which only Darshan's MPI reduction fills: 0.
  ASSERT_GT(io_time, 0);
  EXPECT_GT(static_cast<double>(bytes) / io_time / (1 << 20), 0);
  // The name of any bytes is stored raw.
  EXPECT_EQ(by_name.count(mnt_ + "/" + odd), 1u);
  EXPECT_EQ(by_name.count(mnt_ + "/train/big.bin"), 1u);
  EXPECT_EQ(Int(*by_name[mnt_ + "/train/big.bin"], "POSIX_MAX_BYTE_READ"), (3 << 20) - 1);

  // ... and printed escaped by the JSON dump.
  r = testing::Run({ClairfsBin(), "darshan", "dump", "--json", out});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("odd\\\\xff\\\\xfe\\\\x0aname.bin"), std::string::npos);
  EXPECT_FALSE(nlohmann::json::parse(r.out, nullptr, false).is_discarded());
}

}  // namespace
}  // namespace clairfs::testing
