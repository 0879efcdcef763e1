// PlanRuntime (see plan_runtime.h).
#include "fs/prefetch/plan_runtime.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "planner/base/log.h"

namespace clairfs {
namespace {

constexpr auto kPassInterval = std::chrono::milliseconds(3);
// After passes that queue and withdraw nothing while no copy is published, evicted, queued or
// finished (every planned file of the window is staged), the interval doubles up to this.
constexpr auto kQuietPassInterval = std::chrono::milliseconds(24);
// While nothing a pass reads changes (no open, no copy published, evicted, queued or finished),
// passes are skipped, but one runs at least this often (the reader-pace estimate decays in passes).
constexpr auto kUnchangedRecheck = std::chrono::seconds(1);
// Staging runs this fraction of the capacity ahead of the slowest rank (further into free space).
constexpr uint64_t kPrefetchDepthDivisor = 8;
// The reader's pace and the copy time are measured over intervals of at least this long.
constexpr double kLeadSampleSeconds = 0.05;
// Positions left to the reader = margin x reader pace x time a copy spends in flight.
constexpr double kLeadMargin = 2.0;

}  // namespace

PlanRuntime::PlanRuntime(PlanRuntimeDeps deps) : deps_(std::move(deps)) {}

PlanRuntime::~PlanRuntime() { Stop(); }

Status PlanRuntime::Set(PlanTrackerConfig config) {
  config.backing_root = deps_.backing_root;
  auto tracker = PlanTracker::Create(config);
  if (!tracker.ok()) return tracker.status();
  StopWatcher();
  Install(std::move(*tracker), "plan");
  return Status::Ok();
}

void PlanRuntime::Install(std::shared_ptr<PlanTracker> tracker, const std::string& how) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    tracker_ = tracker;
    rekeyed_drop_ = false;
    watching_ = false;
  }
  if (deps_.policy != nullptr) deps_.policy->SetOracle(tracker);
  if (deps_.on_plan_active) deps_.on_plan_active(true);
  Log(LogLevel::kInfo, "%s %s: %llu files, %s", how.c_str(), tracker->config().spec.text.c_str(),
      static_cast<unsigned long long>(tracker->num_files()),
      tracker->StatusJson()["ranks"].dump().c_str());
  cv_.notify_all();
}

Status PlanRuntime::SetAuto(PlanWatcherConfig config) {
  config.backing_root = deps_.backing_root;
  StopWatcher();
  Clear();
  uint64_t generation = 0;
  std::shared_ptr<PlanWatcher> watcher;
  {
    std::lock_guard<std::mutex> lock(mu_);
    generation = ++generation_;
  }
  watcher = std::make_shared<PlanWatcher>(std::move(config), [this, generation](InferredPlan plan) {
    return Adopt(std::move(plan), generation);
  });
  watcher->Start();
  {
    std::lock_guard<std::mutex> lock(mu_);
    watcher_ = watcher;
    watching_ = true;
  }
  Log(LogLevel::kInfo, "plan auto: inferring the plan from the first opens");
  return Status::Ok();
}

Status PlanRuntime::Adopt(InferredPlan plan, uint64_t generation) {
  plan.config.backing_root = deps_.backing_root;
  auto created = PlanTracker::Create(plan.config, plan.layout, plan.index);
  if (!created.ok()) return created.status();
  std::shared_ptr<PlanTracker> tracker = std::move(*created);
  std::shared_ptr<PlanWatcher> watcher;
  {
    std::lock_guard<std::mutex> lock(mu_);
    watcher = watcher_;
  }
  if (watcher == nullptr) return Status::Error(ECANCELED, "plan auto was cleared meanwhile");
  auto replay = [&tracker](const std::string& path, Opener opener) -> Status {
    (void)tracker->OnOpen(path, opener);
    if (tracker->NeedsAdvance()) return tracker->AdvanceEpoch();
    return Status::Ok();
  };
  // The opens the inference saw, then those that came while it searched and while the tracker
  // was built (the watcher queued them), so that each rank's cursor stands where its reader is.
  // (The watcher saw only the opens of the user the plan follows, if it follows one.)
  const Opener traced{0, plan.config.uid};
  for (const std::string& path : plan.replay) CLAIRFS_RETURN_IF_ERROR(replay(path, traced));
  for (int round = 0; round < 8; ++round) {
    auto pending = watcher->TakePending();
    for (const auto& [path, opener] : pending) CLAIRFS_RETURN_IF_ERROR(replay(path, opener));
    if (pending.size() < 64) break;
  }
  if (tracker->dropped()) {
    return Status::Error(EPROTO, "the plan does not follow the opens it was inferred from");
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (generation != generation_ || stopping_) {
      return Status::Error(ECANCELED, "plan auto was cleared or replaced meanwhile");
    }
  }
  Install(tracker, "plan auto: adopted");
  // Opens queued between the last round and the switch.
  for (const auto& [path, opener] : watcher->TakePending()) (void)tracker->OnOpen(path, opener);
  return Status::Ok();
}

