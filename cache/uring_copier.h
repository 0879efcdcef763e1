// UringCopier: the io_uring staging engine behind Stager. Copies many backing files into the
// content store at once, so that a parallel filesystem's per-open latency (milliseconds) overlaps
// across files instead of adding up.
//
// One thread (the caller of Run()) owns the ring. Per file, as io_uring operations:
//   OPENAT source -> STATX (identity must equal the expected one) -> [BeginStaging, synchronous:
//   reserves space, creates the temp file] -> READ/WRITE of up to `file_depth` chunks at once
//   (each chunk a fixed range: READ into a pool buffer, WRITE at the same offset; a short READ
//   is followed by a READ of the rest of the range; after the WRITE of any range but the last,
//   SYNC_FILE_RANGE starts writing it to the device, and every `flush_every` bytes an fdatasync
//   runs in the background, neither awaited) -> STATX of the source (identity unchanged, and
//   its ctime older than the job's unsettled_from_ns: the owner's settle rule, stager.h) and
//   FSYNC of the temp file, both at once -> close(2) of the source
// and then a GroupCommitter publishes it with the other copies ready by then
// (ContentStore::CommitBatch: renames, one directory sync, one synced index write per group; the
// data fsync is not repeated, the slot says it was done), so publishing keeps the store's
// protocol and crash guarantees and never stalls the ring. Many FSYNCs in flight on the ring let
// the file system merge them into few journal commits.
//
// Bounds: at most `max_files` files between OPENAT and the end of publishing (open fds,
// reservations); at most `buffers` chunk buffers of `chunk_size` bytes (a chunk holds a buffer
// from its READ to the completion of its WRITE; files waiting for a buffer or for bandwidth
// tokens hold none). Waiting files take buffers in turn, one chunk per turn, so a few large files
// use the pool's depth (up to `file_depth` chunks each) while many files get one chunk each.
// The ring's limit on kernel io-wq workers (which run the operations that block: opens, stats and
// reads of PFS files, buffered writes, fsyncs) is raised from 4 per CPU to the operations that
// can be in flight, or `max_files` would not mean files in flight on a small node.
// Requests come from the owner through CopierHooks::next (highest priority first, pulled only
// when a slot is free); bandwidth tokens are taken per chunk without blocking (a file short of
// tokens waits while the ring keeps completing other operations).
//
// Shutdown: once hooks.next reports stopping (or RequestStop()), nothing new starts; operations
// already submitted complete (each is one open, stat, fsync or chunk), then every unfinished copy
// is aborted (temp file unlinked, reservation released) and reported as ESHUTDOWN. Run() returns
// when no file remains.
//
// io_uring bypasses the Env seam: the fault-injecting Env cannot see these operations, so Stager
// uses this engine only with the default Env unless told otherwise.
//
// Thread-safety: Create() anywhere; Run() on one thread; Wake() and stats accessors from any
// thread. Hooks run on the ring thread (next, take_tokens, done for failures before commit) and
// on the committer thread (done after publishing); they must not call back into the copier except
// Wake().
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "cache/backing_tree.h"
#include "cache/content_store.h"
#include "cache/node_attr.h"
#include "planner/base/status.h"

namespace clairfs {

struct UringCopierOptions {
  // The tree files are read from: opened beneath its root with no link followed, as the
  // thread-pool engine does (backing_tree.h). Required.
  std::shared_ptr<const BackingTree> backing;
  int max_files = 64;               // files in flight (open .. published)
  int buffers = 64;                 // chunk buffers in the pool
  size_t chunk_size = 256 * 1024;   // bytes per READ/WRITE
  int file_depth = 8;               // chunks of one file in flight at most
  uint64_t flush_every = 32 << 20;  // large files: background fdatasync every this many bytes
  int commit_threads = 1;           // groups published at once (GroupCommitterOptions::threads)
  int commit_batch = 64;            // copies per group at most
  uint64_t commit_linger_ns = 0;    // a group's longest wait for company
  bool drop_pages = false;          // see StagerOptions::drop_pages
};

struct CopyJob {
  std::string path;  // relative to the backing root
  FileIdentity identity;
  bool may_evict = true;  // passed to ContentStore::BeginStaging
  // The settle rule (stager.h): a copy whose source's ctime, stat'ed after the copy, is at or
  // after this (realtime ns: the copy's start minus the settle time) is not published
  // (kUnsettled). INT64_MAX: no rule.
  int64_t unsettled_from_ns = INT64_MAX;
};

// How one copy ended. kAlreadyStaged: published meanwhile by someone else (status ok).
// kSkipped: the backing file is gone, changed, not regular, too large, finds no room it may take,
// or the copier is stopping.
// kUnsettled: copied, but the source's ctime is at or after job.unsettled_from_ns: not published
// (the owner stages it again later; status EAGAIN).
// kFailed: an I/O error (logged).
enum class CopyResult { kStaged, kAlreadyStaged, kSkipped, kUnsettled, kFailed };

struct CopierHooks {
  enum class Next { kJob, kNone, kStopping };
  // Fills `job` with the next request to start (called only when a slot is free). With kNone it
  // may set `*retry_ns` to when a request will be ready without a Wake() (e.g. one deferred by
  // the settle rule); Run() then asks again after that long at the latest. 0: only on Wake().
  std::function<Next(CopyJob* job, uint64_t* retry_ns)> next;
  // Takes `bytes` of bandwidth tokens now (true) or sets `*wait_ns` to a time worth waiting.
  std::function<bool(size_t bytes, uint64_t* wait_ns)> take_tokens;
  // Reports the end of one job (exactly once per job returned by `next`).
  std::function<void(const CopyJob& job, CopyResult result, uint64_t bytes, const Status& status)>
      done;
};

class UringCopier {
 public:
  // Sets up the ring (queue depth from max_files) and the buffer pool; ENOSYS/EPERM (or the
  // errno of io_uring_queue_init) when io_uring is unavailable or lacks an operation we use.
  static Result<std::unique_ptr<UringCopier>> Create(const UringCopierOptions& options,
                                                     ContentStore* store, CopierHooks hooks);
  ~UringCopier();
  UringCopier(const UringCopier&) = delete;
  UringCopier& operator=(const UringCopier&) = delete;

  // Runs the ring until hooks.next reported kStopping and every started copy has ended.
  void Run();
  // Makes Run() ask hooks.next again (new work, cancellation). Any thread.
  void Wake();
  // Makes Run() stop as if hooks.next had said kStopping, even while every slot is busy.
  void RequestStop();

  // Buffer pool use (the memory bound): now, the most ever, and the pool size.
  int buffers_in_use() const;
  int peak_buffers_in_use() const;
  int buffer_count() const;

 private:
  struct Impl;
  explicit UringCopier(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace clairfs
