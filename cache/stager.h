// Stager: copies backing files into the content store in the background.
//
// Requests are queued by priority (higher first, FIFO within a priority) and de-duplicated by
// path: a path already queued, in flight or staged is not queued again (a higher priority
// re-queue raises it). Worker threads (--stage-threads) copy with a shared token bucket
// (--stage-bandwidth) so a node cannot flood the PFS. A copy is published only if the backing
// file's identity equals the expected one before and after the copy (otherwise it is discarded)
// and the file has settled (the settle rule below; otherwise it is copied again later).
// Backing files are opened beneath the tree's root with no link followed (backing_tree.h).
// Failures on the cache device (ENOSPC, EIO) drop that copy and are counted (stats().failures)
// and reported to the store's CacheDeviceLog, which logs the device's full or lost condition in
// a few lines with counts, never one per file (cache/device_log.h); the file stays served from
// the backing store. A file for which the store finds no room without
// evicting a copy it must keep (pinned, ranked above it by the eviction policy, or any copy for a
// request that may not evict) is skipped, not failed. Nothing here blocks a reader: Enqueue never
// waits.
//
// Engines (StagerOptions::engine): the io_uring engine (cache/uring_copier.h) keeps `threads`
// files in flight on one ring thread, with at most `buffers` chunk buffers (default `threads`);
// the thread-pool engine runs `threads` workers copying one file each with pread/pwrite, then
// fsyncing it, then handing it to a GroupCommitter and waiting for it to be published (so
// concurrent workers' fsyncs merge in the journal and their publishes share one directory sync
// and one index write). Either way `threads` means "files staged concurrently". kAuto picks
// io_uring when the Env is the default one (io_uring bypasses the Env seam, so a fault-injecting
// Env gets the thread pool); if io_uring is unavailable (ENOSYS, EPERM, io_uring_disabled) the
// thread pool is used and one line is logged. The priority queue, de-duplication, Cancel, callbacks
// and stats are the same for both.
//
// Settle rule (StagerOptions::settle_ns, the mount's --stage-settle): a write sets mtime and
// ctime when it begins, so a copy that starts while a write is still under way can see the same
// identity before and after and hold half old, half new bytes ("racily clean", as git calls such
// index entries). A copy is therefore published only if its backing file's ctime, as stat'ed
// after the copy, is older than the copy's start minus the settle time. Otherwise the request is
// deferred: it waits, with its callbacks, priority and place, until the settle time after that
// ctime has passed, and is copied then. Since the copy checks that the identity (ctime included)
// after it equals the expected one, a request whose expected ctime is within the settle time of
// its start is deferred before any byte is read, and the check after the copy is a backstop. A
// deferral is neither a failure nor a skip (stats().deferred_unsettled counts them); reads never
// wait for it (nothing waits for staging but callers of Enqueue that pass a callback).
//
// Thread-safe. Shutdown() cancels pending work and waits for copies in flight to end (aborted
// promptly, leaving no temp files).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cache/backing_tree.h"
#include "cache/content_store.h"
#include "cache/env.h"
#include "cache/group_committer.h"
#include "cache/node_attr.h"
#include "cache/uring_copier.h"
#include "planner/base/status.h"

