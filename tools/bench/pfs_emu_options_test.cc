// Tests of the PFS emulator's option parsers and failure-rule matching.
#include "tools/bench/pfs_emu_options.h"

#include <gtest/gtest.h>

namespace clairfs {
namespace {

TEST(PfsEmuOptions, LatencyInMilliseconds) {
  EXPECT_EQ(ParseLatencyMs("2").value(), 2'000'000u);
  EXPECT_EQ(ParseLatencyMs("0.5").value(), 500'000u);
  EXPECT_EQ(ParseLatencyMs("0").value(), 0u);
  for (const char* bad : {"", "-1", "2ms", "abc", "1e12"}) {
    auto r = ParseLatencyMs(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_NE(r.status().message().find("invalid latency"), std::string::npos);
  }
}

TEST(PfsEmuOptions, ErrnoByNameOrNumber) {
  EXPECT_EQ(ParseErrno("EIO").value(), EIO);
  EXPECT_EQ(ParseErrno("enoent").value(), ENOENT);
  EXPECT_EQ(ParseErrno("13").value(), 13);
  EXPECT_FALSE(ParseErrno("").ok());
  EXPECT_FALSE(ParseErrno("0").ok());
  EXPECT_FALSE(ParseErrno("EBOGUS").ok());
  EXPECT_FALSE(ParseErrno("5x").ok());
  EXPECT_EQ(ErrnoName(EIO), "EIO");
  EXPECT_EQ(ErrnoName(4000), "4000");
}

TEST(PfsEmuOptions, FailRules) {
  auto open_rule = ParseFailRule("class_0001/*:EIO");
  ASSERT_TRUE(open_rule.ok());
  EXPECT_EQ(open_rule->op, PfsFailRule::Op::kOpen);
  EXPECT_EQ(open_rule->glob, "class_0001/*");
  EXPECT_EQ(open_rule->error, EIO);
  auto read_rule = ParseFailRule("read:*.tar:61");
  ASSERT_TRUE(read_rule.ok());
  EXPECT_EQ(read_rule->op, PfsFailRule::Op::kRead);
  EXPECT_EQ(read_rule->glob, "*.tar");
  EXPECT_EQ(read_rule->error, 61);
  // The errno is after the last colon, so globs may contain colons.
  auto colon = ParseFailRule("a:b:ENOENT");
  ASSERT_TRUE(colon.ok());
  EXPECT_EQ(colon->glob, "a:b");
  for (const char* bad : {"", "EIO", ":EIO", "x:", "x:EWHAT", "read:EIO"}) {
    auto r = ParseFailRule(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), EINVAL);
    EXPECT_NE(r.status().message().find("--fail"), std::string::npos) << r.status().message();
  }
}

TEST(PfsEmuOptions, FirstMatchingRuleOfTheOperationWins) {
  std::vector<PfsFailRule> rules = {ParseFailRule("read:class_0001/*:ENODATA").value(),
                                    ParseFailRule("class_0001/img_00000007.jpg:EACCES").value(),
                                    ParseFailRule("class_0001/*:EIO").value()};
  using Op = PfsFailRule::Op;
  EXPECT_EQ(MatchFailRule(rules, Op::kOpen, "class_0001/img_00000007.jpg"), EACCES);
  EXPECT_EQ(MatchFailRule(rules, Op::kOpen, "class_0001/img_00000008.jpg"), EIO);
  EXPECT_EQ(MatchFailRule(rules, Op::kRead, "class_0001/img_00000008.jpg"), ENODATA);
  EXPECT_EQ(MatchFailRule(rules, Op::kOpen, "class_0002/img_00000008.jpg"), 0);
  // fnmatch without FNM_PATHNAME: '*' crosses directories.
  std::vector<PfsFailRule> any = {ParseFailRule("*.jpg:EIO").value()};
  EXPECT_EQ(MatchFailRule(any, Op::kOpen, "class_0000/img_00000000.jpg"), EIO);
  EXPECT_EQ(MatchFailRule({}, Op::kOpen, "x"), 0);
}

TEST(PfsEmuOptions, SlowRules) {
  auto open_rule = ParseSlowRule("class_0001/*:20000");
  ASSERT_TRUE(open_rule.ok());
  EXPECT_EQ(open_rule->op, PfsFailRule::Op::kOpen);
  EXPECT_EQ(open_rule->glob, "class_0001/*");
  EXPECT_EQ(open_rule->delay_ns, 20'000'000'000u);
  auto read_rule = ParseSlowRule("read:a:b:0.5");
  ASSERT_TRUE(read_rule.ok());
  EXPECT_EQ(read_rule->op, PfsFailRule::Op::kRead);
  EXPECT_EQ(read_rule->glob, "a:b");
  EXPECT_EQ(read_rule->delay_ns, 500'000u);
  for (const char* bad : {"", "100", ":100", "x:", "x:soon", "x:-1", "read:100"}) {
    auto r = ParseSlowRule(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), EINVAL);
    EXPECT_NE(r.status().message().find("--slow"), std::string::npos) << r.status().message();
  }
  std::vector<PfsSlowRule> rules = {*read_rule, *open_rule, ParseSlowRule("*:1").value()};
  using Op = PfsFailRule::Op;
  EXPECT_EQ(MatchSlowRule(rules, Op::kOpen, "class_0001/x"), 20'000'000'000u);
  EXPECT_EQ(MatchSlowRule(rules, Op::kOpen, "class_0002/x"), 1'000'000u);
  EXPECT_EQ(MatchSlowRule(rules, Op::kRead, "a:b"), 500'000u);
  EXPECT_EQ(MatchSlowRule(rules, Op::kRead, "class_0001/x"), 0u);
  EXPECT_EQ(MatchSlowRule({}, Op::kOpen, "x"), 0u);
}

}  // namespace
}  // namespace clairfs
