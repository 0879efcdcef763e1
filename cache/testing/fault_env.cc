// FaultInjectionEnv: fault rules, crash simulation and call counting (see fault_env.h).
#include "cache/testing/fault_env.h"

#include <unistd.h>

#include <algorithm>

namespace clairfs {

const char* FaultOpName(FaultOp op) {
  switch (op) {
    case FaultOp::kOpen:
      return "open";
    case FaultOp::kClose:
      return "close";
    case FaultOp::kPread:
      return "pread";
    case FaultOp::kPwrite:
      return "pwrite";
    case FaultOp::kFsync:
      return "fsync";
    case FaultOp::kSyncDir:
      return "syncdir";
    case FaultOp::kRename:
      return "rename";
    case FaultOp::kUnlink:
      return "unlink";
    case FaultOp::kMkdir:
      return "mkdir";
    case FaultOp::kLstat:
      return "lstat";
    case FaultOp::kFstat:
      return "fstat";
    case FaultOp::kStatVfs:
      return "statvfs";
    case FaultOp::kListDir:
      return "listdir";
    case FaultOp::kReadLink:
      return "readlink";
    case FaultOp::kGetXattr:
      return "getxattr";
    case FaultOp::kCount:
      break;
  }
  return "any";
}

void FaultInjectionEnv::FailNth(FaultOp op, uint64_t n, int err) {
  std::lock_guard<std::mutex> lock(mu_);
  if (n == 0 || op == FaultOp::kAny) return;
  nth_rules_.push_back(NthRule{op, calls_[static_cast<int>(op)] + n, err});
}

void FaultInjectionEnv::FailPath(FaultOp op, const std::string& substring, int err) {
  std::lock_guard<std::mutex> lock(mu_);
  path_rules_.push_back(PathRule{op, substring, err});
}

void FaultInjectionEnv::SetShortReads(size_t max_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  short_reads_ = max_bytes;
}

void FaultInjectionEnv::SetFreeBytes(std::optional<uint64_t> bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  free_bytes_ = bytes;
}

void FaultInjectionEnv::CrashAfter(uint64_t steps) {
  std::lock_guard<std::mutex> lock(mu_);
  crash_budget_ = steps;
  crashed_ = false;
}

void FaultInjectionEnv::ClearFaults() {
  std::lock_guard<std::mutex> lock(mu_);
  nth_rules_.clear();
  path_rules_.clear();
  short_reads_ = 0;
  free_bytes_.reset();
  crash_budget_.reset();
  crashed_ = false;
}

void FaultInjectionEnv::AfterOpen(const std::string& substring, std::function<void()> action) {
  std::lock_guard<std::mutex> lock(mu_);
  after_open_substring_ = substring;
  after_open_ = std::move(action);
}

bool FaultInjectionEnv::crashed() const {
  std::lock_guard<std::mutex> lock(mu_);
  return crashed_;
}

uint64_t FaultInjectionEnv::calls(FaultOp op) const {
  std::lock_guard<std::mutex> lock(mu_);
  if (op == FaultOp::kAny) {
    uint64_t total = 0;
    for (uint64_t c : calls_) total += c;
    return total;
  }
  return calls_[static_cast<int>(op)];
}

void FaultInjectionEnv::ResetCounts() {
  std::lock_guard<std::mutex> lock(mu_);
  std::fill(std::begin(calls_), std::end(calls_), 0);
  nth_rules_.clear();  // their positions referred to the old counts
  trace_.clear();
}

void FaultInjectionEnv::SetTracing(bool on) {
  std::lock_guard<std::mutex> lock(mu_);
  tracing_ = on;
}

std::vector<std::string> FaultInjectionEnv::trace() const {
  std::lock_guard<std::mutex> lock(mu_);
  return trace_;
}

std::string FaultInjectionEnv::PathOfFd(int fd) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = fd_paths_.find(fd);
  return it == fd_paths_.end() ? std::string() : it->second;
}

std::string FaultInjectionEnv::PathBeneath(int dir_fd, const std::string& rel) {
  std::string dir = PathOfFd(dir_fd);
  if (dir.empty()) return rel;
  return rel.empty() ? dir : dir + "/" + rel;
}

Status FaultInjectionEnv::Before(FaultOp op, const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t n = ++calls_[static_cast<int>(op)];
  if (tracing_) trace_.push_back(std::string(FaultOpName(op)) + " " + path);
  std::string what = std::string("injected: ") + FaultOpName(op) + " " + path;
  if (crashed_) return Status::FromErrno(EIO, what + " after the simulated crash");
  if (crash_budget_) {
    if (*crash_budget_ == 0) {
      crashed_ = true;
      return Status::FromErrno(EIO, what + " at the simulated crash");
    }
    --*crash_budget_;
  }
  for (auto it = nth_rules_.begin(); it != nth_rules_.end(); ++it) {
    if (it->op == op && it->at == n) {
      int err = it->err;
      nth_rules_.erase(it);
      return Status::FromErrno(err, what);
    }
  }
  for (const auto& rule : path_rules_) {
    if ((rule.op == FaultOp::kAny || rule.op == op) &&
        path.find(rule.substring) != std::string::npos) {
      return Status::FromErrno(rule.err, what);
    }
  }
  return Status::Ok();
}

