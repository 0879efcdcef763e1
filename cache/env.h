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

#include "planner/status.h"

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
  uint64_t NowMonotonicNanos() override { return target_->NowMonotonicNanos(); }
  uint64_t NowRealtimeNanos() override { return target_->NowRealtimeNanos(); }

 private:
  Env* target_;
};

}  // namespace clairfs
