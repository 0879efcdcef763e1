// StopSignalWatch: chained handlers, the notice pipe and its thread (see stop_signals.h).
#include "fs/daemon/stop_signals.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace clairfs {
namespace {

constexpr int kSignals[3] = {SIGINT, SIGTERM, SIGHUP};

// Set while a watch is installed; read by the handler.
std::atomic<int> g_notice_fd{-1};
struct sigaction g_previous[3];

int SlotOf(int sig) {
  for (int i = 0; i < 3; ++i) {
    if (kSignals[i] == sig) return i;
  }
  return -1;
}

void OnStopSignal(int sig) {
  const int saved_errno = errno;
  const int slot = SlotOf(sig);
  if (slot >= 0) {
    const struct sigaction& prev = g_previous[slot];
    if ((prev.sa_flags & SA_SIGINFO) == 0 && prev.sa_handler != SIG_DFL &&
        prev.sa_handler != SIG_IGN && prev.sa_handler != nullptr) {
      prev.sa_handler(sig);
    }
  }
  const int fd = g_notice_fd.load();
  if (fd >= 0) {
    const char byte = static_cast<char>(sig);
    ssize_t ignored = write(fd, &byte, 1);
    (void)ignored;
  }
  errno = saved_errno;
}

}  // namespace

Status StopSignalWatch::Install(std::function<void(int)> on_stop) {
  if (installed_) return Status::Invalid("stop signals: already installed");
  on_stop_ = std::move(on_stop);
  if (pipe2(pipe_, O_CLOEXEC | O_NONBLOCK) != 0) return Status::FromErrno(errno, "pipe");
  // The reading end blocks; the handler's end must not (a full pipe drops a notice, never the
  // handler's thread).
  fcntl(pipe_[0], F_SETFL, 0);
  g_notice_fd.store(pipe_[1]);
  for (int i = 0; i < 3; ++i) {
    struct sigaction sa;
    std::memset(&sa, 0, sizeof(sa));
    sa.sa_handler = OnStopSignal;
    sigemptyset(&sa.sa_mask);
    if (sigaction(kSignals[i], &sa, &previous_[i]) != 0) {
      return Status::FromErrno(errno, "sigaction");
    }
    g_previous[i] = previous_[i];
  }
  installed_ = true;
  thread_ = std::thread([this] { Run(); });
  return Status::Ok();
}

void StopSignalWatch::Run() {
  pthread_setname_np(pthread_self(), "clairfs-signals");
  bool notified = false;
  for (;;) {
    char byte = 0;
    ssize_t n = read(pipe_[0], &byte, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0 || byte == 0) return;  // closed, or the destructor's stop byte
    if (!notified && on_stop_) {
      notified = true;
      on_stop_(static_cast<unsigned char>(byte));
    }
  }
}

StopSignalWatch::~StopSignalWatch() {
  if (installed_) {
    for (int i = 0; i < 3; ++i) sigaction(kSignals[i], &previous_[i], nullptr);
    g_notice_fd.store(-1);
    const char stop = 0;
    ssize_t ignored = write(pipe_[1], &stop, 1);
    (void)ignored;
  }
  if (thread_.joinable()) thread_.join();
  for (int& fd : pipe_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

}  // namespace clairfs
