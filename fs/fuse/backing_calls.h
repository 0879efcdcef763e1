// BackingCallPool: the threads that answer kernel requests which must call the backing store (an
// OPEN of a file that is not staged, any OPEN under --revalidate open, a READ of a backing file),
// so that a backing store that hangs holds none of the daemon's request threads
// (docs/RELIABILITY.md, backing store faults, finding 3). libfuse's low-level API lets any thread
// reply to a request later: the adapter hands such a request to the pool and returns; a pool
// thread runs the same code and replies.
//
// Contract:
// - Submit() never blocks on a call. The call runs on an idle pool thread, else on a new thread
//   while fewer than `max_threads` exist, else it waits in a queue (first in, first out) for the
//   next thread that finishes a call. Threads are made on demand; one idle for `idle_exit` ends.
// - Each call is either run (Run) or answered with an error without running (Cancel), exactly
//   once, never both. Run and Cancel must not throw; Cancel must not block.
// - Shutdown(error): every queued call is cancelled with `error` at once, on the calling thread,
//   and every later Submit is cancelled at once on the submitting thread. Calls already running
//   go on (a hung one may never end): Shutdown does not wait for them. Any thread; idempotent.
// - The destructor shuts down, wakes idle threads and waits until every running call has ended
//   (a call hung on the backing store holds it, as a hung request thread held libfuse's loop
//   before; the daemon's stop deadline bounds both). The threads' shared state outlives the pool
//   object until the last thread has left it.
// - If no thread can be made (the system's limit), a call is queued when some pool thread exists,
//   else run on the submitting thread (the behaviour without a pool).
//
// Threading: every method may be called from any thread. BackingCallState is read by status from
// any thread (relaxed atomics: a snapshot of counters, not of one instant).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>

namespace clairfs {

// What `clairfs status` reports about the pool. Owned by the daemon (it outlives the pool).
class BackingCallState {
 public:
  uint64_t deferred() const { return deferred_.load(std::memory_order_relaxed); }
  uint64_t in_flight() const { return in_flight_.load(std::memory_order_relaxed); }
  uint64_t max_in_flight() const { return max_in_flight_.load(std::memory_order_relaxed); }
  uint64_t queued() const { return queued_.load(std::memory_order_relaxed); }
  uint64_t threads() const { return threads_.load(std::memory_order_relaxed); }
  uint64_t max_threads() const { return max_threads_.load(std::memory_order_relaxed); }
  uint64_t cancelled() const { return cancelled_.load(std::memory_order_relaxed); }

 private:
  friend class BackingCallPool;
  std::atomic<uint64_t> deferred_{0};       // calls submitted since the mount
  std::atomic<uint64_t> in_flight_{0};      // submitted, not yet run to the end or cancelled
  std::atomic<uint64_t> max_in_flight_{0};  // the most in flight at once
  std::atomic<uint64_t> queued_{0};         // waiting for a thread now (part of in_flight)
  std::atomic<uint64_t> threads_{0};        // pool threads now (running or idle)
  std::atomic<uint64_t> max_threads_{0};    // the bound
  std::atomic<uint64_t> cancelled_{0};      // answered with an error at shutdown, never run
};

class BackingCallPool {
 public:
  // One deferred request (see the contract above).
  class Call {
   public:
    virtual ~Call() = default;
    virtual void Run() = 0;
    virtual void Cancel(int error) = 0;
  };

  static constexpr std::chrono::milliseconds kDefaultIdleExit{10000};

  // `max_threads` >= 1. `state` may be null (counted in a state of the pool's own).
  BackingCallPool(size_t max_threads, BackingCallState* state,
                  std::chrono::milliseconds idle_exit = kDefaultIdleExit);
  ~BackingCallPool();
  BackingCallPool(const BackingCallPool&) = delete;
  BackingCallPool& operator=(const BackingCallPool&) = delete;

  void Submit(std::unique_ptr<Call> call);
  void Shutdown(int error);
  const BackingCallState& state() const;

 private:
  struct Core;
  static void Serve(std::shared_ptr<Core> core, Call* first);  // owns `first`
  std::shared_ptr<Core> core_;
};

}  // namespace clairfs
