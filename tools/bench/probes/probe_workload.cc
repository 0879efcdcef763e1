// The probe's timed client workloads (see probe_workload.h).
#include "tools/bench/probes/probe_workload.h"

#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <mutex>
#include <thread>

#include "tools/bench/probes/probe_fs.h"

namespace clairfs::probe {
namespace {

using Clock = std::chrono::steady_clock;

double Seconds(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// The file index of a ".../f00042" path (for verification).
size_t IndexOf(const std::string& path) {
  return std::strtoul(path.c_str() + path.rfind('/') + 2, nullptr, 10);
}

// Pins the calling thread to CPU 0 for its lifetime when asked to.
class ScopedPin {
 public:
  explicit ScopedPin(bool pin) : pinned_(pin) {
    if (!pin) return;
    pthread_getaffinity_np(pthread_self(), sizeof(saved_), &saved_);
    cpu_set_t set;
    CPU_ZERO(&set);
    CPU_SET(0, &set);
    pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
  }
  ~ScopedPin() {
    if (pinned_) pthread_setaffinity_np(pthread_self(), sizeof(saved_), &saved_);
  }

 private:
  bool pinned_;
  cpu_set_t saved_;
};

}  // namespace

Result<double> ReadFiles(const std::vector<std::string>& paths, int threads, size_t file_size,
                         bool verify) {
  std::mutex error_mu;
  Status error;  // the first failure, guarded by error_mu
  std::atomic<bool> failed{false};
  auto fail = [&](Status st) {
    std::lock_guard<std::mutex> lock(error_mu);
    if (!failed.exchange(true)) error = std::move(st);
  };
  auto start = Clock::now();
  std::vector<std::thread> workers;
  for (int t = 0; t < threads; ++t) {
    workers.emplace_back([&, t] {
      std::vector<char> buf(1 << 20);
      for (size_t i = static_cast<size_t>(t); i < paths.size() && !failed.load();
           i += static_cast<size_t>(threads)) {
        int fd = open(paths[i].c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) return fail(Status::FromErrno(errno, "open " + paths[i]));
        size_t total = 0;
        for (;;) {
          ssize_t n = read(fd, buf.data(), buf.size());
          if (n < 0) {
            close(fd);
            return fail(Status::FromErrno(errno, "read " + paths[i]));
          }
          if (n == 0) break;
          if (verify) {
            const size_t index = IndexOf(paths[i]);
            for (ssize_t k = 0; k < n; ++k) {
              if (buf[k] != FileByte(index, total + k)) {
                close(fd);
                return fail(Status::Error(EIO, "wrong byte in " + paths[i]));
              }
            }
          }
          total += static_cast<size_t>(n);
        }
        close(fd);
        if (total != file_size) return fail(Status::Error(EIO, "short file " + paths[i]));
      }
    });
  }
  for (auto& w : workers) w.join();
  double elapsed = Seconds(start);
  if (failed.load()) return error;
  return elapsed;
}

Status DropPages(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, "open " + path);
    const int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    close(fd);
    if (rc != 0) return Status::FromErrno(rc, "posix_fadvise " + path);
  }
  return Status::Ok();
}

Result<double> StatLoop(const std::string& path, int count, bool pin) {
  ScopedPin scoped(pin);
  struct stat st;
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    if (stat(path.c_str(), &st) != 0) return Status::FromErrno(errno, "stat " + path);
  }
  return Seconds(start) * 1e6 / count;
}

Result<double> OpenCloseLoop(const std::string& path, int count, bool pin) {
  ScopedPin scoped(pin);
  auto start = Clock::now();
  for (int i = 0; i < count; ++i) {
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, "open " + path);
    close(fd);
  }
  return Seconds(start) * 1e6 / count;
}

}  // namespace clairfs::probe