void PlanRuntime::StopWatcher() {
  std::shared_ptr<PlanWatcher> watcher;
  {
    std::lock_guard<std::mutex> lock(mu_);
    watcher = std::move(watcher_);
    watching_ = false;
    ++generation_;
  }
  if (watcher) watcher->Stop();
}

void PlanRuntime::Clear() {
  StopWatcher();
  std::shared_ptr<PlanTracker> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old = std::move(tracker_);
  }
  if (deps_.policy != nullptr) deps_.policy->SetOracle(nullptr);
  if (deps_.on_plan_active) deps_.on_plan_active(false);
  if (old) Log(LogLevel::kInfo, "plan cleared: back to read-through");
}

bool PlanRuntime::Active() {
  std::shared_ptr<PlanTracker> t = tracker();
  return t != nullptr && !t->dropped();
}

bool PlanRuntime::Inferring() {
  std::lock_guard<std::mutex> lock(mu_);
  return watcher_ != nullptr && watching_;
}

std::shared_ptr<PlanTracker> PlanRuntime::tracker() {
  std::lock_guard<std::mutex> lock(mu_);
  return tracker_;
}

void PlanRuntime::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void PlanRuntime::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
  StopWatcher();
}

bool PlanRuntime::OnOpen(const std::string& path, Opener opener) {
  std::shared_ptr<PlanTracker> tracker;
  std::shared_ptr<PlanWatcher> watcher;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (watching_) {
      watcher = watcher_;
    } else {
      tracker = tracker_;
    }
  }
  if (watcher != nullptr) {
    watcher->Observe(path, opener);
    return false;
  }
  return tracker != nullptr && tracker->OnOpen(path, opener);
}

MissCause PlanRuntime::OnMiss(const std::string& path) {
  switch (deps_.stager->ProgressOf(path)) {
    case CopyProgress::kQueued:
      return MissCause::kCopyQueued;
    case CopyProgress::kInFlight:
      return MissCause::kCopyInFlight;
    case CopyProgress::kNone:
      break;
  }
  std::shared_ptr<PlanTracker> tracker;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!watching_) tracker = tracker_;
  }
  if (tracker == nullptr || tracker->dropped()) return MissCause::kUnplanned;
  const std::optional<uint32_t> file = tracker->IndexOf(path);
  if (!file) return MissCause::kUnplanned;
  std::lock_guard<std::mutex> lock(left_mu_);
  if (left_owner_ == tracker.get() &&
      std::binary_search(left_files_.begin(), left_files_.end(), *file)) {
    return MissCause::kLeftToReader;
  }
  return MissCause::kNotStagedAhead;
}

nlohmann::json PlanRuntime::StatusJson() {
  std::shared_ptr<PlanTracker> t;
  std::shared_ptr<PlanWatcher> watcher;
  bool watching = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    t = tracker_;
    watcher = watcher_;
    watching = watching_;
  }
  if (!t || (watching && t->dropped() && watcher != nullptr)) {
    if (watcher == nullptr) return nullptr;
    nlohmann::json j;
    j["spec"] = "auto";
    j["active"] = false;
    j["dropped"] = false;
    j["inference"] = watcher->StatusJson();
    if (t) j["previous"] = t->StatusJson();
    return j;
  }
  nlohmann::json j = t->StatusJson();
  if (watcher != nullptr) j["inference"] = watcher->StatusJson();
  j["memory_bytes"] = t->MemoryBytes();
  j["eviction"] = deps_.policy != nullptr ? "plan" : "lru";
  j["left_to_reader"] = left_to_reader_.load();
  j["awaiting_peer_agents"] = awaiting_peer_agents_.load();
  j["prefetch_passes"] = passes_.load();
  return j;
}

