// OpenObserver: told of every regular-file open the filesystem serves (the plan tracker's hook).
//
// OnOpen runs on the FUSE thread before the cache is consulted; it must be O(1), take at most a
// short mutex and never block on I/O or staging. Returning true means the observer stages this
// file itself (the filesystem then skips its read-through enqueue). `reader_thread` is the thread
// id the kernel gave for the opening thread (0 when unknown): plan inference groups opens by it.
#pragma once

#include <cstdint>
#include <string>

namespace clairfs {

class OpenObserver {
 public:
  virtual ~OpenObserver() = default;
  // `path` is relative to the backing root.
  virtual bool OnOpen(const std::string& path, uint32_t reader_thread) = 0;
};

}  // namespace clairfs
