// The matcher's cost at ImageNet scale (1,281,167 samples, world up to 1024), printed: the search
// over seed + epoch < 2^16 runs in every test run; the full 2^20 search (issue 22's target: 10 s
// of one core) is DISABLED_ (about that long) and run by hand with
// --gtest_also_run_disabled_tests --gtest_filter='PlanInferencePerformance.*'.
#include <time.h>

#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "planner/inference/plan_inference.h"
#include "planner/plan.h"

namespace clairfs {
namespace {

constexpr uint64_t kImageNet = 1281167;

// 4 ranks of world 1024 (pids 10..13), 48 opens each, in DataLoader order (2 workers, batches of
// 8), seed + epoch = s.
std::vector<Observation> ImageNetTrace(uint64_t s) {
  auto spec = ParsePlanSpec("torch-distributed:seed=" + std::to_string(s) + ",world=1024");
  auto plan = Plan::Create(*spec, kImageNet);
  std::vector<Observation> trace;
  std::vector<std::vector<uint64_t>> orders;
  for (uint32_t rank : {0u, 1u, 500u, 1023u}) orders.push_back(*(*plan)->RankIndices(0, rank, 48));
  for (size_t base = 0; base < 48; base += 16) {
    for (size_t t = 0; t < 8; ++t) {
      for (size_t w = 0; w < 2; ++w) {
        for (size_t r = 0; r < orders.size(); ++r)
          trace.push_back({orders[r][base + w * 8 + t], 10 + r});
      }
    }
  }
  return trace;
}

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// InferPlan timed: CPU of every thread it ran on, and wall time.
struct TimedSearch {
  InferenceResult r;
  double cpu = 0;
  double seconds = 0;
};
TimedSearch TimeSearch(const std::vector<Observation>& trace, const InferenceOptions& o) {
  TimedSearch t;
  auto start = std::chrono::steady_clock::now();
  double cpu_start = ThreadCpuSeconds();
  t.r = InferPlan(trace, kImageNet, o);
  t.cpu = ThreadCpuSeconds() - cpu_start + t.r.helper_cpu_seconds;
  t.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return t;
}

void Search(uint64_t seeds, uint64_t s, bool popular, uint32_t threads = 1) {
  InferenceOptions o;
  o.threads = threads;
  o.max_seed_plus_epoch = seeds;
  if (!popular) o.popular_seeds.clear();
  o.search_every_sampler = popular;  // what a search costs when no torch-distributed class is found
  auto [r, cpu, seconds] = TimeSearch(ImageNetTrace(s), o);
  printf(
      "n %llu, %llu seeds x world <= 1024%s, %u thread%s: %.2f s CPU, %.2f s wall (stage 1 %.2f s, "
      "stage 2 %.2f "
      "s; %llu seeds scanned over %llu positions, "
      "%u landings to survive, %llu survivors, %llu followed through stage 2's prefix %llu): %s\n",
      static_cast<unsigned long long>(kImageNet), static_cast<unsigned long long>(seeds),
      popular ? " + popular seeds for every sampler" : "", threads, threads == 1 ? "" : "s", cpu,
      seconds, r.stage1_seconds, r.stage2_seconds, static_cast<unsigned long long>(r.seeds_scanned),
      static_cast<unsigned long long>(r.stage1_positions), r.stage1_hits,
      static_cast<unsigned long long>(r.survivors), static_cast<unsigned long long>(r.followed),
      static_cast<unsigned long long>(r.stage2_prefix), r.reason.c_str());
  ASSERT_EQ(r.outcome, InferenceOutcome::kAdopted) << r.reason;
  EXPECT_EQ(r.seed, s);
  EXPECT_EQ(r.world, 1024u);
}

TEST(PlanInferencePerformance, ImageNetSeedsBelow2To16) {
  Search(uint64_t{1} << 16, 40000, false);
  Search(uint64_t{1} << 16, 40000, false, 2);
  Search(0, 3407, true);  // the popular seeds of every sampler: NumPy's whole shuffles dominate
}

// What a mount's searches see (bench infer): one reader, rank 3 of world 8, its first 16 opens
// in order; the quick search (seed + epoch < 2^16 and the popular seeds) judged as the whole
// space is, or the whole space.
void OneReaderSearch(uint64_t s, uint64_t seeds, uint32_t threads) {
  auto spec = ParsePlanSpec("torch-distributed:seed=" + std::to_string(s) + ",world=8");
  auto plan = Plan::Create(*spec, kImageNet);
  std::vector<Observation> trace;
  std::vector<uint64_t> order = *(*plan)->RankIndices(0, 3, 16);
  for (uint64_t i : order) trace.push_back({i, 7});
  InferenceOptions whole;
  InferenceOptions o;
  o.max_seed_plus_epoch = seeds;
  o.threshold_candidates = InferenceCandidates(whole, kImageNet);
  o.threads = threads;
  auto [r, cpu, seconds] = TimeSearch(trace, o);
  printf(
      "one reader, 16 opens, seed + epoch < %llu, %u thread%s: %.2f s CPU, %.2f s wall (stage 1 "
      "%.2f s, stage 2 %.2f s: %llu survivors, the rest %.2f s): %s\n",
      static_cast<unsigned long long>(seeds), threads, threads == 1 ? "" : "s", cpu, seconds,
      r.stage1_seconds, r.stage2_seconds, static_cast<unsigned long long>(r.survivors),
      r.seconds - r.stage1_seconds - r.stage2_seconds, r.reason.c_str());
  ASSERT_EQ(r.outcome, InferenceOutcome::kAdopted) << r.reason;
  EXPECT_EQ(r.seed, s);
}

TEST(PlanInferencePerformance, ImageNetOneReaderQuickSearch) {
  OneReaderSearch(4242, uint64_t{1} << 16, 1);
  OneReaderSearch(4242, uint64_t{1} << 16, 2);
}

TEST(PlanInferencePerformance, DISABLED_ImageNetOneReaderWholeSpace) {
  OneReaderSearch(524287, uint64_t{1} << 20, 1);
  OneReaderSearch(524287, uint64_t{1} << 20, 2);
}

TEST(PlanInferencePerformance, DISABLED_ImageNetSeedsBelow2To20) {
  Search(uint64_t{1} << 20, 1000000, false);
  Search(uint64_t{1} << 20, 1000000, false, 2);
  Search(uint64_t{1} << 20, 1000000, true);
}

}  // namespace
}  // namespace clairfs