Result<int> FaultInjectionEnv::Open(const std::string& path, int flags, mode_t mode) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kOpen, path));
  auto fd = target()->Open(path, flags, mode);
  std::function<void()> action;
  if (fd.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    fd_paths_[*fd] = path;
    if (after_open_ && path.find(after_open_substring_) != std::string::npos) {
      action = std::move(after_open_);
      after_open_ = nullptr;
    }
  }
  if (action) action();
  return fd;
}

Status FaultInjectionEnv::Close(int fd) {
  std::string path = PathOfFd(fd);
  Status st = Before(FaultOp::kClose, path);
  {
    std::lock_guard<std::mutex> lock(mu_);
    fd_paths_.erase(fd);
  }
  // The descriptor is released whatever the verdict: a dead process's fds are closed too.
  Status closed = target()->Close(fd);
  if (!st.ok()) return st;
  return closed;
}

Result<size_t> FaultInjectionEnv::Pread(int fd, void* buf, size_t size, off_t offset) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kPread, PathOfFd(fd)));
  size_t max;
  {
    std::lock_guard<std::mutex> lock(mu_);
    max = short_reads_;
  }
  if (max > 0 && size > max) size = max;
  return target()->Pread(fd, buf, size, offset);
}

Status FaultInjectionEnv::PwriteAll(int fd, const void* buf, size_t size, off_t offset) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kPwrite, PathOfFd(fd)));
  return target()->PwriteAll(fd, buf, size, offset);
}

Status FaultInjectionEnv::Fsync(int fd) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kFsync, PathOfFd(fd)));
  return target()->Fsync(fd);
}

Status FaultInjectionEnv::SyncDir(const std::string& dir) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kSyncDir, dir));
  return target()->SyncDir(dir);
}

Status FaultInjectionEnv::Rename(const std::string& from, const std::string& to) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kRename, from + " -> " + to));
  return target()->Rename(from, to);
}

Status FaultInjectionEnv::Unlink(const std::string& path) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kUnlink, path));
  return target()->Unlink(path);
}

Status FaultInjectionEnv::MkdirIfMissing(const std::string& path, mode_t mode) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kMkdir, path));
  return target()->MkdirIfMissing(path, mode);
}

Status FaultInjectionEnv::Lstat(const std::string& path, struct stat* st) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kLstat, path));
  return target()->Lstat(path, st);
}

Status FaultInjectionEnv::Fstat(int fd, struct stat* st) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kFstat, PathOfFd(fd)));
  return target()->Fstat(fd, st);
}

Status FaultInjectionEnv::StatVfs(const std::string& path, struct statvfs* st) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kStatVfs, path));
  Status real = target()->StatVfs(path, st);
  if (!real.ok()) return real;
  std::lock_guard<std::mutex> lock(mu_);
  if (free_bytes_) {
    st->f_frsize = 4096;
    st->f_bsize = 4096;
    st->f_bavail = *free_bytes_ / 4096;
    st->f_bfree = st->f_bavail;
  }
  return Status::Ok();
}

Status FaultInjectionEnv::ListDir(const std::string& path, std::vector<DirEntry>* entries,
                                  size_t max_entries) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kListDir, path));
  return target()->ListDir(path, entries, max_entries);
}

Result<int> FaultInjectionEnv::OpenBeneath(int dir_fd, const std::string& rel, int flags) {
  const std::string path = PathBeneath(dir_fd, rel);
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kOpen, path));
  auto fd = target()->OpenBeneath(dir_fd, rel, flags);
  if (fd.ok()) {
    std::lock_guard<std::mutex> lock(mu_);
    fd_paths_[*fd] = path;
  }
  return fd;
}

Status FaultInjectionEnv::StatAt(int dir_fd, const std::string& name, struct stat* st) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kLstat, PathBeneath(dir_fd, name)));
  return target()->StatAt(dir_fd, name, st);
}

Status FaultInjectionEnv::ListDirFd(int dir_fd, std::vector<DirEntry>* entries,
                                    size_t max_entries) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kListDir, PathOfFd(dir_fd)));
  return target()->ListDirFd(dir_fd, entries, max_entries);
}

Result<std::string> FaultInjectionEnv::ReadLinkAt(int dir_fd, const std::string& name) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kReadLink, PathBeneath(dir_fd, name)));
  return target()->ReadLinkAt(dir_fd, name);
}

Result<std::string> FaultInjectionEnv::GetXattrAt(int dir_fd, const std::string& name,
                                                  const std::string& attr) {
  CLAIRFS_RETURN_IF_ERROR(Before(FaultOp::kGetXattr, PathBeneath(dir_fd, name)));
  return target()->GetXattrAt(dir_fd, name, attr);
}

}  // namespace clairfs
