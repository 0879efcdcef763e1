// InferPlan: the two-stage search over sampler candidates (see plan_inference.h).
#include "planner/inference/plan_inference.h"

#include <sched.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <thread>
#include <unordered_map>
#include <unordered_set>

#include "planner/inference/evidence_threshold.h"
#include "planner/inference/mt19937_lanes.h"
#include "planner/inference/randperm_lanes.h"
#include "planner/inference/shuffle_tracker.h"
#include "planner/mt19937.h"
#include "planner/numpy_random.h"
#include "planner/pcg64.h"
#include "planner/torch_randperm.h"

namespace clairfs {
namespace {

constexpr uint32_t kUnknown = UINT32_MAX;
constexpr size_t kMaxStage1Readers = 16;
constexpr size_t kMaxRivalsShown = 4;

struct Reader {
  uint64_t id = 0;
  std::vector<uint32_t> values;  // distinct, in arrival order, at most checked_per_reader
};

// One (sampler, seed) whose permutation was followed: the positions of the checked values.
struct Followed {
  SamplerKind kind;
  uint64_t seed;
  uint32_t prefix;                               // positions >= prefix are unknown
  std::vector<std::vector<uint32_t>> positions;  // per reader, per value (kUnknown if >= prefix)
};

struct Verdict {
  bool explains = false;
  uint64_t matches = 0, mismatches = 0, anchors = 0;
  // gcd of every matched step's distance from its reader's anchor step: 1 for a reader that
  // reads consecutive steps; m >= 2 when every open skips as rank r of world m * world would.
  uint64_t step_gcd = 0;
  std::vector<ReaderRank> readers;
};

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

uint64_t AllowedMismatches(double fraction, uint64_t decided) {
  return static_cast<uint64_t>(std::floor(fraction * static_cast<double>(decided)));
}

// Does (followed, world) explain the readers? See the header for the rule.
// With `steps`, also collects each reader's anchor and matched steps.
Verdict Judge(const Followed& f, const std::vector<Reader>& readers, uint32_t world,
              uint32_t window, uint64_t min_evidence, double mismatch_fraction,
              uint64_t checked_total, std::vector<std::vector<uint64_t>>* steps = nullptr) {
  Verdict v;
  if (steps != nullptr) steps->assign(readers.size(), {});
  const uint64_t most_mismatches = AllowedMismatches(mismatch_fraction, checked_total);
  v.readers.reserve(readers.size());
  for (size_t g = 0; g < readers.size(); ++g) {
    ReaderRank rr;
    rr.reader = readers[g].id;
    bool anchored = false;
    uint64_t furthest = 0, anchor_step = 0;
    for (uint32_t p : f.positions[g]) {
      if (!anchored) {
        if (p != kUnknown && p / world < window) {
          anchored = true;
          rr.rank = p % world;
          furthest = p / world;
          anchor_step = furthest;
          ++v.anchors;
          if (steps != nullptr) (*steps)[g].push_back(anchor_step);
        } else if (p != kUnknown || f.prefix / world >= window) {
          ++rr.mismatches;  // (an unknown position is >= prefix) else undecided
        }
        continue;
      }
      if (p != kUnknown) {
        uint64_t step = p / world;
        if (p % world == rr.rank && step + window >= furthest && step <= furthest + window) {
          ++rr.matches;
          furthest = std::max(furthest, step);
          if (steps != nullptr) (*steps)[g].push_back(step);
          v.step_gcd =
              std::gcd(v.step_gcd, step > anchor_step ? step - anchor_step : anchor_step - step);
        } else {
          ++rr.mismatches;
        }
      } else {
        uint64_t first_step = (uint64_t{f.prefix} + world - 1 - rr.rank) / world;
        if (first_step > furthest + window) ++rr.mismatches;  // else undecided
      }
    }
    v.matches += rr.matches;
    v.mismatches += rr.mismatches;
    v.readers.push_back(rr);
    if (v.mismatches > most_mismatches) return v;
  }
  v.explains = v.matches >= min_evidence &&
               v.mismatches <= AllowedMismatches(mismatch_fraction, v.matches + v.mismatches);
  return v;
}

struct Class {
  SamplerKind kind;
  uint64_t seed;
  uint32_t world;
  Verdict verdict;
  Followed followed;
};

// The smallest share, over the ranks the readers read (readers of one rank, e.g. its DataLoader
// workers, together), of the steps between a rank's first and last matched step that were opened.
// A rank read whole with a fifth of its opens missing covers 0.8; a pid-less trace of ranks 0-3
// of world 8 taken as world 1 covers about half that.
double LeastCoverage(const std::vector<std::vector<uint64_t>>& steps,
                     const std::vector<ReaderRank>& ranks) {
  std::unordered_map<uint32_t, std::vector<uint64_t>> by_rank;
  for (size_t g = 0; g < steps.size(); ++g) {
    auto& all = by_rank[ranks[g].rank];
    all.insert(all.end(), steps[g].begin(), steps[g].end());
  }
  double least = 1;
  for (auto& [rank, all] : by_rank) {
    std::sort(all.begin(), all.end());
    all.erase(std::unique(all.begin(), all.end()), all.end());
    if (all.size() < 2) continue;
    double span = static_cast<double>(all.back() - all.front() + 1);
    least = std::min(least, static_cast<double>(all.size()) / span);
  }
  return least;
}

std::string SpecOf(SamplerKind kind, uint64_t seed, uint32_t world,
                   const std::vector<ReaderRank>& readers) {
  PlanSpec spec;
  spec.kind = kind;
  uint64_t s = seed;
  spec.seed.text = std::to_string(seed);
  while (s != 0) {
    spec.seed.magnitude.push_back(static_cast<uint32_t>(s));
    s >>= 32;
  }
  if (kind == SamplerKind::kTorchDistributed) {
    spec.world = world;
    uint32_t lo = world - 1, hi = 0;
    for (const ReaderRank& r : readers) {
      lo = std::min(lo, r.rank);
      hi = std::max(hi, r.rank);
    }
    spec.first_rank = readers.empty() ? 0 : lo;
    spec.last_rank = readers.empty() ? world - 1 : hi;
  }
  return FormatPlanSpec(spec);
}

std::vector<uint32_t> SeedWords(uint64_t seed) {
  std::vector<uint32_t> words;
  while (seed != 0) {
    words.push_back(static_cast<uint32_t>(seed));
    seed >>= 32;
  }
  return words;
}

}  // namespace

const std::vector<uint64_t>& PopularSeeds() {
  static const std::vector<uint64_t> seeds = {
      0,        1,        2,        3,         4,         5,          7,          8,
      10,       11,       12,       13,        17,        21,         23,         24,
      25,       31,       32,       33,        37,        42,         47,         64,
      69,       77,       88,       99,        100,       101,        111,        123,
      128,      222,      256,      321,       333,       420,        512,        666,
      777,      888,      999,      1000,      1024,      1111,       1234,       1337,
      2019,     2020,     2021,     2022,      2023,      2024,       2025,       2048,
      3407,     4096,     4321,     5555,      6666,      7777,       8888,       9999,
      10000,    12345,    31337,    42424,     54321,     65535,      65536,      99999,
      100000,   123456,   424242,   654321,    999999,    1000000,    1234567,    7654321,
      12345678, 20240101, 87654321, 123456789, 987654321, 1234567890, 2147483647, 4294967295};
  return seeds;
}

const char* InferenceOutcomeName(InferenceOutcome outcome) {
  switch (outcome) {
    case InferenceOutcome::kAdopted:
      return "adopted";
    case InferenceOutcome::kTooFewObservations:
      return "too_few_observations";
    case InferenceOutcome::kNoCandidate:
      return "no_candidate";
    case InferenceOutcome::kSeveralCandidates:
      return "several_candidates";
    case InferenceOutcome::kDatasetTooSmall:
      return "dataset_too_small";
    case InferenceOutcome::kCancelled:
      return "cancelled";
  }
  return "unknown";
}

namespace {

// torch-distributed seeds + epoch searched beyond [0, max_seed_plus_epoch): popular seeds plus
// 0..popular_epochs-1, sorted and distinct.
std::vector<uint64_t> PopularSeedsBeyondTheDenseRange(const InferenceOptions& options) {
  std::vector<uint64_t> extra;
  if (!options.torch_distributed) return extra;
  for (uint64_t p : options.popular_seeds) {
    for (uint64_t e = 0; e < options.popular_epochs; ++e) {
      uint64_t s = p + e;
      if (s >= options.max_seed_plus_epoch && s <= UINT32_MAX) extra.push_back(s);
    }
  }
  std::sort(extra.begin(), extra.end());
  extra.erase(std::unique(extra.begin(), extra.end()), extra.end());
  return extra;
}

double CountCandidates(const InferenceOptions& options, uint32_t max_world,
                       uint64_t distributed_seeds) {
  const uint64_t popular = options.popular_seeds.size();
  return static_cast<double>(distributed_seeds) * max_world +
         static_cast<double>(popular) * ((options.torch_random ? 1 : 0) + (options.numpy ? 1 : 0) +
                                         (options.numpy_rng ? 1 : 0));
}

}  // namespace

double InferenceCandidates(const InferenceOptions& options, uint64_t num_samples) {
  const uint32_t max_world =
      std::max<uint32_t>(1, std::min<uint64_t>(options.max_world, num_samples));
  const uint64_t dense = options.torch_distributed
                             ? std::min<uint64_t>(options.max_seed_plus_epoch, uint64_t{1} << 32)
                             : 0;
  return CountCandidates(options, max_world,
                         dense + PopularSeedsBeyondTheDenseRange(options).size());
}

uint32_t DefaultSearchThreads() {
  constexpr int kMaxSearchThreads = 8;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  if (sched_getaffinity(0, sizeof cpus, &cpus) != 0) return 1;
  return static_cast<uint32_t>(std::clamp(CPU_COUNT(&cpus), 1, kMaxSearchThreads));
}

InferenceResult InferPlan(const std::vector<Observation>& observations, uint64_t num_samples,
                          const InferenceOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  InferenceResult out;
  auto finish = [&](InferenceOutcome outcome, std::string reason) {
    out.outcome = outcome;
    out.reason = std::move(reason);
    out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return out;
  };
  if (num_samples < 2 || num_samples > UINT32_MAX) {
    return finish(InferenceOutcome::kDatasetTooSmall,
                  num_samples < 2 ? "a dataset of fewer than 2 samples has no order to infer"
                                  : "datasets of 2^32 samples or more are not searched");
  }
  const uint32_t n = static_cast<uint32_t>(num_samples);
  const uint32_t window = std::max<uint32_t>(1, options.window);
  const uint32_t max_world =
      std::max<uint32_t>(1, std::min<uint64_t>(options.max_world, num_samples));

  // Readers, in order of first appearance; distinct values in arrival order.
  std::vector<Reader> readers;
  {
    std::unordered_map<uint64_t, size_t> reader_index;
    std::vector<std::unordered_set<uint64_t>> seen;
    for (const Observation& o : observations) {
      if (o.index >= num_samples) {
        ++out.out_of_range;
        continue;
      }
      auto [it, inserted] = reader_index.emplace(o.reader, readers.size());
      if (inserted) {
        readers.push_back({o.reader, {}});
        seen.emplace_back();
      }
      size_t g = it->second;
      if (!seen[g].insert(o.index).second) {
        ++out.duplicates;
        continue;
      }
      ++out.observations;
      if (readers[g].values.size() < options.checked_per_reader) {
        readers[g].values.push_back(static_cast<uint32_t>(o.index));
      }
    }
  }
  out.reader_count = readers.size();
  uint64_t checked_total = 0;
  for (const Reader& r : readers) checked_total += r.values.size();

  // The candidates: torch-distributed seeds + epoch (dense range and popular ones beyond it).
  const std::vector<uint64_t> dense_extra = PopularSeedsBeyondTheDenseRange(options);
  const uint64_t dense = options.torch_distributed
                             ? std::min<uint64_t>(options.max_seed_plus_epoch, uint64_t{1} << 32)
                             : 0;
  const uint64_t distributed_seeds = dense + dense_extra.size();
  const uint64_t popular = options.popular_seeds.size();
  out.candidates = CountCandidates(options, max_world, distributed_seeds);
  // A narrower first search is judged as the whole space is (a union bound over more candidates).
  out.candidates = std::max(out.candidates, options.threshold_candidates);

  EvidenceThreshold threshold =
      DeriveEvidenceThreshold(num_samples, out.candidates, window, checked_total,
                              options.max_mismatch_fraction, options.false_adoption_target);
  out.match_probability = threshold.match_probability;
  if (!threshold.distinguishable && options.min_evidence_override == 0) {
    char reason[256];
    snprintf(reason, sizeof reason,
             "dataset too small to tell %.3g candidates apart: a wrong one matches an open with "
             "probability %.3g (window %u of %u samples)",
             out.candidates, threshold.match_probability, window, n);
    return finish(InferenceOutcome::kDatasetTooSmall, reason);
  }
  out.min_evidence =
      options.min_evidence_override > 0 ? options.min_evidence_override : threshold.min_evidence;
  out.false_adoption_bound =
      out.candidates *
      FalseMatchTail(out.min_evidence, threshold.match_probability, options.max_mismatch_fraction);
  if (checked_total < uint64_t{out.min_evidence} + 1) {
    return finish(InferenceOutcome::kTooFewObservations,
                  std::to_string(checked_total) + " distinct opens; at least " +
                      std::to_string(out.min_evidence + 1) + " are needed (K = " +
                      std::to_string(out.min_evidence) + " matches after an anchor)");
  }

  // Every candidate that is followed in stage 2 lands here.
  ShuffleTracker checker(n);
  {
    std::vector<uint32_t> all;
    for (const Reader& r : readers) all.insert(all.end(), r.values.begin(), r.values.end());
    checker.Track(all);
  }
  const uint64_t prefix64 =
      std::min<uint64_t>(n, uint64_t{max_world} * (options.checked_per_reader + window + 1));
  const uint32_t prefix = static_cast<uint32_t>(prefix64);
  out.stage2_prefix = prefix;
  std::unordered_map<uint32_t, uint32_t> position_of;
  position_of.reserve(checked_total * 2);
  auto landed = [&](uint32_t position, uint32_t value) { position_of[value] = position; };
  auto follow = [&](SamplerKind kind, uint64_t seed, uint32_t followed_prefix) {
    Followed f{kind, seed, followed_prefix, {}};
    f.positions.resize(readers.size());
    for (size_t g = 0; g < readers.size(); ++g) {
      f.positions[g].reserve(readers[g].values.size());
      for (uint32_t v : readers[g].values) {
        auto it = position_of.find(v);
        f.positions[g].push_back(it == position_of.end() ? kUnknown : it->second);
      }
    }
    position_of.clear();
    return f;
  };

  std::vector<Class> classes;
  Verdict best_short;  // the best candidate below K matches, for the reason
  Class best_short_class{};
  bool have_short = false;
  auto consider = [&](const Followed& f, uint32_t worlds) {
    std::vector<std::pair<uint32_t, Verdict>> explaining;
    for (uint32_t w = 1; w <= worlds; ++w) {
      Verdict v = Judge(f, readers, w, window, out.min_evidence, options.max_mismatch_fraction,
                        checked_total);
      if (v.explains) {
        explaining.emplace_back(w, std::move(v));
      } else if (v.matches >= 2 &&
                 v.mismatches <=
                     AllowedMismatches(options.max_mismatch_fraction, v.matches + v.mismatches) &&
                 (!have_short || v.matches > best_short.matches ||
                  (v.matches == best_short.matches && f.kind == best_short_class.kind &&
                   f.seed == best_short_class.seed && w % best_short_class.world == 0))) {
        best_short = v;
        best_short_class = {f.kind, f.seed, w, {}, {}};
        have_short = true;
      }
    }
    // Worlds that divide the largest explaining one are the same class (nested ranks).
    std::vector<size_t> maximal;
    for (size_t a = 0; a < explaining.size(); ++a) {
      bool divides_another = false;
      for (size_t b = 0; b < explaining.size(); ++b) {
        if (b != a && explaining[b].first % explaining[a].first == 0) divides_another = true;
      }
      if (!divides_another) maximal.push_back(a);
    }
    for (size_t a : maximal) {
      classes.push_back({f.kind, f.seed, explaining[a].first, std::move(explaining[a].second), f});
    }
  };

  // Stage 1: every torch-distributed s over the first L positions.
  if (distributed_seeds > 0) {
    const uint32_t stage1_len =
        static_cast<uint32_t>(std::min<uint64_t>(n, uint64_t{options.anchor_steps} * max_world));
    out.stage1_positions = stage1_len;
    std::vector<uint32_t> tracked;
    const size_t stage1_readers = std::min(readers.size(), kMaxStage1Readers);
    const size_t per_reader =
        std::max<size_t>(2, options.tracked / std::max<size_t>(1, stage1_readers));
    for (size_t g = 0; g < stage1_readers; ++g) {
      for (size_t k = 0; k < readers[g].values.size() && k < per_reader; ++k) {
        tracked.push_back(readers[g].values[k]);
      }
    }
    ShuffleTracker scout(n);
    scout.Track(tracked);
    const uint32_t tracked_count = static_cast<uint32_t>(scout.tracked().size());
    // The fewest landings whose chance coincidences the budget affords.
    const double landing = static_cast<double>(stage1_len) / n;
    uint32_t hits = 1;
    double expected = static_cast<double>(distributed_seeds) * tracked_count * landing;
    while (hits < tracked_count && expected > static_cast<double>(options.survivor_budget)) {
      ++hits;
      expected *= landing * static_cast<double>(tracked_count - hits + 1) / hits;
    }
    hits = std::max<uint32_t>(hits, std::min<uint32_t>(2, tracked_count));
    out.stage1_hits = hits;

    constexpr int kLanes = Mt19937Lanes::kLanes;
    // Most seeds have fewer picks of a tracked value than `hits` (counted in SIMD, an upper
    // bound on landings): only the others are followed one by one.
    const RandpermLandings picks(n, scout.tracked(), stage1_len);
    // Candidates c = 0 .. distributed_seeds-1 (the dense range, then the popular ones beyond),
    // in batches of kLanes that the scanning threads take in turn.
    auto candidate = [&](uint64_t c) { return c < dense ? c : dense_extra[c - dense]; };
    const uint64_t batches = (distributed_seeds + kLanes - 1) / kLanes;
    std::atomic<uint64_t> next_batch{0};
    std::atomic<bool> stopped{false};
    auto cancelled = [&options] {
      return options.cancel != nullptr && options.cancel->load(std::memory_order_relaxed);
    };
    struct ScanResult {
      std::vector<uint64_t> survivors;
      uint64_t scanned = 0;
      double cpu_seconds = 0;
    };
    auto scan = [&](ScanResult& result) {
      const double cpu_start = ThreadCpuSeconds();
      ShuffleTracker tracker(n);
      tracker.Track(scout.tracked());
      Mt19937Lanes lanes;
      std::vector<uint32_t> draws(static_cast<size_t>(stage1_len) * kLanes);
      for (uint64_t b; (b = next_batch.fetch_add(1, std::memory_order_relaxed)) < batches;) {
        if (cancelled()) {
          stopped.store(true, std::memory_order_relaxed);
          break;
        }
        uint32_t seeds[kLanes] = {};
        uint64_t full[kLanes];
        const int used =
            static_cast<int>(std::min<uint64_t>(kLanes, distributed_seeds - b * kLanes));
        for (int l = 0; l < used; ++l) {
          full[l] = candidate(b * kLanes + static_cast<uint64_t>(l));
          seeds[l] = static_cast<uint32_t>(full[l]);
        }
        lanes.Seed(seeds);
        lanes.Generate(stage1_len, draws.data());
        uint32_t upper[kLanes];
        if (picks.usable()) picks.Count(draws.data(), upper);
        for (int l = 0; l < used; ++l) {
          if (picks.usable() && upper[l] < hits) continue;
          uint32_t count = 0;
          const uint32_t* column = draws.data() + l;
          size_t i = 0;
          tracker.RunRandpermPrefix(
              stage1_len, [&] { return column[kLanes * i++]; },
              [&](uint32_t, uint32_t) { ++count; });
          if (count >= hits) result.survivors.push_back(full[l]);
        }
        result.scanned += static_cast<uint64_t>(used);
      }
      result.cpu_seconds = ThreadCpuSeconds() - cpu_start;
    };
    // The calling thread scans too; the others run beside it (inheriting its scheduling policy,
    // e.g. a mount's SCHED_IDLE).
    const uint32_t threads = static_cast<uint32_t>(
        std::clamp<uint64_t>(options.threads, 1, std::max<uint64_t>(1, batches)));
    std::vector<ScanResult> results(threads);
    {
      std::vector<std::thread> helpers;
      for (uint32_t t = 1; t < threads; ++t) helpers.emplace_back(scan, std::ref(results[t]));
      scan(results[0]);
      for (std::thread& h : helpers) h.join();
    }
    std::vector<uint64_t> survivors;
    for (uint32_t t = 0; t < threads; ++t) {
      const ScanResult& r = results[t];
      survivors.insert(survivors.end(), r.survivors.begin(), r.survivors.end());
      out.seeds_scanned += r.scanned;
      if (t > 0) out.helper_cpu_seconds += r.cpu_seconds;
    }
    if (stopped.load()) return finish(InferenceOutcome::kCancelled, "the search was cancelled");
    std::sort(survivors.begin(), survivors.end());  // the candidates' order, whoever found them
    out.survivors = survivors.size();
    const auto stage2_start = std::chrono::steady_clock::now();
    out.stage1_seconds = std::chrono::duration<double>(stage2_start - start).count();

    // Stage 2 for the survivors.
    // A survivor is first followed through the largest world's first 32 steps: unless some world
    // finds K matches there (a true candidate's early opens are there; a chance survivor matches
    // nothing), the whole prefix is not worth following.
    const uint32_t first_steps = std::min<uint32_t>(prefix, 32 * max_world);
    for (uint64_t s : survivors) {
      if (cancelled()) return finish(InferenceOutcome::kCancelled, "the search was cancelled");
      Mt19937 scout_mt(s);
      checker.RunRandpermPrefix(
          first_steps, [&] { return scout_mt.Next32(); }, landed);
      Followed early = follow(SamplerKind::kTorchDistributed, s, first_steps);
      bool promising = false;
      for (uint32_t w = 1; w <= max_world && !promising; ++w) {
        Verdict v = Judge(early, readers, w, window, out.min_evidence,
                          options.max_mismatch_fraction, checked_total);
        promising = v.matches >= std::min<uint64_t>(out.min_evidence, 2);
      }
      if (!promising) continue;
      ++out.followed;
      Mt19937 mt(s);
      checker.RunRandpermPrefix(
          prefix, [&] { return mt.Next32(); }, landed);
      consider(follow(SamplerKind::kTorchDistributed, s, prefix), max_world);
    }
    out.stage2_seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - stage2_start).count();
  }

