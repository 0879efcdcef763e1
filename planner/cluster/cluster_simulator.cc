// The cluster simulator's step loop (see cluster_simulator.h and docs/SIMULATOR.md).
#include "planner/cluster/cluster_simulator.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "planner/cluster/cluster_holds.h"
#include "planner/cluster/epoch_reads.h"
#include "planner/cluster/simulated_node_cache.h"
#include "planner/placement/placement.h"

namespace clairfs {
namespace {

// The plan policy stages 1/8 of the capacity ahead (the mount's prefetcher and the single-node
// simulator do the same).
constexpr uint64_t kPrefetchDepthDivisor = 8;
// The live prefetcher leaves the reader what it reaches within this many copy times.
constexpr double kLeadMargin = 2;

// `rate` x `seconds` less what was used, never negative; unlimited stays unlimited (and 0 s of an
// unlimited rate is still unlimited: inf x 0 would be NaN).
double Spare(double rate, double seconds, double used) {
  if (std::isinf(rate)) return kUnlimited;
  return std::max(0.0, rate * seconds - used);
}

struct NodeState {
  NodeState(uint64_t capacity, std::vector<uint32_t> holds) : cache(capacity, std::move(holds)) {}
  SimulatedNodeCache cache;
  uint64_t ahead = 0;  // the next node time the stager looks at
  // Staging credit: what the PFS and the node's link can still carry for the stager.
  double pfs_credit = 0;
  double ops_credit = 0;
  double net_credit = 0;
  double copy_credit = 0;  // copies the stager can still publish
  double cpu_credit = 0;   // CPU-seconds of the shared cores the stager can still spend
  // Daemon calls the node's agent can still make in this step (model.agent_call_time), less the
  // calls it owes: it takes a want while this is above 0 (it is free), and the want's calls may
  // take it below, owed from the next steps' time. Its own transfers and its serving of other
  // nodes' draw on the same calls.
  double agent_calls = kUnlimited;
  bool credit_limited = false;  // the stager last stopped for want of credit
  bool cpu_limited = false;     // ... of CPU in particular (it is runnable: it shares the cores)
  // This step's reads by source (bytes), and its opens, for its data time.
  uint64_t step_local = 0;
  uint64_t step_peer = 0;
  uint64_t step_pfs = 0;
  uint64_t step_opens = 0;
  uint64_t step_pfs_opens = 0;
  // The reader's pace: the positions it passed and its steps' seconds so far (equal on every
  // node in lockstep).
  uint64_t positions = 0;
  double read_time = 0;
  // ClusterSync::kEpoch: when the node's next step starts (seconds since the job started).
  double clock = 0;
  // Copies from peers still in flight (only with a transfer time): (arrival clock, file) in
  // arrival order (one transfer time for all, so asking order), and each file's latest arrival.
  std::deque<std::pair<double, uint32_t>> arriving;
  std::unordered_map<uint32_t, double> arrival_of;
  // With the wants queue (a slot time or refusals): when each in-flight slot is free again,
  // earliest first; a slot may free before its copy arrives, so `arriving` no longer counts them.
  std::priority_queue<double, std::vector<double>, std::greater<>> slots;
  // Refused wants not refused yet: staged from the PFS at their arrival, unless the reader
  // passes them first (then nobody wants them: no PFS copy, and their room is given back).
  // file -> the epoch whose tally paid its PFS copy (an index into the run's epochs).
  std::unordered_map<uint32_t, size_t> refused;
  // PFS copies not published yet (only with model.pfs_copy_time): (publish clock, file) in
  // starting order (one copy time for all), and each file's latest publish.
  std::deque<std::pair<double, uint32_t>> copying;
  std::unordered_map<uint32_t, double> copy_done_at;
  // Files the stager passed by as the reader's (model.leave_to_reader) and not read since.
  std::unordered_set<uint32_t> left;
  // model.queued_wants: wants the agent could not take yet, (position, file) in the order they
  // were made, and their files (a file leaves the set when its reader gets there first).
  std::deque<std::pair<uint64_t, uint32_t>> waiting;
  std::unordered_set<uint32_t> waiting_set;
  // model.leave_as_measured: the copy time this node's stager measures (seconds), and the current
  // 50 ms sample: its steps' seconds so far and whether a PFS copy was in flight in any of them.
  double copy_estimate = 0;
  double sample_time = 0;
  bool sample_busy = false;
};

// The live prefetcher's sample interval for its copy-time estimate (fs/prefetch/plan_runtime.cc).
constexpr double kCopySampleSeconds = 0.05;

class Simulation {
 public:
  Simulation(const std::vector<uint64_t>& sizes, const ClusterModel& model,
             ClusterPlacement placement, ClusterHolds holds)
      : sizes_(sizes),
        model_(model),
        placement_(placement),
        placement_homes_(std::move(holds.placement)),
        holder_(sizes.size(), kNoNode),
        live_(model.nodes, 1) {
    uint64_t total = 0;
    for (uint64_t s : sizes) total += s;
    const uint64_t average = sizes.empty() ? 1 : std::max<uint64_t>(1, total / sizes.size());
    depth_ = std::max<uint64_t>(1, model.node_capacity / kPrefetchDepthDivisor / average);
    nodes_.reserve(model.nodes);
    for (uint32_t n = 0; n < model.nodes; ++n) {
      result_.held_files += holds.per_node[n].size();
      for (uint32_t f : holds.per_node[n]) result_.held_bytes += sizes[f];
      nodes_.emplace_back(model.node_capacity, std::move(holds.per_node[n]));
      // No credit before the first step, but for what is unlimited.
      nodes_.back().pfs_credit = Spare(model.pfs_bandwidth, 0, 0);
      nodes_.back().ops_credit = Spare(model.pfs_metadata_ops, 0, 0);
      nodes_.back().net_credit = Spare(model.net_bandwidth, 0, 0);
      nodes_.back().copy_credit = Spare(CopyRate(), 0, 0);
      nodes_.back().cpu_credit = Spare(model.cores, 0, 0);
    }
    result_.placement = placement;
    for (NodeState& s : nodes_) s.agent_calls = AgentCalls(0);
  }