namespace clairfs {

enum class StagePriority : int { kLow = 0, kNormal = 1, kHigh = 2 };

// kAuto: io_uring with the default Env, else threads; kUring: io_uring even with another Env
// (falls back to threads only if io_uring is unavailable); kThreads: always the thread pool.
enum class StageEngine { kAuto, kUring, kThreads };

struct StagerOptions {
  std::string backing_root;
  int threads = 4;
  uint64_t bandwidth = 0;  // bytes/s over all workers; 0 = unlimited
  size_t chunk_size = 1 << 20;
  StageEngine engine = StageEngine::kAuto;
  int buffers = 0;  // io_uring engine: chunk buffers in the pool; 0 = one per file in flight
  // Large copies: written back while copying, and waited for every this many bytes, so that the
  // final fsync does not write the whole file at once (0 = no waiting writeback).
  uint64_t flush_every = 32 << 20;
  // After a copy is made, drop its pages and the backing file's from the page cache (a no-open
  // mount: the FUSE file's pages are the cache, docs/NO-OPEN.md), so a staged byte is not cached
  // two or three times.
  bool drop_pages = false;
  // The tree files are read from (backing_tree.h); when null the stager opens `backing_root`
  // itself at construction (and fails every copy with that error if it cannot).
  std::shared_ptr<const BackingTree> backing = nullptr;
  // The settle rule (top of this file): a copy whose backing file's ctime is not older than the
  // copy's start minus this is not published but deferred until it is. 0 = off (a library
  // default for tests and benchmarks of fresh files; the mount passes --stage-settle, 2 s by
  // default). Compared with Env::NowRealtimeNanos(): a backing store whose clock lags the node's
  // by more than this defeats the rule; one whose clock runs ahead delays staging by as much.
  uint64_t settle_ns = 0;
};

struct StagerStats {
  uint64_t queued = 0;     // waiting (those deferred by the settle rule included)
  uint64_t in_flight = 0;  // being copied
  uint64_t files_staged = 0;
  uint64_t bytes_staged = 0;
  uint64_t failures = 0;             // copies dropped on an error
  uint64_t skipped = 0;              // not staged: too large, changed, or gone
  uint64_t deferred = 0;             // of `queued`: waiting for their backing file to settle
  uint64_t deferred_unsettled = 0;   // copies put off because the file changed within the settle
  uint64_t settle_ns = 0;            // the settle time in force (StagerOptions::settle_ns)
  bool uring = false;                // the io_uring engine is running (else the thread pool)
  uint64_t buffers_in_use = 0;       // io_uring engine: chunk buffers held now
  uint64_t peak_buffers_in_use = 0;  // ... the most ever (never above buffer_count)
  uint64_t buffer_count = 0;         // ... the pool size
};

// Where a copy of one file stands in a staging queue (ProgressOf): none asked for, waiting (the
// settle rule's deferrals included), or being made.
enum class CopyProgress { kNone, kQueued, kInFlight };

// Outcome of one request, for callers that wait (explicit staging).
struct StageOutcome {
  std::string path;
  Status status;  // ok = staged (or already staged)
};

// What a prefetcher needs of the stager: queue copies nobody waits for, withdraw them, read the
// counters. An interface so that the plan's prefetcher (fs/plan_runtime.h) can be tested against a
// fake that records its decisions. Implementations are thread-safe.
class StagingQueue {
 public:
  virtual ~StagingQueue() = default;
  // Queues a copy of `path` expected to have `identity`, with no callback. False if it was
  // already queued, in flight or staged.
  virtual bool Prefetch(const std::string& path, const FileIdentity& identity,
                        StagePriority priority) = 0;
  // Drops a pending request that no caller waits on; true if dropped.
  virtual bool CancelUnwaited(const std::string& path) = 0;
  virtual StagerStats stats() = 0;
  // Where a copy of `path` stands now: a reader's miss on a file whose copy is under way is a
  // copy that lost its race (the status's miss causes). One short lock, no I/O.
  virtual CopyProgress ProgressOf(const std::string& /*path*/) { return CopyProgress::kNone; }
  // Whether a copy of `path` queued now would be read from the backing store. A copy that loses
  // the race with its reader then reads the file a second time, so a prefetcher leaves files
  // close to the reader alone; a copy that comes from elsewhere (a peer) costs the backing store
  // nothing when it loses, so it is always worth asking for.
  virtual bool CopiesFromBackingStore(const std::string& /*path*/) { return true; }
  // The counters of the copies read from the backing store alone (what a prefetcher's estimate of
  // the time a backing copy takes needs): stats() unless copies also come from elsewhere.
  virtual StagerStats backing_stats() { return stats(); }
  // Bytes of the capacity held for copies that must stay (a peer job's home files): the room a
  // prefetcher may fill with copies from elsewhere is the capacity less these.
  virtual uint64_t held_bytes() { return 0; }
  // Whether this mount expects a peer agent (it has a peer key) and whether one is attached now:
  // until a distributed job's agents attach, a prefetcher leaves the files past the plan's first
  // epoch (other nodes' first-epoch shards, which peers will bring) to them (docs/PEERS.md,
  // "Before the agents attach").
  virtual bool ExpectsPeerAgent() { return false; }
  virtual bool PeerAgentAttached() { return false; }
};

class Stager final : public StagingQueue {
 public:
  using Callback = std::function<void(const StageOutcome&)>;

