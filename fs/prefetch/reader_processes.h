// ReaderProcesses: which reader an opening thread belongs to, for plan inference (issue 22;
// docs/PLANNER.md, "Plan inference on a mount").
//
// A FUSE request names the thread that made it. A training rank reads through its DataLoader
// workers, which are its child processes, and a launcher (torchrun, mpirun, srun) sits above the
// ranks. The reader of a thread is its process (Tgid), then, while that process is a worker of its
// parent, the parent: a worker is a child whose command line equals its parent's (forked without
// exec: the fork start method) or names Python's multiprocessing spawn or forkserver entry points.
// A rank started by a launcher was exec'd with its own command line, so it stays its own reader.
// A thread whose /proc entries are gone (it exited) is its own reader.
//
// Cost: two or three small /proc reads per new thread, cached (bounded; the cache is cleared when
// full). Call it off the FUSE threads: the plan watcher's thread does.
// Thread-safety: not thread-safe (one caller thread). Errors: none (fallbacks above).
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <unordered_map>

namespace clairfs {

class ReaderProcesses {
 public:
  // `proc_root`: where procfs is (tests give a directory of fake entries).
  explicit ReaderProcesses(std::string proc_root = "/proc") : proc_root_(std::move(proc_root)) {}

  // The reader (a process id) of thread `tid`; 0 for 0.
  uint64_t ReaderOf(uint32_t tid);
  size_t cached() const { return cache_.size(); }

 private:
  struct Process {
    pid_t tgid = 0;
    pid_t ppid = 0;
  };
  std::optional<Process> StatusOf(pid_t pid) const;
  std::optional<std::string> CommandLineOf(pid_t pid) const;
  bool IsWorkerOf(pid_t child, pid_t parent) const;

  std::string proc_root_;
  std::unordered_map<uint32_t, uint64_t> cache_;
};

// Parses "Tgid:" and "PPid:" from the text of /proc/PID/status (nullopt if either is missing).
std::optional<std::pair<pid_t, pid_t>> ParseTgidAndParent(std::string_view status);

}  // namespace clairfs