  // Copies per second a node's stager publishes (unlimited without a per-copy time).
  double CopyRate() const { return model_.copy_time > 0 ? 1.0 / model_.copy_time : kUnlimited; }
  // Daemon calls an agent makes in `seconds` (unlimited unless clairfs's calls take time).
  double AgentCalls(double seconds) const {
    return model_.agent_call_time > 0 && placement_ == ClusterPlacement::kClairfs
               ? seconds / model_.agent_call_time
               : kUnlimited;
  }

  Status Run(Plan* plan, uint64_t first_epoch, uint64_t epochs, const ClusterProgress& progress);
  ClusterRunResult Take();

 private:
  uint64_t HorizonEnd() const { return next_ ? next_->end() : current_->end(); }
  uint64_t FileAt(uint32_t node, uint64_t time) const {
    if (time < current_->end()) return current_->NodeFileAt(node, time);
    return next_ ? next_->NodeFileAt(node, time) : kNeverRead;
  }
  uint64_t NextUse(uint32_t node, uint32_t file, uint64_t from) const {
    const uint64_t use = current_->NodeReadAtOrAfter(node, file, from);
    if (use != kNeverRead || !next_) return use;
    return next_->NodeReadAtOrAfter(node, file, from);
  }
  // The node a copy of `file` may come from instead of the PFS, or kNoNode.
  uint32_t PeerSource(uint32_t node, uint32_t file) const;
  // clairfs: the home of `file` if it is another node that holds the file but has no copy yet
  // (asked for it, it stages the file from the PFS first, as the live agent's `stage` does).
  uint32_t HomeToStage(uint32_t node, uint32_t file) const;
  void MarkHeld(uint32_t node, uint32_t file);
  void Stage(uint32_t node, uint64_t now, ClusterEpochResult* tally);
  // What one file of a stager's walk came to: staged; passed by (held, too large, left to the
  // reader, already wanted); queued behind the wants that wait for the agent; or the walk stops
  // (past the depth, out of credit or room; a waiting want the agent still cannot take).
  enum class StageResult { kStaged, kSkipped, kQueued, kStop };
  struct StageContext {
    uint64_t now = 0;             // the reader's position
    uint64_t left_to_reader = 0;  // LeftToReader at this step
    bool peer_window = false;
    bool draining = false;  // the file is a waiting want (model_.queued_wants)
  };
  StageResult StageAt(uint32_t node, uint64_t position, uint32_t file, const StageContext& c,
                      ClusterEpochResult* tally);
  // Puts the want of `file` at `position` at the back of the node's waiting wants.
  static StageResult Queue(NodeState& s, uint64_t position, uint32_t file);
  void Read(uint32_t node, uint64_t now, uint32_t file, ClusterEpochResult* tally);
  // Lockstep (ClusterSync::kStep): the step of every node ends together, as long as the slowest.
  void EndStep(ClusterEpochResult* tally);
  // ClusterSync::kEpoch: node `node`'s step ends; its length from its own reads, with its share
  // of what the nodes share (the PFS, the cores). Returns the step's seconds.
  double EndNodeStep(uint32_t node);
  // The PFS's time for reads of `bytes` in `opens` opens by readers that get 1/`sharers` of it:
  // its open latency (overlapped by the reader threads) and its bandwidth or opens; 0 for none.
  double PfsTime(double bytes, double opens, double sharers) const;
  // A node's data time in a step: the longest of its local reads, its link and, if it read from
  // the PFS, `pfs_time`.
  double NodeDataTime(const NodeState& s, double pfs_time) const;
  // Seconds the readers' `reader_cpu` CPU-seconds take on 1/`sharers` of the cores.
  double ReaderCpuTime(double reader_cpu, double sharers) const;
  // A node's credits for the next step after a step of `step` seconds (what the readers left of
  // its shares), its copy-time sample; a step in which the reader did not read (`reading` false:
  // a wait for the other nodes at an epoch's end) does not count in its pace.
  void SettleNode(NodeState& s, double step, double pfs_share, double ops_share, double cpu_share,
                  bool reading);
  // Drops the node's copies, transfers and slots that are done by clock_.
  void PopDue(NodeState& s) const;
  // The epoch's steps in lockstep, or each node on its own clock (model_.sync).
  void RunEpochInLockstep(ClusterEpochResult* tally, const std::function<void()>& stepped);
  void RunEpochOnNodeClocks(ClusterEpochResult* tally, const std::function<void()>& stepped);
  // Node `node`'s reads of step `p` of the current epoch, each after its stager's turn.
  void ReadStep(uint32_t node, uint64_t p, ClusterEpochResult* tally);
  void LoadedAnotherEpoch();
  // The stagers' run before the first read: model_.setup_time seconds of credit, spent from the
  // PFS alone (the live agents attach at the end of the bench's setup phase).
  void Setup(uint64_t first_epoch);
  // True while a copy of `file` pulled from a peer has not arrived at `node` yet.
  bool Arriving(const NodeState& s, uint32_t file) const {
    if (model_.transfer_time <= 0) return false;
    auto it = s.arrival_of.find(file);
    return it != s.arrival_of.end() && it->second > clock_;
  }
  // True while the node's PFS copy of `file` is not published yet (model_.pfs_copy_time).
  bool Copying(const NodeState& s, uint32_t file) const {
    if (model_.pfs_copy_time <= 0) return false;
    auto it = s.copy_done_at.find(file);
    return it != s.copy_done_at.end() && it->second > clock_;
  }
  // Keeps cpu_limited_nodes_, so that a step need not look at every node to know it.
  void SetCpuLimited(NodeState& s, bool limited) {
    if (s.cpu_limited == limited) return;
    s.cpu_limited = limited;
    if (limited) {
      ++cpu_limited_nodes_;
    } else {
      --cpu_limited_nodes_;
    }
  }
  // The live wants queue's slots are counted apart from the arrivals (docs/SIMULATOR.md).
  bool WantsQueue() const {
    return model_.transfer_time > 0 && (model_.transfer_slot_time > 0 || model_.refusal_time > 0);
  }
  size_t InFlight(const NodeState& s) const {
    return WantsQueue() ? s.slots.size() : s.arriving.size();
  }
  // Positions ahead of `s`'s reader that its stager leaves to it (model_.leave_to_reader, or twice
  // the node's measured copy time, at the readers' pace so far; 0 without the rule or before any
  // time has passed).
  uint64_t LeftToReader(const NodeState& s) const;
  // model_.leave_as_measured: a node's copy-time estimate after `step` more seconds.
  void SampleCopyTime(NodeState& s, double step) const;

