// Plan: a plan spec applied to a dataset; yields, for an epoch and a rank, the ordered samples
// that rank reads.
//
// Sampler plans (torch-*, numpy*, sequential) are created over a dataset of N samples (a
// Layout's size); list: plans carry their own path table. Epochs are generated lazily, one at a
// time: the current epoch's order is cached once (shared by all ranks, see epoch_order.h) and
// replaced when another epoch is asked for. Memory per cached epoch: 4 bytes per sample while
// N < 2^32 (8 above), none for unshuffled orders; a list plan keeps its whole file in memory.
//
// Epochs are absolute; a sampler plan covers [start_epoch, epochs) and never ends without
// `epochs`. Ranks are those of the spec (`ranks=A-B`, default every rank of the world).
//
// Errors: EINVAL for an epoch or rank outside the plan, or an epoch whose derived seed leaves
// the library's range; list file errors from ListPlan (an unreadable list file is EINVAL: it is
// part of the spec). Thread-safety: not thread-safe (the epoch
// cache is mutable); use one Plan per thread or lock around it. EpochOrder values it returns are
// immutable and may be shared freely.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "planner/base/status.h"
#include "planner/epoch_order.h"
#include "planner/file_tree.h"
#include "planner/list_plan.h"
#include "planner/plan_spec.h"
#include "planner/sampler.h"

namespace clairfs {

class Plan {
 public:
  // A sampler plan over `num_samples` samples (spec.kind must not be kList).
  static Result<std::unique_ptr<Plan>> Create(const PlanSpec& spec, uint64_t num_samples);
  // A list: plan; reads spec.list_file through `tree`.
  static Result<std::unique_ptr<Plan>> CreateFromList(const PlanSpec& spec, FileTree* tree);

  const PlanSpec& spec() const { return spec_; }
  // For list plans, the plan's own index -> path table; nullptr for sampler plans.
  const std::vector<std::string>* list_paths() const { return list_ ? &list_->paths() : nullptr; }
  uint32_t world() const { return world_; }
  uint32_t first_rank() const { return first_rank_; }
  uint32_t last_rank() const { return last_rank_; }
  // "epochs 0-89", "epochs 3-", "epochs 0, 2, 5" for messages.
  std::string DescribeEpochs() const;

  // The order of `epoch`, generating it if it is not the cached one.
  Result<std::shared_ptr<const EpochOrder>> Epoch(uint64_t epoch);
  // The first `limit` sample indices `rank` reads in `epoch`.
  Result<std::vector<uint64_t>> RankIndices(uint64_t epoch, uint32_t rank,
                                            uint64_t limit = UINT64_MAX);
  // EINVAL naming the plan's ranks if `rank` is not one of them.
  Status CheckRank(uint32_t rank) const;

  // Checks `epoch` and `rank` against a sampler spec before any dataset is read (walking a
  // layout can take long on a parallel filesystem); same errors as RankIndices.
  static Status CheckSamplerBounds(const PlanSpec& spec, uint64_t epoch, uint32_t rank);
  // The rank meant when none is named: A of ranks=A-B, else 0.
  static uint32_t DefaultRank(const PlanSpec& spec) {
    return spec.kind == SamplerKind::kTorchDistributed ? spec.first_rank : 0;
  }

 private:
  Plan() = default;
  Status CheckEpoch(uint64_t epoch) const;
  // Sets spec_ and the rank range of a sampler spec.
  void SetSamplerSpec(const PlanSpec& spec);

  PlanSpec spec_;
  uint32_t world_ = 1;
  uint32_t first_rank_ = 0;
  uint32_t last_rank_ = 0;
  std::unique_ptr<Sampler> sampler_;
  std::unique_ptr<ListPlan> list_;
  std::shared_ptr<const EpochOrder> cached_;  // the current epoch, or null
};

}  // namespace clairfs
