// Unit tests of the benches' shared argument parsing (bench_support.h).
#include "tools/bench/bench_support.h"

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

}  // namespace
}  // namespace clairfs
