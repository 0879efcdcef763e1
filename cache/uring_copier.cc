// UringCopier: the ring loop, one state machine per file, the buffer pool and the hand-off to the
// group committer (see uring_copier.h).
#include "cache/uring_copier.h"

#include <fcntl.h>
#include <liburing.h>
#include <linux/openat2.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <list>
#include <unordered_map>
#include <vector>

#include "cache/group_committer.h"
#include "planner/base/log.h"

namespace clairfs {
namespace {

constexpr uint64_t kWakeTag = 1;  // user_data of the eventfd read; file operations use an Op*

int64_t StatxNanos(const struct statx_timestamp& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

FileIdentity IdentityOfStatx(const struct statx& stx) {
  return FileIdentity{stx.stx_size, StatxNanos(stx.stx_mtime), StatxNanos(stx.stx_ctime),
                      stx.stx_ino};
}

struct FileCopy;

// The user_data of one ring operation: which file, and which of its operations.
struct Op {
  enum Kind { kOpen, kStatBefore, kChunk, kWriteback, kStatAfter, kFsync };
  FileCopy* file = nullptr;
  Kind kind = kOpen;
  int chunk = -1;  // kChunk: index in FileCopy::chunks
};

// One range of a file being copied: READ into a pool buffer, then WRITE it out (again for the
// rest of the range after a short read).
struct Chunk {
  Op op;
  bool busy = false;
  bool writing = false;  // the operation in flight is the WRITE
  int buffer = -1;
  uint64_t offset = 0;  // start of the range
  size_t len = 0;       // length of the range
  size_t done = 0;      // bytes of the range written
  size_t got = 0;       // bytes read by the last READ
  size_t written = 0;   // of `got`
};

struct FileCopy {
  CopyJob job;
  std::string source;      // the relative path, for messages
  struct open_how how {};  // read by the kernel when the OPENAT2 entry is submitted
  int src_fd = -1;
  StagingSlot slot;
  bool has_slot = false;
  struct statx stx {};
  Op open_op, stat_before_op, writeback_op, stat_after_op, fsync_op;
  std::vector<Chunk> chunks;  // at most file_depth ranges in flight
  int chunks_busy = 0;
  uint64_t next_offset = 0;  // first byte no range has claimed yet
  uint64_t copied = 0;       // bytes written
  uint64_t flushed = 0;      // `copied` when the last background fdatasync was started
  bool queued = false;       // on the list of files that may start a range
  bool final = false;        // every byte written; STATX and FSYNC started or waiting to
  int in_flight = 0;         // ring operations submitted and not yet completed
  int stat_after_res = 0;
  int fsync_res = 0;
  // The first failure; the copy ends once no operation of it is in flight any more.
  bool failed = false;
  CopyResult fail_result = CopyResult::kFailed;
  Status fail_status;
  bool fail_cache_side = false;
};

}  // namespace

struct UringCopier::Impl {
  UringCopierOptions options;
  ContentStore* store = nullptr;
  CopierHooks hooks;

  struct io_uring ring {};
  bool ring_ready = false;
  int wake_fd = -1;
  uint64_t wake_value = 0;  // target of the eventfd read
  char* pool = nullptr;
  size_t buffer_bytes = 0;
  bool fixed_buffers = false;
  std::atomic<int> in_use{0};
  std::atomic<int> peak{0};
  std::atomic<int> active{0};  // files started and not yet ended (including those committing)
  std::atomic<bool> stop_requested{false};

  // Ring-thread state.
  std::vector<int> free_buffers;
  std::unordered_map<FileCopy*, std::unique_ptr<FileCopy>> files;
  std::list<FileCopy*> waiting;  // files that may start another range, round robin
  bool stopping = false;
  uint64_t admit_retry_ns = 0;  // from the last hooks.next that said kNone

  // Publishes fsynced copies in groups; its callbacks use the members above, so it goes first.
  std::unique_ptr<GroupCommitter> committer;

  ~Impl() {
    committer.reset();
    if (ring_ready) io_uring_queue_exit(&ring);
    if (wake_fd >= 0) close(wake_fd);
    free(pool);
  }

