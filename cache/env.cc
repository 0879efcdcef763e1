// The POSIX Env: thin wrappers that turn errno into Status with the path named.
#include "cache/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstring>

namespace clairfs {
namespace {

uint64_t ClockNanos(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ULL + static_cast<uint64_t>(ts.tv_nsec);
}

class PosixEnv final : public Env {
 public:
  Result<int> Open(const std::string& path, int flags, mode_t mode) override {
    int fd;
    do {
      fd = ::open(path.c_str(), flags | O_CLOEXEC, mode);
    } while (fd < 0 && errno == EINTR);
    if (fd < 0) return Status::FromErrno(errno, "open " + path);
    return fd;
  }

  Status Close(int fd) override {
    if (::close(fd) != 0 && errno != EINTR) return Status::FromErrno(errno, "close");
    return Status::Ok();
  }

  Result<size_t> Pread(int fd, void* buf, size_t size, off_t offset) override {
    for (;;) {
      ssize_t n = ::pread(fd, buf, size, offset);
      if (n >= 0) return static_cast<size_t>(n);
      if (errno != EINTR) return Status::FromErrno(errno, "read");
    }
  }

  Status PwriteAll(int fd, const void* buf, size_t size, off_t offset) override {
    const char* p = static_cast<const char*>(buf);
    while (size > 0) {
      ssize_t n = ::pwrite(fd, p, size, offset);
      if (n < 0) {
        if (errno == EINTR) continue;
        return Status::FromErrno(errno, "write");
      }
      p += n;
      size -= static_cast<size_t>(n);
      offset += n;
    }
    return Status::Ok();
  }

  Status Fsync(int fd) override {
    if (::fsync(fd) != 0) return Status::FromErrno(errno, "fsync");
    return Status::Ok();
  }

  void WriteBack(int fd, off_t offset, off_t len, bool wait) override {
    unsigned flags = SYNC_FILE_RANGE_WRITE;
    if (wait) flags |= SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WAIT_AFTER;
    (void)::sync_file_range(fd, offset, len, flags);
  }

  Status SyncDir(const std::string& dir) override {
    int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return Status::FromErrno(errno, "open " + dir);
    int rc = ::fsync(fd);
    int err = errno;
    ::close(fd);
    if (rc != 0) return Status::FromErrno(err, "fsync " + dir);
    return Status::Ok();
  }

  Status Rename(const std::string& from, const std::string& to) override {
    if (::rename(from.c_str(), to.c_str()) != 0) {
      return Status::FromErrno(errno, "rename " + from + " -> " + to);
    }
    return Status::Ok();
  }

  Status Unlink(const std::string& path) override {
    if (::unlink(path.c_str()) != 0) return Status::FromErrno(errno, "unlink " + path);
    return Status::Ok();
  }

  Status MkdirIfMissing(const std::string& path, mode_t mode) override {
    if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
      return Status::FromErrno(errno, "mkdir " + path);
    }
    return Status::Ok();
  }

  Status Lstat(const std::string& path, struct stat* st) override {
    if (::lstat(path.c_str(), st) != 0) return Status::FromErrno(errno, "stat " + path);
    return Status::Ok();
  }

  Status Fstat(int fd, struct stat* st) override {
    if (::fstat(fd, st) != 0) return Status::FromErrno(errno, "fstat");
    return Status::Ok();
  }

  Status StatVfs(const std::string& path, struct statvfs* st) override {
    if (::statvfs(path.c_str(), st) != 0) return Status::FromErrno(errno, "statvfs " + path);
    return Status::Ok();
  }

  Status ListDir(const std::string& path, std::vector<DirEntry>* entries,
                 size_t max_entries = SIZE_MAX) override {
    entries->clear();
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return Status::FromErrno(errno, "opendir " + path);
    for (;;) {
      errno = 0;
      struct dirent* de = ::readdir(dir);
      if (de == nullptr || entries->size() >= max_entries) {
        int err = de == nullptr ? errno : 0;
        ::closedir(dir);
        if (err != 0) return Status::FromErrno(err, "readdir " + path);
        return Status::Ok();
      }
      if (std::strcmp(de->d_name, ".") == 0 || std::strcmp(de->d_name, "..") == 0) continue;
      entries->push_back(DirEntry{de->d_name, de->d_type});
    }
  }

  uint64_t NowMonotonicNanos() override { return ClockNanos(CLOCK_MONOTONIC); }
  uint64_t NowRealtimeNanos() override { return ClockNanos(CLOCK_REALTIME); }
};

}  // namespace

Env* Env::Default() {
  static PosixEnv* env = new PosixEnv();
  return env;
}

}  // namespace clairfs
