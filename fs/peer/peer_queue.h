// PeerStagingQueue: the staging queue of a mount that may have a peer agent attached.
//
// It stands between the plan prefetcher and the stager (both see a StagingQueue). While no agent
// is attached every request goes straight to the stager. While one is, a prefetch of a file the
// agent did not name as this node's own (its home files come from the PFS here, docs/PEERS.md)
// becomes a want: the agent takes wants (TakeWants), each with a deadline, and either delivers the
// file (Delivered, after the daemon published the peer's bytes), gives up on it (Failed), or lets
// the deadline pass (Expire); the last two hand the request to the stager, so a file the agent
// does not bring is staged from the PFS as without peers. A want the agent does not even take
// within the deadline (a stopped or stuck agent) expires the same way. A want the prefetcher
// withdraws while the agent brings it is left to arrive, but never goes to the stager (nobody
// wants it any more) unless asked for again. Detach hands every want still wanted to the
// stager. CopiesFromBackingStore and held_bytes tell the prefetcher which files a peer brings
// and what the holds take (docs/PEERS.md, "The window a peer's files get").
// Readers never wait on any of this: a want is a staging request, not a read.
//
// stats() counts wants not taken as queued and wants taken as in flight, and delivered files as
// staged, so the prefetcher's pacing sees peer transfers as copies in flight.
// Thread-safety: every method is thread-safe (one mutex, never held while calling the stager).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/stager.h"

namespace clairfs {

struct PeerWant {
  std::string path;
  FileIdentity identity;
};

struct PeerQueueStats {
  uint64_t wants = 0;            // offered to the agent
  uint64_t delivered = 0;        // brought by a peer and published
  uint64_t failed = 0;           // given up by the agent (staged from the PFS if still wanted)
  uint64_t expired = 0;          // past their deadline (staged from the PFS if still wanted)
  uint64_t bytes_delivered = 0;  // of the delivered files
  uint64_t withdrawn = 0;        // by the prefetcher before the agent took them
  uint64_t kept_in_flight = 0;   // withdrawn while the agent was bringing them (left to arrive)
  uint64_t delivery_ns = 0;      // from taking to delivery, summed over delivered_timed files
  uint64_t delivered_timed = 0;  // delivered while still wanted
  uint64_t failure_ns = 0;       // from taking to the agent giving up, summed over failed_timed
  uint64_t failed_timed = 0;     // given up after the agent took them
  uint64_t waiting = 0;          // not taken yet
  uint64_t taken = 0;            // taken by the agent, not delivered yet
};

class PeerStagingQueue final : public StagingQueue {
 public:
  using Clock = std::chrono::steady_clock;

  explicit PeerStagingQueue(StagingQueue* inner) : inner_(inner) {}

  // StagingQueue.
  bool Prefetch(const std::string& path, const FileIdentity& identity,
                StagePriority priority) override;
  bool CancelUnwaited(const std::string& path) override;
  StagerStats stats() override;
  // A want not taken yet is queued, one the agent is bringing in flight; else the stager's answer.
  CopyProgress ProgressOf(const std::string& path) override;
  // False for a file that would be a want now (another node's file while an agent is attached).
  bool CopiesFromBackingStore(const std::string& path) override;
  bool ExpectsPeerAgent() override { return expects_agent_.load(); }
  bool PeerAgentAttached() override;
  // The daemon calls this when the mount has a peer key (agents can attach).
  void ExpectAgents() { expects_agent_.store(true); }
  StagerStats backing_stats() override { return inner_->stats(); }
  uint64_t held_bytes() override;

  // An agent attached: from now on, prefetches of files other than `own_files` become wants,
  // each staged from the PFS if not delivered within `deadline` of its offer or of its taking.
  // `held_bytes`: what the store holds of the own files (held_bytes()).
  void Attach(std::unordered_set<std::string> own_files, std::chrono::milliseconds deadline,
              uint64_t held_bytes = 0);
  // The agent left: every want still wanted goes to the stager.
  void Detach();
  bool attached();

  // Up to `max` wants not taken yet, in the order they were offered (high priority first), now
  // taken until `now` plus the deadline.
  std::vector<PeerWant> TakeWants(size_t max, Clock::time_point now = Clock::now());
  // The peer's bytes of `path` were published (`bytes` of them).
  void Delivered(const std::string& path, uint64_t bytes);
  // The agent cannot bring `path` (it gave up at `now`): staged from the PFS now. False if it was
  // no want.
  bool Failed(const std::string& path, Clock::time_point now = Clock::now());
  // Wants taken and not delivered by their deadline go to the stager; returns how many.
  size_t Expire(Clock::time_point now = Clock::now());

  PeerQueueStats peer_stats();

 private:
  struct Want {
    FileIdentity identity;
    StagePriority priority = StagePriority::kNormal;
    bool taken = false;
    Clock::time_point deadline{};  // from the offer, then from the taking
    Clock::time_point taken_at{};
    // Withdrawn by the prefetcher while the agent was bringing it: left to arrive, but never
    // staged from the PFS if it fails or expires (nobody wants it any more).
    bool withdrawn = false;
  };
  // Hands `wants` to the stager (lock not held).
  void ToStager(const std::vector<std::pair<std::string, Want>>& wants);

  StagingQueue* inner_;
  std::atomic<bool> expects_agent_{false};
  std::mutex mu_;  // guards everything below
  bool attached_ = false;
  std::chrono::milliseconds deadline_{1000};
  uint64_t held_bytes_ = 0;
  std::unordered_set<std::string> own_files_;
  std::unordered_map<std::string, Want> wants_;
  // Wants handed to the stager (failed or expired): asked again, they stay the stager's, which
  // knows whether it still has them, so one file is never both a want and a staging request.
  std::unordered_set<std::string> to_stager_;
  std::deque<std::string> order_high_;  // offer order of wants not taken (may hold stale paths)
  std::deque<std::string> order_;
  PeerQueueStats stats_;
};

}  // namespace clairfs