  io_uring_sqe* Sqe() {
    io_uring_sqe* sqe = io_uring_get_sqe(&ring);
    if (sqe == nullptr) {  // the submission queue is full: hand it to the kernel and go on
      io_uring_submit(&ring);
      sqe = io_uring_get_sqe(&ring);
    }
    return sqe;
  }

  void ArmWake() {
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_read(sqe, wake_fd, &wake_value, sizeof(wake_value), 0);
    io_uring_sqe_set_data64(sqe, kWakeTag);
  }

  // Tags a prepared entry with its operation (after the prep, which may reset fields) and counts
  // it as in flight for its file.
  void Track(io_uring_sqe* sqe, Op* op) {
    io_uring_sqe_set_data(sqe, op);
    ++op->file->in_flight;
  }

  void Admit() {
    admit_retry_ns = 0;
    while (!stopping && active.load() < options.max_files) {
      CopyJob job;
      uint64_t retry_ns = 0;
      CopierHooks::Next next = hooks.next(&job, &retry_ns);
      if (next == CopierHooks::Next::kStopping) {
        stopping = true;
        break;
      }
      if (next == CopierHooks::Next::kNone) {
        admit_retry_ns = retry_ns;
        break;
      }
      auto file = std::make_unique<FileCopy>();
      FileCopy* f = file.get();
      f->job = std::move(job);
      f->source = f->job.path;
      f->open_op = Op{f, Op::kOpen, -1};
      f->stat_before_op = Op{f, Op::kStatBefore, -1};
      f->stat_after_op = Op{f, Op::kStatAfter, -1};
      f->fsync_op = Op{f, Op::kFsync, -1};
      f->writeback_op = Op{f, Op::kWriteback, -1};
      files.emplace(f, std::move(file));
      active.fetch_add(1);
      io_uring_sqe* sqe = Sqe();
      // Beneath the root, no link followed, never blocking on a FIFO (backing_tree.h).
      f->how.flags = BackingTree::kFileOpenFlags;
      f->how.resolve = BackingTree::ResolveFlags();
      io_uring_prep_openat2(sqe, options.backing->root_fd(), f->job.path.c_str(), &f->how);
      Track(sqe, &f->open_op);
    }
  }

  char* Buffer(int index) { return pool + static_cast<size_t>(index) * buffer_bytes; }

  void Enqueue(FileCopy* f) {
    if (f->queued || f->failed) return;
    f->queued = true;
    waiting.push_back(f);
  }

  void Unqueue(FileCopy* f) {
    if (!f->queued) return;
    f->queued = false;
    waiting.remove(f);
  }

  // Whether `f` has bytes no range has claimed and room for another range in flight.
  bool WantsRange(const FileCopy& f) const {
    return f.next_offset < f.job.identity.size && f.chunks_busy < static_cast<int>(f.chunks.size());
  }

  // Starts ranges of waiting files, one per file per turn, while buffers and tokens last; sets
  // `*wait_ns` when tokens ran short.
  void StartChunks(uint64_t* wait_ns) {
    *wait_ns = 0;
    while (!waiting.empty() && !free_buffers.empty()) {
      FileCopy* f = waiting.front();
      uint64_t want = std::min<uint64_t>(options.chunk_size, f->job.identity.size - f->next_offset);
      uint64_t wait = 0;
      if (!hooks.take_tokens(static_cast<size_t>(want), &wait)) {
        *wait_ns = std::max<uint64_t>(wait, 100000);
        return;
      }
      waiting.pop_front();
      f->queued = false;
      Chunk* c = nullptr;
      for (Chunk& candidate : f->chunks) {
        if (!candidate.busy) {
          c = &candidate;
          break;
        }
      }
      c->busy = true;
      c->writing = false;
      c->buffer = free_buffers.back();
      free_buffers.pop_back();
      int now = in_use.fetch_add(1) + 1;
      int old = peak.load();
      while (now > old && !peak.compare_exchange_weak(old, now)) {
      }
      c->offset = f->next_offset;
      c->len = static_cast<size_t>(want);
      c->done = 0;
      f->next_offset += want;
      ++f->chunks_busy;
      SubmitRead(c);
      if (WantsRange(*f)) Enqueue(f);  // behind the other waiting files
    }
  }