PlanRuntime::PassInputs PlanRuntime::InputsOf(PlanTracker* tracker) {
  const ContentStoreStats store = deps_.store->stats();
  const StagerStats stager = deps_.stager->stats();
  return PassInputs{tracker,
                    tracker->dataset_opens(),
                    store.files,
                    store.evictions,
                    store.used_bytes,
                    store.reserved_bytes,
                    stager.queued,
                    stager.in_flight,
                    stager.files_staged,
                    stager.failures + stager.skipped};
}

void PlanRuntime::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  auto interval = kPassInterval;
  std::optional<PassInputs> last_inputs;
  auto last_pass = std::chrono::steady_clock::now();
  while (!stopping_) {
    // Without a plan (or once a dropped plan is handled) sleep until Set or Stop: a mount
    // without a plan must not wake a thread every few milliseconds.
    if (!tracker_ || (rekeyed_drop_ && tracker_->dropped())) {
      cv_.wait(lock);
      interval = kPassInterval;
      last_inputs.reset();
    } else {
      cv_.wait_for(lock, interval);
    }
    if (stopping_) break;
    std::shared_ptr<PlanTracker> tracker = tracker_;
    lock.unlock();
    // A pass over an unchanged mount would queue and withdraw nothing: on a cache that holds the
    // whole plan it cost a quarter of a CPU on an idle mount (a walk of 8192 positions every 3 ms).
    const auto now = std::chrono::steady_clock::now();
    std::optional<PassInputs> inputs;
    if (tracker) inputs = InputsOf(tracker.get());
    // Not while files are left to the reader: a reader that stopped (between epochs, at a
    // checkpoint) must see its pace decay to 0 in the passes' samples, or the next files it will
    // read stay unstaged until it comes back for them.
    if (inputs && last_inputs && *inputs == *last_inputs && now - last_pass < kUnchangedRecheck &&
        left_to_reader_.load() == 0) {
      lock.lock();
      continue;
    }
    // While copies come and go, passes keep the 3 ms pace; once only the reader moves, through
    // copies that are all staged, they back off.
    const bool copies_changed = !inputs || !last_inputs || !inputs->SameCopies(*last_inputs);
    last_inputs = inputs;  // taken before the pass, so a change during it shows next time
    last_pass = now;
    const bool acted = RunPass();
    interval = acted || copies_changed ? kPassInterval : std::min(2 * interval, kQuietPassInterval);
    lock.lock();
  }
}

bool PlanRuntime::RunPass() {
  passes_.fetch_add(1, std::memory_order_relaxed);
  std::shared_ptr<PlanTracker> tracker;
  bool handle_drop = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tracker = tracker_;
    if (!tracker) return false;
    if (tracker->dropped()) {
      if (rekeyed_drop_) return false;
      rekeyed_drop_ = true;
      handle_drop = true;
    }
  }
  if (!handle_drop) return PrefetchPass(tracker.get());
  // The plan was wrong: what it queued would evict what read-through keeps for the real reader.
  for (const std::string& path : queued_) deps_.stager->CancelUnwaited(path);
  queued_.clear();
  if (deps_.policy != nullptr) deps_.policy->Rekey();
  if (deps_.on_plan_active) deps_.on_plan_active(false);
  std::shared_ptr<PlanWatcher> watcher;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (watcher_ != nullptr && tracker_ == tracker) {
      watcher = watcher_;
      watching_ = true;  // --plan auto: infer again, from the next epoch
    }
  }
  if (watcher != nullptr) watcher->Resume(tracker->RecentMismatches());
  return true;
}

std::optional<FileIdentity> PlanRuntime::IdentityOf(PlanTracker* tracker, uint32_t file) {
  auto it = identities_.find(file);
  if (it != identities_.end()) return it->second;
  auto node = deps_.manifest->GetByPath(tracker->PathOf(file));
  if (!node.ok() || !node->has_value() || !(*node)->attr.is_reg()) return std::nullopt;
  // Bounded: forget everything once it grows well past the look-ahead (refilled as needed).
  if (identities_.size() > 4 * deps_.max_lookahead) identities_.clear();
  FileIdentity id = (*node)->attr.identity();
  identities_.emplace(file, id);
  return id;
}

