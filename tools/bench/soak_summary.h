// What a soak's samples say about the daemon's memory and descriptors (`clairfs bench soak`).
//
// A sample is the daemon's /proc figures (bench_support.h ProcessStats) at a moment of the run,
// with the opens the readers had completed by then. The summary splits the run at `warmup_opens`:
// caches that fill as the first files are read (the index's block cache, the node cache, per-file
// counters, the kernel's held copies) fill during the warm-up, so growth after it is what a long
// run keeps growing by. Growth is reported two ways, each in bytes per million opens:
//   - the slope of the least-squares line through (opens, RSS) of every sample from the first at
//     or after the warm-up on (robust to the allocator's step-wise growth and to noise);
//   - end minus warm-up: (RSS of the last sample - RSS at the warm-up) over the opens between.
// Both are for VmRSS and for RssAnon (the heap; VmRSS also counts mapped files, which the kernel
// may drop and reload). Descriptors and threads: minimum and maximum over the whole run and after
// the warm-up. With fewer than two samples after the warm-up no growth is computed
// (growth_measured false).
//
// Thread-safety: pure functions over values.
#pragma once

#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "tools/bench/bench_support.h"

namespace clairfs {

struct SoakSample {
  double seconds = 0;  // since the readers started
  uint64_t opens = 0;  // opens completed by the readers so far
  ProcessStats daemon;
};

struct MinMax {
  uint64_t min = 0;
  uint64_t max = 0;
};

struct SoakSummary {
  uint64_t samples = 0;
  uint64_t warmup_opens = 0;     // as asked
  uint64_t opens_at_warmup = 0;  // opens of the first sample at or after the warm-up
  uint64_t opens_at_end = 0;     // opens of the last sample
  uint64_t fit_samples = 0;      // samples at or after the warm-up
  bool growth_measured = false;  // fit_samples >= 2 and the opens moved between them
  ProcessStats start, at_warmup, end;
  uint64_t rss_max_bytes = 0;
  // Growth after the warm-up, bytes per million opens (0 unless growth_measured).
  double rss_slope = 0, rss_anon_slope = 0;          // least squares
  double rss_end_delta = 0, rss_anon_end_delta = 0;  // end minus warm-up
  MinMax fds, fds_after_warmup, threads, threads_after_warmup;
};

// `samples` in the order taken (opens never decrease). An empty list gives an empty summary.
SoakSummary SummarizeSoak(const std::vector<SoakSample>& samples, uint64_t warmup_opens);

// The least-squares slope of y over x; 0 when the x values do not vary.
double LeastSquaresSlope(const std::vector<double>& x, const std::vector<double>& y);

nlohmann::json SoakSummaryJson(const SoakSummary& summary);
nlohmann::json SoakSampleJson(const SoakSample& sample);

}  // namespace clairfs