  void SubmitRead(Chunk* c) {
    FileCopy* f = c->op.file;
    io_uring_sqe* sqe = Sqe();
    char* into = Buffer(c->buffer);
    unsigned len = static_cast<unsigned>(c->len - c->done);
    uint64_t at = c->offset + c->done;
    if (fixed_buffers) {
      io_uring_prep_read_fixed(sqe, f->src_fd, into, len, at, c->buffer);
    } else {
      io_uring_prep_read(sqe, f->src_fd, into, len, at);
    }
    Track(sqe, &c->op);
  }

  void SubmitWrite(Chunk* c) {
    FileCopy* f = c->op.file;
    io_uring_sqe* sqe = Sqe();
    char* data = Buffer(c->buffer) + c->written;
    unsigned len = static_cast<unsigned>(c->got - c->written);
    uint64_t at = c->offset + c->done + c->written;
    if (fixed_buffers) {
      io_uring_prep_write_fixed(sqe, f->slot.fd, data, len, at, c->buffer);
    } else {
      io_uring_prep_write(sqe, f->slot.fd, data, len, at);
    }
    Track(sqe, &c->op);
  }

  void ReleaseChunk(Chunk* c) {
    if (!c->busy) return;
    c->busy = false;
    --c->op.file->chunks_busy;
    if (c->buffer >= 0) {
      free_buffers.push_back(c->buffer);
      c->buffer = -1;
      in_use.fetch_sub(1);
    }
  }

  // Ends a copy that will not be published: closes, aborts the slot, reports, forgets. Only
  // once no operation of it is in flight (the kernel may still use its buffers and fds).
  // `counted`: a cache-side failure the store has already counted (cache/device_log.h).
  void Finish(FileCopy* f, CopyResult result, Status status, bool cache_side = false,
              bool counted = false) {
    for (Chunk& c : f->chunks) ReleaseChunk(&c);
    Unqueue(f);
    if (f->src_fd >= 0) close(f->src_fd);
    f->src_fd = -1;
    if (f->has_slot) store->Abort(&f->slot);
    f->has_slot = false;
    if (result == CopyResult::kSkipped || result == CopyResult::kUnsettled) {
      Log(LogLevel::kDebug, "not staging %s: %s", f->job.path.c_str(), status.message().c_str());
    } else if (result == CopyResult::kFailed && cache_side) {
      // Counted toward the device's full or lost condition (cache/device_log.h), not a line each.
      if (!counted) store->ReportDeviceError(status);
      CLAIRFS_LOG_DEBUG("staging %s failed: %s", f->job.path.c_str(), status.message().c_str());
    } else if (result == CopyResult::kFailed) {
      Log(LogLevel::kWarn, "staging %s failed: %s", f->job.path.c_str(), status.message().c_str());
    }
    hooks.done(f->job, result, 0, status);
    files.erase(f);
    active.fetch_sub(1);
  }

  // Records the first failure of `f`; the copy ends when its last operation in flight does.
  void Fail(FileCopy* f, CopyResult result, Status status, bool cache_side = false) {
    if (!f->failed) {
      f->failed = true;
      f->fail_result = result;
      f->fail_status = std::move(status);
      f->fail_cache_side = cache_side;
    }
    Unqueue(f);
    if (f->in_flight == 0) Finish(f, f->fail_result, f->fail_status, f->fail_cache_side);
  }

  static Status Errno(int res, const std::string& what) { return Status::FromErrno(-res, what); }
  static Status Shutdown() { return Status::Error(ESHUTDOWN, "the mount is going away"); }