void PlanRuntime::UpdateLead(uint64_t cursor_time) {
  const uint64_t now = deps_.env->NowMonotonicNanos();
  const StagerStats stats = deps_.stager->backing_stats();
  if (!sample_.started || cursor_time < sample_.cursor_time) {
    sample_ = LeadSample{true, now, cursor_time, stats.files_staged, 0, 0};
    return;
  }
  sample_.in_flight_sum += static_cast<double>(stats.in_flight);
  ++sample_.passes;
  const double seconds = static_cast<double>(now - sample_.start_ns) / 1e9;
  if (seconds < kLeadSampleSeconds) return;
  // Exponential averages with weight 1/2 per sample: a change of pace shows within a few samples.
  const double rate = static_cast<double>(cursor_time - sample_.cursor_time) / seconds;
  reader_rate_ = reader_rate_ == 0 ? rate : (reader_rate_ + rate) / 2;
  const uint64_t staged = stats.files_staged - sample_.files_staged;
  if (staged > 0) {
    // Little's law: time in flight = files in flight / files finished per second.
    const double in_flight = sample_.in_flight_sum / static_cast<double>(sample_.passes);
    const double copy = in_flight / (static_cast<double>(staged) / seconds);
    copy_seconds_ = copy_seconds_ == 0 ? copy : (copy_seconds_ + copy) / 2;
  } else if (sample_.in_flight_sum == 0) {
    // Nothing was copied, so nothing was measured: halve the estimate, or a slow spell would
    // leave every file to the reader for good (nothing staged, nothing measured again).
    copy_seconds_ /= 2;
  }
  left_to_reader_ = static_cast<uint64_t>(kLeadMargin * reader_rate_ * copy_seconds_);
  sample_ = LeadSample{true, now, cursor_time, stats.files_staged, 0, 0};
}