  // Once torch-distributed's search found exactly one class, the popular seeds of the other
  // samplers are left unsearched: their streams are none of torch-distributed's, so one of them
  // explaining the opens too would be a chance match, which K bounds (every candidate counted)
  // below the target. It saves their cost (NumPy's whole shuffles) on the common case.
  out.other_samplers_skipped = !options.search_every_sampler && classes.size() == 1;
  const uint32_t far_from = static_cast<uint32_t>(
      std::min<uint64_t>(UINT32_MAX, uint64_t{window} * (options.checked_per_reader + 2)));
  const uint64_t most_far = AllowedMismatches(options.max_mismatch_fraction, checked_total);
  for (uint64_t s : options.popular_seeds) {
    if (out.other_samplers_skipped) break;
    if (options.torch_random) {
      TorchGenerator generator(s);
      generator.RandomInt64();  // the DataLoader iterator's base seed
      checker.RunRandpermPrefix(
          prefix, [&] { return generator.Random(); }, landed);
      consider(follow(SamplerKind::kTorchRandom, s, prefix), 1);
    }
    // A NumPy candidate (world 1) cannot explain the opens once more than the allowed
    // mismatches settle past window * (checked_per_reader + 2): no chain of matches, each at most
    // a window beyond the last, reaches there. Wrong seeds stop after a fraction of the shuffle.
    if (options.numpy && s <= UINT32_MAX) {
      NumpyRandomState rs(static_cast<uint32_t>(s));
      if (checker.RunNumpyShuffle(rs, landed, far_from, most_far)) {
        consider(follow(SamplerKind::kNumpy, s, n), 1);
      }
      position_of.clear();
    }
    if (options.numpy_rng) {
      Pcg64 bitgen(SeedWords(s));
      if (checker.RunNumpyShuffle(bitgen, landed, far_from, most_far)) {
        consider(follow(SamplerKind::kNumpyRng, s, n), 1);
      }
      position_of.clear();
    }
  }

