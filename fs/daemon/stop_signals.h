// StopSignalWatch: tells the daemon, on a thread of its own, that SIGINT, SIGTERM or SIGHUP
// arrived, while the handlers already installed for them (libfuse's, which end the session loop)
// keep doing their job.
//
// Why: ending the loop is not enough to stop promptly. libfuse joins its workers before the loop
// returns, and a worker may be waiting on a backing store that hangs (an open that takes
// minutes); meanwhile the mount stays attached and every new request queues behind a daemon that
// is going away. The daemon uses this notice to detach the mount at once and to bound how long
// the rest of the shutdown may take (fs/daemon.cc).
//
// Install() chains a handler in front of the current one for each signal: it calls the previous
// handler, then writes the signal number to a pipe (both async-signal-safe); a thread reads the
// pipe and calls `on_stop(signal)` once, for the first signal. The destructor restores the
// previous handlers and joins the thread. One watch per process.
#pragma once

#include <signal.h>

#include <functional>
#include <thread>

#include "planner/base/status.h"

namespace clairfs {

class StopSignalWatch {
 public:
  StopSignalWatch() = default;
  ~StopSignalWatch();
  StopSignalWatch(const StopSignalWatch&) = delete;
  StopSignalWatch& operator=(const StopSignalWatch&) = delete;

  Status Install(std::function<void(int)> on_stop);

 private:
  void Run();
  std::function<void(int)> on_stop_;
  int pipe_[2] = {-1, -1};
  bool installed_ = false;
  struct sigaction previous_[3] = {};
  std::thread thread_;
};

}  // namespace clairfs
