// Unit tests of the benches' shared argument parsing (bench_support.h).
#include "tools/bench/bench_support.h"

#include <unistd.h>

#include <algorithm>
#include <numeric>

#include <gtest/gtest.h>

namespace clairfs {
namespace {

TEST(BenchSupport, IntListAcceptsPositiveIntegersOnly) {
  auto ok = ParseIntList("1,2,16", "--threads");
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (std::vector<int>{1, 2, 16}));
  for (const char* bad : {"", "0", "1,,2", "2x", "-1"}) {
    auto r = ParseIntList(bad, "--threads");
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("--threads"), std::string::npos) << bad;
  }
}

TEST(BenchSupport, ChoiceListKeepsOrderAndNamesTheChoicesOnError) {
  auto ok = ParseChoiceList("--fuse-uring", "off,on", {"auto", "on", "off"});
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, (std::vector<std::string>{"off", "on"}));
  for (const char* bad : {"", "maybe", "on,", "on,,off", "ON"}) {
    auto r = ParseChoiceList("--fuse-uring", bad, {"auto", "on", "off"});
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), EINVAL) << bad;
    EXPECT_NE(r.status().message().find("--fuse-uring"), std::string::npos) << bad;
  }
  auto r = ParseChoiceList("--modes", "spliced", {"passthrough", "pread", "splice"});
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("passthrough, pread, splice"), std::string::npos)
      << r.status().message();
}

TEST(BenchSupport, SeededShuffleIsAPermutationFixedBySeed) {
  std::vector<int> identity(100);
  std::iota(identity.begin(), identity.end(), 0);
  std::vector<int> a = identity, b = identity, c = identity;
  SeededShuffle(&a, 42);
  SeededShuffle(&b, 42);
  SeededShuffle(&c, 43);
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, identity);
  std::sort(a.begin(), a.end());
  EXPECT_EQ(a, identity);
  // The stream itself is fixed: SplitMix64's first output for state 0.
  uint64_t state = 0;
  EXPECT_EQ(SplitMix64Next(&state), 0xE220A8397B1DCDAFULL);
}

TEST(BenchSupport, ProcessStatsOfThisProcess) {
  auto stats = ReadProcessStats(getpid());
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_GT(stats->rss_bytes, 0u);
  EXPECT_GT(stats->rss_anon_bytes, 0u);
  EXPECT_GT(stats->rss_file_bytes, 0u);
  EXPECT_LE(stats->rss_anon_bytes + stats->rss_file_bytes, stats->rss_bytes);
  EXPECT_GE(stats->threads, 1u);
  EXPECT_GE(stats->open_fds, 3u);  // stdin, stdout, stderr at least
  EXPECT_EQ(ReadProcessStats(-5).status().code(), ENOENT);
}

}  // namespace
}  // namespace clairfs
