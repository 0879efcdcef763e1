// OpenObserver: told of every regular-file open the filesystem serves (the plan tracker's hook).
//
// OnOpen runs on the FUSE thread before the cache is consulted; it must be O(1), take at most a
// short mutex and never block on I/O or staging. OnMiss, under the same rules, says why an open
// found no staged copy (the status's miss causes). Returning true means the observer stages this
// file itself (the filesystem then skips its read-through enqueue). `opener` says who opened:
// plan inference groups opens by thread, and a plan bound to a user (--plan-uid) follows only that
// user's opens.
#pragma once

#include <cstdint>
#include <string>

namespace clairfs {

// Who opened a file: the kernel's id of the opening thread (0 when unknown) and the caller's uid
// (kNoUid when unknown).
struct Opener {
  static constexpr uint32_t kNoUid = UINT32_MAX;
  uint32_t thread = 0;
  uint32_t uid = kNoUid;
};

// Why an open missed the cache, as far as the mount can tell at that moment (docs/ADMIN.md,
// "Why opens miss").
enum class MissCause {
  kUnplanned,       // no active plan, or not one of its files (nothing was to stage it ahead)
  kCopyQueued,      // its copy was queued and had not started: the staging is behind
  kCopyInFlight,    // its copy was being made: the reader won the race
  kLeftToReader,    // the prefetcher left it to the reader, too close for a copy to finish first
  kNotStagedAhead,  // planned, but not staged ahead: past the prefetch window, evicted, no room
};

class OpenObserver {
 public:
  virtual ~OpenObserver() = default;
  // `path` is relative to the backing root.
  virtual bool OnOpen(const std::string& path, Opener opener) = 0;
  // Called after OnOpen for an open that found no staged copy.
  virtual MissCause OnMiss(const std::string& /*path*/) { return MissCause::kUnplanned; }
};

}  // namespace clairfs
