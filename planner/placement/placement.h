// Placement: the home of every file of a job, the node that keeps the job's copy of it (see
// docs/PEERS.md, "Placement").
//
// Homes come from the global plan alone, so every rank of a job computes the same ones without
// exchanging lists:
//   - ByFirstReader (plans that split each epoch between ranks, DistributedSampler): a file's
//     home is the node of the rank that reads it first in the job's first epoch (the earliest
//     position; at one position, the lowest rank). The first epoch reads each file once from the
//     parallel filesystem anyway; these homes keep exactly those copies.
//   - ByHash (plans in which every node reads every file, or no plan): a rendezvous hash of the
//     file over all nodes.
// Home() answers for a set of live nodes: the preferred home while it is live, else the
// rendezvous choice over the live nodes, so that losing a node moves only its own files and every
// survivor picks the same new homes.
//
// Memory: 4 bytes per file. Thread-safety: immutable after construction; Home() and the other
// const methods may be called from any thread.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "planner/base/status.h"
#include "planner/epoch_order.h"

namespace clairfs {

// The live nodes of a job: live[n] != 0.
using LiveNodes = std::vector<uint8_t>;

constexpr uint32_t kNoNode = UINT32_MAX;

// The rendezvous (highest random weight) choice for `file` among the live nodes, or kNoNode when
// none is live. `salt` varies the hash between uses (the same salt on every rank).
uint32_t RendezvousNode(uint64_t file, const LiveNodes& live, uint64_t salt = 0);

class Placement {
 public:
  // `node_of_rank[r]` is the node that serves rank r of the plan's world; every node in
  // [0, nodes) serves at least one rank. Files never read in `first_epoch` get hashed homes.
  static Result<Placement> ByFirstReader(const EpochOrder& first_epoch,
                                         const std::vector<uint32_t>& node_of_rank, uint32_t nodes,
                                         uint64_t num_files);
  static Result<Placement> ByHash(uint32_t nodes, uint64_t num_files);

  uint32_t nodes() const { return nodes_; }
  uint64_t num_files() const { return preferred_.size(); }
  // The home while every node is live.
  uint32_t PreferredHome(uint64_t file) const { return preferred_[file]; }
  // The home among `live` (kNoNode if no node is live).
  uint32_t Home(uint64_t file, const LiveNodes& live) const;
  // The files whose preferred home is `node`, in the order they are first read (ByFirstReader)
  // or by index (ByHash).
  std::vector<uint64_t> HomeFiles(uint32_t node) const;
  // HomeFiles of every node at once, in one pass over the files (HomeFiles per node would walk
  // every file once per node: too slow for 1,024 nodes of 14 M files).
  std::vector<std::vector<uint64_t>> HomeFilesOfEveryNode() const;

 private:
  Placement(uint32_t nodes, std::vector<uint32_t> preferred, std::vector<uint64_t> first_read)
      : nodes_(nodes), preferred_(std::move(preferred)), first_read_(std::move(first_read)) {}

  uint32_t nodes_ = 0;
  std::vector<uint32_t> preferred_;   // file -> node
  std::vector<uint64_t> first_read_;  // file -> position of its first read (UINT64_MAX: none)
};

// The bytes a node with `capacity` holds for the job: all but an eighth, the room the plan
// prefetcher stages ahead into (docs/PEERS.md); no limit for an unlimited capacity (0).
inline uint64_t HoldBudget(uint64_t capacity) {
  return capacity == 0 ? UINT64_MAX : capacity - capacity / 8;
}

// The longest prefix of `files` whose sizes, as `size_of` counts them, add up to at most
// `budget` bytes: the home files a node holds when not all of them fit.
std::vector<uint64_t> HoldWithin(const std::vector<uint64_t>& files,
                                 const std::function<uint64_t(uint64_t file)>& size_of,
                                 uint64_t budget);

}  // namespace clairfs