  Stager(const StagerOptions& options, ContentStore* store, Env* env);
  ~Stager();
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  // Queues a copy of `path` expected to have `identity`. Returns false if it was already queued,
  // in flight or staged (the callback, if any, then runs at once for the staged case). With
  // !may_evict the copy is made only into free room (ENOSPC otherwise); a request re-queued
  // with !may_evict keeps that restriction.
  bool Enqueue(const std::string& path, const FileIdentity& identity, StagePriority priority,
               Callback done = nullptr, bool may_evict = true);
  bool Prefetch(const std::string& path, const FileIdentity& identity,
                StagePriority priority) override {
    return Enqueue(path, identity, priority);
  }
  // Drops a pending request (no-op if in flight or absent).
  void Cancel(const std::string& path);
  // Drops a pending request that no caller waits on (one without callbacks), e.g. a prefetch the
  // plan no longer wants; a request someone waits for, or one in flight, stays. True if dropped.
  bool CancelUnwaited(const std::string& path) override;
  // Cancels everything pending and waits for in-flight copies.
  void Shutdown();
  StagerStats stats() override;
  CopyProgress ProgressOf(const std::string& path) override;
  // Blocks until nothing is queued or in flight and every callback has returned (tests, offline
  // staging).
  void WaitIdle();

 private:
  struct Request {
    std::string path;
    FileIdentity identity;
    StagePriority priority;
    uint64_t seq;
    std::vector<Callback> callbacks;
    bool may_evict = true;
  };
  using QueueKey = std::pair<int, uint64_t>;  // (-priority, seq): smallest first

  using DeferKey = std::pair<int64_t, uint64_t>;  // (due, realtime ns; seq): earliest first

  void WorkerLoop();
  // Under mu_: moves deferred requests that are due back to the queue, then takes the first
  // queued request whose backing file has settled (deferring those that have not) into `*out`,
  // with the copy's start (realtime ns) in `*start_ns`. False if there is none; `*retry_ns` then
  // says how long until a deferred one is due (0: none is deferred).
  bool TakeNextLocked(Request* out, int64_t* start_ns, uint64_t* retry_ns);
  // Whether a file whose ctime is `ctime_ns` has not settled for a copy starting at `start_ns`.
  bool Unsettled(int64_t ctime_ns, int64_t start_ns) const;
  // Under mu_: puts `request` aside until its backing file has settled.
  void DeferLocked(Request request);
  // The copy of in-flight `path` found its file unsettled: deferred with its callbacks.
  void DeferInFlight(const std::string& path);
  // The request taken for a copy goes in flight; its callbacks wait there.
  void StartInFlightLocked(Request* request);
  // io_uring engine hooks (run on the ring thread or its commit threads).
  CopierHooks::Next NextForCopier(CopyJob* job, uint64_t* retry_ns);
  void CopierDone(const CopyJob& job, CopyResult result, uint64_t bytes, const Status& status);
  bool TakeTokens(size_t bytes, uint64_t* wait_ns);
  // Delivers `status` to the callbacks of the in-flight `path` and updates idleness.
  void DeliverInFlight(const std::string& path, const Status& status);
  // Copies one file; `start_ns` is when its copy started (for the settle rule). Sets
  // `*unsettled` (and returns EAGAIN) when the rule defers it.
  Status CopyOne(const Request& request, int64_t start_ns, bool* unsettled);
  // Waits for `bytes` of tokens; false if Shutdown() began meanwhile.
  bool Throttle(size_t bytes);
  bool IdleLocked() const {
    return queue_.empty() && deferred_.empty() && in_flight_.empty() && delivering_ == 0;
  }

  StagerOptions options_;
  ContentStore* store_;
  Env* env_;
  std::shared_ptr<const BackingTree> backing_;  // null if it could not be opened
  Status backing_error_;                        // why not

  // guards queue_, pending_, deferred_, deferred_keys_, in_flight_, delivering_, stopping_, seq_
  std::mutex mu_;
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::map<QueueKey, Request> queue_;
  std::unordered_map<std::string, QueueKey> pending_;        // path -> its queue key
  std::map<DeferKey, Request> deferred_;                     // waiting for their file to settle
  std::unordered_map<std::string, DeferKey> deferred_keys_;  // path -> its key in deferred_
  std::unordered_map<std::string, Request> in_flight_;       // path -> request (its callbacks)
  int delivering_ = 0;  // outcomes being passed to callbacks outside the lock
  bool stopping_ = false;
  uint64_t seq_ = 0;

  std::mutex bucket_mu_;  // guards tokens_, last_refill_ns_
  double tokens_ = 0;
  uint64_t last_refill_ns_ = 0;

  std::atomic<uint64_t> files_staged_{0}, bytes_staged_{0}, failures_{0}, skipped_{0},
      deferred_unsettled_{0};
  std::vector<std::thread> workers_;
  std::unique_ptr<UringCopier> copier_;        // set iff the io_uring engine runs (on workers_[0])
  std::unique_ptr<GroupCommitter> committer_;  // set iff the thread pool runs; outlives workers_
};

}  // namespace clairfs
