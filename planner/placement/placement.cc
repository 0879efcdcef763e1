// Placement (see placement.h).
#include "planner/placement/placement.h"

#include <algorithm>
#include <string>

namespace clairfs {
namespace {

// splitmix64's finaliser: a fixed, well-mixed 64-bit hash (the same on every machine).
uint64_t Mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint32_t RendezvousNode(uint64_t file, const LiveNodes& live, uint64_t salt) {
  uint32_t best = kNoNode;
  uint64_t best_weight = 0;
  const uint64_t file_hash = Mix64(file ^ Mix64(salt));
  for (uint32_t n = 0; n < live.size(); ++n) {
    if (!live[n]) continue;
    const uint64_t weight = Mix64(file_hash ^ (uint64_t{n} * 0x9e3779b97f4a7c15ULL));
    if (best == kNoNode || weight > best_weight) {
      best = n;
      best_weight = weight;
    }
  }
  return best;
}

Result<Placement> Placement::ByFirstReader(const EpochOrder& first_epoch,
                                           const std::vector<uint32_t>& node_of_rank,
                                           uint32_t nodes, uint64_t num_files) {
  if (nodes == 0) return Status::Invalid("placement: no nodes");
  if (node_of_rank.size() != first_epoch.world()) {
    return Status::Invalid("placement: " + std::to_string(node_of_rank.size()) +
                           " ranks mapped to nodes, but the plan's world is " +
                           std::to_string(first_epoch.world()));
  }
  for (uint32_t node : node_of_rank) {
    if (node >= nodes) return Status::Invalid("placement: a rank maps to a node out of range");
  }
  std::vector<uint32_t> preferred(num_files, kNoNode);
  std::vector<uint64_t> first_read(num_files, UINT64_MAX);
  uint64_t longest = 0;
  for (uint32_t r = 0; r < first_epoch.world(); ++r) {
    longest = std::max(longest, first_epoch.RankSize(r));
  }
  // Position-major, rank-minor: the global order in which the ranks start their reads.
  uint64_t order = 0;
  for (uint64_t p = 0; p < longest; ++p) {
    for (uint32_t r = 0; r < first_epoch.world(); ++r, ++order) {
      if (p >= first_epoch.RankSize(r)) continue;
      const uint64_t file = first_epoch.At(r, p);
      if (file >= num_files)
        return Status::Invalid("placement: the plan names a file past the end");
      if (preferred[file] == kNoNode) {
        preferred[file] = node_of_rank[r];
        first_read[file] = order;
      }
    }
  }
  const LiveNodes all(nodes, 1);
  for (uint64_t f = 0; f < num_files; ++f) {
    if (preferred[f] == kNoNode) preferred[f] = RendezvousNode(f, all);
  }
  return Placement(nodes, std::move(preferred), std::move(first_read));
}

Result<Placement> Placement::ByHash(uint32_t nodes, uint64_t num_files) {
  if (nodes == 0) return Status::Invalid("placement: no nodes");
  std::vector<uint32_t> preferred(num_files);
  const LiveNodes all(nodes, 1);
  for (uint64_t f = 0; f < num_files; ++f) preferred[f] = RendezvousNode(f, all);
  return Placement(nodes, std::move(preferred), {});
}

uint32_t Placement::Home(uint64_t file, const LiveNodes& live) const {
  const uint32_t preferred = preferred_[file];
  if (preferred < live.size() && live[preferred]) return preferred;
  return RendezvousNode(file, live);
}

std::vector<uint64_t> Placement::HomeFiles(uint32_t node) const {
  std::vector<uint64_t> files;
  for (uint64_t f = 0; f < preferred_.size(); ++f) {
    if (preferred_[f] == node) files.push_back(f);
  }
  if (!first_read_.empty()) {
    std::stable_sort(files.begin(), files.end(),
                     [this](uint64_t a, uint64_t b) { return first_read_[a] < first_read_[b]; });
  }
  return files;
}

std::vector<std::vector<uint64_t>> Placement::HomeFilesOfEveryNode() const {
  std::vector<std::vector<uint64_t>> files(nodes_);
  for (uint64_t f = 0; f < preferred_.size(); ++f) files[preferred_[f]].push_back(f);
  if (!first_read_.empty()) {
    for (auto& node_files : files) {
      std::stable_sort(node_files.begin(), node_files.end(),
                       [this](uint64_t a, uint64_t b) { return first_read_[a] < first_read_[b]; });
    }
  }
  return files;
}

std::vector<uint64_t> HoldWithin(const std::vector<uint64_t>& files,
                                 const std::function<uint64_t(uint64_t file)>& size_of,
                                 uint64_t budget) {
  std::vector<uint64_t> held;
  uint64_t used = 0;
  for (uint64_t f : files) {
    const uint64_t size = size_of(f);
    if (size > budget - used) break;
    used += size;
    held.push_back(f);
  }
  return held;
}

}  // namespace clairfs
