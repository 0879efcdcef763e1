// DeferredReplies: runs callbacks (FUSE replies) at a given time on one timer thread.
//
// The PFS emulator adds latency without holding a worker: the worker does the real operation,
// packs the reply into a callback and hands it here with its due time; the timer thread keeps a
// min-heap by due time and runs each callback when it is due. 64 concurrent opens at 2 ms thus
// finish after about 2 ms, not 64 x 2 ms. A callback whose due time has passed when it is
// submitted runs at once on the submitting thread (the zero-delay path costs no thread hop).
//
// Callbacks run one at a time on the timer thread, in due-time order (FIFO among equal times);
// they must be short (a fuse_reply_* call). Stop() runs every pending callback immediately (so
// no request is left unanswered), then joins the thread; submissions after Stop() run inline.
// Thread-safety: Submit() from any thread; Start()/Stop() from the owner. Times are
// CLOCK_MONOTONIC nanoseconds (NowNanos()).
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace clairfs {

class DeferredReplies {
 public:
  using Callback = std::function<void()>;

  DeferredReplies() = default;
  ~DeferredReplies() { Stop(); }
  DeferredReplies(const DeferredReplies&) = delete;
  DeferredReplies& operator=(const DeferredReplies&) = delete;

  static uint64_t NowNanos();

  void Start();
  void Stop();
  // Runs `callback` at `due_ns` (or now, inline, if that has passed or the queue is stopped).
  // Never throws: if the queue cannot grow (out of memory) the callback runs at once, so a
  // request is answered early rather than never.
  void Submit(uint64_t due_ns, Callback callback) noexcept;
  // Callbacks waiting (for tests and stats).
  size_t pending() const;

 private:
  struct Entry {
    uint64_t due_ns;
    uint64_t sequence;  // FIFO among equal due times
    Callback callback;
    bool operator>(const Entry& other) const {
      return due_ns != other.due_ns ? due_ns > other.due_ns : sequence > other.sequence;
    }
  };

  void Run();
  // Makes room for one more entry in heap_ (mutex_ held); false if memory is exhausted.
  bool ReserveOneMore() noexcept;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  // Guarded by mutex_: the heap (a min-heap by due time via std::push_heap/pop_heap on a vector,
  // so capacity can be reserved before a callback is moved in), the sequence counter and the
  // running flag.
  std::vector<Entry> heap_;
  uint64_t next_sequence_ = 0;
  bool running_ = false;
  std::thread thread_;  // owned by Start()/Stop()
};

}  // namespace clairfs
