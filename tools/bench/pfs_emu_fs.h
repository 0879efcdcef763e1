// PfsEmuFs: the PFS emulator's FUSE low-level filesystem, a read-only passthrough of a backing
// directory that answers like a busy parallel-filesystem client.
//
// What it emulates, and how:
//   - latency per operation (open; lookup and getattr; each read), added by deferring the reply:
//     the FUSE worker does the real operation at once, then hands the reply to DeferredReplies,
//     which sends it when due. Workers never sleep, so concurrent requests overlap their delays.
//   - bandwidth caps, aggregate and per open file (TokenBucket): a read's reply is deferred until
//     both buckets have delivered its bytes.
//   - injected errors (PfsFailRule): open or read of matching paths fails with the given errno.
//   - no caching that could hide the latency in a later epoch: entry and attribute timeouts are
//     0 (every stat and path walk reaches us), files open with direct I/O (every read reaches us).
// Read-only: the mount is "ro" and every mutating operation answers EROFS. Inodes: the FUSE node
// ids come from pfs_emu_inodes.h (lookup order); the inode numbers stat(2) and readdir show are
// the backing files' own, stable across emulator restarts, so a clairfs cache over the emulator
// (whose copies record the backing inode) keeps its copies when the emulator is restarted. Not
// emulated: readdir latency, metadata-server contention, partial reads.
// Counters: files opened and bytes read from the backing store since the mount, what a bench
// charges to the PFS. getxattr(MOUNTPOINT, "user.pfs_emu.counters") answers them as one JSON
// object, {"opens":N,"bytes_read":N} (kCountersXattr; any other name, or another inode, is
// ENODATA).
//
// Thread-safety: callbacks run on libfuse's worker threads concurrently; shared state is the
// inode table (its own mutex), the aggregate bucket (its own mutex) and immutable options.
// Per-open state (OpenFile) is used by the kernel's requests for that handle and freed in
// RELEASE, which the kernel sends only after the last read on it has been answered.
// Errors: callbacks never throw; every failure becomes an errno reply.
#pragma once

#include <fuse_lowlevel.h>

#include <atomic>
#include <memory>
#include <string>

#include "planner/base/status.h"
#include "tools/bench/deferred_replies.h"
#include "tools/bench/pfs_emu_inodes.h"
#include "tools/bench/pfs_emu_options.h"
#include "tools/bench/token_bucket.h"

namespace clairfs {

class PfsEmuFs {
 public:
  // Opens the backing root; fails with the errno and a message naming it.
  static Result<std::unique_ptr<PfsEmuFs>> Create(const PfsEmuOptions& options);
  ~PfsEmuFs();
  PfsEmuFs(const PfsEmuFs&) = delete;
  PfsEmuFs& operator=(const PfsEmuFs&) = delete;

  // The operation table; pass `this` as the session's userdata.
  static const fuse_lowlevel_ops& Operations();

  // The deferred-reply timer: start before the session loop, stop after it.
  DeferredReplies& replies() { return replies_; }
  const PfsEmuOptions& options() const { return options_; }
  PfsEmuInodes& inodes() { return inodes_; }
  TokenBucket& aggregate_bucket() { return aggregate_; }
  int root_fd() const { return root_fd_; }
  // Counted when an open succeeds and as a read's bytes leave the backing store.
  std::atomic<uint64_t>& opens() { return opens_; }
  std::atomic<uint64_t>& bytes_read() { return bytes_read_; }

 private:
  PfsEmuFs(const PfsEmuOptions& options, int root_fd, dev_t dev, ino_t ino);

  const PfsEmuOptions options_;
  const int root_fd_;  // O_PATH|O_DIRECTORY fd of the backing root, for *at() calls
  PfsEmuInodes inodes_;
  TokenBucket aggregate_;
  DeferredReplies replies_;
  std::atomic<uint64_t> opens_{0};
  std::atomic<uint64_t> bytes_read_{0};
};

}  // namespace clairfs