  void BeginCopy(FileCopy* f) {
    auto slot = store->BeginStaging(f->job.path, f->job.identity.size, f->job.may_evict);
    if (!slot.ok()) {
      int code = slot.status().code();
      if (code == EEXIST) return Finish(f, CopyResult::kAlreadyStaged, Status::Ok());
      if (code == EFBIG || code == ENOSPC) return Finish(f, CopyResult::kSkipped, slot.status());
      // The device failed; the store has counted it (cache/device_log.h).
      return Finish(f, CopyResult::kFailed, slot.status(), /*cache_side=*/true, /*counted=*/true);
    }
    f->slot = std::move(*slot);
    f->has_slot = true;
    if (f->job.identity.size == 0) return StartFinal(f);
    uint64_t ranges = (f->job.identity.size + options.chunk_size - 1) / options.chunk_size;
    f->chunks.resize(
        static_cast<size_t>(std::min<uint64_t>(ranges, static_cast<uint64_t>(options.file_depth))));
    for (size_t i = 0; i < f->chunks.size(); ++i) {
      f->chunks[i].op = Op{f, Op::kChunk, static_cast<int>(i)};
    }
    Enqueue(f);
  }

  // Every byte is written: the identity check of the source and the fsync of the copy run at once
  // (once the last writeback started by a chunk has returned).
  void StartFinal(FileCopy* f) {
    f->final = true;
    if (f->in_flight > 0) return;  // OnWriteback() comes back here
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_statx(sqe, f->src_fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &f->stx);
    Track(sqe, &f->stat_after_op);
    sqe = Sqe();
    io_uring_prep_fsync(sqe, f->slot.fd, 0);
    Track(sqe, &f->fsync_op);
  }

  void OnOpen(FileCopy* f, int res) {
    if (res < 0) return Finish(f, CopyResult::kSkipped, Errno(res, "open " + f->source));
    f->src_fd = res;
    if (stopping) return Finish(f, CopyResult::kSkipped, Shutdown());
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_statx(sqe, f->src_fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &f->stx);
    Track(sqe, &f->stat_before_op);
  }

  void OnStatBefore(FileCopy* f, int res) {
    if (res < 0) return Finish(f, CopyResult::kSkipped, Errno(res, "stat " + f->source));
    if (stopping) return Finish(f, CopyResult::kSkipped, Shutdown());
    if (!S_ISREG(f->stx.stx_mode)) {
      return Finish(f, CopyResult::kSkipped, Status::Error(EINVAL, "not a regular file"));
    }
    if (IdentityOfStatx(f->stx) != f->job.identity) {
      return Finish(f, CopyResult::kSkipped,
                    Status::Error(ESTALE, "backing file changed since it was listed"));
    }
    // Opened non-blocking so that a FIFO swapped in cannot hang the open; a regular file reads
    // in full from here on.
    Status blocking = BackingTree::ClearNonBlocking(f->src_fd);
    if (!blocking.ok()) return Finish(f, CopyResult::kSkipped, blocking);
    BeginCopy(f);
  }

