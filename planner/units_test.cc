#include "planner/units.h"

#include <gtest/gtest.h>

namespace clairfs {
namespace {

TEST(ParseSize, AcceptsBinaryUnitsAndBytes) {
  EXPECT_EQ(ParseSize("800G").value(), 800ULL << 30);
  EXPECT_EQ(ParseSize("1.5T").value(), 3ULL << 39);
  EXPECT_EQ(ParseSize("512M").value(), 512ULL << 20);
  EXPECT_EQ(ParseSize("512MiB").value(), 512ULL << 20);
  EXPECT_EQ(ParseSize("64k").value(), 64ULL << 10);
  EXPECT_EQ(ParseSize("1048576").value(), 1048576ULL);
  EXPECT_EQ(ParseSize("0").value(), 0ULL);
}

TEST(ParseSize, RejectsGarbageWithMessage) {
  for (const char* bad : {"", "G", "-1G", "12X", "1.5", "abc", "1e30T"}) {
    auto r = ParseSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), EINVAL);
    EXPECT_NE(r.status().message().find("invalid size"), std::string::npos);
  }
}

TEST(ParseBandwidth, DecimalMegabytes) {
  EXPECT_EQ(ParseBandwidthMBps("200").value(), 200000000ULL);
  EXPECT_EQ(ParseBandwidthMBps("0").value(), 0ULL);
  EXPECT_FALSE(ParseBandwidthMBps("fast").ok());
}

TEST(FormatBytes, HumanUnits) {
  EXPECT_EQ(FormatBytes(12), "12 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(1ULL << 30), "1.0 GiB");
}

}  // namespace
}  // namespace clairfs
