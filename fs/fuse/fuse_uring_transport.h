// FuseUringTransport: FUSE requests over io_uring (Linux >= 6.14, fuse module parameter
// enable_uring=Y) for the daemon, beside libfuse 3.14's /dev/fuse loop (docs/FUSE-URING.md,
// "Design: the ring inside the daemon"). It owns no libfuse types: requests are handed to a
// Dispatch function (the adapter's, which calls fuse_session_process_buf) and replies come back
// through TryReply, which the adapter's custom io writev hook calls first.
//
// Life of a mount with the ring:
// 1. The read hook shows every /dev/fuse request to NoteDevRequest: it learns INIT's unique and
//    whether the kernel offers FUSE_OVER_IO_URING.
// 2. The writev hook calls PatchInitReply on every reply: the INIT reply accepts the ring (flags2
//    bit 9, FUSE_INIT_EXT) when offered and the mode is not off, and records max_write and
//    max_pages (they size the payload buffers).
// 3. After the INIT reply, Start() runs one queue per possible CPU with `threads_per_queue`
//    threads pinned to that CPU, each with its own io_uring (SQE128 | SINGLE_ISSUER |
//    DEFER_TASKRUN) and one registered entry, and returns once every thread registered (the
//    kernel holds new requests until every queue has an entry) or with the first error (the
//    kernel then drops the ring and the connection stays on /dev/fuse).
// 4. A ring thread rebuilds each request in /dev/fuse layout (fuse_uring_request.h), marks it
//    as this thread's current ring request and calls Dispatch on it. libfuse replies from the
//    same thread through the writev hook; TryReply copies the reply into the entry when its
//    unique is the current request's. The thread then commits the entry (COMMIT_AND_FETCH).
//    A request left unanswered by Dispatch is answered EIO (logged once, counted).
// 5. Unmount aborts the connection: the entries' commands complete with an error and the threads
//    end. Stop() (called after unmount, before the session is destroyed) joins them; if the
//    connection is still up it wakes them through an eventfd each ring polls, and closing their
//    rings cancels the commands.
//
// FORGET, BATCH_FORGET, INTERRUPT and notifications stay on /dev/fuse (the kernel's choice).
//
// Threading: NoteDevRequest and PatchInitReply run on libfuse's threads before Start; TryReply
// runs on any thread (it only touches thread-local state); Start and Stop from one thread.
// FuseTransportState is read by status from any thread.
#pragma once

#include <sys/types.h>
#include <sys/uio.h>

#include <atomic>
#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "planner/base/status.h"

namespace clairfs {

enum class FuseUringMode { kAuto, kOn, kOff };

// Parses "auto", "on" or "off".
Result<FuseUringMode> ParseFuseUringMode(const std::string& text);

// What `clairfs status` reports about the transport. Thread-safe.
class FuseTransportState {
 public:
  void Set(bool uring, std::string reason, int queues, int threads_per_queue);
  bool uring() const;
  std::string reason() const;
  int queues() const;
  int threads_per_queue() const;
  // Requests served over the ring, and those of them the handlers left unanswered (answered EIO).
  uint64_t ring_requests() const { return ring_requests_.load(std::memory_order_relaxed); }
  uint64_t ring_unanswered() const { return ring_unanswered_.load(std::memory_order_relaxed); }
  void AddRingRequest() { ring_requests_.fetch_add(1, std::memory_order_relaxed); }
  void AddRingUnanswered() { ring_unanswered_.fetch_add(1, std::memory_order_relaxed); }

 private:
  std::atomic<uint64_t> ring_requests_{0};
  std::atomic<uint64_t> ring_unanswered_{0};
  // Guards the four fields below (written once at INIT or at fallback, read by status); the
  // counters above are atomics outside it.
  mutable std::mutex mu_;
  bool uring_ = false;
  std::string reason_ = "not negotiated yet";
  int queues_ = 0;
  int threads_per_queue_ = 0;
};

class FuseUringTransport {
 public:
  // Serves one request given in /dev/fuse layout (`len` bytes, writable) and replies before
  // returning.
  using Dispatch = std::function<void(char* request, size_t len)>;

  FuseUringTransport(FuseUringMode mode, FuseTransportState* state);
  ~FuseUringTransport() { Stop(); }
  FuseUringTransport(const FuseUringTransport&) = delete;
  FuseUringTransport& operator=(const FuseUringTransport&) = delete;

  // Step 1 (read hook): `buf` holds `n` bytes read from /dev/fuse.
  void NoteDevRequest(const void* buf, ssize_t n);
  // Step 2 (writev hook, before the write): patches the INIT reply; other replies untouched.
  void PatchInitReply(struct iovec* iov, int count);
  // Whether the kernel offered the ring at INIT, and whether our INIT reply accepted it.
  bool offered() const { return offered_.load(std::memory_order_acquire); }
  bool accepted() const { return accepted_.load(std::memory_order_acquire); }

  // Step 3: after the INIT reply was written. Sets the state either way.
  Status Start(int fuse_fd, Dispatch dispatch, int threads_per_queue);
  // Step 5.
  void Stop();

  // Step 4 (writev hook, first): if the calling thread is serving a ring request whose unique is
  // the reply's, stores the reply in its entry, sets *written to what writev would have returned
  // (or -1 and errno) and returns true. Otherwise returns false and the reply goes to /dev/fuse.
  static bool TryReply(const struct iovec* iov, int count, ssize_t* written);

 private:
  void Run(int index, int qid);

  const FuseUringMode mode_;
  FuseTransportState* state_;
  std::atomic<uint64_t> init_unique_{0};
  std::atomic<bool> init_seen_{false};
  std::atomic<bool> offered_{false};
  std::atomic<bool> accepted_{false};
  std::atomic<bool> init_patched_{false};
  std::atomic<uint32_t> payload_size_{0};  // from the INIT reply

  int fuse_fd_ = -1;
  Dispatch dispatch_;
  std::atomic<bool> stop_{false};
  int stop_fd_ = -1;  // eventfd each ring polls; written by Stop()
  std::vector<std::thread> threads_;
  // Registration outcome per thread: 0 pending, 1 registered, -errno failed.
  std::vector<std::atomic<int>> registered_;
  std::once_flag unanswered_logged_;
};

}  // namespace clairfs