bool PlanRuntime::PrefetchPass(PlanTracker* tracker) {
  bool acted = false;
  if (identities_owner_ != tracker) {  // a new plan: forget the old one's state
    for (const std::string& path : queued_) deps_.stager->CancelUnwaited(path);
    queued_.clear();
    identities_.clear();
    prefetched_ = 0;
    sample_ = LeadSample{};
    identities_owner_ = tracker;
    peer_agent_seen_ = false;
    seen_.assign(tracker->num_files(), 0);
    {
      std::lock_guard<std::mutex> lock(left_mu_);
      left_owner_ = tracker;
      left_files_.clear();
    }
    acted = true;
  }
  if (tracker->NeedsAdvance()) {
    Status st = tracker->AdvanceEpoch();
    if (!st.ok()) {
      tracker->Drop("generating the next epoch failed: " + st.message());
      return true;
    }
    if (deps_.policy != nullptr) deps_.policy->Rekey();
    acted = true;
  }
  // The whole capacity is the plan's: the store reserves a copy's size in whole blocks, as
  // counted here, so a cache as large as the dataset's blocks holds all of it. (A copy that takes
  // more, an ext4 extent block, is topped up at commit by the policy's victim.)
  const uint64_t capacity = deps_.store->capacity();
  const uint64_t budget = capacity == 0 ? UINT64_MAX : capacity;
  const uint64_t depth = budget / kPrefetchDepthDivisor;
  const ContentStoreStats store = deps_.store->stats();
  const uint64_t occupied = store.used_bytes + store.reserved_bytes;
  const uint64_t free = budget > occupied ? budget - occupied : 0;
  // Before a distributed job's peer agents attach, the files past the plan's first epoch are left
  // to them: in the first epoch each node reads its own shard from the backing store, and the
  // next epoch's files are the other nodes' shards, which a peer brings once the agents are
  // there; staged now, each would be read from the backing store a second time. A job that starts
  // no agent gets them staged when its readers enter the second epoch (one window late).
  uint64_t stage_before = kNoPlannedUse;
  if (!peer_agent_seen_ && deps_.stager->ExpectsPeerAgent()) {
    peer_agent_seen_ = deps_.stager->PeerAgentAttached();
    if (!peer_agent_seen_) stage_before = tracker->FirstEpochEndOfPartialWorld();
  }
  awaiting_peer_agents_.store(stage_before != kNoPlannedUse);
  std::vector<PlannedFile> upcoming = tracker->Upcoming(deps_.max_lookahead);
  if (!upcoming.empty()) {
    UpdateLead(upcoming.front().time);
  } else {
    left_to_reader_ = 0;  // the plan is read to its end: nothing is left to anyone
  }
  struct Admitted {
    uint32_t file;
    uint64_t time;
    FileIdentity identity;
    bool cached;
  };
  std::vector<Admitted> admitted;
  uint64_t sum = 0;        // admitted bytes
  uint64_t new_bytes = 0;  // admitted bytes not staged yet
  uint64_t horizon = 0;
  // With a peer job's home files held, files a peer brings may fill the room the holds leave,
  // evicting copies of later use: a copy evicted too early comes back from a peer, not the PFS,
  // and a transfer needs a longer lead than the prefetch depth gives a fast reader.
  const uint64_t held = deps_.stager->held_bytes();
  const uint64_t peer_room = held == 0 ? 0 : (budget > held ? budget - held : 0);
  uint64_t peer_sum = 0;  // admitted bytes of files a peer brings
  seen_list_.clear();
  for (const PlannedFile& planned : upcoming) {
    if (planned.time >= stage_before) break;  // upcoming is in time order
    // A file planned twice in the window (two epochs) counts once: its first use.
    if (planned.file >= seen_.size() || seen_[planned.file] != 0) continue;
    seen_[planned.file] = 1;
    seen_list_.push_back(planned.file);
    std::optional<FileIdentity> id = IdentityOf(tracker, planned.file);
    if (!id) continue;
    const uint64_t alloc = ContentStore::EstimateAlloc(id->size);
    if (alloc > budget - sum) break;
    // Beyond the prefetch depth, only into free space: evicting a retained file to stage one
    // early would cost a second copy of the evicted file.
    const std::string& path = tracker->PathOf(planned.file);
    const bool cached = deps_.store->Contains(path);
    const bool from_peer = peer_room != 0 && !deps_.stager->CopiesFromBackingStore(path);
    if (sum + alloc > depth && !cached && new_bytes + alloc > free &&
        !(from_peer && peer_sum + alloc <= peer_room)) {
      break;
    }
    if (from_peer) peer_sum += alloc;
    if (!cached) new_bytes += alloc;
    sum += alloc;
    horizon = planned.time;
    admitted.push_back(Admitted{planned.file, planned.time, *id, cached});
  }
  for (uint32_t file : seen_list_) seen_[file] = 0;
  tracker->SetProtectUntil(horizon);
  // Files the reader will open before a copy started now could be published are left to it: a
  // copy that loses that race reads the file from the backing store a second time and evicts a
  // file the plan still needs. Files a peer would bring are asked for all the same: losing costs
  // the backing store nothing, and winning saves it a read.
  const uint64_t stage_from = upcoming.empty() ? 0 : upcoming.front().time + left_to_reader_.load();
  uint64_t lead = 0;
  bool contiguous = true;
  std::vector<const Admitted*> to_stage;
  left_next_.clear();
  for (const Admitted& a : admitted) {
    if (a.cached) {
      if (contiguous) ++lead;
      continue;
    }
    contiguous = false;
    if (a.time >= stage_from || !deps_.stager->CopiesFromBackingStore(tracker->PathOf(a.file))) {
      to_stage.push_back(&a);
    } else {
      left_next_.push_back(a.file);
    }
  }
  std::sort(left_next_.begin(), left_next_.end());
  {
    std::lock_guard<std::mutex> lock(left_mu_);
    left_owner_ = tracker;
    left_files_.swap(left_next_);
  }
  std::unordered_set<std::string_view> staging;
  for (size_t i = 0; i < to_stage.size(); ++i) {
    const std::string& path = tracker->PathOf(to_stage[i]->file);
    staging.insert(path);
    const StagePriority priority =
        i < to_stage.size() / 4 ? StagePriority::kHigh : StagePriority::kNormal;
    if (deps_.stager->Prefetch(path, to_stage[i]->identity, priority)) {
      ++prefetched_;
      queued_.insert(path);
      acted = true;
    }
  }
  // A request queued by an earlier pass that is no longer to be staged (the reader is about to
  // open the file or has opened it, or it no longer fits) is dropped while it waits, unless an
  // explicit `clairfs stage` waits for it too; copies already in flight finish.
  for (auto it = queued_.begin(); it != queued_.end();) {
    if (staging.count(*it) != 0) {
      ++it;
      continue;
    }
    deps_.stager->CancelUnwaited(*it);
    it = queued_.erase(it);
    acted = true;
  }
  tracker->SetLead(lead, prefetched_);
  return acted;
}

}  // namespace clairfs
