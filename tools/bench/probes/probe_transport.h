// The two ways fuse_uring_probe receives FUSE requests and sends replies, plus the INIT
// handshake they share.
//
// - ServeInit: reads the kernel's INIT from /dev/fuse and replies, accepting FUSE_OVER_IO_URING
//   and/or FUSE_PASSTHROUGH when asked for and offered. Called once, before any loop starts.
// - DevFuseLoop: the classic transport. `threads` threads each read() one request from
//   /dev/fuse, serve it and writev() the reply (what libfuse's multi-threaded loop does, minus
//   its bookkeeping). Threads may be pinned to CPU i % ncpu. With the ring in use it still
//   receives FORGET/BATCH_FORGET/INTERRUPT.
// - RingQueues: FUSE-over-io_uring (fs/fuse_uring_abi.h). One queue per possible CPU,
//   `threads_per_queue` threads per queue pinned to that CPU, each with its own io_uring
//   (SQE128) and `depth` registered entries; a thread serves the requests its entries receive
//   and commits each reply with COMMIT_AND_FETCH, which re-arms the entry. (With depth 1 an
//   entry is available only while its thread is idle, so a slow request never holds up another.)
//
// Both loops end when the connection goes away (unmount): read() fails with ENODEV, ring
// commands complete with an error. Join() waits for that. Not copyable; Start() once.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "planner/base/status.h"
#include "tools/bench/probes/probe_fs.h"

namespace clairfs::probe {

struct InitRequest {
  bool want_uring = false;
  bool want_passthrough = false;
  uint32_t max_write = 256 * 1024;  // also the READ size limit (max_pages)
};

struct InitResult {
  uint32_t kernel_major = 0, kernel_minor = 0;
  bool uring_offered = false;        // the kernel offered FUSE_OVER_IO_URING (enable_uring=Y)
  bool passthrough_offered = false;  // the kernel offered FUSE_PASSTHROUGH
  bool uring_accepted = false;       // our reply accepted it
  bool passthrough_accepted = false;
};

Result<InitResult> ServeInit(int fuse_fd, const InitRequest& request);

class DevFuseLoop {
 public:
  DevFuseLoop() = default;
  ~DevFuseLoop() { Join(); }
  DevFuseLoop(const DevFuseLoop&) = delete;
  DevFuseLoop& operator=(const DevFuseLoop&) = delete;

  void Start(int fuse_fd, ProbeFs* fs, int threads, bool pin, uint32_t max_write);
  void Join();

 private:
  void Run(int index, bool pin);
  int fd_ = -1;
  ProbeFs* fs_ = nullptr;
  uint32_t max_write_ = 0;
  std::vector<std::thread> threads_;
};

class RingQueues {
 public:
  RingQueues() = default;
  ~RingQueues() { Join(); }
  RingQueues(const RingQueues&) = delete;
  RingQueues& operator=(const RingQueues&) = delete;

  // Starts one thread per possible CPU and returns once every queue has registered its
  // entries (then the kernel routes requests to the ring), or the first registration error.
  // `defer_taskrun`: create the rings with SINGLE_ISSUER | DEFER_TASKRUN.
  Status Start(int fuse_fd, ProbeFs* fs, int threads_per_queue, int depth, uint32_t payload_size,
               bool defer_taskrun);
  void Join();
  int queues() const { return queues_; }

 private:
  void Run(int index, int qid);
  int queues_ = 0;
  int fd_ = -1;
  ProbeFs* fs_ = nullptr;
  int depth_ = 0;
  uint32_t payload_size_ = 0;
  bool defer_taskrun_ = false;
  std::vector<std::thread> threads_;
  // Registration outcome per thread: 0 pending, 1 registered, -errno failed.
  std::vector<std::atomic<int>> registered_;
};

}  // namespace clairfs::probe
