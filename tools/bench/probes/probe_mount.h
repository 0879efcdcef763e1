// ProbeMount: one mounted ProbeFs served over one transport (classic /dev/fuse loop, or
// FUSE-over-io_uring with a /dev/fuse thread for FORGET/INTERRUPT).
//
// Start() mounts with mount(2) (needs root), serves INIT, and starts the transport; it returns
// only when the mount serves requests, or an error with nothing left mounted. Stop() (and the
// destructor) unmounts (lazily if busy), waits for every thread and closes /dev/fuse. Not
// thread-safe: one owner starts and stops it.
#pragma once

#include <memory>
#include <string>

#include "planner/base/status.h"
#include "tools/bench/probes/probe_fs.h"
#include "tools/bench/probes/probe_transport.h"

namespace clairfs::probe {

struct ProbeMountOptions {
  std::string mountpoint;
  bool uring = false;   // FUSE-over-io_uring; else the classic loop
  int dev_threads = 2;  // classic loop threads (with the ring: 1, for FORGET/INTERRUPT)
  bool pin_dev_threads = false;
  int ring_threads_per_queue = 1;  // ring threads (each with its own io_uring) per CPU queue
  int queue_depth = 8;             // ring entries per ring thread
  bool defer_taskrun = true;       // rings with SINGLE_ISSUER | DEFER_TASKRUN
  uint32_t max_write = 256 * 1024;
};

class ProbeMount {
 public:
  static Result<std::unique_ptr<ProbeMount>> Start(ProbeFs* fs, const ProbeMountOptions& options);
  ~ProbeMount() { Stop(); }
  ProbeMount(const ProbeMount&) = delete;
  ProbeMount& operator=(const ProbeMount&) = delete;

  void Stop();
  const InitResult& init() const { return init_; }
  int ring_queues() const { return ring_.queues(); }
  const std::string& mountpoint() const { return options_.mountpoint; }

 private:
  ProbeMount(ProbeFs* fs, const ProbeMountOptions& options) : fs_(fs), options_(options) {}
  ProbeFs* fs_;
  ProbeMountOptions options_;
  int fd_ = -1;
  bool mounted_ = false;
  InitResult init_;
  DevFuseLoop dev_loop_;
  RingQueues ring_;
};

}  // namespace clairfs::probe
