// Unit tests of the soak summary (soak_summary.h): growth after the warm-up by both measures,
// the warm-up left out, and descriptor and thread ranges.
#include "tools/bench/soak_summary.h"

#include <gtest/gtest.h>

namespace clairfs {
namespace {

constexpr uint64_t kMiB = 1 << 20;

SoakSample Sample(uint64_t opens, uint64_t rss, uint64_t anon, uint64_t fds, uint64_t threads) {
  SoakSample s;
  s.opens = opens;
  s.daemon.rss_bytes = rss;
  s.daemon.rss_anon_bytes = anon;
  s.daemon.open_fds = fds;
  s.daemon.threads = threads;
  return s;
}

TEST(SoakSummary, GrowthAfterTheWarmupOnly) {
  // 20 MiB -> 60 MiB during the first million opens, then 2 MiB per million (anon 1 MiB).
  std::vector<SoakSample> samples = {Sample(0, 20 * kMiB, 10 * kMiB, 30, 12),
                                     Sample(500'000, 50 * kMiB, 40 * kMiB, 41, 12)};
  for (uint64_t m = 1; m <= 5; ++m) {
    samples.push_back(
        Sample(m * 1'000'000, (58 + 2 * m) * kMiB, (49 + m) * kMiB, m == 3 ? 36 : 35, 14));
  }
  SoakSummary s = SummarizeSoak(samples, 1'000'000);
  ASSERT_TRUE(s.growth_measured);
  EXPECT_EQ(s.samples, 7u);
  EXPECT_EQ(s.fit_samples, 5u);
  EXPECT_EQ(s.opens_at_warmup, 1'000'000u);
  EXPECT_EQ(s.opens_at_end, 5'000'000u);
  EXPECT_NEAR(s.rss_slope, 2.0 * kMiB, 1);
  EXPECT_NEAR(s.rss_anon_slope, 1.0 * kMiB, 1);
  EXPECT_NEAR(s.rss_end_delta, 2.0 * kMiB, 1);
  EXPECT_NEAR(s.rss_anon_end_delta, 1.0 * kMiB, 1);
  EXPECT_EQ(s.start.rss_bytes, 20 * kMiB);
  EXPECT_EQ(s.at_warmup.rss_bytes, 60 * kMiB);
  EXPECT_EQ(s.end.rss_bytes, 68 * kMiB);
  EXPECT_EQ(s.rss_max_bytes, 68 * kMiB);
  EXPECT_EQ(s.fds.min, 30u);
  EXPECT_EQ(s.fds.max, 41u);
  EXPECT_EQ(s.fds_after_warmup.min, 35u);
  EXPECT_EQ(s.fds_after_warmup.max, 36u);
  EXPECT_EQ(s.threads.min, 12u);
  EXPECT_EQ(s.threads_after_warmup.min, 14u);
  nlohmann::json j = SoakSummaryJson(s);
  EXPECT_NEAR(j["growth_after_warmup"]["rss_slope_bytes_per_million_opens"].get<double>(),
              2.0 * kMiB, 1);
  EXPECT_EQ(j["open_fds_after_warmup"]["max"], 36);
}

TEST(SoakSummary, TheFitIgnoresOneStepThatEndMinusWarmupSees) {
  // Flat at 40 MiB but for one late 4 MiB step (an allocator arena grown once): the line through
  // all samples rises less than the end-minus-warm-up figure.
  std::vector<SoakSample> samples;
  for (uint64_t i = 0; i <= 10; ++i) {
    samples.push_back(Sample(i * 100'000, (i == 10 ? 44 : 40) * kMiB, 0, 20, 10));
  }
  SoakSummary s = SummarizeSoak(samples, 0);
  ASSERT_TRUE(s.growth_measured);
  EXPECT_NEAR(s.rss_end_delta, 4.0 * kMiB, 1);
  EXPECT_GT(s.rss_slope, 0);
  EXPECT_LT(s.rss_slope, s.rss_end_delta / 2);
}

TEST(SoakSummary, NoGrowthWithoutTwoSamplesAfterTheWarmup) {
  std::vector<SoakSample> samples = {Sample(0, 10, 5, 3, 1), Sample(10, 20, 6, 4, 1)};
  SoakSummary s = SummarizeSoak(samples, 10);
  EXPECT_FALSE(s.growth_measured);
  EXPECT_EQ(s.fit_samples, 1u);
  EXPECT_EQ(s.rss_slope, 0);
  EXPECT_TRUE(SoakSummaryJson(s)["growth_after_warmup"].is_null());
  EXPECT_FALSE(SummarizeSoak({}, 0).growth_measured);
  // Two samples at the same count of opens measure nothing either.
  EXPECT_FALSE(SummarizeSoak({Sample(5, 1, 1, 1, 1), Sample(5, 2, 2, 1, 1)}, 0).growth_measured);
}

TEST(SoakSummary, LeastSquaresSlope) {
  EXPECT_DOUBLE_EQ(LeastSquaresSlope({0, 1, 2, 3}, {1, 3, 5, 7}), 2.0);
  EXPECT_DOUBLE_EQ(LeastSquaresSlope({1, 1, 1}, {1, 2, 3}), 0.0);
  EXPECT_DOUBLE_EQ(LeastSquaresSlope({1}, {1}), 0.0);
}

}  // namespace
}  // namespace clairfs
