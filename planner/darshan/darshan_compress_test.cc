// Region compression: multi-stream inflation (one stream per MPI rank), truncation, caps.
#include "planner/darshan/darshan_compress.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace clairfs::darshan {
namespace {

class CompressTest : public ::testing::TestWithParam<Compression> {};

TEST_P(CompressTest, RoundTripsAndReadsStreamsBackToBack) {
  const Compression method = GetParam();
  std::string a = clairfs::testing::RandomBytes(100000, 1);
  std::string b = std::string(50000, 'x') + clairfs::testing::RandomBytes(3000, 2);
  Result<std::string> pa = DeflateRegion(a, method);
  Result<std::string> pb = DeflateRegion(b, method);
  ASSERT_TRUE(pa.ok() && pb.ok());
  Result<std::string> one = InflateRegion(*pa, method, 1 << 20);
  ASSERT_TRUE(one.ok()) << one.status().message();
  EXPECT_EQ(*one, a);
  // Two ranks' streams in one region: both must come out (a single uncompress() would stop
  // after the first).
  Result<std::string> both = InflateRegion(*pa + *pb, method, 1 << 20);
  ASSERT_TRUE(both.ok()) << both.status().message();
  EXPECT_EQ(*both, a + b);
}

TEST_P(CompressTest, TruncatedOrTrailingGarbageIsAnError) {
  const Compression method = GetParam();
  std::string data = clairfs::testing::RandomBytes(20000, 3);
  Result<std::string> packed = DeflateRegion(data, method);
  ASSERT_TRUE(packed.ok());
  for (size_t cut : {size_t{1}, packed->size() / 2, packed->size() - 1}) {
    Result<std::string> r = InflateRegion(packed->substr(0, cut), method, 1 << 20);
    EXPECT_FALSE(r.ok()) << "cut at " << cut;
  }
  Result<std::string> r = InflateRegion(*packed + "garbage!", method, 1 << 20);
  EXPECT_FALSE(r.ok());
}

TEST_P(CompressTest, OutputIsCappedOrTruncated) {
  const Compression method = GetParam();
  std::string data(1 << 20, 'z');
  Result<std::string> packed = DeflateRegion(data, method);
  ASSERT_TRUE(packed.ok());
  Result<std::string> capped = InflateRegion(*packed, method, 4096);
  ASSERT_FALSE(capped.ok());
  EXPECT_NE(capped.status().message().find("inflates to more than 4096"), std::string::npos);
  Result<std::string> head = InflateRegion(*packed, method, 4096, LimitMode::kTruncate);
  ASSERT_TRUE(head.ok());
  EXPECT_EQ(*head, data.substr(0, 4096));
  // Exactly at the limit is fine.
  Result<std::string> exact = InflateRegion(*packed, method, data.size());
  ASSERT_TRUE(exact.ok()) << exact.status().message();
  EXPECT_EQ(exact->size(), data.size());
}

INSTANTIATE_TEST_SUITE_P(Methods, CompressTest,
                         ::testing::Values(Compression::kZlib, Compression::kBzip2));

TEST(Compress, EmptyRegionsAreEmpty) {
  EXPECT_EQ(DeflateRegion("", Compression::kZlib).value(), "");
  EXPECT_EQ(InflateRegion("", Compression::kBzip2, 10).value(), "");
  EXPECT_EQ(InflateRegion("abc", Compression::kNone, 10).value(), "abc");
  EXPECT_FALSE(InflateRegion("abcdef", Compression::kNone, 3).ok());
}

}  // namespace
}  // namespace clairfs::darshan
