// ListAhead: right after a mount comes up, lists the mount's own tree from a daemon thread, so
// that the kernel knows the dataset's names (dentries and attributes, from READDIRPLUS) before
// the job opens its first file.
//
// Why: the first open of a name the kernel has never seen costs a LOOKUP round trip to the daemon
// before the OPEN; a name it got from a READDIRPLUS costs none until its entry times out
// (--attr-timeout, a day by default). A loader that lists its dataset first (ImageFolder) gets
// this anyway, while it starts; one that opens paths from an index (a CSV, a file list, shards)
// pays a LOOKUP per file in its first epoch. docs/BENCHMARKS.md measures both.
//
// What: directories depth-first in listing order (the manifest's name order), through the
// mountpoint with opendir/readdir (Env::ListDir): never a stat or an open of a file. It stops after
// `max_names` names (files, directories and links), at the end of the tree, or at Stop(). Each
// name costs the kernel about 1 KiB (a dentry and a FUSE inode), reclaimable: under memory
// pressure the kernel forgets names and looks them up again when opened. A directory that cannot
// be listed is counted and skipped; the walk goes on.
//
// Unmount: an open directory keeps the mount busy. The daemon asks the walk to stop before it
// unmounts and joins it after the FUSE session is gone (a listing in flight then fails instead of
// waiting for an answer); `clairfs umount` waits for a running walk before it retries a busy
// unmount (tools/cmd_umount.cc).
//
// Threading: Start() runs Run() on its own thread at nice 10; RequestStop() makes it stop at its
// next directory; Stop() (also the destructor) does that and joins. stats() may be read from any
// thread at any time, also before Start.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>

#include "cache/env.h"
#include "planner/base/status.h"

namespace clairfs {

// Default bound of names listed ahead: 64 Ki names, about 64 MiB of kernel memory.
inline constexpr uint64_t kDefaultListAheadNames = 65536;

class ListAhead {
 public:
  struct Stats {
    bool started = false;      // Start() or Run() was called
    uint64_t names = 0;        // entries listed (each now known to the kernel)
    uint64_t directories = 0;  // directories listed
    uint64_t failed_directories = 0;
    bool done = false;     // the walk ended (bound reached, tree ended or stopped)
    bool stopped = false;  // it ended because it was asked to (unmount)
    double seconds = 0;    // how long the walk took, once done
  };

  ListAhead(Env* env, uint64_t max_names);
  ~ListAhead();
  ListAhead(const ListAhead&) = delete;
  ListAhead& operator=(const ListAhead&) = delete;

  // Lists `mountpoint` on a background thread. At most once.
  void Start(const std::string& mountpoint);
  void RequestStop() { stop_.store(true); }
  void Stop();
  // The walk itself, on the calling thread; logs its result. Returns the first listing error,
  // if any (the walk went on past it).
  Status Run(const std::string& mountpoint);
  Stats stats() const;

 private:
  Env* env_;
  const uint64_t max_names_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> started_{false};
  std::atomic<uint64_t> names_{0};
  std::atomic<uint64_t> directories_{0};
  std::atomic<uint64_t> failed_directories_{0};
  std::atomic<bool> done_{false};
  std::atomic<bool> stopped_{false};
  std::atomic<double> seconds_{0};
  std::thread thread_;
};

}  // namespace clairfs
