// BackgroundProcess: a command a test runs while it does other things (an mpirun of peer agents,
// say), with its output in a file, in a process group of its own, and always ended: the
// destructor sends SIGTERM to the group, then SIGKILL after a grace period, and reaps it.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

namespace clairfs::testing {

class BackgroundProcess {
 public:
  // Starts argv (execvp) with extra environment "K=V" entries; stdout and stderr go to
  // `output_path`.
  BackgroundProcess(const std::vector<std::string>& argv, const std::string& output_path,
                    const std::vector<std::string>& env = {});
  ~BackgroundProcess();
  BackgroundProcess(const BackgroundProcess&) = delete;
  BackgroundProcess& operator=(const BackgroundProcess&) = delete;

  pid_t pid() const { return pid_; }
  // Waits up to `timeout_seconds`; the exit code (128 + signal), or -1 if still running.
  int Wait(int timeout_seconds);
  bool running();
  // Everything the process wrote so far.
  std::string Output() const;

 private:
  pid_t pid_ = -1;
  int exit_code_ = -1;
  std::string output_path_;
};

// Pids of processes whose command line holds every string of `needles` (as whole arguments).
std::vector<pid_t> FindProcesses(const std::vector<std::string>& needles);

}  // namespace clairfs::testing
