// InferPlan: which plan explains a stream of observed opens (issue 22; docs/PLANNER.md, "Plan
// inference").
//
// Input: observations in arrival order, each a sample index in the layout's numbering and a
// reader id (a process; 0 when unknown), and the dataset size n. The stream may be reordered
// within `window` steps of each reader (DataLoader workers, batches in flight), miss opens (gaps)
// and repeat them (duplicates, ignored). Each reader is one rank (several readers may share a
// rank, e.g. the workers of one rank); the trace must start at an epoch's start.
//
// Candidates:
//   torch-distributed  DistributedSampler, shuffle on: only s = seed + epoch is visible (epoch e
//                      of seed S is randperm(n) seeded with S + e); s in [0, max_seed_plus_epoch)
//                      plus every popular seed >= that plus 0..127 epochs; world 1..max_world,
//                      any rank. drop_last shows only at an epoch's end and is not inferred.
//   torch-random       DataLoader(shuffle=True, generator=manual_seed(S)), first epoch, S popular.
//   numpy, numpy-rng   RandomState(S) / default_rng(S) .permutation(n), first epoch, S popular.
// Cost (ShuffleTracker): a torch candidate's first P positions cost P draws; a NumPy candidate
// costs its whole shuffle, so NumPy seeds are limited to the popular list.
//
// Search: stage 1 runs every torch-distributed s (kLanes generators at a time, Mt19937Lanes) over
// the first L = anchor_steps * max_world positions, following the first observations of the
// readers; s survives when enough of them land there (a reader's first steps are at positions
// rank + world * step). Stage 2 follows the first `checked_per_reader` observations of every
// reader (first through the largest world's first 32 steps, where a survivor must show two
// matches under some world to be followed further; a chance survivor shows none) through a longer
// prefix of each survivor (and of each popular-seed candidate) and tries every world: a reader's
// anchor is its first observation within `window` steps of the epoch's start, which fixes its rank;
// every later observation must sit at that rank within `window` steps of the reader's furthest step
// (a match) or not (a mismatch). A candidate explains the stream with >= K matches and <= floor(f *
// decided) mismatches; K comes from evidence_threshold.h. Worlds that divide each other explain the
// same opens (rank r of world 2W reads a subsequence of rank r mod W of world W): the largest world
// that explains is the class. Exactly one class adopts; none or several do not. When
// torch-distributed's stages find exactly one class, the other samplers are not searched
// (`search_every_sampler` searches them): no stream of theirs is one of torch-distributed's, so
// one explaining too would be a chance match, which K already bounds with them counted.
//
// Errors: none; every outcome is a value with a reason. Thread-safety: pure function (it may
// start options.threads - 1 threads of its own and joins them before it returns).
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "planner/plan_spec.h"

