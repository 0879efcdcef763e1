// PlanRuntime: the mount's plan machinery: the current PlanTracker (set at mount with --plan or
// by the plan_set control op, removed by plan_clear), the open hook, and the prefetcher thread.
// Under `--plan auto` (SetAuto) a PlanWatcher sees the opens while no plan is active, and the plan
// it infers is adopted as if it had been set (Adopt: the watcher's trace is replayed into the new
// tracker first, so its cursors stand where the readers are); when an adopted plan is dropped the
// watcher searches again from the next epoch.
//
// The prefetcher wakes every 3 ms while its passes queue or withdraw copies, backing off to 24 ms
// while they find every planned file of the window staged, and skips passes while nothing they
// read changed (no open of a planned file, no copy published, evicted, queued or finished; one
// runs at least every second). A pass generates the next epoch when every rank has
// entered the last loaded one, then walks the plan from the slowest cursor (at most
// `max_lookahead` positions) and admits distinct files in plan order while their sizes in whole
// blocks (what the store reserves and, on ext4 and tmpfs, what a copy takes) fit in 1/8 of the
// capacity, or further while they fit in free space (prefetching the whole capacity ahead would
// evict every retained file and refetch it). So a cache exactly the size of the dataset's blocks
// holds all of it. It sets the policy's protection limit to the last admitted file's time (so
// nothing inside the window is evicted for it) and enqueues the admitted files that are not staged
// yet, the nearest quarter at high priority, except those the reader will reach before a copy could
// finish: `left_to_reader` = 2 x the reader's pace (positions per second at the slowest cursor) x
// the time a copy spends in flight (Little's law over the stager's counters), both measured over 50
// ms intervals (one without copies halves the copy-time estimate, so that a slow spell does not
// leave every file to the reader for good). A copy that loses that race reads the file from the
// backing store a second time and, once published, evicts a file the plan still needs. For the same
// reason a request queued by an earlier pass that is no longer to be staged (the reader got there
// first, or it no longer fits) is withdrawn while it waits (Stager::CancelUnwaited). Once a tracker
// drops its plan the prefetcher withdraws its queued requests, stops, and the policy is rekeyed to
// plain LRU order.
//
// Thread-safety: all methods are thread-safe. OnOpen (FUSE threads) copies the tracker pointer
// under a short mutex and calls PlanTracker::OnOpen. Set() builds the tracker (walks the
// dataset) on the caller's thread. RunPass() is the prefetcher thread's work: call it only while
// that thread is not started (tests). Errors: Set returns the tracker's creation error.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <nlohmann/json.hpp>

#include "cache/content_store.h"
#include "cache/env.h"
#include "cache/manifest.h"
#include "cache/plan_policy.h"
#include "cache/stager.h"
#include "fs/open_observer.h"
#include "fs/prefetch/plan_tracker.h"
#include "fs/prefetch/plan_watcher.h"
#include "planner/base/status.h"

namespace clairfs {

struct PlanRuntimeDeps {
  ContentStore* store = nullptr;
  StagingQueue* stager = nullptr;
  Manifest* manifest = nullptr;
  PlanPolicy* policy = nullptr;  // null when the store evicts by another policy
  std::string backing_root;
  size_t max_lookahead = 8192;  // planned positions examined per prefetch pass
  // Told when a plan becomes active (Set) or stops being so (Clear, or the tracker dropped it);
  // may be empty. Called without PlanRuntime's lock.
  std::function<void(bool active)> on_plan_active;
  Env* env = Env::Default();  // the clock that times the reader's pace and the copies
};

class PlanRuntime final : public OpenObserver {
 public:
  explicit PlanRuntime(PlanRuntimeDeps deps);
  ~PlanRuntime() override;
  PlanRuntime(const PlanRuntime&) = delete;
  PlanRuntime& operator=(const PlanRuntime&) = delete;

  // Builds a tracker for `config` (backing_root is filled in) and makes it current.
  Status Set(PlanTrackerConfig config);
  // `--plan auto`: removes the current plan and infers one from the opens (config.backing_root
  // is filled in). The eviction policy is the deps' (the daemon gives a plan policy).
  Status SetAuto(PlanWatcherConfig config);
  // Removes the current plan, or stops inferring one (no-op without either).
  void Clear();
  // Starts / stops the prefetcher thread (Stop is idempotent; the destructor calls it).
  void Start();
  void Stop();