  auto describe = [&](const Class& c) {
    return SpecOf(c.kind, c.seed, c.world, c.verdict.readers);
  };
  if (classes.size() == 1 && classes.front().verdict.step_gcd >= 2) {
    // Every open skips the steps between as a rank of a world beyond the search would: the
    // class found is a near miss (rank r of world m*W reads a subsequence of rank r of W).
    const Class& c = classes.front();
    return finish(InferenceOutcome::kNoCandidate,
                  describe(c) + " explains the opens but they all sit " +
                      std::to_string(c.verdict.step_gcd) + " steps apart, as a rank of world " +
                      std::to_string(c.verdict.step_gcd * c.world) +
                      " would read them: that world is beyond the search (max world " +
                      std::to_string(max_world) + ")");
  }
  if (classes.size() == 1) {
    const Class& c = classes.front();
    std::vector<std::vector<uint64_t>> steps;
    Judge(c.followed, readers, c.world, window, out.min_evidence, options.max_mismatch_fraction,
          checked_total, &steps);
    double coverage = LeastCoverage(steps, c.verdict.readers);
    if (coverage < options.min_coverage) {
      char reason[512];
      snprintf(reason, sizeof reason,
               "%s explains the opens but a rank's opens cover only %.0f%% of the steps they "
               "span (at least %.0f%% needed): several ranks read by one reader without pids, or "
               "too many opens missing; a pid column tells readers apart",
               describe(c).c_str(), 100 * coverage, 100 * options.min_coverage);
      return finish(InferenceOutcome::kNoCandidate, reason);
    }
    out.kind = c.kind;
    out.seed = c.seed;
    out.world = c.world;
    out.readers = c.verdict.readers;
    out.rank = out.readers.empty() ? 0 : out.readers.front().rank;
    out.matches = c.verdict.matches;
    out.mismatches = c.verdict.mismatches;
    out.anchors = c.verdict.anchors;
    out.spec = describe(c);
    char reason[512];
    snprintf(reason, sizeof reason,
             "%s explains %llu of %llu checked opens (%llu anchors, %llu matches, %llu "
             "mismatches; K = %u, false-adoption bound %.2g)",
             out.spec.c_str(), static_cast<unsigned long long>(out.anchors + out.matches),
             static_cast<unsigned long long>(checked_total),
             static_cast<unsigned long long>(out.anchors),
             static_cast<unsigned long long>(out.matches),
             static_cast<unsigned long long>(out.mismatches), out.min_evidence,
             out.false_adoption_bound);
    return finish(InferenceOutcome::kAdopted, reason);
  }
  if (classes.size() > 1) {
    for (size_t i = 0; i < classes.size() && i < kMaxRivalsShown; ++i) {
      out.rivals.push_back(describe(classes[i]));
    }
    std::string reason = std::to_string(classes.size()) + " candidates explain the opens:";
    for (const std::string& r : out.rivals) reason += " " + r;
    if (classes.size() > out.rivals.size()) reason += " ...";
    return finish(InferenceOutcome::kSeveralCandidates, reason);
  }
  if (have_short) {
    out.kind = best_short_class.kind;
    out.seed = best_short_class.seed;
    out.world = best_short_class.world;
    out.readers = best_short.readers;
    out.rank = out.readers.empty() ? 0 : out.readers.front().rank;
    out.matches = best_short.matches;
    out.mismatches = best_short.mismatches;
    out.anchors = best_short.anchors;
    best_short_class.verdict = best_short;
    out.spec = describe(best_short_class);
    return finish(InferenceOutcome::kTooFewObservations,
                  "the best candidate, " + out.spec + ", matches " +
                      std::to_string(best_short.matches) +
                      " opens; K = " + std::to_string(out.min_evidence) + " are needed");
  }
  return finish(InferenceOutcome::kNoCandidate,
                "no candidate explains the " + std::to_string(checked_total) +
                    " checked opens (searched " + std::to_string(out.seeds_scanned) +
                    " torch-distributed seeds + epoch up to world " + std::to_string(max_world) +
                    " and " + std::to_string(popular) + " popular seeds)");
}

}  // namespace clairfs
