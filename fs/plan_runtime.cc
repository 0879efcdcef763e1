// PlanRuntime (see plan_runtime.h).
#include "fs/plan_runtime.h"

#include <chrono>
#include <unordered_set>
#include <vector>

#include "planner/log.h"

namespace clairfs {
namespace {

constexpr auto kPassInterval = std::chrono::milliseconds(3);
constexpr uint64_t kBlock = 4096;
// Staging runs this fraction of the capacity ahead of the slowest rank (further into free space).
constexpr uint64_t kPrefetchDepthDivisor = 8;

}  // namespace

PlanRuntime::PlanRuntime(PlanRuntimeDeps deps) : deps_(std::move(deps)) {}

PlanRuntime::~PlanRuntime() { Stop(); }

Status PlanRuntime::Set(PlanTrackerConfig config) {
  config.backing_root = deps_.backing_root;
  auto tracker = PlanTracker::Create(config);
  if (!tracker.ok()) return tracker.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    tracker_ = *tracker;
    rekeyed_drop_ = false;
  }
  if (deps_.policy != nullptr) deps_.policy->SetOracle(*tracker);
  if (deps_.on_plan_active) deps_.on_plan_active(true);
  Log(LogLevel::kInfo, "plan %s: %llu files, %s", config.spec.c_str(),
      static_cast<unsigned long long>((*tracker)->num_files()),
      (*tracker)->StatusJson()["ranks"].dump().c_str());
  cv_.notify_all();
  return Status::Ok();
}

void PlanRuntime::Clear() {
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
}

bool PlanRuntime::OnOpen(const std::string& path) {
  std::shared_ptr<PlanTracker> tracker;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tracker = tracker_;
  }
  return tracker != nullptr && tracker->OnOpen(path);
}

nlohmann::json PlanRuntime::StatusJson() {
  std::shared_ptr<PlanTracker> t = tracker();
  if (!t) return nullptr;
  nlohmann::json j = t->StatusJson();
  j["memory_bytes"] = t->MemoryBytes();
  j["eviction"] = deps_.policy != nullptr ? "plan" : "lru";
  return j;
}

void PlanRuntime::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    // Without a plan (or once a dropped plan is handled) sleep until Set or Stop: a mount
    // without a plan must not wake a thread every few milliseconds.
    if (!tracker_ || (rekeyed_drop_ && tracker_->dropped())) {
      cv_.wait(lock);
    } else {
      cv_.wait_for(lock, kPassInterval);
    }
    if (stopping_) break;
    std::shared_ptr<PlanTracker> tracker = tracker_;
    if (!tracker) continue;
    if (tracker->dropped()) {
      if (!rekeyed_drop_) {
        rekeyed_drop_ = true;
        lock.unlock();
        if (deps_.policy != nullptr) deps_.policy->Rekey();
        if (deps_.on_plan_active) deps_.on_plan_active(false);
        lock.lock();
      }
      continue;
    }
    lock.unlock();
    PrefetchPass(tracker.get());
    lock.lock();
  }
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

void PlanRuntime::PrefetchPass(PlanTracker* tracker) {
  if (identities_owner_ != tracker) {  // a new plan: forget the old one's state
    identities_.clear();
    prefetched_ = 0;
    identities_owner_ = tracker;
  }
  if (tracker->NeedsAdvance()) {
    Status st = tracker->AdvanceEpoch();
    if (!st.ok()) {
      tracker->Drop("generating the next epoch failed: " + st.message());
      return;
    }
    if (deps_.policy != nullptr) deps_.policy->Rekey();
  }
  const uint64_t capacity = deps_.store->capacity();
  const uint64_t budget = capacity == 0 ? UINT64_MAX : capacity / 100 * 95;
  const uint64_t depth = budget / kPrefetchDepthDivisor;
  const ContentStoreStats store = deps_.store->stats();
  const uint64_t occupied = store.used_bytes + store.reserved_bytes;
  const uint64_t free = budget > occupied ? budget - occupied : 0;
  std::vector<PlannedFile> upcoming = tracker->Upcoming(deps_.max_lookahead);
  struct Admitted {
    uint32_t file;
    FileIdentity identity;
  };
  std::vector<Admitted> admitted;
  std::unordered_set<uint32_t> seen;
  uint64_t sum = 0;        // admitted bytes
  uint64_t new_bytes = 0;  // admitted bytes not staged yet
  uint64_t horizon = 0;
  for (const PlannedFile& planned : upcoming) {
    if (!seen.insert(planned.file).second) continue;
    std::optional<FileIdentity> id = IdentityOf(tracker, planned.file);
    if (!id) continue;
    const uint64_t alloc = (id->size + kBlock - 1) / kBlock * kBlock;
    if (alloc > budget - sum) break;
    // Beyond the prefetch depth, only into free space: evicting a retained file to stage one
    // early would cost a second copy of the evicted file.
    const bool cached = deps_.store->Contains(tracker->PathOf(planned.file));
    if (sum + alloc > depth && !cached && new_bytes + alloc > free) break;
    if (!cached) new_bytes += alloc;
    sum += alloc;
    horizon = planned.time;
    admitted.push_back(Admitted{planned.file, *id});
  }
  tracker->SetProtectUntil(horizon);
  uint64_t lead = 0;
  bool contiguous = true;
  for (size_t i = 0; i < admitted.size(); ++i) {
    const std::string& path = tracker->PathOf(admitted[i].file);
    if (deps_.store->Contains(path)) {
      if (contiguous) ++lead;
      continue;
    }
    contiguous = false;
    const StagePriority priority =
        i < admitted.size() / 4 ? StagePriority::kHigh : StagePriority::kNormal;
    if (deps_.stager->Enqueue(path, admitted[i].identity, priority)) ++prefetched_;
  }
  tracker->SetLead(lead, prefetched_);
}

}  // namespace clairfs
