// CacheDeviceProbe (see device_probe.h).
#include "cache/device_probe.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <memory>

namespace clairfs {
namespace {

constexpr size_t kProbeBytes = 4096;

struct FreeDeleter {
  void operator()(void* p) const { std::free(p); }
};

}  // namespace

CacheDeviceProbe::CacheDeviceProbe(ContentStore* store, std::string probe_path,
                                   std::chrono::milliseconds interval)
    : store_(store), probe_path_(std::move(probe_path)), interval_(interval) {}

CacheDeviceProbe::~CacheDeviceProbe() { Stop(); }

void CacheDeviceProbe::Start() {
  if (thread_.joinable()) return;
  thread_ = std::thread([this] { Loop(); });
}

void CacheDeviceProbe::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status CacheDeviceProbe::ProbeOnce() {
  // O_DIRECT reaches the device; a filesystem that refuses it (EINVAL) is read through the page
  // cache, which still fails on a shut-down or unreachable device at open.
  int fd = open(probe_path_.c_str(), O_RDONLY | O_CLOEXEC | O_DIRECT);
  bool direct = true;
  if (fd < 0 && errno == EINVAL) {
    direct = false;
    fd = open(probe_path_.c_str(), O_RDONLY | O_CLOEXEC);
  }
  Status failed;
  if (fd < 0) {
    failed = Status::FromErrno(errno, "cache device probe: open " + probe_path_);
  } else {
    std::unique_ptr<void, FreeDeleter> buffer(std::aligned_alloc(kProbeBytes, kProbeBytes));
    ssize_t n = pread(fd, buffer.get(), kProbeBytes, 0);
    if (n < 0 && errno == EINVAL && direct) {
      // Some filesystems accept O_DIRECT at open and refuse the read's alignment.
      close(fd);
      fd = open(probe_path_.c_str(), O_RDONLY | O_CLOEXEC);
      n = fd < 0 ? -1 : pread(fd, buffer.get(), kProbeBytes, 0);
    }
    if (n < 0) {
      failed = Status::FromErrno(errno, "cache device probe: read " + probe_path_);
    }
    if (fd >= 0) close(fd);
  }
  if (failed.ok()) return failed;
  store_->ReportCopyReadError(failed);
  return failed;
}

void CacheDeviceProbe::Loop() {
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    lock.unlock();
    (void)ProbeOnce();
    lock.lock();
    wake_.wait_for(lock, interval_, [this] { return stopping_; });
  }
}

}  // namespace clairfs
