// PlanWatcher: `--plan auto`: watches a mount's opens until plan inference finds the plan that
// explains them, then hands it to the plan runtime, which adopts it as if it had been given
// (issue 22; docs/PLANNER.md, "Plan inference on a mount").
//
// Observe() (FUSE threads, only while the runtime has no active plan) queues the opened path and
// the opening thread under a short mutex: no I/O, no search. The watcher's own thread (its
// searches at the lowest CPU priority, SCHED_IDLE, so that they never slow reads):
//   - builds the dataset's layout once: the mount's layout kind, and its root as given or inferred
//     from the first opened path (imagefolder: the opened file's class directory's parent, or the
//     nearest ancestor whose layout holds the file; sorted: the backing root). The layout at the
//     given root (or the backing root) is built when the watcher starts, before any open, and
//     used if the first open's root is that one; the adopted plan's tracker reuses it (no second
//     walk);
//   - maps each open to (sample index, reader), the reader being the opening process or, for a
//     DataLoader worker, its rank process (reader_processes.h);
//   - keeps the trace since the start of an epoch: from the mount's first open; after a plan was
//     dropped, from the first open it could not explain (the opens of its last mismatch window
//     that matched no rank: where what the readers do now began); after a trace in which no plan
//     was found, from the first open of a file already opened since that trace began, which is
//     where the next epoch begins (each file is read once per epoch);
//   - runs InferPlan (at SCHED_IDLE, on `search_threads` threads) over the trace when it has
//     grown enough (at 16 opens, then each time it
//     doubles; at most kMaxAttempts searches per epoch), first over torch-distributed seed +
//     epoch below 2^16 under the whole space's false-adoption bound, then, if that finds no
//     plan, over the whole space; on adoption calls `adopt` with the
//     plan (ranks: the readers' ranks; `set_epoch=0` when the same seed + epoch is found again at
//     the next epoch: the job never calls set_epoch) and the trace's paths, which the runtime
//     replays into the new tracker so that its cursors stand where the readers are.
//
// Thread-safety: all public methods are thread-safe. Errors: a layout that cannot be built, or
// a plan the runtime refuses, is reported in StatusJson() and the log, and the watcher waits for
// the next epoch (or, without a layout, for the next open of another directory).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "fs/prefetch/plan_tracker.h"
#include "fs/prefetch/reader_processes.h"
#include "planner/inference/plan_inference.h"
#include "planner/layout.h"

namespace clairfs {

struct PlanWatcherConfig {
  LayoutSpec layout;  // the kind; `root` is used only when `root_given`
  bool root_given = false;
  std::string backing_root;    // absolute
  uint64_t window = 256;       // reordering tolerated per rank (also the tracker's)
  InferenceOptions inference;  // the search space and threshold (its `threads` is ignored)
  // Threads a search runs on, all at SCHED_IDLE; 0: the CPUs the daemon may run on, at most 8.
  uint32_t search_threads = 0;
  // Whose opens are watched (--plan-uid): Opener::kNoUid, everyone's; else only that user's, and
  // the adopted plan follows only theirs (PlanTrackerConfig::uid).
  uint32_t uid = Opener::kNoUid;
  size_t max_trace = 1 << 20;    // opens kept per epoch's trace
  size_t max_pending = 1 << 16;  // opens queued for the thread (beyond: counted, dropped)
  std::string proc_root = "/proc";
};

// What the runtime is handed on adoption: the plan's config and the trace to replay.
struct InferredPlan {
  PlanTrackerConfig config;
  std::shared_ptr<const Layout> layout;    // the numbering the plan was inferred in
  std::shared_ptr<const PathIndex> index;  // its path -> index map
  std::vector<std::string> replay;         // the trace's paths, in arrival order
  std::string summary;                     // "inferred SPEC (...) from N opens in S s"
};

class PlanWatcher {
 public:
  // `adopt` runs on the watcher's thread; an error means the plan was not adopted.
  using AdoptFn = std::function<Status(InferredPlan plan)>;
  PlanWatcher(PlanWatcherConfig config, AdoptFn adopt);
  ~PlanWatcher();
  PlanWatcher(const PlanWatcher&) = delete;
  PlanWatcher& operator=(const PlanWatcher&) = delete;

  void Start();
  void Stop();  // idempotent; the destructor calls it

  // An open of `path` (relative to the backing root) by `opener` (ignored unless config.uid is
  // kNoUid or the opener's).
  void Observe(const std::string& path, Opener opener);
  // The adopted plan was dropped: search again, from `unexplained` (paths and threads, oldest
  // first: the opens the plan could not explain), then from the next epoch's start.
  void Resume(std::vector<std::pair<std::string, uint32_t>> unexplained);
  // Takes the opens queued since the thread last looked (paths and threads, oldest first): the
  // runtime replays them into an adopted plan's tracker, which the search kept waiting.
  std::vector<std::pair<std::string, Opener>> TakePending();
  // The thread's work on what is queued (tests call it with the thread not started). True if it
  // did anything.
  bool Step();
  // The "inference" status object.
  nlohmann::json StatusJson();
  // Whether a plan was adopted and not dropped since.
  bool adopted();

 private:
  enum class State { kWaiting, kSearching, kWaitingForEpoch, kAdopted, kGaveUp };
  static const char* StateName(State state);
  struct Pending {
    std::string path;
    Opener opener;
  };
  void Loop();
  // Builds the layout from the first opened path (thread only). False if none could be built.
  bool EnsureLayout(const std::string& path);
  // The layout at the given (or backing) root, built before any open (thread only).
  void Prebuild();
  // Makes `layout` (at `root`) the watcher's.
  void UseLayout(std::shared_ptr<const Layout> layout, const std::string& root);
  void Add(uint32_t index, uint64_t reader);
  void MaybeSearch();
  void StartTrace();

  PlanWatcherConfig config_;
  AdoptFn adopt_;
  std::thread thread_;

  std::mutex mu_;  // guards the fields up to the thread's own below
  std::condition_variable cv_;
  bool stopping_ = false;
  std::vector<Pending> pending_;
  uint64_t pending_dropped_ = 0;
  State state_ = State::kWaiting;
  std::string last_outcome_;
  std::string last_reason_;
  std::string adopted_summary_;
  std::string adopted_spec_;
  std::string layout_error_;
  std::string layout_root_;
  uint64_t opens_seen_ = 0;
  uint64_t trace_size_ = 0;
  uint64_t readers_ = 0;
  uint64_t searches_ = 0;
  double search_seconds_ = 0;
  uint64_t adoptions_ = 0;
  bool resume_ = false;
  std::atomic<bool> cancel_{false};  // Stop: ends a search under way
  std::vector<Pending> resume_opens_;

  // The thread's own (no lock).
  ReaderProcesses reader_processes_;
  std::shared_ptr<const Layout> layout_;
  std::shared_ptr<const Layout> prebuilt_;  // Prebuild's, until the first open decides
  std::shared_ptr<const PathIndex> prebuilt_index_;
  std::string prebuilt_root_;
  bool prebuilt_tried_ = false;
  std::shared_ptr<const PathIndex> index_;
  uint32_t layout_attempts_ = 0;
  std::vector<Observation> trace_;
  std::vector<uint8_t> seen_;  // by sample: opened since the trace (or the wait) began
  std::unordered_map<uint64_t, bool> trace_readers_;
  uint64_t trace_start_ns_ = 0;
  size_t next_search_at_ = 16;
  uint32_t attempts_ = 0;
  uint32_t epochs_without_plan_ = 0;
  std::string last_adopted_seed_key_;  // the last adopted spec's kind, seed and world
};

}  // namespace clairfs
