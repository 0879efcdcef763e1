// DeferredReplies: a min-heap of due callbacks served by one timer thread.
#include "tools/bench/deferred_replies.h"

#include <time.h>

#include <algorithm>
#include <chrono>

namespace clairfs {

uint64_t DeferredReplies::NowNanos() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1'000'000'000u + static_cast<uint64_t>(ts.tv_nsec);
}

void DeferredReplies::Start() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (running_) return;
  running_ = true;
  thread_ = std::thread([this] { Run(); });
}

void DeferredReplies::Stop() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!running_) return;
    running_ = false;
  }
  wake_.notify_all();
  thread_.join();
}

void DeferredReplies::Submit(uint64_t due_ns, Callback callback) noexcept {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (running_ && due_ns > NowNanos() && ReserveOneMore()) {
      bool earliest = heap_.empty() || due_ns < heap_.front().due_ns;
      heap_.push_back(Entry{due_ns, next_sequence_++, std::move(callback)});  // cannot throw now
      std::push_heap(heap_.begin(), heap_.end(), std::greater<Entry>());
      // Only a new earliest entry changes how long the timer thread should sleep.
      if (earliest) wake_.notify_one();
      return;
    }
  }
  callback();
}

bool DeferredReplies::ReserveOneMore() noexcept {
  if (heap_.size() < heap_.capacity()) return true;
  try {
    heap_.reserve(std::max<size_t>(64, 2 * heap_.capacity()));
    return true;
  } catch (...) {
    return false;  // out of memory: the caller answers at once rather than never
  }
}

size_t DeferredReplies::pending() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return heap_.size();
}

void DeferredReplies::Run() {
  std::unique_lock<std::mutex> lock(mutex_);
  for (;;) {
    if (heap_.empty()) {
      if (!running_) return;
      wake_.wait(lock);
      continue;
    }
    uint64_t now = NowNanos();
    uint64_t due = heap_.front().due_ns;
    if (running_ && due > now) {
      // steady_clock is CLOCK_MONOTONIC on Linux, the clock of NowNanos().
      wake_.wait_for(lock, std::chrono::nanoseconds(due - now));
      continue;
    }
    // Due (or stopping: flush everything now). Run the callback unlocked so that submitters
    // are not held up by a reply being written.
    std::pop_heap(heap_.begin(), heap_.end(), std::greater<Entry>());
    Callback callback = std::move(heap_.back().callback);
    heap_.pop_back();
    lock.unlock();
    callback();
    lock.lock();
  }
}

}  // namespace clairfs
