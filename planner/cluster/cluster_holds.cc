// ClusterHolds: what each node keeps for the job (see cluster_holds.h).
#include "planner/cluster/cluster_holds.h"

#include <algorithm>
#include <tuple>

namespace clairfs {
namespace {

std::vector<uint32_t> Narrow(const std::vector<uint64_t>& files) {
  return std::vector<uint32_t>(files.begin(), files.end());
}

// NoPFS: per node, the files it reads most often over the simulated epochs, ties by its first
// access, within the hold budget.
Result<ClusterHolds> NoPfsHolds(Plan* plan, uint64_t first_epoch, uint64_t epochs,
                                const std::vector<uint64_t>& sizes, const ClusterModel& model) {
  // Counting pass: every node's reads in the order it makes them, over the whole job.
  std::vector<std::vector<uint32_t>> reads(model.nodes);
  for (uint64_t e = first_epoch; e < first_epoch + epochs; ++e) {
    auto order = plan->Epoch(e);
    if (!order.ok()) return order.status();
    const EpochOrder& o = **order;
    uint64_t steps = 0;
    for (uint32_t r = 0; r < o.world(); ++r) steps = std::max(steps, o.RankSize(r));
    if (e == first_epoch) {
      for (auto& node_reads : reads) node_reads.reserve(epochs * steps * model.ranks_per_node);
    }
    for (uint64_t p = 0; p < steps; ++p) {
      for (uint32_t r = 0; r < o.world(); ++r) {
        if (p >= o.RankSize(r)) continue;
        const uint64_t f = o.At(r, p);
        if (f < sizes.size()) reads[r / model.ranks_per_node].push_back(static_cast<uint32_t>(f));
      }
    }
  }
  ClusterHolds holds;
  holds.per_node.resize(model.nodes);
  const uint64_t budget = HoldBudget(model.node_capacity);
  for (uint32_t n = 0; n < model.nodes; ++n) {
    // (file, first access) sorted by file, then one (count, first access, file) per file.
    std::vector<std::pair<uint32_t, uint32_t>> by_file;
    by_file.reserve(reads[n].size());
    for (uint32_t i = 0; i < reads[n].size(); ++i) by_file.emplace_back(reads[n][i], i);
    std::vector<uint32_t>().swap(reads[n]);
    std::sort(by_file.begin(), by_file.end());
    std::vector<std::tuple<uint32_t, uint32_t, uint32_t>> ranked;  // (count, first, file)
    for (size_t i = 0; i < by_file.size();) {
      size_t j = i;
      while (j < by_file.size() && by_file[j].first == by_file[i].first) ++j;
      ranked.emplace_back(static_cast<uint32_t>(j - i), by_file[i].second, by_file[i].first);
      i = j;
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      if (std::get<0>(a) != std::get<0>(b)) return std::get<0>(a) > std::get<0>(b);
      return std::get<1>(a) < std::get<1>(b);
    });
    std::vector<uint64_t> candidates;
    candidates.reserve(ranked.size());
    for (const auto& r : ranked) candidates.push_back(std::get<2>(r));
    holds.per_node[n] = Narrow(HoldWithin(
        candidates, [&](uint64_t f) { return sizes[f]; }, budget));
  }
  return holds;
}

// The peer tier's placement, called as the live agent calls it.
Result<ClusterHolds> ClairfsHolds(Plan* plan, uint64_t first_epoch,
                                  const std::vector<uint64_t>& sizes, const ClusterModel& model) {
  Result<Placement> placement = Status::Invalid("no placement");
  // Every plan of more than one rank splits its epochs between the ranks (DistributedSampler,
  // or a list: plan with ranks); the live agent places torch-distributed plans by first reader
  // and the rest by hash, because there each node reads every file.
  if (plan->world() > 1) {
    auto first = plan->Epoch(first_epoch);
    if (!first.ok()) return first.status();
    std::vector<uint32_t> node_of_rank(plan->world());
    for (uint32_t r = 0; r < plan->world(); ++r) node_of_rank[r] = r / model.ranks_per_node;
    placement = Placement::ByFirstReader(**first, node_of_rank, model.nodes, sizes.size());
  } else {
    placement = Placement::ByHash(model.nodes, sizes.size());
  }
  if (!placement.ok()) return placement.status();
  ClusterHolds holds;
  holds.per_node.resize(model.nodes);
  const uint64_t budget = HoldBudget(model.node_capacity);
  std::vector<std::vector<uint64_t>> homes = placement->HomeFilesOfEveryNode();
  for (uint32_t n = 0; n < model.nodes; ++n) {
    holds.per_node[n] = Narrow(HoldWithin(
        homes[n], [&](uint64_t f) { return sizes[f]; }, budget));
    std::vector<uint64_t>().swap(homes[n]);
  }
  holds.placement.emplace(std::move(*placement));
  return holds;
}

}  // namespace

Result<ClusterHolds> ChooseClusterHolds(ClusterPlacement placement, Plan* plan,
                                        uint64_t first_epoch, uint64_t epochs,
                                        const std::vector<uint64_t>& sizes,
                                        const ClusterModel& model) {
  switch (placement) {
    case ClusterPlacement::kNone: {
      ClusterHolds holds;
      holds.per_node.resize(model.nodes);
      return holds;
    }
    case ClusterPlacement::kNoPfs:
      return NoPfsHolds(plan, first_epoch, epochs, sizes, model);
    case ClusterPlacement::kClairfs:
      return ClairfsHolds(plan, first_epoch, sizes, model);
  }
  return Status::Invalid("unknown placement");
}

}  // namespace clairfs
