// Plan (see plan.h).
#include "planner/plan.h"

#include <utility>

namespace clairfs {

Result<std::unique_ptr<Plan>> Plan::Create(const PlanSpec& spec, uint64_t num_samples) {
  if (spec.kind == SamplerKind::kList) return Status::Invalid("list: plans need CreateFromList");
  auto sampler = MakeSampler(spec, num_samples);
  if (!sampler.ok()) return sampler.status();
  std::unique_ptr<Plan> plan(new Plan());
  plan->SetSamplerSpec(spec);
  plan->sampler_ = std::move(*sampler);
  return plan;
}

void Plan::SetSamplerSpec(const PlanSpec& spec) {
  spec_ = spec;
  if (spec.kind == SamplerKind::kTorchDistributed) {
    world_ = spec.world;
    first_rank_ = spec.first_rank;
    last_rank_ = spec.last_rank;
  }
}

Status Plan::CheckSamplerBounds(const PlanSpec& spec, uint64_t epoch, uint32_t rank) {
  if (spec.kind == SamplerKind::kList) return Status::Invalid("list: plans have no sampler");
  Plan bounds;
  bounds.SetSamplerSpec(spec);
  CLAIRFS_RETURN_IF_ERROR(bounds.CheckRank(rank));
  return bounds.CheckEpoch(epoch);
}

Result<std::unique_ptr<Plan>> Plan::CreateFromList(const PlanSpec& spec, FileTree* tree) {
  if (spec.kind != SamplerKind::kList) return Status::Invalid("not a list: plan");
  auto content = tree->ReadFile(spec.list_file, kMaxListFileBytes);
  // The list names part of the spec, so failing to read it is a bad spec (EINVAL), with the
  // reason kept in the message.
  if (!content.ok())
    return Status::Invalid("plan spec '" + spec.text + "': " + content.status().message());
  auto list = ListPlan::Parse(*content, spec.list_file);
  if (!list.ok()) return list.status();
  std::unique_ptr<Plan> plan(new Plan());
  plan->spec_ = spec;
  plan->list_ = std::make_unique<ListPlan>(std::move(*list));
  plan->world_ = plan->list_->world();
  plan->first_rank_ = 0;
  plan->last_rank_ = plan->world_ - 1;
  return plan;
}

std::string Plan::DescribeEpochs() const {
  if (list_) {
    std::string out = "epochs ";
    bool first = true;
    for (uint64_t e : list_->epochs()) {
      out += (first ? "" : ", ") + std::to_string(e);
      first = false;
    }
    return out;
  }
  std::string out = "epochs " + std::to_string(spec_.start_epoch) + "-";
  if (spec_.end_epoch) out += std::to_string(*spec_.end_epoch - 1);
  return out;
}

Status Plan::CheckEpoch(uint64_t epoch) const {
  bool covered = list_ ? list_->HasEpoch(epoch) : spec_.CoversEpoch(epoch);
  if (covered) return Status::Ok();
  return Status::Invalid("epoch " + std::to_string(epoch) + " is outside the plan (" +
                         DescribeEpochs() + ")");
}

Status Plan::CheckRank(uint32_t rank) const {
  if (rank >= first_rank_ && rank <= last_rank_) return Status::Ok();
  std::string ranks = first_rank_ == last_rank_ ? "rank " + std::to_string(first_rank_)
                                                : "ranks " + std::to_string(first_rank_) + "-" +
                                                      std::to_string(last_rank_);
  return Status::Invalid("rank " + std::to_string(rank) + " is outside the plan (" + ranks +
                         " of a world of " + std::to_string(world_) + ")");
}

Result<std::shared_ptr<const EpochOrder>> Plan::Epoch(uint64_t epoch) {
  CLAIRFS_RETURN_IF_ERROR(CheckEpoch(epoch));
  if (cached_ && cached_->epoch() == epoch) return cached_;
  if (list_) {
    cached_ = list_->Epoch(epoch);
    return cached_;
  }
  auto order = sampler_->Generate(epoch);
  if (!order.ok()) return order.status();
  cached_ = std::move(*order);
  return cached_;
}

Result<std::vector<uint64_t>> Plan::RankIndices(uint64_t epoch, uint32_t rank, uint64_t limit) {
  CLAIRFS_RETURN_IF_ERROR(CheckRank(rank));
  auto order = Epoch(epoch);
  if (!order.ok()) return order.status();
  return (*order)->RankIndices(rank, limit);
}

}  // namespace clairfs
