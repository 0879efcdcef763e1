// BackgroundProcess (see background_process.h).
#include "tests/background_process.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <thread>

#include "tests/test_util.h"

namespace clairfs::testing {

BackgroundProcess::BackgroundProcess(const std::vector<std::string>& argv,
                                     const std::string& output_path,
                                     const std::vector<std::string>& env)
    : output_path_(output_path) {
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    int out = open(output_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (out >= 0) {
      dup2(out, 1);
      dup2(out, 2);
    }
    ExecInChild(argv, env);
  }
  if (pid_ > 0) setpgid(pid_, pid_);
}

BackgroundProcess::~BackgroundProcess() {
  if (pid_ <= 0 || exit_code_ >= 0) return;
  kill(-pid_, SIGTERM);
  if (Wait(10) < 0) {
    kill(-pid_, SIGKILL);
    Wait(10);
  }
  // Anything of its group still alive (a rank that ignored the TERM) goes too.
  kill(-pid_, SIGKILL);
}

int BackgroundProcess::Wait(int timeout_seconds) {
  if (exit_code_ >= 0 || pid_ <= 0) return exit_code_;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  for (;;) {
    int status = 0;
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      exit_code_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      return exit_code_;
    }
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
}

bool BackgroundProcess::running() { return Wait(0) < 0; }

std::string BackgroundProcess::Output() const { return ReadFile(output_path_); }

std::vector<pid_t> FindProcesses(const std::vector<std::string>& needles) {
  std::vector<pid_t> pids;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.empty() || !isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::string cmdline;
    try {
      cmdline = ReadFile("/proc/" + name + "/cmdline");
    } catch (...) {
      continue;
    }
    std::vector<std::string> args;
    size_t start = 0;
    for (size_t i = 0; i < cmdline.size(); ++i) {
      if (cmdline[i] == '\0') {
        args.push_back(cmdline.substr(start, i - start));
        start = i + 1;
      }
    }
    bool all = true;
    for (const std::string& needle : needles) {
      bool found = false;
      for (const std::string& a : args) found = found || a == needle;
      all = all && found;
    }
    if (all && !needles.empty()) pids.push_back(static_cast<pid_t>(std::stol(name)));
  }
  return pids;
}

}  // namespace clairfs::testing
