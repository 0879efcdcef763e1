// PeerAgent: the peer tier's agent on one node, for one job (docs/PEERS.md). `clairfs-peer`
// runs it as one MPI rank per node.
//
// Start-up: attaches to the node's mount (DaemonLink), then every rank shares its node's facts
// (manifest digest, plan without ranks, layout, ranks served, files, capacity, key id) in one
// MPI_Allgather, the only collective it uses. A rank that could not attach, or whose dataset,
// plan, layout or key differs from the others', or ranks that overlap or leave part of the world
// unserved, stop every rank; rank 0 prints one line naming the odd rank.
// Then every rank computes the same placement (planner/placement: homes by first reader), tells
// its daemon its home files to hold, and loops: takes its daemon's wants and fetches each from
// its home (a memory file from the daemon, mapped and filled by MPI, then delivered with its
// seal), answers its peers' requests from its daemon's published copies, reports its status to
// its daemon each second, and tells the others when its readers are done. It exits when every
// other node is done or gone, when its mount goes away, or on SIGINT/SIGTERM, detaching from the
// daemon (the cache stays as it is).
//
// Exit codes: 0 done with every peer accounted for; 1 start-up refused or the mount went away;
// 3 done, but peers were lost on the way (named on stderr).
#pragma once

#include <mpi.h>

#include <chrono>
#include <string>

namespace clairfs::peer {

// Faults a test build can make the agent commit when it serves (tests only; see tests/).
enum class ServeFault { kNone, kCorrupt, kShort, kForge };

struct AgentOptions {
  std::string mountpoint;                    // "%r" is replaced by the MPI rank
  std::chrono::milliseconds deadline{1000};  // for each file a peer is asked for
  int max_fetches = 32;                      // files being fetched at once
  // How long to wait for a `--plan auto` mount to adopt its plan before giving up.
  std::chrono::seconds plan_wait{600};
  bool verbose = false;
  ServeFault fault = ServeFault::kNone;
};

int RunPeerAgent(const AgentOptions& options, MPI_Comm comm);

// The mountpoint of `rank`: `pattern` with every "%r" replaced by the rank.
std::string MountpointOfRank(const std::string& pattern, int rank);

}  // namespace clairfs::peer