  void OnChunk(FileCopy* f, Chunk* c, int res) {
    if (f->failed) {
      ReleaseChunk(c);
      return Fail(f, f->fail_result, f->fail_status);
    }
    if (!c->writing) {  // a READ ended
      if (res <= 0) {
        ReleaseChunk(c);
        if (res < 0) return Fail(f, CopyResult::kFailed, Errno(res, "read " + f->source));
        return Fail(f, CopyResult::kSkipped,
                    Status::Error(ESTALE, "backing file shrank while staging"));
      }
      if (stopping) {
        ReleaseChunk(c);
        return Fail(f, CopyResult::kSkipped, Shutdown());
      }
      c->got = static_cast<size_t>(res);
      c->written = 0;
      c->writing = true;
      return SubmitWrite(c);
    }
    if (res <= 0) {  // a WRITE ended
      ReleaseChunk(c);
      return Fail(f, CopyResult::kFailed,
                  res < 0 ? Errno(res, "write to cache")
                          : Status::Error(EIO, "write to cache made no progress"),
                  /*cache_side=*/true);
    }
    c->written += static_cast<size_t>(res);
    if (c->written < c->got) return SubmitWrite(c);
    c->done += c->got;
    f->copied += c->got;
    if (stopping) {
      ReleaseChunk(c);
      return Fail(f, CopyResult::kSkipped, Shutdown());
    }
    if (c->done < c->len) {  // a short read: the rest of the range
      c->writing = false;
      return SubmitRead(c);
    }
    ReleaseChunk(c);
    if (f->copied == f->job.identity.size) return StartFinal(f);
    // Not the last range: start writing it to the device now, and every `flush_every` bytes
    // make what is written durable, both without waiting. Otherwise the final FSYNC of a large
    // file would write the whole file and flush the device's cache of all of it (~0.15 s per
    // 256 MiB on the dev VM), after the copy instead of during it. Only the final FSYNC counts
    // for the publish protocol.
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_sync_file_range(sqe, f->slot.fd, static_cast<unsigned>(c->len), c->offset,
                                  SYNC_FILE_RANGE_WRITE);
    Track(sqe, &f->writeback_op);
    if (options.flush_every > 0 && f->copied - f->flushed >= options.flush_every) {
      f->flushed = f->copied;
      sqe = Sqe();
      io_uring_prep_fsync(sqe, f->slot.fd, IORING_FSYNC_DATASYNC);
      Track(sqe, &f->writeback_op);
    }
    if (WantsRange(*f)) Enqueue(f);
  }

  // A writeback request returned (its outcome does not matter: the final FSYNC reports errors).
  void OnWriteback(FileCopy* f) {
    if (f->failed) return Fail(f, f->fail_result, f->fail_status);
    if (f->final && f->in_flight == 0) StartFinal(f);
  }

  void OnFinal(FileCopy* f) {
    if (f->in_flight > 0) return;  // the other of the two is still running
    if (f->failed) return Finish(f, f->fail_result, f->fail_status, f->fail_cache_side);
    if (options.drop_pages) (void)posix_fadvise(f->src_fd, 0, 0, POSIX_FADV_DONTNEED);
    close(f->src_fd);  // nothing reads it any more; the release is asynchronous
    f->src_fd = -1;
    if (f->stat_after_res < 0) {
      return Finish(f, CopyResult::kFailed, Errno(f->stat_after_res, "stat " + f->source));
    }
    if (IdentityOfStatx(f->stx) != f->job.identity) {
      return Finish(f, CopyResult::kSkipped,
                    Status::Error(ESTALE, "backing file changed while staging"));
    }
    // The settle rule (stager.h): a write that began before the copy may still be under way.
    if (StatxNanos(f->stx.stx_ctime) >= f->job.unsettled_from_ns) {
      return Finish(f, CopyResult::kUnsettled,
                    Status::Error(EAGAIN, "backing file changed within the settle time"));
    }
    if (f->fsync_res < 0) {
      return Finish(f, CopyResult::kFailed, Errno(f->fsync_res, "fsync cache copy"),
                    /*cache_side=*/true);
    }
    if (stopping) return Finish(f, CopyResult::kSkipped, Shutdown());
    f->slot.data_synced = true;  // the FSYNC completed after the last WRITE did
    // Clean after the FSYNC, so the pages go at once.
    if (options.drop_pages) (void)posix_fadvise(f->slot.fd, 0, 0, POSIX_FADV_DONTNEED);
    HandOffToCommit(f);
  }

  // The copy leaves the ring: the committer publishes it with whatever else is ready, then
  // reports it and frees its place in flight.
  void HandOffToCommit(FileCopy* f) {
    files.extract(f).mapped().release();  // owned by the callback below from here on
    committer->Submit(&f->slot, f->job.identity, [this, f](const Status& st) {
      std::unique_ptr<FileCopy> owned(f);
      if (st.ok()) {
        hooks.done(f->job, CopyResult::kStaged, f->job.identity.size, st);
      } else if (st.code() == ENOSPC) {
        // The copy took more than reserved and no room was found for it without evicting a copy
        // the policy keeps: not staged, as when the reservation itself finds no room.
        Log(LogLevel::kDebug, "not staging %s: %s", f->job.path.c_str(), st.message().c_str());
        hooks.done(f->job, CopyResult::kSkipped, 0, st);
      } else {
        // The store counted the device's failure (cache/device_log.h).
        CLAIRFS_LOG_DEBUG("publishing %s failed: %s", f->job.path.c_str(), st.message().c_str());
        hooks.done(f->job, CopyResult::kFailed, 0, st);
      }
      owned.reset();
      active.fetch_sub(1);
      Wake();
    });
  }

