// Env: the seam through which cache/ and fs/ reach the filesystem and the clock.
//
// Production code uses Env::Default() (plain POSIX calls). Tests wrap it (EnvWrapper forwards
// every call) and override one method to inject EIO, ENOSPC, short reads or a simulated crash at
// a chosen step (see fault_env.h). Every method returns a Status/Result carrying errno and a
// message naming the path; none throws. Thread-safe: implementations hold no mutable state unless
// they say so.
#pragma once

#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "planner/base/status.h"

namespace clairfs {

struct DirEntry {
  std::string name;
  unsigned char type = 0;  // DT_* from readdir (DT_UNKNOWN if the filesystem does not say)
};

class Env {
 public:
  virtual ~Env() = default;
  // The process-wide POSIX Env (never destroyed).
  static Env* Default();

  virtual Result<int> Open(const std::string& path, int flags, mode_t mode = 0) = 0;
  virtual Status Close(int fd) = 0;
  // Reads up to `size` bytes at `offset`; returns the count (0 at end of file). Retries EINTR.
  virtual Result<size_t> Pread(int fd, void* buf, size_t size, off_t offset) = 0;
  // Writes all `size` bytes at `offset` (loops over short writes).
  virtual Status PwriteAll(int fd, const void* buf, size_t size, off_t offset) = 0;
  virtual Status Fsync(int fd) = 0;
  // Starts writing the range's dirty pages to the device; with `wait`, also waits for that
  // writeback (not a durability point: no device cache flush, no metadata). A hint that lets a
  // large copy's final Fsync find little left to write; its errors surface at that Fsync.
  virtual void WriteBack(int fd, off_t offset, off_t len, bool wait) = 0;
  // fsync of a directory, making renames and unlinks in it durable.
  virtual Status SyncDir(const std::string& dir) = 0;
  virtual Status Rename(const std::string& from, const std::string& to) = 0;
  virtual Status Unlink(const std::string& path) = 0;
  // Creates the directory; an existing directory is not an error.
  virtual Status MkdirIfMissing(const std::string& path, mode_t mode) = 0;
  virtual Status Lstat(const std::string& path, struct stat* st) = 0;
  virtual Status Fstat(int fd, struct stat* st) = 0;
  virtual Status StatVfs(const std::string& path, struct statvfs* st) = 0;
  // Lists a directory without "." and "..", unsorted; stops reading after `max_entries`.
  virtual Status ListDir(const std::string& path, std::vector<DirEntry>* entries,
                         size_t max_entries = SIZE_MAX) = 0;

  // Calls relative to an open directory, for trees another user may change while they are read
  // (the backing store: see backing_tree.h). `rel` is '/'-separated with no empty, "." or ".."
  // component ("" is the directory itself); `name` is one component.
  //
  // Opens `rel` beneath `dir_fd`: every component is resolved inside it and no symbolic link is
  // followed in any component (ELOOP or ENOTDIR where one is met). openat2(2) with RESOLVE_BENEATH
  // and RESOLVE_NO_SYMLINKS where the kernel has it, else a walk of O_NOFOLLOW opens. With
  // O_PATH | O_NOFOLLOW in `flags` a link that is the last component is opened itself.
  virtual Result<int> OpenBeneath(int dir_fd, const std::string& rel, int flags) = 0;
  // fstatat(dir_fd, name, AT_SYMLINK_NOFOLLOW).
  virtual Status StatAt(int dir_fd, const std::string& name, struct stat* st) = 0;
  // Lists the open directory `dir_fd` (which stays open and the caller's) as ListDir does.
  virtual Status ListDirFd(int dir_fd, std::vector<DirEntry>* entries,
                           size_t max_entries = SIZE_MAX) = 0;
  // readlinkat(dir_fd, name): a link's target, whole (ENAMETOOLONG past PATH_MAX).
  virtual Result<std::string> ReadLinkAt(int dir_fd, const std::string& name) = 0;
  // The value of the extended attribute `attr` of entry `name` of `dir_fd`, without following a
  // link; ENODATA if it has none, ENOTSUP if the filesystem keeps no such attributes.
  virtual Result<std::string> GetXattrAt(int dir_fd, const std::string& name,
                                         const std::string& attr) = 0;
  // CLOCK_MONOTONIC and CLOCK_REALTIME in nanoseconds.
  virtual uint64_t NowMonotonicNanos() = 0;
  virtual uint64_t NowRealtimeNanos() = 0;
};

// Forwards every call to a target Env; subclass it and override what a test needs.
class EnvWrapper : public Env {
 public:
  explicit EnvWrapper(Env* target) : target_(target) {}
  Env* target() const { return target_; }

  Result<int> Open(const std::string& path, int flags, mode_t mode) override {
    return target_->Open(path, flags, mode);
  }
  Status Close(int fd) override { return target_->Close(fd); }
  Result<size_t> Pread(int fd, void* buf, size_t size, off_t offset) override {
    return target_->Pread(fd, buf, size, offset);
  }
  Status PwriteAll(int fd, const void* buf, size_t size, off_t offset) override {
    return target_->PwriteAll(fd, buf, size, offset);
  }
  Status Fsync(int fd) override { return target_->Fsync(fd); }
  void WriteBack(int fd, off_t offset, off_t len, bool wait) override {
    target_->WriteBack(fd, offset, len, wait);
  }
  Status SyncDir(const std::string& dir) override { return target_->SyncDir(dir); }
  Status Rename(const std::string& from, const std::string& to) override {
    return target_->Rename(from, to);
  }
  Status Unlink(const std::string& path) override { return target_->Unlink(path); }
  Status MkdirIfMissing(const std::string& path, mode_t mode) override {
    return target_->MkdirIfMissing(path, mode);
  }
  Status Lstat(const std::string& path, struct stat* st) override {
    return target_->Lstat(path, st);
  }
  Status Fstat(int fd, struct stat* st) override { return target_->Fstat(fd, st); }
  Status StatVfs(const std::string& path, struct statvfs* st) override {
    return target_->StatVfs(path, st);
  }
  Status ListDir(const std::string& path, std::vector<DirEntry>* entries,
                 size_t max_entries = SIZE_MAX) override {
    return target_->ListDir(path, entries, max_entries);
  }
  Result<int> OpenBeneath(int dir_fd, const std::string& rel, int flags) override {
    return target_->OpenBeneath(dir_fd, rel, flags);
  }
  Status StatAt(int dir_fd, const std::string& name, struct stat* st) override {
    return target_->StatAt(dir_fd, name, st);
  }
  Status ListDirFd(int dir_fd, std::vector<DirEntry>* entries,
                   size_t max_entries = SIZE_MAX) override {
    return target_->ListDirFd(dir_fd, entries, max_entries);
  }
  Result<std::string> ReadLinkAt(int dir_fd, const std::string& name) override {
    return target_->ReadLinkAt(dir_fd, name);
  }
  Result<std::string> GetXattrAt(int dir_fd, const std::string& name,
                                 const std::string& attr) override {
    return target_->GetXattrAt(dir_fd, name, attr);
  }
  uint64_t NowMonotonicNanos() override { return target_->NowMonotonicNanos(); }
  uint64_t NowRealtimeNanos() override { return target_->NowRealtimeNanos(); }

 private:
  Env* target_;
};

}  // namespace clairfs
