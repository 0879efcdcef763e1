// BackingCallPool: threads on demand, a FIFO beyond the bound, cancel at shutdown (see
// backing_calls.h).
#include "fs/fuse/backing_calls.h"

#include <pthread.h>

#include <cerrno>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <system_error>
#include <thread>
#include <utility>

#include "planner/base/log.h"

namespace clairfs {

struct BackingCallPool::Core {
  Core(size_t bound, BackingCallState* given, std::chrono::milliseconds idle)
      : max_threads(bound), idle_exit(idle), state(given != nullptr ? given : &own_state) {}

  const size_t max_threads;
  const std::chrono::milliseconds idle_exit;
  BackingCallState own_state;
  BackingCallState* const state;

  // Guards the fields below; held only for queue and count updates, never across a call.
  std::mutex mu;
  std::condition_variable work;   // a call was queued, or shutdown: idle threads look again
  std::condition_variable ended;  // a thread ended (the destructor waits for none left)
  std::deque<std::unique_ptr<Call>> queue;
  size_t threads = 0;  // pool threads alive
  size_t waiting = 0;  // of them, waiting for work
  bool stopping = false;
  int stop_error = 0;

  void EndOne() { state->in_flight_.fetch_sub(1, std::memory_order_relaxed); }
};

BackingCallPool::BackingCallPool(size_t max_threads, BackingCallState* state,
                                 std::chrono::milliseconds idle_exit)
    : core_(std::make_shared<Core>(max_threads < 1 ? 1 : max_threads, state, idle_exit)) {
  core_->state->max_threads_.store(core_->max_threads, std::memory_order_relaxed);
}

BackingCallPool::~BackingCallPool() {
  Shutdown(EIO);
  std::unique_lock<std::mutex> lock(core_->mu);
  core_->work.notify_all();
  core_->ended.wait(lock, [&] { return core_->threads == 0; });
}

const BackingCallState& BackingCallPool::state() const { return *core_->state; }

void BackingCallPool::Submit(std::unique_ptr<Call> call) {
  Core& c = *core_;
  BackingCallState& s = *c.state;
  s.deferred_.fetch_add(1, std::memory_order_relaxed);
  const uint64_t now = s.in_flight_.fetch_add(1, std::memory_order_relaxed) + 1;
  uint64_t max = s.max_in_flight_.load(std::memory_order_relaxed);
  while (now > max && !s.max_in_flight_.compare_exchange_weak(max, now)) {
  }
  std::unique_lock<std::mutex> lock(c.mu);
  if (c.stopping) {
    const int error = c.stop_error;
    lock.unlock();
    s.cancelled_.fetch_add(1, std::memory_order_relaxed);
    call->Cancel(error);
    c.EndOne();
    return;
  }
  // An idle thread takes it (each waiting thread takes one queued call).
  if (c.waiting > c.queue.size()) {
    c.queue.push_back(std::move(call));
    s.queued_.fetch_add(1, std::memory_order_relaxed);
    c.work.notify_one();
    return;
  }
  if (c.threads < c.max_threads) {
    ++c.threads;
    s.threads_.fetch_add(1, std::memory_order_relaxed);
    lock.unlock();
    // The thread owns the call from here. std::thread destroys its arguments when it cannot
    // start one, so it gets a raw pointer: on failure the call is still ours.
    Call* raw = call.get();
    try {
      std::thread(Serve, core_, raw).detach();
      (void)call.release();
      return;
    } catch (const std::system_error& e) {
      Log(LogLevel::kWarn, "backing calls: cannot start a thread (%s)", e.what());
      lock.lock();
      --c.threads;
      s.threads_.fetch_sub(1, std::memory_order_relaxed);
      c.ended.notify_all();
      if (c.stopping || c.threads == 0) {
        const bool stopping = c.stopping;
        const int error = c.stop_error;
        lock.unlock();
        if (stopping) {
          s.cancelled_.fetch_add(1, std::memory_order_relaxed);
          call->Cancel(error);
        } else {
          call->Run();  // no pool thread to wait for: served here, as without a pool
        }
        c.EndOne();
        return;
      }
    }
  }
  // Beyond the bound: the next thread that finishes a call takes it.
  c.queue.push_back(std::move(call));
  s.queued_.fetch_add(1, std::memory_order_relaxed);
}

void BackingCallPool::Shutdown(int error) {
  Core& c = *core_;
  std::deque<std::unique_ptr<Call>> cancelled;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (!c.stopping) {
      c.stopping = true;
      c.stop_error = error;
    }
    cancelled.swap(c.queue);
    c.work.notify_all();
  }
  BackingCallState& s = *c.state;
  for (auto& call : cancelled) {
    s.queued_.fetch_sub(1, std::memory_order_relaxed);
    s.cancelled_.fetch_add(1, std::memory_order_relaxed);
    call->Cancel(error);
    c.EndOne();
  }
}

void BackingCallPool::Serve(std::shared_ptr<Core> core, Call* first) {
  pthread_setname_np(pthread_self(), "clairfs-backing");
  Core& c = *core;
  BackingCallState& s = *c.state;
  std::unique_ptr<Call> call(first);
  std::unique_lock<std::mutex> lock(c.mu);
  for (;;) {
    if (call != nullptr) {
      lock.unlock();
      call->Run();
      call.reset();
      c.EndOne();
      lock.lock();
    }
    if (c.queue.empty() && !c.stopping) {
      ++c.waiting;
      c.work.wait_for(lock, c.idle_exit, [&] { return !c.queue.empty() || c.stopping; });
      --c.waiting;
    }
    if (c.queue.empty()) break;  // idle for idle_exit, or shutting down
    call = std::move(c.queue.front());
    c.queue.pop_front();
    s.queued_.fetch_sub(1, std::memory_order_relaxed);
  }
  --c.threads;
  s.threads_.fetch_sub(1, std::memory_order_relaxed);
  c.ended.notify_all();
  // `core` (this thread's reference) outlives the unlock: the pool may be gone by now.
}

}  // namespace clairfs
