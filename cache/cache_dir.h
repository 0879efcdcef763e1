// CacheDir: the on-disk layout of a cache directory and the lock that keeps one daemon on it.
//
//   CACHE/FORMAT   "clairfs-cache <version>": a cache of another format is refused
//   CACHE/lock     flock()ed by the owning process; holds its pid (for the error message)
//   CACHE/data/    published (staged) copies, in 256 fan-out subdirectories
//   CACHE/tmp/     copies in flight; discarded on every start
//   CACHE/index/   the RocksDB index (manifest and cache entries)
//
// Everything is created 0700: cached copies and the index are private to the daemon's user.
// Acquire() takes the lock without blocking; a second daemon (or an offline tool) on the same
// cache gets EBUSY with a message naming the holder's pid. The lock is held for the life of the
// CacheDir object and survives fork() (it belongs to the open file description).
#pragma once

#include <memory>
#include <string>

#include "cache/env.h"
#include "planner/base/status.h"

namespace clairfs {

constexpr int kCacheFormatVersion = 1;

class CacheDir {
 public:
  // Creates the layout if missing, checks the format, and takes the lock.
  static Result<std::unique_ptr<CacheDir>> Acquire(const std::string& root, Env* env);
  ~CacheDir();
  CacheDir(const CacheDir&) = delete;
  CacheDir& operator=(const CacheDir&) = delete;

  const std::string& root() const { return root_; }
  std::string data_dir() const { return root_ + "/data"; }
  std::string tmp_dir() const { return root_ + "/tmp"; }
  std::string index_dir() const { return root_ + "/index"; }
  // Rewrites the pid in the lock file (after the daemon forks).
  void RecordOwnerPid();

 private:
  CacheDir(std::string root, int lock_fd) : root_(std::move(root)), lock_fd_(lock_fd) {}
  std::string root_;
  int lock_fd_;
};

}  // namespace clairfs