  void OnCompletion(Op* op, int res) {
    FileCopy* f = op->file;
    --f->in_flight;
    switch (op->kind) {
      case Op::kOpen:
        return OnOpen(f, res);
      case Op::kStatBefore:
        return OnStatBefore(f, res);
      case Op::kChunk:
        return OnChunk(f, &f->chunks[static_cast<size_t>(op->chunk)], res);
      case Op::kWriteback:
        return OnWriteback(f);
      case Op::kStatAfter:
        f->stat_after_res = res;
        return OnFinal(f);
      case Op::kFsync:
        f->fsync_res = res;
        return OnFinal(f);
    }
  }

  void Wake() {
    uint64_t one = 1;
    ssize_t n = write(wake_fd, &one, sizeof(one));
    (void)n;  // EAGAIN means a wake-up is already pending
  }

  void Run() {
    ArmWake();
    for (;;) {
      if (stop_requested.load()) stopping = true;  // also when every slot is busy
      Admit();
      uint64_t wait_ns = 0;
      if (stopping) {
        // Files waiting for a buffer or tokens end now (or when their last chunk does).
        std::vector<FileCopy*> queued(waiting.begin(), waiting.end());
        for (FileCopy* f : queued) Fail(f, CopyResult::kSkipped, Shutdown());
        if (active.load() == 0) break;
      } else {
        StartChunks(&wait_ns);
        // A request deferred by the owner comes due without a Wake(): ask again by then.
        if (admit_retry_ns > 0) {
          wait_ns = wait_ns > 0 ? std::min(wait_ns, admit_retry_ns) : admit_retry_ns;
        }
      }
      io_uring_submit(&ring);
      io_uring_cqe* cqe = nullptr;
      int r;
      if (wait_ns > 0) {
        struct __kernel_timespec ts;
        ts.tv_sec = static_cast<int64_t>(wait_ns / 1000000000);
        ts.tv_nsec = static_cast<int64_t>(wait_ns % 1000000000);
        r = io_uring_wait_cqe_timeout(&ring, &cqe, &ts);
      } else {
        r = io_uring_wait_cqe(&ring, &cqe);
      }
      if (r < 0 && r != -ETIME && r != -EINTR) {
        Log(LogLevel::kError, "io_uring wait failed: %s", std::strerror(-r));
      }
      while (io_uring_peek_cqe(&ring, &cqe) == 0) {
        uint64_t tag = io_uring_cqe_get_data64(cqe);
        int res = cqe->res;
        io_uring_cqe_seen(&ring, cqe);
        if (tag == LIBURING_UDATA_TIMEOUT) continue;
        if (tag == kWakeTag) {
          ArmWake();
          continue;
        }
        OnCompletion(reinterpret_cast<Op*>(tag), res);
      }
    }
  }
};

Result<std::unique_ptr<UringCopier>> UringCopier::Create(const UringCopierOptions& options,
                                                         ContentStore* store, CopierHooks hooks) {
  if (!options.backing) return Status::Invalid("io_uring copier: no backing tree");
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->options.max_files = std::max(1, options.max_files);
  impl->options.buffers = std::max(1, options.buffers);
  impl->options.chunk_size = std::max<size_t>(4096, options.chunk_size);
  impl->store = store;
  impl->hooks = std::move(hooks);

  impl->options.file_depth = std::max(1, options.file_depth);
  // In flight at most: two operations per file (STATX and FSYNC at the end), one per chunk buffer
  // (its READ or WRITE; writeback requests come on top, briefly), and the wake-up read. A full
  // submission queue is submitted early (Sqe()).
  unsigned entries = static_cast<unsigned>(2 * impl->options.max_files + impl->options.buffers + 1);
  int r = io_uring_queue_init(entries, &impl->ring, IORING_SETUP_CLAMP);
  if (r < 0) return Status::FromErrno(-r, "io_uring_queue_init");
  impl->ring_ready = true;
  // Opens, stats and reads of a PFS file, buffered writes and fsyncs block, so the kernel runs
  // them on io-wq workers, by default at most 4 per CPU: 8 on a 2-core node, which would make
  // this ring an 8-thread copier whatever max_files says. Allow one worker per operation that
  // can be in flight (workers are created on demand and exit when idle).
  unsigned iowq_limits[2] = {entries, 0};  // bounded work; 0 = leave unbounded work as it is
  r = io_uring_register_iowq_max_workers(&impl->ring, iowq_limits);
  if (r < 0) {
    Log(LogLevel::kDebug, "io_uring: io-wq worker limit not raised: %s", std::strerror(-r));
  }
  io_uring_probe* probe = io_uring_get_probe_ring(&impl->ring);
  if (probe == nullptr) return Status::Error(ENOSYS, "io_uring: cannot probe operations");
  bool complete = true;
  for (int op :
       {IORING_OP_OPENAT2, IORING_OP_STATX, IORING_OP_READ, IORING_OP_WRITE, IORING_OP_READ_FIXED,
        IORING_OP_WRITE_FIXED, IORING_OP_FSYNC, IORING_OP_SYNC_FILE_RANGE}) {
    complete = complete && io_uring_opcode_supported(probe, op);
  }
  io_uring_free_probe(probe);
  if (!complete)
    return Status::Error(ENOSYS, "io_uring lacks openat2/statx/read/write/fsync/sync_file_range");

  impl->wake_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (impl->wake_fd < 0) return Status::FromErrno(errno, "eventfd");

  impl->buffer_bytes = (impl->options.chunk_size + 4095) / 4096 * 4096;
  void* pool = nullptr;
  size_t total = impl->buffer_bytes * static_cast<size_t>(impl->options.buffers);
  if (posix_memalign(&pool, 4096, total) != 0) return Status::Error(ENOMEM, "buffer pool");
  impl->pool = static_cast<char*>(pool);
  std::vector<iovec> iovs(static_cast<size_t>(impl->options.buffers));
  for (int i = 0; i < impl->options.buffers; ++i) {
    iovs[static_cast<size_t>(i)] = iovec{impl->Buffer(i), impl->buffer_bytes};
    impl->free_buffers.push_back(impl->options.buffers - 1 - i);
  }
  // Registered buffers save a page pin per I/O; without them (RLIMIT_MEMLOCK) plain reads work.
  r = io_uring_register_buffers(&impl->ring, iovs.data(), static_cast<unsigned>(iovs.size()));
  impl->fixed_buffers = r == 0;
  if (r < 0) Log(LogLevel::kDebug, "io_uring: buffers not registered: %s", std::strerror(-r));

  GroupCommitterOptions committer_options;
  committer_options.max_batch = static_cast<size_t>(std::max(1, options.commit_batch));
  committer_options.linger_ns = options.commit_linger_ns;
  committer_options.threads = std::max(1, options.commit_threads);
  impl->committer = std::make_unique<GroupCommitter>(store, committer_options);
  return std::unique_ptr<UringCopier>(new UringCopier(std::move(impl)));
}

UringCopier::UringCopier(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
UringCopier::~UringCopier() = default;

void UringCopier::Run() { impl_->Run(); }
void UringCopier::Wake() { impl_->Wake(); }
void UringCopier::RequestStop() {
  impl_->stop_requested.store(true);
  impl_->Wake();
}
int UringCopier::buffers_in_use() const { return impl_->in_use.load(); }
int UringCopier::peak_buffers_in_use() const { return impl_->peak.load(); }
int UringCopier::buffer_count() const { return impl_->options.buffers; }

}  // namespace clairfs
