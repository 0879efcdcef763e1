#include "planner/base/units.h"

#include <gtest/gtest.h>

namespace clairfs {
namespace {

TEST(ParseSize, AcceptsBinaryUnitsAndBytes) {
  EXPECT_EQ(ParseSize("800G").value(), 800ULL << 30);
  EXPECT_EQ(ParseSize("1.5T").value(), 3ULL << 39);
  EXPECT_EQ(ParseSize("512M").value(), 512ULL << 20);
  EXPECT_EQ(ParseSize("512MiB").value(), 512ULL << 20);
  EXPECT_EQ(ParseSize("512MB").value(), 512ULL << 20);
  EXPECT_EQ(ParseSize("64k").value(), 64ULL << 10);
  EXPECT_EQ(ParseSize("2P").value(), 2ULL << 50);
  EXPECT_EQ(ParseSize("1048576").value(), 1048576ULL);
  EXPECT_EQ(ParseSize("0").value(), 0ULL);
  EXPECT_EQ(ParseSize("0.5K").value(), 512ULL);
  EXPECT_EQ(ParseSize("0.1K").value(), 102ULL);  // 102.4: the nearest byte
  // Exact, not through a double: 2^64-1 bytes and the last PiB step below it.
  EXPECT_EQ(ParseSize("18446744073709551615").value(), UINT64_MAX);
  EXPECT_EQ(ParseSize("16383P").value(), 16383ULL << 50);
}

TEST(ParseSize, RejectsGarbageWithMessage) {
  for (const char* bad : {"",     "G",   "-1G", "12X",  "1.5", "abc",    "1e30T",
                          "-0",   "-0G", "1e3", "1E3K", "+5G", " 5G",    "5G ",
                          "0x10", "inf", "nan", "1.G",  ".5G", "16384P", "18446744073709551616",
                          "5GG"}) {
    auto r = ParseSize(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), EINVAL);
    EXPECT_NE(r.status().message().find("invalid size '" + std::string(bad) + "'"),
              std::string::npos)
        << r.status().message();
  }
}

TEST(ParseCount, DecimalIntegersInRange) {
  EXPECT_EQ(ParseCount("0", 0, 10).value(), 0u);
  EXPECT_EQ(ParseCount("10", 0, 10).value(), 10u);
  EXPECT_EQ(ParseCount("010", 0, 10).value(), 10u);  // decimal, never octal
  EXPECT_EQ(ParseCount("18446744073709551615", 0, UINT64_MAX).value(), UINT64_MAX);
  for (const char* bad :
       {"", "-1", "+1", "11", "1e1", "0x1", " 1", "1 ", "1.0", "18446744073709551616"}) {
    auto r = ParseCount(bad, 0, 10);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), EINVAL);
    EXPECT_NE(r.status().message().find("from 0 to 10"), std::string::npos) << r.status().message();
  }
  EXPECT_FALSE(ParseCount("0", 1, 10).ok());
}

TEST(ParseBandwidth, DecimalMegabytes) {
  EXPECT_EQ(ParseBandwidthMBps("200").value(), 200000000ULL);
  EXPECT_EQ(ParseBandwidthMBps("0").value(), 0ULL);
  EXPECT_EQ(ParseBandwidthMBps("1.5").value(), 1500000ULL);
  EXPECT_EQ(ParseBandwidthMBps("200MB/s").value(), 200000000ULL);
  EXPECT_EQ(ParseBandwidthMBps("200M").value(), 200000000ULL);
  for (const char* bad : {"fast", "", "-0", "-1", "1e3", "0x10", " 5", "inf", "5 MB/s"}) {
    EXPECT_FALSE(ParseBandwidthMBps(bad).ok()) << bad;
  }
}

// The largest bandwidth is 2^64-1 bytes/s; one byte more was taken modulo 2^64 (a limit of
// 0.448384 MB/s), and a fraction finer than a byte per second was dropped (0.0000009 became 0,
// which means no limit).
TEST(ParseBandwidth, NeitherWrapsNorRoundsToNoLimit) {
  EXPECT_EQ(ParseBandwidthMBps("18446744073709.551615").value(), UINT64_MAX);
  EXPECT_FALSE(ParseBandwidthMBps("18446744073709.551616").ok());
  EXPECT_FALSE(ParseBandwidthMBps("18446744073709.999999").ok());
  EXPECT_EQ(ParseBandwidthMBps("0.000001").value(), 1u);
  EXPECT_EQ(ParseBandwidthMBps("1.5000000000").value(), 1500000u);
  Result<uint64_t> tiny = ParseBandwidthMBps("0.0000009");
  ASSERT_FALSE(tiny.ok());
  EXPECT_NE(tiny.status().message().find("finer than a byte per second"), std::string::npos)
      << tiny.status().message();
}

TEST(FormatBytes, HumanUnits) {
  EXPECT_EQ(FormatBytes(12), "12 B");
  EXPECT_EQ(FormatBytes(1536), "1.5 KiB");
  EXPECT_EQ(FormatBytes(1ULL << 30), "1.0 GiB");
}

}  // namespace
}  // namespace clairfs