namespace clairfs {

struct Observation {
  uint64_t index = 0;   // sample index in the layout
  uint64_t reader = 0;  // reader id (pid); 0 when the trace has none
};

// The popular seeds searched for every sampler (and, for torch-distributed, with 0..127 epochs
// added when they are outside the dense range): 0, 1, 2, 3, 7, 10, 42, 123, 1234, 2024, 3407, ...
const std::vector<uint64_t>& PopularSeeds();

struct InferenceOptions {
  uint64_t max_seed_plus_epoch = uint64_t{1} << 20;  // torch-distributed s in [0, this)
  uint32_t max_world = 1024;
  uint32_t popular_epochs = 128;  // popular seeds >= max_seed_plus_epoch: s = seed + 0..this-1
  std::vector<uint64_t> popular_seeds = PopularSeeds();
  bool torch_distributed = true;
  bool torch_random = true;
  bool numpy = true;
  bool numpy_rng = true;
  uint32_t window = 256;  // steps a reader's opens may run ahead of or behind its furthest step
  double false_adoption_target = 1e-9;
  double max_mismatch_fraction = 0.1;
  // The adopted class's ranks must have opened this share of the steps their opens span (a
  // reader of several ranks without pids would be taken for a smaller world).
  double min_coverage = 0.5;
  uint32_t anchor_steps = 2;           // stage 1 covers positions [0, anchor_steps * max_world)
  uint32_t tracked = 32;               // observations stage 1 follows (the readers' first ones)
  uint32_t checked_per_reader = 48;    // observations per reader stage 2 checks
  uint64_t survivor_budget = 4096;     // expected wrong stage-1 survivors the search may afford
  uint32_t min_evidence_override = 0;  // tests only: K instead of the derived one (0: derived)
  // K is derived for at least this many candidates: a first search over part of a space (e.g.
  // seed + epoch < 2^16) adopts only what the whole space's bound allows, so it may adopt before
  // the rest is searched (0: the candidates searched).
  double threshold_candidates = 0;
  // Threads that scan stage 1's seeds (the calling thread is one of them; the others inherit its
  // scheduling policy). The outcome does not depend on it.
  uint32_t threads = 1;
  // Search torch-random and NumPy's popular seeds even after torch-distributed found one class.
  bool search_every_sampler = false;
  // When set (by another thread) the search stops within about a millisecond: kCancelled.
  const std::atomic<bool>* cancel = nullptr;
};

enum class InferenceOutcome {
  kAdopted,
  kTooFewObservations,  // a candidate matches but has fewer than K matches yet
  kNoCandidate,
  kSeveralCandidates,
  kDatasetTooSmall,  // no K reaches the target: candidates cannot be told apart
  kCancelled,        // options.cancel was set while it searched
};
const char* InferenceOutcomeName(InferenceOutcome outcome);

struct ReaderRank {
  uint64_t reader = 0;
  uint32_t rank = 0;
  uint64_t matches = 0;
  uint64_t mismatches = 0;
};

struct InferenceResult {
  InferenceOutcome outcome = InferenceOutcome::kNoCandidate;
  std::string reason;  // one sentence: what was found, or why nothing was adopted
  // The adopted class (or the best candidate when kTooFewObservations).
  std::string spec;  // a spec `clairfs plan show` accepts (FormatPlanSpec)
  SamplerKind kind = SamplerKind::kTorchDistributed;
  uint64_t seed = 0;  // torch-distributed: seed + epoch (reported as seed, epoch 0)
  uint32_t world = 1;
  uint64_t epoch = 0;
  uint32_t rank = 0;                // the first reader's rank
  std::vector<ReaderRank> readers;  // every reader's rank under the candidate
  uint64_t matches = 0;
  uint64_t mismatches = 0;
  uint64_t anchors = 0;
  std::vector<std::string> rivals;  // kSeveralCandidates: the classes' specs (a few)

  // The stream and the threshold.
  uint64_t observations = 0;  // distinct per reader
  uint64_t duplicates = 0;
  uint64_t out_of_range = 0;  // indices >= n, ignored
  uint64_t reader_count = 0;
  uint32_t min_evidence = 0;  // K
  double match_probability = 0;
  double false_adoption_bound = 0;
  double candidates = 0;

  // The search.
  uint64_t seeds_scanned = 0;
  uint64_t stage1_positions = 0;  // L
  uint32_t stage1_hits = 0;       // landings a seed needed to survive
  uint64_t survivors = 0;
  uint64_t followed = 0;  // survivors followed through the whole stage-2 prefix
  uint64_t stage2_prefix = 0;
  double stage1_seconds = 0;            // the scan of every torch-distributed s
  double stage2_seconds = 0;            // its survivors followed and judged
  bool other_samplers_skipped = false;  // torch-distributed found one class: no other searched
  double helper_cpu_seconds = 0;        // CPU of the threads besides the caller's (options.threads)
  double seconds = 0;
};

InferenceResult InferPlan(const std::vector<Observation>& observations, uint64_t num_samples,
                          const InferenceOptions& options = {});

// A default for InferenceOptions::threads: the CPUs this process may run on (its affinity: a
// cpuset or taskset bounds it), at most 8.
uint32_t DefaultSearchThreads();

// The number of candidates InferPlan searches under `options` over `num_samples` samples (what K
// is derived from, before threshold_candidates).
double InferenceCandidates(const InferenceOptions& options, uint64_t num_samples);

}  // namespace clairfs
