// Integration tests of the mount's per-file I/O counters (`clairfs stats`) and the Darshan log
// written from them, read back with clairfs's own Darshan reader.
#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

// Counters merge when the kernel's RELEASE reaches the daemon, which happens after close()
// returns: poll until `done(stats)` or 10 s pass.
template <typename Pred>
nlohmann::json StatsWhen(const std::string& mnt, Pred done) {
  nlohmann::json stats;
  for (int i = 0; i < 200; ++i) {
    CommandResult r = testing::Run({ClairfsBin(), "stats", mnt, "--json"});
    if (r.exit_code == 0) {
      stats = nlohmann::json::parse(r.out, nullptr, false);
      if (!stats.is_discarded() && done(stats)) break;
    }
    usleep(50000);
  }
  return stats;
}

TEST(StatsTest, CountsPerFileBySourceAndWritesADarshanLog) {
  TempDir dir;
  std::string backing = dir / "backing", mnt = dir / "mnt", cache = dir / "cache";
  MakeDirs(mnt);
  WriteFile(backing + "/a/one.jpg", RandomBytes(300000, 1));
  WriteFile(backing + "/a/two.jpg", RandomBytes(5000, 2));
  ClairfsMount m(backing, mnt, cache);
  ASSERT_EQ(m.Mount().exit_code, 0);
  ASSERT_EQ(ReadFile(mnt + "/a/one.jpg").size(), 300000u);
  ASSERT_EQ(ReadFile(mnt + "/a/two.jpg").size(), 5000u);
  ASSERT_TRUE(m.WaitStagingIdle());
  // A second read from a fresh open after a remount would hit the cache; here the kernel's page
  // cache may serve it, so only the first read's bytes are certain to reach the daemon.
  auto stats = StatsWhen(mnt, [](const nlohmann::json& j) {
    return j["totals"]["backing"]["opens"].get<uint64_t>() == 2;
  });
  const auto& backing_totals = stats["totals"]["backing"];
  EXPECT_EQ(backing_totals["bytes_read"].get<uint64_t>(), 305000u);
  EXPECT_EQ(backing_totals["opens"].get<uint64_t>(), 2u);
  ASSERT_EQ(stats["files"].size(), 2u);
  EXPECT_EQ(stats["files"][0]["path"], "a/one.jpg");  // most bytes first
  EXPECT_EQ(stats["files"][0]["backing"]["max_byte_read"].get<int64_t>(), 299999);
  // The kernel's readahead requests may reach the daemon's worker threads out of order, so only
  // Darshan's invariants are certain: consecutive <= sequential <= reads, and the first of them
  // (at offset 0) follows no other read.
  const auto& one = stats["files"][0]["backing"];
  EXPECT_GE(one["reads"].get<uint64_t>(), 1u);
  EXPECT_LE(one["consec_reads"].get<uint64_t>(), one["seq_reads"].get<uint64_t>());
  EXPECT_LT(one["seq_reads"].get<uint64_t>(), one["reads"].get<uint64_t>());

  // Remount: the copies are staged, so the reads come from the cache.
  ASSERT_EQ(m.Umount().exit_code, 0);
  ASSERT_EQ(m.Mount().exit_code, 0);
  ASSERT_EQ(ReadFile(mnt + "/a/one.jpg"), RandomBytes(300000, 1));
  stats = StatsWhen(mnt, [](const nlohmann::json& j) {
    return j["totals"]["cache"]["bytes_read"].get<uint64_t>() >= 300000;
  });
  EXPECT_EQ(stats["totals"]["cache"]["bytes_read"].get<uint64_t>(), 300000u);
  EXPECT_EQ(stats["totals"]["backing"]["bytes_read"].get<uint64_t>(), 0u);

  std::string log = dir / "mount.darshan";
  CommandResult r = testing::Run({ClairfsBin(), "stats", mnt, "--darshan", log});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = testing::Run({ClairfsBin(), "darshan", "dump", log});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("POSIX_BYTES_READ\t300000"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find(mnt + "/a/one.jpg"), std::string::npos);
  EXPECT_NE(r.out.find("clairfs_note"), std::string::npos);
  // The log is heat for the next job.
  r = testing::Run(
      {ClairfsBin(), "darshan", "top", log, "--backing", backing, "--strip-prefix", mnt, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("a/one.jpg"), std::string::npos) << r.out;
  // Refuses to overwrite an existing log.
  r = testing::Run({ClairfsBin(), "stats", mnt, "--darshan", log});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

}  // namespace
}  // namespace clairfs::testing
