// The summary of a soak's samples (see soak_summary.h).
#include "tools/bench/soak_summary.h"

#include <algorithm>

namespace clairfs {
namespace {

constexpr double kMillion = 1e6;

void Widen(MinMax* range, uint64_t value, bool first) {
  range->min = first ? value : std::min(range->min, value);
  range->max = first ? value : std::max(range->max, value);
}

nlohmann::json ProcessJson(const ProcessStats& p) {
  return {{"rss_bytes", p.rss_bytes},
          {"rss_anon_bytes", p.rss_anon_bytes},
          {"rss_file_bytes", p.rss_file_bytes},
          {"threads", p.threads},
          {"open_fds", p.open_fds}};
}

nlohmann::json RangeJson(const MinMax& range) { return {{"min", range.min}, {"max", range.max}}; }

}  // namespace

double LeastSquaresSlope(const std::vector<double>& x, const std::vector<double>& y) {
  const size_t n = std::min(x.size(), y.size());
  if (n < 2) return 0;
  double mean_x = 0, mean_y = 0;
  for (size_t i = 0; i < n; ++i) {
    mean_x += x[i];
    mean_y += y[i];
  }
  mean_x /= static_cast<double>(n);
  mean_y /= static_cast<double>(n);
  double sxy = 0, sxx = 0;
  for (size_t i = 0; i < n; ++i) {
    sxy += (x[i] - mean_x) * (y[i] - mean_y);
    sxx += (x[i] - mean_x) * (x[i] - mean_x);
  }
  return sxx > 0 ? sxy / sxx : 0;
}

SoakSummary SummarizeSoak(const std::vector<SoakSample>& samples, uint64_t warmup_opens) {
  SoakSummary s;
  s.warmup_opens = warmup_opens;
  s.samples = samples.size();
  if (samples.empty()) return s;
  s.start = samples.front().daemon;
  s.end = samples.back().daemon;
  s.opens_at_end = samples.back().opens;
  std::vector<double> opens, rss, anon;
  for (size_t i = 0; i < samples.size(); ++i) {
    const SoakSample& sample = samples[i];
    s.rss_max_bytes = std::max(s.rss_max_bytes, sample.daemon.rss_bytes);
    Widen(&s.fds, sample.daemon.open_fds, i == 0);
    Widen(&s.threads, sample.daemon.threads, i == 0);
    if (sample.opens < warmup_opens) continue;
    const bool first = opens.empty();
    if (first) {
      s.at_warmup = sample.daemon;
      s.opens_at_warmup = sample.opens;
    }
    Widen(&s.fds_after_warmup, sample.daemon.open_fds, first);
    Widen(&s.threads_after_warmup, sample.daemon.threads, first);
    opens.push_back(static_cast<double>(sample.opens) / kMillion);
    rss.push_back(static_cast<double>(sample.daemon.rss_bytes));
    anon.push_back(static_cast<double>(sample.daemon.rss_anon_bytes));
  }
  s.fit_samples = opens.size();
  const double span = opens.empty() ? 0 : opens.back() - opens.front();
  s.growth_measured = s.fit_samples >= 2 && span > 0;
  if (!s.growth_measured) return s;
  s.rss_slope = LeastSquaresSlope(opens, rss);
  s.rss_anon_slope = LeastSquaresSlope(opens, anon);
  s.rss_end_delta = (rss.back() - rss.front()) / span;
  s.rss_anon_end_delta = (anon.back() - anon.front()) / span;
  return s;
}

nlohmann::json SoakSummaryJson(const SoakSummary& s) {
  nlohmann::json growth = nullptr;
  if (s.growth_measured) {
    growth = {{"rss_slope_bytes_per_million_opens", s.rss_slope},
              {"rss_anon_slope_bytes_per_million_opens", s.rss_anon_slope},
              {"rss_end_delta_bytes_per_million_opens", s.rss_end_delta},
              {"rss_anon_end_delta_bytes_per_million_opens", s.rss_anon_end_delta}};
  }
  return {{"samples", s.samples},
          {"warmup_opens", s.warmup_opens},
          {"opens_at_warmup", s.opens_at_warmup},
          {"opens_at_end", s.opens_at_end},
          {"fit_samples", s.fit_samples},
          {"growth_after_warmup", growth},
          {"start", ProcessJson(s.start)},
          {"at_warmup", ProcessJson(s.at_warmup)},
          {"end", ProcessJson(s.end)},
          {"rss_max_bytes", s.rss_max_bytes},
          {"open_fds", RangeJson(s.fds)},
          {"open_fds_after_warmup", RangeJson(s.fds_after_warmup)},
          {"threads", RangeJson(s.threads)},
          {"threads_after_warmup", RangeJson(s.threads_after_warmup)}};
}

nlohmann::json SoakSampleJson(const SoakSample& sample) {
  nlohmann::json j = ProcessJson(sample.daemon);
  j["seconds"] = sample.seconds;
  j["opens"] = sample.opens;
  return j;
}

}  // namespace clairfs
