// libFuzzer target for plan specs (planner/plan_spec.h) and the plans built from them
// (planner/plan.h), built with -DCLAIRFS_FUZZ=ON and run by .ci/fuzz. The input is the spec text.
// Properties:
//   - a refused spec gets EINVAL with a message;
//   - an accepted spec re-formats (FormatPlanSpec) to text that parses to the same spec, and that
//     text formats to itself;
//   - over fixed datasets of 1, 10 and 97 samples, a sampler plan answers its first epoch and the
//     next (or refuses an epoch with EINVAL): every rank reads the count DistributedSampler gives,
//     every index is a sample, a single-rank plan reads each sample once, the ranks of a small
//     world together read every sample (each once with drop_last), and asking again for an epoch
//     after another gives the same order.
#include <cerrno>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "planner/plan.h"
#include "planner/plan_spec.h"
#include "planner/sampler.h"

namespace {

using namespace clairfs;

bool SameSpec(const PlanSpec& a, const PlanSpec& b) {
  return a.kind == b.kind && a.seed.negative == b.seed.negative &&
         a.seed.magnitude == b.seed.magnitude && a.world == b.world &&
         a.first_rank == b.first_rank && a.last_rank == b.last_rank && a.drop_last == b.drop_last &&
         a.shuffle == b.shuffle && a.persistent_workers == b.persistent_workers &&
         a.reseed == b.reseed && a.start_epoch == b.start_epoch && a.end_epoch == b.end_epoch &&
         a.list_file == b.list_file;
}

// Ranks whose orders are checked: all of a world of at most this many, else a few.
constexpr uint32_t kWholeWorld = 16;

// Checks one epoch of `plan` over `n` samples; returns the orders of the checked ranks.
std::vector<std::vector<uint64_t>> CheckEpoch(Plan* plan, uint64_t epoch, uint64_t n) {
  const PlanSpec& spec = plan->spec();
  const bool distributed = spec.kind == SamplerKind::kTorchDistributed;
  const uint32_t world = plan->world();
  const uint64_t per_rank = distributed ? DistributedSamplesPerRank(n, world, spec.drop_last) : n;
  std::vector<std::vector<uint64_t>> orders;
  const uint32_t last = plan->last_rank() - plan->first_rank() < kWholeWorld
                            ? plan->last_rank()
                            : plan->first_rank() + kWholeWorld - 1;
  for (uint32_t rank = plan->first_rank(); rank <= last; ++rank) {
    Result<std::vector<uint64_t>> indices = plan->RankIndices(epoch, rank);
    if (!indices.ok()) {
      if (indices.status().code() != EINVAL || indices.status().message().empty()) {
        __builtin_trap();
      }
      return {};
    }
    if (indices->size() != per_rank) __builtin_trap();
    for (uint64_t index : *indices) {
      if (index >= n) __builtin_trap();
    }
    orders.push_back(std::move(*indices));
    if (rank == UINT32_MAX) break;
  }
  // Every sample once for one rank; the whole world covers every sample.
  const bool whole_world =
      plan->first_rank() == 0 && world <= kWholeWorld && orders.size() == world;
  if (whole_world) {
    std::vector<uint32_t> seen(n, 0);
    for (const auto& order : orders) {
      for (uint64_t index : order) ++seen[index];
    }
    for (uint64_t i = 0; i < n; ++i) {
      if (!spec.drop_last && seen[i] == 0) __builtin_trap();
      if ((spec.drop_last || world == 1) && seen[i] > 1) __builtin_trap();
      if (!spec.shuffle && world == 1 && orders[0][i] != i) __builtin_trap();
    }
  }
  return orders;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<PlanSpec> spec = ParsePlanSpec(text);
  if (!spec.ok()) {
    if (spec.status().code() != EINVAL || spec.status().message().empty()) __builtin_trap();
    return 0;
  }
  const std::string canonical = FormatPlanSpec(*spec);
  Result<PlanSpec> again = ParsePlanSpec(canonical);
  if (!again.ok() || !SameSpec(*spec, *again) || FormatPlanSpec(*again) != canonical) {
    __builtin_trap();
  }
  if (spec->kind == SamplerKind::kList) return 0;  // list plans: list_plan_fuzz.cc

  for (uint64_t n : {uint64_t{1}, uint64_t{10}, uint64_t{97}}) {
    Result<std::unique_ptr<Plan>> plan = Plan::Create(*spec, n);
    if (!plan.ok()) __builtin_trap();
    // Streams that continue across epochs replay every earlier epoch: only the first two.
    const uint64_t first = spec->start_epoch;
    auto orders = CheckEpoch(plan->get(), first, n);
    if (spec->CoversEpoch(first + 1) && first + 1 != 0) {
      CheckEpoch(plan->get(), first + 1, n);
      if (!orders.empty() && CheckEpoch(plan->get(), first, n) != orders) __builtin_trap();
    }
  }
  return 0;
}
