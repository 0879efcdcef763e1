// The POSIX Env: thin wrappers that turn errno into Status with the path named.
#include "cache/env.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sys/syscall.h>
#include <sys/xattr.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>
#include <cstring>

namespace clairfs {
namespace {

// Reads every entry of `dir` (then closes it) but "." and "..".
Status ReadDirStream(DIR* dir, const std::string& what, std::vector<DirEntry>* entries,
                     size_t max_entries) {
  entries->clear();
  for (;;) {
    errno = 0;
    struct dirent* de = ::readdir(dir);
    if (de == nullptr || entries->size() >= max_entries) {
      int err = de == nullptr ? errno : 0;
      ::closedir(dir);
      if (err != 0) return Status::FromErrno(err, "readdir " + what);
      return Status::Ok();
    }
    if (std::strcmp(de->d_name, ".") == 0 || std::strcmp(de->d_name, "..") == 0) continue;
    entries->push_back(DirEntry{de->d_name, de->d_type});
  }
}

// Whether `rel` is a path OpenBeneath takes: no empty, "." or ".." component, no leading '/'.
bool IsPlainRelative(const std::string& rel) {
  if (rel.empty()) return true;
  size_t start = 0;
  while (start <= rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    const size_t len = end - start;
    if (len == 0 || (len == 1 && rel[start] == '.') ||
        (len == 2 && rel[start] == '.' && rel[start + 1] == '.')) {
      return false;
    }
    start = end + 1;
  }
  return true;
}

// Set once openat2 answered ENOSYS (an old kernel) or EPERM (a seccomp filter that does not know
// it): from then on OpenBeneath walks.
std::atomic<bool> g_no_openat2{false};

int RetryOpenat(int dir_fd, const char* name, int flags) {
  int fd;
  do {
    fd = ::openat(dir_fd, name, flags | O_CLOEXEC, 0);
  } while (fd < 0 && errno == EINTR);
  return fd;
}

// OpenBeneath without openat2: one O_NOFOLLOW open per component. A link as a directory
// component opens as the link itself (O_PATH | O_NOFOLLOW), which O_DIRECTORY refuses (ENOTDIR).
int WalkBeneath(int dir_fd, const std::string& rel, int flags) {
  if (rel.empty()) return RetryOpenat(dir_fd, ".", flags);
  int cur = dir_fd;
  size_t start = 0;
  for (;;) {
    size_t slash = rel.find('/', start);
    if (slash == std::string::npos) {
      int fd = RetryOpenat(cur, rel.c_str() + start, flags | O_NOFOLLOW);
      int err = errno;
      if (cur != dir_fd) ::close(cur);
      errno = err;
      return fd;
    }
    const std::string part = rel.substr(start, slash - start);
    int next = RetryOpenat(cur, part.c_str(), O_PATH | O_DIRECTORY | O_NOFOLLOW);
    int err = errno;
    if (cur != dir_fd) ::close(cur);
    if (next < 0) {
      errno = err;
      return -1;
    }
    cur = next;
    start = slash + 1;
  }
}

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
    DIR* dir = ::opendir(path.c_str());
    if (dir == nullptr) return Status::FromErrno(errno, "opendir " + path);
    return ReadDirStream(dir, path, entries, max_entries);
  }

  Result<int> OpenBeneath(int dir_fd, const std::string& rel, int flags) override {
    if (!IsPlainRelative(rel)) return Status::Invalid("not a plain relative path: " + rel);
    int fd = -1;
    if (!g_no_openat2.load(std::memory_order_relaxed)) {
      struct open_how how;
      std::memset(&how, 0, sizeof(how));
      how.flags = static_cast<uint64_t>(flags | O_CLOEXEC);
      how.resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
      do {
        fd = static_cast<int>(
            ::syscall(SYS_openat2, dir_fd, rel.empty() ? "." : rel.c_str(), &how, sizeof(how)));
      } while (fd < 0 && errno == EINTR);
      if (fd < 0 && (errno == ENOSYS || errno == EPERM)) {
        // EPERM is also what a permission failure says; the walk then fails the same way.
        if (errno == ENOSYS) g_no_openat2.store(true, std::memory_order_relaxed);
        fd = WalkBeneath(dir_fd, rel, flags);
      }
    } else {
      fd = WalkBeneath(dir_fd, rel, flags);
    }
    if (fd < 0) return Status::FromErrno(errno, "open " + rel + " beneath the backing root");
    return fd;
  }

  Status StatAt(int dir_fd, const std::string& name, struct stat* st) override {
    if (::fstatat(dir_fd, name.c_str(), st, AT_SYMLINK_NOFOLLOW) != 0) {
      return Status::FromErrno(errno, "stat " + name);
    }
    return Status::Ok();
  }

  Status ListDirFd(int dir_fd, std::vector<DirEntry>* entries,
                   size_t max_entries = SIZE_MAX) override {
    // fdopendir takes the descriptor over; the caller keeps its own.
    int copy = ::fcntl(dir_fd, F_DUPFD_CLOEXEC, 0);
    if (copy < 0) return Status::FromErrno(errno, "dup");
    DIR* dir = ::fdopendir(copy);
    if (dir == nullptr) {
      int err = errno;
      ::close(copy);
      return Status::FromErrno(err, "opendir");
    }
    ::rewinddir(dir);  // the copy shares the original's position
    return ReadDirStream(dir, "directory", entries, max_entries);
  }

  Result<std::string> ReadLinkAt(int dir_fd, const std::string& name) override {
    char target[PATH_MAX + 1];
    ssize_t n = ::readlinkat(dir_fd, name.c_str(), target, sizeof(target));
    if (n < 0) return Status::FromErrno(errno, "readlink " + name);
    if (static_cast<size_t>(n) > PATH_MAX) {
      return Status::Error(ENAMETOOLONG, "readlink " + name + ": target too long");
    }
    return std::string(target, static_cast<size_t>(n));
  }

  Result<std::string> GetXattrAt(int dir_fd, const std::string& name,
                                 const std::string& attr) override {
    // No *at form of lgetxattr before Linux 6.13: name the entry through the directory's
    // /proc/self/fd link (followed: a magic link to that very directory), and the entry itself
    // without following it.
    const std::string path = "/proc/self/fd/" + std::to_string(dir_fd) + "/" + name;
    std::string value(256, '\0');
    for (int attempt = 0; attempt < 4; ++attempt) {
      ssize_t n = ::lgetxattr(path.c_str(), attr.c_str(), value.data(), value.size());
      if (n >= 0) {
        value.resize(static_cast<size_t>(n));
        return value;
      }
      if (errno != ERANGE) return Status::FromErrno(errno, "getxattr " + attr + " of " + name);
      ssize_t need = ::lgetxattr(path.c_str(), attr.c_str(), nullptr, 0);
      if (need < 0) return Status::FromErrno(errno, "getxattr " + attr + " of " + name);
      value.resize(static_cast<size_t>(need) + 1);
    }
    return Status::Error(EAGAIN, "getxattr " + attr + " of " + name + ": value keeps changing");
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
