// Stager: copies backing files into the content store in the background.
//
// Requests are queued by priority (higher first, FIFO within a priority) and de-duplicated by
// path: a path already queued, in flight or staged is not queued again (a higher priority
// re-queue raises it). Worker threads (--stage-threads) copy with a shared token bucket
// (--stage-bandwidth) so a node cannot flood the PFS. A copy is published only if the backing
// file's identity equals the expected one before and after the copy; otherwise it is discarded.
// Failures on the cache device (ENOSPC, EIO) drop that copy, are counted, and logged once per kind;
// the file stays served from the backing store. Nothing here blocks a reader: Enqueue never waits.
//
// Thread-safe. Shutdown() cancels pending work and waits for copies in flight to end.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cache/content_store.h"
#include "cache/env.h"
#include "cache/node_attr.h"
#include "planner/status.h"

namespace clairfs {

enum class StagePriority : int { kLow = 0, kNormal = 1, kHigh = 2 };

struct StagerOptions {
  std::string backing_root;
  int threads = 4;
  uint64_t bandwidth = 0;  // bytes/s over all workers; 0 = unlimited
  size_t chunk_size = 1 << 20;
};

struct StagerStats {
  uint64_t queued = 0;     // waiting
  uint64_t in_flight = 0;  // being copied
  uint64_t files_staged = 0;
  uint64_t bytes_staged = 0;
  uint64_t failures = 0;  // copies dropped on an error
  uint64_t skipped = 0;   // not staged: too large, changed, or gone
};

// Outcome of one request, for callers that wait (explicit staging).
struct StageOutcome {
  std::string path;
  Status status;  // ok = staged (or already staged)
};

class Stager {
 public:
  using Callback = std::function<void(const StageOutcome&)>;

  Stager(const StagerOptions& options, ContentStore* store, Env* env);
  ~Stager();
  Stager(const Stager&) = delete;
  Stager& operator=(const Stager&) = delete;

  // Queues a copy of `path` expected to have `identity`. Returns false if it was already queued,
  // in flight or staged (the callback, if any, then runs at once for the staged case).
  bool Enqueue(const std::string& path, const FileIdentity& identity, StagePriority priority,
               Callback done = nullptr);
  // Drops a pending request (no-op if in flight or absent).
  void Cancel(const std::string& path);
  // Cancels everything pending and waits for in-flight copies.
  void Shutdown();
  StagerStats stats();
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
  };
  using QueueKey = std::pair<int, uint64_t>;  // (-priority, seq): smallest first

  void WorkerLoop();
  Status CopyOne(const Request& request);
  // Waits for `bytes` of tokens; false if Shutdown() began meanwhile.
  bool Throttle(size_t bytes);
  bool IdleLocked() const { return queue_.empty() && in_flight_.empty() && delivering_ == 0; }

  StagerOptions options_;
  ContentStore* store_;
  Env* env_;

  std::mutex mu_;  // guards queue_, pending_, in_flight_, delivering_, stopping_, seq_
  std::condition_variable work_cv_;
  std::condition_variable idle_cv_;
  std::map<QueueKey, Request> queue_;
  std::unordered_map<std::string, QueueKey> pending_;  // path -> its queue key
  std::unordered_map<std::string, std::vector<Callback>> in_flight_;
  int delivering_ = 0;  // outcomes being passed to callbacks outside the lock
  bool stopping_ = false;
  uint64_t seq_ = 0;

  std::mutex bucket_mu_;  // guards tokens_, last_refill_ns_
  double tokens_ = 0;
  uint64_t last_refill_ns_ = 0;

  std::atomic<uint64_t> files_staged_{0}, bytes_staged_{0}, failures_{0}, skipped_{0};
  std::vector<std::thread> workers_;
};

}  // namespace clairfs