  const std::vector<uint64_t>& sizes_;
  ClusterModel model_;
  ClusterPlacement placement_;
  std::optional<Placement> placement_homes_;
  std::vector<uint32_t> holder_;  // file -> a node whose held copy is there, or kNoNode
  LiveNodes live_;
  uint64_t depth_ = 1;  // files the stager may evict for ahead of the reader
  std::vector<NodeState> nodes_;
  std::shared_ptr<const EpochReads> current_;
  std::shared_ptr<const EpochReads> next_;
  double clock_ = 0;  // seconds since the job started (setup included); the current step's start
  uint32_t cpu_limited_nodes_ = 0;  // nodes whose stager waits for CPU (NodeState::cpu_limited)
  // ClusterSync::kEpoch: the nodes that have not finished the epoch's reads, which share the PFS
  // and the cores.
  uint32_t reading_nodes_ = 0;
  bool in_setup_ = false;
  ClusterRunResult result_;
};

uint32_t Simulation::PeerSource(uint32_t node, uint32_t file) const {
  switch (placement_) {
    case ClusterPlacement::kNone:
      return kNoNode;
    case ClusterPlacement::kNoPfs:
      return holder_[file] != node ? holder_[file] : kNoNode;
    case ClusterPlacement::kClairfs: {
      const uint32_t home = placement_homes_->Home(file, live_);
      return home != node && home != kNoNode && holder_[file] == home ? home : kNoNode;
    }
  }
  return kNoNode;
}

uint32_t Simulation::HomeToStage(uint32_t node, uint32_t file) const {
  if (placement_ != ClusterPlacement::kClairfs) return kNoNode;
  const uint32_t home = placement_homes_->Home(file, live_);
  if (home == node || home == kNoNode || holder_[file] == home) return kNoNode;
  const SimulatedNodeCache& cache = nodes_[home].cache;
  return cache.Holds(file) && !cache.Has(file) ? home : kNoNode;
}

void Simulation::MarkHeld(uint32_t node, uint32_t file) {
  if (holder_[file] == kNoNode) holder_[file] = node;
}

// The node's stager before a read at `now`: the plan policy's prefetch (cache_simulator.h), in
// plan order up to depth_ files ahead (further only into free space), paid from its credit. With
// model_.queued_wants, first the wants waiting for the agent, in the order they were made.
void Simulation::Stage(uint32_t node, uint64_t now, ClusterEpochResult* tally) {
  NodeState& s = nodes_[node];
  if (s.ahead < now) s.ahead = now;
  s.credit_limited = false;
  SetCpuLimited(s, false);
  StageContext c;
  c.now = now;
  c.left_to_reader = LeftToReader(s);
  c.peer_window = model_.peer_window && placement_ == ClusterPlacement::kClairfs && !in_setup_;
  while (!s.waiting.empty()) {
    const auto [position, file] = s.waiting.front();
    // Gone from the set: its reader came first (a miss), so nobody wants it any more.
    if (s.waiting_set.count(file) == 0 || position < now) {
      s.waiting_set.erase(file);
      s.waiting.pop_front();
      continue;
    }
    c.draining = true;
    const StageResult r = StageAt(node, position, file, c, tally);
    if (r == StageResult::kStop || r == StageResult::kQueued) break;
    s.waiting_set.erase(file);
    s.waiting.pop_front();
  }
  c.draining = false;
  // Before the agents attach (the setup), a live mount of part of a peer job's world stages only
  // the plan's first epoch: the next one's files are other nodes' shards (docs/PEERS.md).
  const bool first_epoch_only =
      in_setup_ && placement_ == ClusterPlacement::kClairfs && model_.nodes > 1;
  const uint64_t horizon = first_epoch_only ? current_->end() : HorizonEnd();
  for (; s.ahead < horizon; ++s.ahead) {
    const uint64_t next = FileAt(node, s.ahead);
    if (next == kNeverRead) continue;
    if (StageAt(node, s.ahead, static_cast<uint32_t>(next), c, tally) == StageResult::kStop) break;
  }
}

// One file of the walk at `position`, as Stage's loop body.
Simulation::StageResult Simulation::StageAt(uint32_t node, uint64_t position, uint32_t file,
                                            const StageContext& c, ClusterEpochResult* tally) {
  NodeState& s = nodes_[node];
  const uint64_t capacity = s.cache.capacity();
  const uint64_t size = sizes_[file];
  const double digest_cpu = placement_ == ClusterPlacement::kClairfs ? model_.digest_cpu : 0.0;
  const bool refusals = model_.refusal_time > 0 && model_.transfer_time > 0 &&
                        placement_ == ClusterPlacement::kClairfs;
  // Beyond the prefetch depth a copy goes only into free space; with the peer window a peer's
  // copy may evict copies of later use there too (docs/PEERS.md, "The window a peer's files
  // get"), so the walk goes on to see where the next file comes from.
  const bool beyond_depth = position >= c.now + depth_ && s.cache.used() + size > capacity;
  if (beyond_depth && !c.peer_window) return StageResult::kStop;
  if (s.cache.Has(file) || size > capacity) return StageResult::kSkipped;
  // Already wanted: it goes when the wants before it have gone.
  if (!c.draining && s.waiting_set.count(file) != 0) return StageResult::kSkipped;
  uint32_t peer = kNoNode;
  uint32_t home_to_stage = kNoNode;
  uint32_t server = kNoNode;  // the node whose agent answers the want
  bool refused = false;  // a want the home has no copy for: staged from the PFS after a refusal
  if (in_setup_) {
  } else if (refusals) {
    // Live, every file of another home is a want; the home serves any copy it has published
    // and refuses the rest ("not from a peer"), which the asker then stages from the PFS.
    const uint32_t home = placement_homes_->Home(file, live_);
    if (home != node && home != kNoNode) {
      const NodeState& h = nodes_[home];
      server = home;
      if (h.cache.Has(file) && !Arriving(h, file)) {
        peer = home;
      } else {
        refused = true;
      }
    }
  } else {
    peer = PeerSource(node, file);
    if (peer == kNoNode) home_to_stage = HomeToStage(node, file);
    server = peer != kNoNode ? peer : home_to_stage;
  }
  const bool from_pfs = peer == kNoNode;  // directly, or through the home that stages it
  const bool transfer = peer != kNoNode || home_to_stage != kNoNode || refused;
  if (beyond_depth && !transfer) return StageResult::kStop;
  // The live prefetcher leaves to the reader the PFS copies it would reach first; a peer's
  // copy losing the race costs the PFS nothing, so it is asked for anyway (docs/PEERS.md).
  if (!transfer && position < c.now + c.left_to_reader) {
    s.left.insert(file);
    return StageResult::kSkipped;
  }
  // A want behind older ones that wait for the agent waits too (the agent takes them in order).
  const bool queue_wants = model_.queued_wants && transfer;
  if (queue_wants && !c.draining && !s.waiting.empty()) return Queue(s, position, file);
  const auto bytes = static_cast<double>(size);
  // A copy from the PFS costs its CPU (and, on the clairfs placement's mounts, which have a
  // peer key, its digest's) to the node that stages it: the asker, or the home for it.
  const double pfs_copy_cpu = model_.copy_cpu + digest_cpu;
  const double cpu =
      transfer && !refused ? model_.transfer_cpu + (from_pfs ? pfs_copy_cpu : 0.0) : pfs_copy_cpu;
  // The asker's agent takes the memory file and delivers it (or gives the want up); the home's
  // serves the copy (or refuses).
  const double asker_calls = transfer ? (refused ? 1.0 : 2.0) : 0.0;
  const double server_calls = transfer && server != kNoNode ? 1.0 : 0.0;
  // An agent busy with calls it owes takes no want; a free one takes it and owes its calls.
  const bool agent_busy =
      transfer && (s.agent_calls <= 0 || (server_calls > 0 && nodes_[server].agent_calls <= 0) ||
                   (model_.transfer_time > 0 && model_.transfers_in_flight > 0 &&
                    InFlight(s) >= model_.transfers_in_flight));
  if (queue_wants && agent_busy)
    return c.draining ? StageResult::kQueued : Queue(s, position, file);
  if (s.net_credit < bytes || s.copy_credit < 1 || s.cpu_credit < cpu || agent_busy ||
      (from_pfs && (s.pfs_credit < bytes || s.ops_credit < 1))) {
    s.credit_limited = true;
    SetCpuLimited(s, s.cpu_credit < cpu);
    return StageResult::kStop;
  }
  if (!s.cache.MakeRoom(size, position, sizes_)) return StageResult::kStop;
  if (home_to_stage != kNoNode) {
    SimulatedNodeCache& home = nodes_[home_to_stage].cache;
    if (home.MakeRoom(size, std::nullopt, sizes_)) {
      home.Insert(file, SimulatedNodeCache::Key{kNeverRead, ~position}, sizes_);
      MarkHeld(home_to_stage, file);
      peer = home_to_stage;
    }
  }
  s.net_credit -= bytes;
  s.copy_credit -= 1;
  s.cpu_credit -= cpu;
  s.agent_calls -= asker_calls;
  if (server_calls > 0) nodes_[server].agent_calls -= server_calls;
  if (transfer && model_.transfer_time > 0) {
    // A refused want arrives as a PFS copy once refused and copied; a transfer frees its slot
    // when its bytes are in, before the copy is published.
    const double arrival =
        clock_ + (refused ? model_.refusal_time + model_.pfs_copy_time : model_.transfer_time);
    s.arriving.emplace_back(arrival, file);
    s.arrival_of[file] = arrival;
    if (WantsQueue()) {
      s.slots.push(refused || model_.transfer_slot_time <= 0 ? arrival
                                                             : clock_ + model_.transfer_slot_time);
    }
  }
  if (refused) {
    ++tally->refused_wants;
    s.refused[file] = result_.epochs.size();
  } else if (WantsQueue()) {
    s.refused.erase(file);
  }
  if (!transfer && model_.pfs_copy_time > 0) {
    s.copying.emplace_back(clock_ + model_.pfs_copy_time, file);
    s.copy_done_at[file] = clock_ + model_.pfs_copy_time;
  }
  if (from_pfs) {
    s.pfs_credit -= bytes;
    s.ops_credit -= 1;
    tally->pfs_bytes += size;
    ++tally->pfs_opens;
  }
  if (peer != kNoNode) tally->peer_bytes += size;
  ++tally->staged_files;
  s.cache.Insert(file, SimulatedNodeCache::Key{position, file}, sizes_);
  if (s.cache.Holds(file)) MarkHeld(node, file);
  return StageResult::kStaged;
}

Simulation::StageResult Simulation::Queue(NodeState& s, uint64_t position, uint32_t file) {
  s.waiting.emplace_back(position, file);
  s.waiting_set.insert(file);
  return StageResult::kQueued;
}

void Simulation::Read(uint32_t node, uint64_t now, uint32_t file, ClusterEpochResult* tally) {
  NodeState& s = nodes_[node];
  const uint64_t size = sizes_[file];
  ++tally->reads;
  ++s.step_opens;
  const bool has = s.cache.Has(file);
  const bool was_left = !s.left.empty() && s.left.erase(file) != 0;
  const bool was_waiting = !s.waiting_set.empty() && s.waiting_set.erase(file) != 0;
  if (has) s.cache.Rekey(file, SimulatedNodeCache::KeyFor(file, NextUse(node, file, now + 1), now));
  // A PFS copy still in flight: the reader got there first, misses and reads the PFS itself.
  const bool late_copy = has && Copying(s, file);
  if (has && !late_copy && !Arriving(s, file)) {
    ++tally->local_hits;
    tally->local_bytes += size;
    s.step_local += size;
    return;
  }
  // A refused want the reader reached before its refusal is withdrawn: the PFS copy charged
  // when it was asked for is not made, and its room is free again (docs/PEERS.md).
  bool withdrawn = false;
  if (has && !s.refused.empty()) {
    auto it = s.refused.find(file);
    if (it != s.refused.end()) {
      withdrawn = true;
      ClusterEpochResult& paid =
          it->second < result_.epochs.size() ? result_.epochs[it->second] : *tally;
      paid.pfs_bytes -= size;
      --paid.pfs_opens;
      --paid.staged_files;
      s.refused.erase(it);
      s.arrival_of.erase(file);
      s.cache.Drop(file, sizes_);
    }
  }
  // A copy still coming from a peer: a reader never waits for a peer, so this is a miss; the
  // copy still arrives (the live tier leaves a withdrawn transfer to arrive).
  if (late_copy) {
    ++tally->late_copies;
  } else if (withdrawn) {
    ++tally->unrefused_wants;
  } else if (has) {
    ++tally->late_transfers;
  } else if (was_left) {
    ++tally->left_to_reader;
  } else if (was_waiting || now >= s.ahead) {
    ++tally->staging_behind;  // the stager had not reached it: out of credit
  }
  // NoPFS reads a miss from a node that holds the file; clairfs's readers never wait for a peer
  // (docs/PEERS.md): a miss is read from the PFS.
  const uint32_t peer = placement_ == ClusterPlacement::kNoPfs ? PeerSource(node, file) : kNoNode;
  if (peer != kNoNode) {
    ++tally->peer_reads;
    tally->peer_bytes += size;
    s.step_peer += size;
  } else {
    ++tally->pfs_reads;
    tally->pfs_bytes += size;
    ++tally->pfs_opens;
    s.step_pfs += size;
    ++s.step_pfs_opens;
  }
  // A read does not cache what the plan policy did not stage, but a held file is kept as it is
  // read (the live agent has its daemon stage a home file as soon as a peer wants it).
  if (!has && s.cache.Holds(file) && size <= s.cache.capacity() &&
      s.cache.MakeRoom(size, std::nullopt, sizes_)) {
    s.cache.Insert(file, SimulatedNodeCache::Key{kNeverRead, ~now}, sizes_);
    MarkHeld(node, file);
  }
}

void Simulation::EndStep(ClusterEpochResult* tally) {
  // The step's reads of all nodes: the PFS serves them together.
  uint64_t step_pfs_bytes = 0, step_pfs_opens = 0, step_opens = 0;
  for (const NodeState& s : nodes_) {
    step_pfs_bytes += s.step_pfs;
    step_pfs_opens += s.step_pfs_opens;
    step_opens += s.step_opens;
  }
  const auto pfs_bytes = static_cast<double>(step_pfs_bytes);
  const auto pfs_opens = static_cast<double>(step_pfs_opens);
  const double pfs_time = PfsTime(pfs_bytes, pfs_opens, 1);
  double slowest = 0;
  for (const NodeState& s : nodes_) slowest = std::max(slowest, NodeDataTime(s, pfs_time));
  const double reader_cpu = static_cast<double>(step_opens) * model_.open_cpu;
  slowest = std::max(slowest, ReaderCpuTime(reader_cpu, 1));
  const double step = std::max(model_.work, slowest);
  tally->time += step;
  tally->stall += step - model_.work;
  clock_ += step;
  const double pfs_share = Spare(model_.pfs_bandwidth, step, pfs_bytes) / model_.nodes;
  const double ops_share = Spare(model_.pfs_metadata_ops, step, pfs_opens) / model_.nodes;
  const double cpu_share = Spare(model_.cores, step, reader_cpu) / model_.nodes;
  for (NodeState& s : nodes_) {
    SettleNode(s, step, pfs_share, ops_share, cpu_share, /*reading=*/true);
    PopDue(s);
  }
}

double Simulation::PfsTime(double bytes, double opens, double sharers) const {
  if (opens == 0) return 0;
  return model_.pfs_open_latency / model_.reader_threads +
         std::max(bytes / (model_.pfs_bandwidth / sharers),
                  opens / (model_.pfs_metadata_ops / sharers));
}

double Simulation::NodeDataTime(const NodeState& s, double pfs_time) const {
  double data = static_cast<double>(s.step_local) / model_.nvme_bandwidth;
  data = std::max(data, static_cast<double>(s.step_peer + s.step_pfs) / model_.net_bandwidth);
  if (s.step_pfs > 0) data = std::max(data, pfs_time);
  return data;
}

// The readers' opens take CPU first; all nodes share the cores (the live bench's machine). While
// a stager waits for CPU it is runnable, and the scheduler gives the readers only their share of
// the cores (model_.reader_share; 1: the readers first).
double Simulation::ReaderCpuTime(double reader_cpu, double sharers) const {
  if (std::isinf(model_.cores)) return 0;
  const double share = cpu_limited_nodes_ > 0 ? model_.reader_share : 1.0;
  return reader_cpu / (model_.cores / sharers * share);
}

double Simulation::EndNodeStep(uint32_t node) {
  NodeState& s = nodes_[node];
  // The node's share of what the nodes share: the PFS and the cores, split among the nodes still
  // reading (one whose reader is done waits at the epoch's end).
  const double n = std::max<uint32_t>(1, reading_nodes_);
  const auto pfs_bytes = static_cast<double>(s.step_pfs);
  const auto pfs_opens = static_cast<double>(s.step_pfs_opens);
  const double reader_cpu = static_cast<double>(s.step_opens) * model_.open_cpu;
  const double data =
      std::max(NodeDataTime(s, PfsTime(pfs_bytes, pfs_opens, n)), ReaderCpuTime(reader_cpu, n));
  const double step = std::max(model_.work, data);
  SettleNode(s, step, Spare(model_.pfs_bandwidth / n, step, pfs_bytes),
             Spare(model_.pfs_metadata_ops / n, step, pfs_opens),
             Spare(model_.cores / n, step, reader_cpu), /*reading=*/true);
  s.clock += step;
  return step;
}

void Simulation::SettleNode(NodeState& s, double step, double pfs_share, double ops_share,
                            double cpu_share, bool reading) {
  if (!s.credit_limited) {
    s.pfs_credit = s.ops_credit = s.net_credit = s.copy_credit = s.cpu_credit = 0;  // unspent
  }
  s.cpu_credit += cpu_share;
  if (model_.leave_as_measured) SampleCopyTime(s, step);
  s.copy_credit += Spare(CopyRate(), step, 0);
  // The calls an agent owes carry over; the time it had nothing to do is not banked.
  s.agent_calls = std::min(s.agent_calls, 0.0) + AgentCalls(step);
  s.pfs_credit += pfs_share;
  s.ops_credit += ops_share;
  s.net_credit += Spare(model_.net_bandwidth, step, static_cast<double>(s.step_peer + s.step_pfs));
  s.step_local = s.step_peer = s.step_pfs = s.step_opens = s.step_pfs_opens = 0;
  if (reading) {
    s.read_time += step;
    s.positions += model_.ranks_per_node;
  }
}

void Simulation::PopDue(NodeState& s) const {
  while (!s.copying.empty() && s.copying.front().first <= clock_) {
    auto it = s.copy_done_at.find(s.copying.front().second);
    if (it != s.copy_done_at.end() && it->second <= clock_) s.copy_done_at.erase(it);
    s.copying.pop_front();
  }
  while (!s.arriving.empty() && s.arriving.front().first <= clock_) {
    auto it = s.arrival_of.find(s.arriving.front().second);
    if (it != s.arrival_of.end() && it->second <= clock_) {
      s.arrival_of.erase(it);
      if (!s.refused.empty()) s.refused.erase(s.arriving.front().second);
    }
    s.arriving.pop_front();
  }
  while (!s.slots.empty() && s.slots.top() <= clock_) s.slots.pop();
}

uint64_t Simulation::LeftToReader(const NodeState& s) const {
  const double leave =
      model_.leave_as_measured ? kLeadMargin * s.copy_estimate : model_.leave_to_reader;
  if (leave <= 0 || s.read_time <= 0) return 0;
  const double pace = static_cast<double>(s.positions) / s.read_time;  // positions per second
  // The live prefetcher truncates its measured lead; a fixed one is rounded up.
  if (model_.leave_as_measured) return static_cast<uint64_t>(pace * leave);
  return static_cast<uint64_t>(std::ceil(pace * leave));
}

void Simulation::SampleCopyTime(NodeState& s, double step) const {
  s.sample_busy = s.sample_busy || !s.copying.empty();
  s.sample_time += step;
  while (s.sample_time >= kCopySampleSeconds) {
    // Little's law over a busy sample gives the copy time; the live estimate is an exponential
    // average of weight 1/2. A sample with nothing in flight halves it.
    if (s.sample_busy) {
      s.copy_estimate = s.copy_estimate == 0 ? model_.pfs_copy_time
                                             : (s.copy_estimate + model_.pfs_copy_time) / 2;
    } else {
      s.copy_estimate /= 2;
    }
    s.sample_time -= kCopySampleSeconds;
    s.sample_busy = !s.copying.empty();
  }
}

void Simulation::Setup(uint64_t first_epoch) {
  result_.setup.epoch = first_epoch;
  if (model_.setup_time <= 0) return;
  for (uint32_t n = 0; n < model_.nodes; ++n) {
    // Node n is mounted, and starts staging, (n + 1) x mount_time into the setup.
    const double t = std::max(0.0, model_.setup_time - (n + 1) * model_.mount_time);
    NodeState& s = nodes_[n];
    s.pfs_credit = Spare(model_.pfs_bandwidth, t, 0) / model_.nodes;
    s.ops_credit = Spare(model_.pfs_metadata_ops, t, 0) / model_.nodes;
    s.net_credit = Spare(model_.net_bandwidth, t, 0);
    s.copy_credit = Spare(CopyRate(), t, 0);
    s.cpu_credit = Spare(model_.cores, t, 0) / model_.nodes;
  }
  in_setup_ = true;
  for (uint32_t n = 0; n < model_.nodes; ++n) Stage(n, current_->base(), &result_.setup);
  in_setup_ = false;
  result_.setup.time = model_.setup_time;
  clock_ += model_.setup_time;
  for (NodeState& s : nodes_) {
    // A stager that copied through the setup starts the first epoch with that copy time measured.
    if (model_.leave_as_measured && !s.copying.empty()) s.copy_estimate = model_.pfs_copy_time;
    // The setup's copies all started at its beginning: published by its end unless they take
    // longer than it.
    if (model_.pfs_copy_time <= model_.setup_time) {
      s.copying.clear();
      s.copy_done_at.clear();
    }
  }
  // What the setup left unspent is gone, as at any step whose stager was not limited.
  for (NodeState& s : nodes_) {
    s.pfs_credit = Spare(model_.pfs_bandwidth, 0, 0);
    s.ops_credit = Spare(model_.pfs_metadata_ops, 0, 0);
    s.net_credit = Spare(model_.net_bandwidth, 0, 0);
    s.copy_credit = Spare(CopyRate(), 0, 0);
    s.cpu_credit = Spare(model_.cores, 0, 0);
  }
}

// Copies with no next use in the old loaded epochs may have one in the epoch just loaded.
void Simulation::LoadedAnotherEpoch() {
  for (uint32_t n = 0; n < nodes_.size(); ++n) {
    SimulatedNodeCache& cache = nodes_[n].cache;
    for (uint32_t file : cache.NeverUsedAgain()) {
      const uint64_t use = NextUse(n, file, current_->base());
      if (use != kNeverRead) cache.Rekey(file, SimulatedNodeCache::Key{use, file});
    }
  }
}

void Simulation::ReadStep(uint32_t node, uint64_t p, ClusterEpochResult* tally) {
  const uint32_t g = model_.ranks_per_node;
  for (uint32_t k = 0; k < g; ++k) {
    const uint64_t file = current_->FileAt(node * g + k, p);
    if (file == kNeverRead) continue;
    const uint64_t now = current_->base() + p * g + k;
    Stage(node, now, tally);
    Read(node, now, static_cast<uint32_t>(file), tally);
  }
}

void Simulation::RunEpochInLockstep(ClusterEpochResult* tally,
                                    const std::function<void()>& stepped) {
  for (uint64_t p = 0; p < current_->steps(); ++p) {
    for (uint32_t n = 0; n < model_.nodes; ++n) ReadStep(n, p, tally);
    EndStep(tally);
    stepped();
  }
}

// A discrete-event loop: the node whose next step starts first takes it, so whatever a node sees
// of the others (a home's copy, a peer's agent) happened before its own step began.
void Simulation::RunEpochOnNodeClocks(ClusterEpochResult* tally,
                                      const std::function<void()>& stepped) {
  const double start = clock_;
  const uint64_t steps = current_->steps();
  // (start of the node's next step, node), earliest first; ties by node, as in lockstep.
  using NextStep = std::pair<double, uint32_t>;
  std::priority_queue<NextStep, std::vector<NextStep>, std::greater<>> next;
  std::vector<uint64_t> step_of(model_.nodes, 0);
  for (uint32_t n = 0; n < model_.nodes; ++n) {
    nodes_[n].clock = start;
    if (steps > 0) next.emplace(start, n);
  }
  // When the nodes whose last step is under way end it: from then on the others share without
  // them.
  std::priority_queue<double, std::vector<double>, std::greater<>> finishing;
  reading_nodes_ = steps > 0 ? model_.nodes : 0;
  while (!next.empty()) {
    const auto [at, node] = next.top();
    next.pop();
    for (; !finishing.empty() && finishing.top() <= at; finishing.pop()) --reading_nodes_;
    clock_ = at;
    PopDue(nodes_[node]);
    ReadStep(node, step_of[node], tally);
    EndNodeStep(node);
    if (++step_of[node] < steps) {
      next.emplace(nodes_[node].clock, node);
    } else {
      finishing.push(nodes_[node].clock);
    }
    stepped();
  }
  double end = start;
  for (const NodeState& s : nodes_) end = std::max(end, s.clock);
  // The nodes that finished first wait for the last; their stagers go on meanwhile.
  clock_ = end;
  const double n = model_.nodes;
  for (NodeState& s : nodes_) {
    const double wait = end - s.clock;
    if (wait > 0) {
      SettleNode(s, wait, Spare(model_.pfs_bandwidth / n, wait, 0),
                 Spare(model_.pfs_metadata_ops / n, wait, 0), Spare(model_.cores / n, wait, 0),
                 /*reading=*/false);
      s.clock = end;
    }
    PopDue(s);
  }
  tally->time = end - start;
  tally->stall = std::max(0.0, tally->time - static_cast<double>(steps) * model_.work);
}

Status Simulation::Run(Plan* plan, uint64_t first_epoch, uint64_t epochs,
                       const ClusterProgress& progress) {
  const uint32_t g = model_.ranks_per_node;
  auto current = EpochReads::Build(plan, first_epoch, sizes_.size(), g, 0);
  if (!current.ok()) return current.status();
  current_ = *current;
  if (epochs > 1) {
    auto next = EpochReads::Build(plan, first_epoch + 1, sizes_.size(), g, current_->end());
    if (!next.ok()) return next.status();
    next_ = *next;
  }
  // Steps (node steps on the nodes' clocks) for the meter; an estimate (epochs may differ).
  const uint64_t total_steps =
      current_->steps() * epochs * (model_.sync == ClusterSync::kEpoch ? model_.nodes : 1);
  uint64_t done = 0;
  const std::function<void()> stepped = [&] {
    ++done;
    if (progress) progress(done, std::max(done, total_steps));
  };
  Setup(first_epoch);
  for (uint64_t i = 0; i < epochs; ++i) {
    ClusterEpochResult tally;
    tally.epoch = first_epoch + i;
    if (model_.sync == ClusterSync::kEpoch) {
      RunEpochOnNodeClocks(&tally, stepped);
    } else {
      RunEpochInLockstep(&tally, stepped);
    }
    result_.epochs.push_back(tally);
    if (i + 1 == epochs) break;
    current_ = next_;
    next_.reset();
    if (i + 2 < epochs) {
      auto next = EpochReads::Build(plan, first_epoch + i + 2, sizes_.size(), g, current_->end());
      if (!next.ok()) return next.status();
      next_ = *next;
      LoadedAnotherEpoch();
    }
  }
  return Status::Ok();
}

ClusterRunResult Simulation::Take() {
  for (uint32_t n = 0; n < nodes_.size(); ++n) {
    result_.max_node_bytes = std::max(result_.max_node_bytes, nodes_[n].cache.peak());
    result_.held_copies_at_end += nodes_[n].cache.HeldCopies();
  }
  for (uint32_t h : holder_) result_.files_with_held_copy += h != kNoNode;
  return std::move(result_);
}

}  // namespace

Status CheckClusterPlan(const Plan& plan, const ClusterModel& model) {
  if (plan.first_rank() != 0 || plan.last_rank() + 1 != plan.world()) {
    return Status::Invalid("the plan names ranks " + std::to_string(plan.first_rank()) + "-" +
                           std::to_string(plan.last_rank()) +
                           ": a cluster runs every rank of the world (drop ranks=)");
  }
  const uint64_t ranks = uint64_t{model.nodes} * model.ranks_per_node;
  if (plan.world() != ranks) {
    return Status::Invalid("the plan's world is " + std::to_string(plan.world()) +
                           ", not --nodes " + std::to_string(model.nodes) + " x --ranks-per-node " +
                           std::to_string(model.ranks_per_node) + " = " + std::to_string(ranks));
  }
  return Status::Ok();
}

Result<ClusterRunResult> SimulateCluster(Plan* plan, uint64_t first_epoch, uint64_t epochs,
                                         const std::vector<uint64_t>& sizes,
                                         const ClusterModel& model, ClusterPlacement placement,
                                         const ClusterProgress& progress) {
  if (Status s = CheckClusterModel(model); !s.ok()) return s;
  if (Status s = CheckClusterPlan(*plan, model); !s.ok()) return s;
  if (epochs == 0) return Status::Invalid("no epochs to simulate");
  if (sizes.size() >= UINT32_MAX) return Status::Invalid("too many files to simulate");
  auto holds = ChooseClusterHolds(placement, plan, first_epoch, epochs, sizes, model);
  if (!holds.ok()) return holds.status();
  Simulation simulation(sizes, model, placement, std::move(*holds));
  if (Status s = simulation.Run(plan, first_epoch, epochs, progress); !s.ok()) return s;
  return simulation.Take();
}

}  // namespace clairfs
