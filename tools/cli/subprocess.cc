// Running a program and waiting for it (see subprocess.h).
#include "tools/cli/subprocess.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <csignal>
#include <fstream>

extern char** environ;

namespace clairfs {

Result<SubprocessResult> RunProgram(const std::vector<std::string>& argv, bool capture_stderr) {
  if (argv.empty()) return Status::Invalid("RunProgram: empty argv");
  int err_pipe[2] = {-1, -1};
  if (capture_stderr && pipe2(err_pipe, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe");
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
  if (capture_stderr) posix_spawn_file_actions_adddup2(&actions, err_pipe[1], STDERR_FILENO);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  int rc = posix_spawnp(&pid, args[0], &actions, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (capture_stderr) close(err_pipe[1]);
  if (rc != 0) {
    if (capture_stderr) close(err_pipe[0]);
    return Status::FromErrno(rc, "run " + argv[0]);
  }
  SubprocessResult result;
  if (capture_stderr) {
    char buf[4096];
    for (;;) {
      ssize_t n = read(err_pipe[0], buf, sizeof(buf));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      result.err.append(buf, static_cast<size_t>(n));
    }
    close(err_pipe[0]);
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return Status::FromErrno(errno, "wait for " + argv[0]);
  }
  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exit_code = 128 + WTERMSIG(status);
  return result;
}

Result<std::string> SelfExecutable() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof(buf) - 1);
  if (n < 0) return Status::FromErrno(errno, "readlink /proc/self/exe");
  return std::string(buf, static_cast<size_t>(n));
}

bool ProcessRunning(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  // /proc/PID/stat: "PID (COMM) STATE ..."; COMM may hold spaces and parentheses.
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

}  // namespace clairfs
