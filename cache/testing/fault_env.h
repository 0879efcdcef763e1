// FaultInjectionEnv: an EnvWrapper for tests that injects errors, short reads and crashes, and
// counts the calls it sees so tests can assert I/O patterns.
//
// Faults (all armed at run time, all thread-safe):
//   - FailNth(op, n, err): the n-th call of `op` from now fails with `err` (once).
//   - FailPath(op, substring, err): every call of `op` (FaultOp::kAny: of any operation) on a
//     path containing `substring` fails with `err` until ClearFaults(). Calls on an fd match the
//     path the fd was opened with; calls relative to a directory fd (OpenBeneath, StatAt,
//     ListDirFd, ReadLinkAt, GetXattrAt) match "<the directory's path>/<rel>", and count as
//     kOpen, kLstat, kListDir, kReadLink and kGetXattr.
//   - SetShortReads(max): Pread returns at most `max` bytes per call (never 0 before the end).
//   - SetFreeBytes(bytes): StatVfs reports `bytes` free (f_bavail * f_frsize), as a small device.
//   - CrashAfter(k): the next k calls run normally; every call after them fails with EIO, as if
//     the process had died at that point: nothing more reaches the disk (no cleanup, no unlink,
//     no rename). Close still releases the real fd (the kernel would) but reports EIO.
//     crashed() says whether the crash point was reached. Tests then drop the store and re-open
//     the same directory with Env::Default() to check recovery.
//   - AfterOpen(substring, action): runs `action` once, right after the first Open of a path
//     containing `substring` succeeds (outside the Env's lock): e.g. to kill a real device while
//     a copy is in flight on it, for writes that bypass the Env (the io_uring engine's).
// Counting: calls(op) counts every call (failed or not) since construction or ResetCounts();
// trace() lists "<op> <path>" of every call in order while tracing is on.
// The clocks are forwarded and never fail.
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/env.h"

namespace clairfs {

enum class FaultOp : int {
  kOpen = 0,
  kClose,
  kPread,
  kPwrite,
  kFsync,
  kSyncDir,
  kRename,
  kUnlink,
  kMkdir,
  kLstat,
  kFstat,
  kStatVfs,
  kListDir,
  kReadLink,
  kGetXattr,
  kCount,         // number of operations (not an operation)
  kAny = kCount,  // FailPath only: any operation
};

const char* FaultOpName(FaultOp op);

class FaultInjectionEnv : public EnvWrapper {
 public:
  explicit FaultInjectionEnv(Env* target = Env::Default()) : EnvWrapper(target) {}

  void FailNth(FaultOp op, uint64_t n, int err);
  void FailPath(FaultOp op, const std::string& substring, int err);
  void SetShortReads(size_t max_bytes);  // 0 = off
  void SetFreeBytes(std::optional<uint64_t> bytes);
  void CrashAfter(uint64_t steps);
  void AfterOpen(const std::string& substring, std::function<void()> action);
  // Removes every fault and the crash (counts and trace are kept).
  void ClearFaults();
  bool crashed() const;

  uint64_t calls(FaultOp op) const;
  void ResetCounts();
  void SetTracing(bool on);
  std::vector<std::string> trace() const;

  Result<int> Open(const std::string& path, int flags, mode_t mode) override;
  Status Close(int fd) override;
  Result<size_t> Pread(int fd, void* buf, size_t size, off_t offset) override;
  Status PwriteAll(int fd, const void* buf, size_t size, off_t offset) override;
  Status Fsync(int fd) override;
  Status SyncDir(const std::string& dir) override;
  Status Rename(const std::string& from, const std::string& to) override;
  Status Unlink(const std::string& path) override;
  Status MkdirIfMissing(const std::string& path, mode_t mode) override;
  Status Lstat(const std::string& path, struct stat* st) override;
  Status Fstat(int fd, struct stat* st) override;
  Status StatVfs(const std::string& path, struct statvfs* st) override;
  Status ListDir(const std::string& path, std::vector<DirEntry>* entries,
                 size_t max_entries = SIZE_MAX) override;
  Result<int> OpenBeneath(int dir_fd, const std::string& rel, int flags) override;
  Status StatAt(int dir_fd, const std::string& name, struct stat* st) override;
  Status ListDirFd(int dir_fd, std::vector<DirEntry>* entries,
                   size_t max_entries = SIZE_MAX) override;
  Result<std::string> ReadLinkAt(int dir_fd, const std::string& name) override;
  Result<std::string> GetXattrAt(int dir_fd, const std::string& name,
                                 const std::string& attr) override;

 private:
  struct NthRule {
    FaultOp op;
    uint64_t at;  // value of calls_[op] at which to fail
    int err;
  };
  struct PathRule {
    FaultOp op;
    std::string substring;
    int err;
  };
  // Counts the call and decides its fate: OK to forward, or the error to return.
  Status Before(FaultOp op, const std::string& path);
  std::string PathOfFd(int fd);
  // "<path of dir_fd>/<rel>" (or `rel` alone for a descriptor this Env did not open).
  std::string PathBeneath(int dir_fd, const std::string& rel);

  mutable std::mutex mu_;  // guards every field below
  uint64_t calls_[static_cast<int>(FaultOp::kCount)] = {};
  std::vector<NthRule> nth_rules_;
  std::vector<PathRule> path_rules_;
  size_t short_reads_ = 0;
  std::optional<uint64_t> free_bytes_;
  std::optional<uint64_t> crash_budget_;  // calls left before the crash
  bool crashed_ = false;
  bool tracing_ = false;
  std::vector<std::string> trace_;
  std::unordered_map<int, std::string> fd_paths_;
  std::string after_open_substring_;
  std::function<void()> after_open_;  // run once, then cleared
};

}  // namespace clairfs
