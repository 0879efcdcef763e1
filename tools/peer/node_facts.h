// NodeFacts: what each rank of a peer job says of its node at start-up, and the check that they
// agree (docs/PEERS.md, "Start-up checks").
//
// Fixed-size and trivially copyable so that one MPI_Allgather of raw bytes shares them. CheckJob
// is pure: the same verdict on every rank, so every rank stops or every rank goes on.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/base/status.h"

namespace clairfs::peer {

struct NodeFacts {
  char ok = 0;  // attached and said hello
  char error[384] = {};
  char host[64] = {};
  char manifest_digest[65] = {};
  char key_id[17] = {};
  char global_spec[512] = {};
  char layout[16] = {};
  char layout_root[256] = {};
  uint32_t world = 0;
  uint32_t first_rank = 0;
  uint32_t last_rank = 0;
  uint64_t files = 0;
  uint64_t capacity = 0;
};

// Fills facts from a daemon's hello reply (or the error that kept the node out).
NodeFacts FactsFromHello(const nlohmann::json& hello, const std::string& host);
NodeFacts FactsFromError(const std::string& error, const std::string& host);

struct JobShape {
  std::vector<uint32_t> node_of_rank;  // rank of the plan's world -> node (the MPI rank)
  bool distributed = false;            // ranks split each epoch (torch-distributed)
};

// The job's shape, or EINVAL with one line naming the odd rank (see the top of this file).
Result<JobShape> CheckJob(const std::vector<NodeFacts>& facts);

}  // namespace clairfs::peer
