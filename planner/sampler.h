// Sampler: turns a parsed PlanSpec and a dataset size into one EpochOrder per epoch.
//
// Reproductions (details in docs/PLANNER.md and docs/access-order.md):
//   torch-distributed  DistributedSampler: epoch e is randperm(N) of a generator seeded with
//                      seed + e (or 0..N-1 without shuffle), padded or cut to world * per_rank,
//                      rank k reads every world-th position from k. Epochs are independent.
//   torch-random       DataLoader(shuffle=True, generator=manual_seed(seed)): per epoch the
//                      loader draws its base seed (2 words; only in epoch 0 with persistent
//                      workers), then randperm(N), then the sampler's discarded extra
//                      randperm(N). The stream continues across epochs.
//   numpy              RandomState(seed).permutation(N) each epoch, continuing the stream; with
//                      reseed=epoch, RandomState(seed + e).permutation(N).
//   numpy-rng          default_rng(seed).permutation(N) each epoch, continuing the stream.
//   sequential         0..N-1 every epoch.
// For continuing streams, epoch e is the e-th full pass since the generator was seeded: asking
// for epoch e replays the draws of epochs 0..e-1 without building their permutations, and
// asking for an earlier epoch than the last one restarts from the seed.
//
// Errors: EINVAL when an epoch's derived seed leaves the library's range (seed + epoch for
// torch-distributed and numpy reseed=epoch). Thread-safety: one thread at a time per instance.
#pragma once

#include <cstdint>
#include <memory>

#include "planner/base/status.h"
#include "planner/epoch_order.h"
#include "planner/plan_spec.h"

namespace clairfs {

class Sampler {
 public:
  virtual ~Sampler() = default;
  // The order of absolute epoch `epoch`. The plan checks that it is inside the spec's range.
  virtual Result<std::shared_ptr<const EpochOrder>> Generate(uint64_t epoch) = 0;
};

// A sampler for every kind except kList (see list_plan.h). `num_samples` must be >= 1.
Result<std::unique_ptr<Sampler>> MakeSampler(const PlanSpec& spec, uint64_t num_samples);

// DistributedSampler's per-rank sample count: N // R when drop_last and N % R != 0 (0 when
// N < R), else ceil(N / R).
uint64_t DistributedSamplesPerRank(uint64_t num_samples, uint32_t world, bool drop_last);

}  // namespace clairfs