  bool OnOpen(const std::string& path, Opener opener) override;
  // A copy under way (the staging queue's ProgressOf) first; then, under a plan, whether the
  // last pass left the file to the reader, or the plan has it but it was not staged ahead.
  MissCause OnMiss(const std::string& path) override;
  // One pass of the prefetcher (the thread runs one every few ms): handles a dropped plan, or
  // generates the next epoch if due, queues and withdraws copies. True if it did any of that.
  // Not while the thread runs.
  bool RunPass();
  // Passes run so far (by the thread or RunPass).
  uint64_t passes() const { return passes_.load(std::memory_order_relaxed); }
  // Whether a plan is set and not dropped.
  bool Active();
  // Whether the mount is inferring its plan (--plan auto, none adopted since the last drop).
  bool Inferring();
  // The "plan" status object, or null without a plan. Under --plan auto it has an "inference"
  // object (PlanWatcher::StatusJson) and, while none is adopted, "spec": "auto".
  nlohmann::json StatusJson();
  std::shared_ptr<PlanTracker> tracker();

 private:
  // What a pass reads from the rest of the mount (the thread skips passes while it is unchanged).
  struct PassInputs {
    const PlanTracker* tracker = nullptr;
    uint64_t dataset_opens = 0;
    uint64_t files = 0, evictions = 0, used_bytes = 0, reserved_bytes = 0;
    uint64_t queued = 0, in_flight = 0, staged = 0, not_staged = 0;
    bool operator==(const PassInputs&) const = default;
    // Equal but for the opens: no copy was published, evicted, queued or finished.
    bool SameCopies(PassInputs other) const {
      other.dataset_opens = dataset_opens;
      return *this == other;
    }
  };
  PassInputs InputsOf(PlanTracker* tracker);
  // Makes `tracker` current (Set and Adopt).
  void Install(std::shared_ptr<PlanTracker> tracker, const std::string& how);
  // The watcher's adoption: builds the tracker, replays the trace, installs it unless the
  // watcher of `generation` was replaced or stopped meanwhile.
  Status Adopt(InferredPlan plan, uint64_t generation);
  // Stops and forgets the watcher (not under mu_: its thread may be waiting for mu_ in Adopt).
  void StopWatcher();
  void Loop();
  bool PrefetchPass(PlanTracker* tracker);
  std::optional<FileIdentity> IdentityOf(PlanTracker* tracker, uint32_t file);
  // Measures the reader's pace (node time per second at the slowest cursor) and the time a copy
  // spends in flight, and sets left_to_reader_ from them.
  void UpdateLead(uint64_t cursor_time);

  PlanRuntimeDeps deps_;
  std::mutex mu_;  // guards tracker_, stopping_, rekeyed_drop_, watcher_, watching_, generation_
  std::condition_variable cv_;
  std::shared_ptr<PlanTracker> tracker_;
  bool stopping_ = false;
  bool rekeyed_drop_ = false;
  std::shared_ptr<PlanWatcher> watcher_;  // under --plan auto
  bool watching_ = false;                 // opens go to the watcher (no active plan)
  uint64_t generation_ = 0;               // bumped by SetAuto, Set and Clear
  std::thread thread_;

  // Prefetcher-thread state.
  std::unordered_map<uint32_t, FileIdentity> identities_;
  uint64_t prefetched_ = 0;
  std::unordered_set<std::string> queued_;  // paths this prefetcher queued, maybe still pending
  struct LeadSample {
    bool started = false;
    uint64_t start_ns = 0;  // deps_.env's monotonic clock
    uint64_t cursor_time = 0;
    uint64_t files_staged = 0;  // the stager's counter at start
    double in_flight_sum = 0;   // copies in flight, summed over the passes since start
    uint64_t passes = 0;
  };
  LeadSample sample_;
  double reader_rate_ = 0;   // node time per second (exponential average)
  double copy_seconds_ = 0;  // time a copy spends in flight (exponential average)
  // Positions past the slowest cursor that are left to the reader (read by StatusJson).
  std::atomic<uint64_t> left_to_reader_{0};
  PlanTracker* identities_owner_ = nullptr;
  // A peer agent has attached since this plan was set (the first-epoch rule is over).
  bool peer_agent_seen_ = false;
  // The first-epoch rule holds the prefetcher back now (read by StatusJson).
  std::atomic<bool> awaiting_peer_agents_{false};
  std::atomic<uint64_t> passes_{0};
  std::vector<uint32_t> left_next_;  // the files this pass leaves to the reader (then swapped)
  // The files the last pass of `left_owner_`'s plan left to the reader, sorted (OnMiss reads
  // them on FUSE threads).
  std::mutex left_mu_;
  const PlanTracker* left_owner_ = nullptr;
  std::vector<uint32_t> left_files_;
  std::vector<uint8_t> seen_;  // by file: already looked at in this pass (all 0 between passes)
  std::vector<uint32_t> seen_list_;  // the files marked in seen_ by this pass
};

}  // namespace clairfs
