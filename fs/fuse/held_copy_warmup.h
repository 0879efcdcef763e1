// HeldCopyWarmup: right after a mount comes up with passthrough, holds the staged copies of files
// that no open has asked for yet (HeldCopies::Hold), so the first open of each after a fresh
// mount claims its copy like a reopen does; and, from then on, each copy as it is staged
// (OnPublished), so the first open of a file the prefetcher or `clairfs stage` staged during the
// job does too.
//
// Why: a first open of a staged file costs the daemon an open of the copy, a BACKING_OPEN and a
// close (three system calls, several microseconds each on virtual machines) while the reader
// waits for the OPEN reply; a reopen of a held copy costs none (docs/BENCHMARKS.md). A training
// job mounts its dataset seconds before its first epoch (model and loader start-up): the
// warm-up does that work then, on one background thread at nice 10, instead of inside each first
// OPEN. A planned job's prefetcher stages each file shortly before its first open: holding it
// right after it is published moves the same work from the reader's wait to the staging thread.
//
// What: the manifest's regular files in key order whose staged copy matches the manifest's
// version, until HeldCopies::HoldRoom() is 0 (the held-id bound, `--held-copies`, 64 Ki files by
// default), every copy the store held at the start was seen, or the manifest ends. A dataset
// within the bound is held whole; a larger one holds its first files in key order (a shuffled
// epoch finds the same share of its first opens held), each ranked behind the copies released by
// opens (HoldRank::kBehindReleased). A copy published after Start is held ranked like a copy
// released now (kMostRecent): when the bound is full, the held copy ranked lowest is closed for
// it. A copy that left the store while it was being held is released again (CopyRemoved), so a
// held copy never names an evicted file. Nothing here changes what an open serves: Claim still
// checks the version and the copy at the open. Each file the walk holds is also remembered in the
// manifest's node cache (64 Ki bound), so its LOOKUP and OPEN read no index record either.
//
// Threading: Start() runs Run() on its own thread; Stop() (also the destructor) asks it to stop
// at its next file and joins it. OnPublished runs on the store's committing threads, any time
// (it does nothing before Start or after Stop); the caller keeps `held` alive until those
// threads have stopped. stats() may be read from any thread at any time, also before Start (the
// status handler holds the warm-up from before the mount is up).
#pragma once

#include <atomic>
#include <cstdint>
#include <thread>

#include "cache/content_store.h"
#include "cache/env.h"
#include "cache/manifest.h"
#include "fs/held_copies.h"
#include "planner/base/status.h"

namespace clairfs {

class HeldCopyWarmup {
 public:
  struct Stats {
    bool started = false;  // Start() or Run() was called (not without passthrough)
    uint64_t held = 0;     // copies this warm-up held
    uint64_t scanned = 0;  // regular files of the manifest looked at
    bool done = false;     // the walk ended (bound reached, manifest ended, stopped or failed)
    double seconds = 0;    // how long the walk took, once done
    uint64_t held_when_staged = 0;  // copies held by OnPublished
  };

  HeldCopyWarmup(Manifest* manifest, ContentStore* store, Env* env);
  ~HeldCopyWarmup();
  HeldCopyWarmup(const HeldCopyWarmup&) = delete;
  HeldCopyWarmup& operator=(const HeldCopyWarmup&) = delete;

  // Holds into `held` (the mount's passthrough) on a background thread. At most once.
  void Start(HeldCopies* held);
  void Stop();
  // The walk itself, on the calling thread; logs its result.
  Status Run(HeldCopies* held);
  // The copy of `path` was just published: holds it, ranked as most recent (HoldRank::kMostRecent).
  void OnPublished(const std::string& path);
  Stats stats() const;

 private:
  // Holds the copy of one file if it is staged at the manifest's version; true if held.
  // `*staged`: whether the store had a copy of it at all.
  bool HoldOne(HeldCopies* held, const std::string& path, const NodeAttr& attr, HoldRank rank,
               bool* staged);

  Manifest* manifest_;
  ContentStore* store_;
  std::atomic<HeldCopies*> held_{nullptr};  // set by Start or Run
  Env* env_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> started_{false};
  std::atomic<uint64_t> held_count_{0};
  std::atomic<uint64_t> scanned_{0};
  std::atomic<bool> done_{false};
  std::atomic<double> seconds_{0};
  std::atomic<uint64_t> held_when_staged_{0};
  std::thread thread_;
};

}  // namespace clairfs
