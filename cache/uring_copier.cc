// UringCopier: the ring loop, one state machine per file, the buffer pool and the hand-off to the
// group committer (see uring_copier.h).
#include "cache/uring_copier.h"

#include <fcntl.h>
#include <liburing.h>
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
#include "planner/log.h"

namespace clairfs {
namespace {

constexpr uint64_t kWakeTag = 1;  // user_data of the eventfd read; files use their address

enum class Step { kOpen, kStatBefore, kWaiting, kRead, kWrite, kStatAfter, kFsync, kClose };

int64_t StatxNanos(const struct statx_timestamp& t) {
  return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec;
}

FileIdentity IdentityOfStatx(const struct statx& stx) {
  return FileIdentity{stx.stx_size, StatxNanos(stx.stx_mtime), StatxNanos(stx.stx_ctime),
                      stx.stx_ino};
}

struct FileCopy {
  CopyJob job;
  std::string source;
  Step step = Step::kOpen;
  int src_fd = -1;
  StagingSlot slot;
  bool has_slot = false;
  struct statx stx {};
  uint64_t offset = 0;   // bytes copied so far
  int buffer = -1;       // index in the pool while a chunk is being read or written
  size_t chunk_len = 0;  // bytes read into the buffer
  size_t written = 0;    // of chunk_len
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
  std::list<FileCopy*> waiting;  // Step::kWaiting, in arrival order
  bool stopping = false;

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
    if (sqe == nullptr) {  // the queue holds one entry per file plus one: only if not yet flushed
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

  uint64_t ChunkAt(const FileCopy& f) const {
    return std::min<uint64_t>(options.chunk_size, f.job.identity.size - f.offset);
  }

  void Admit() {
    while (!stopping && active.load() < options.max_files) {
      CopyJob job;
      CopierHooks::Next next = hooks.next(&job);
      if (next == CopierHooks::Next::kStopping) {
        stopping = true;
        break;
      }
      if (next == CopierHooks::Next::kNone) break;
      auto file = std::make_unique<FileCopy>();
      file->job = std::move(job);
      file->source = options.backing_root + "/" + file->job.path;
      FileCopy* f = file.get();
      files.emplace(f, std::move(file));
      active.fetch_add(1);
      io_uring_sqe* sqe = Sqe();
      io_uring_prep_openat(sqe, AT_FDCWD, f->source.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC, 0);
      io_uring_sqe_set_data(sqe, f);
    }
  }

  // Starts the next chunk of waiting files while buffers and tokens last; sets `*wait_ns` when
  // tokens ran short.
  void StartChunks(uint64_t* wait_ns) {
    *wait_ns = 0;
    while (!waiting.empty() && !free_buffers.empty()) {
      FileCopy* f = waiting.front();
      uint64_t want = ChunkAt(*f);
      uint64_t wait = 0;
      if (!hooks.take_tokens(static_cast<size_t>(want), &wait)) {
        *wait_ns = std::max<uint64_t>(wait, 100000);
        return;
      }
      waiting.pop_front();
      f->buffer = free_buffers.back();
      free_buffers.pop_back();
      int now = in_use.fetch_add(1) + 1;
      int old = peak.load();
      while (now > old && !peak.compare_exchange_weak(old, now)) {
      }
      f->step = Step::kRead;
      SubmitRead(f, static_cast<unsigned>(want));
    }
  }

  char* Buffer(int index) { return pool + static_cast<size_t>(index) * buffer_bytes; }

  void SubmitRead(FileCopy* f, unsigned len) {
    io_uring_sqe* sqe = Sqe();
    if (fixed_buffers) {
      io_uring_prep_read_fixed(sqe, f->src_fd, Buffer(f->buffer), len, f->offset, f->buffer);
    } else {
      io_uring_prep_read(sqe, f->src_fd, Buffer(f->buffer), len, f->offset);
    }
    io_uring_sqe_set_data(sqe, f);
  }

  void SubmitWrite(FileCopy* f) {
    io_uring_sqe* sqe = Sqe();
    char* data = Buffer(f->buffer) + f->written;
    unsigned len = static_cast<unsigned>(f->chunk_len - f->written);
    uint64_t at = f->offset + f->written;
    if (fixed_buffers) {
      io_uring_prep_write_fixed(sqe, f->slot.fd, data, len, at, f->buffer);
    } else {
      io_uring_prep_write(sqe, f->slot.fd, data, len, at);
    }
    io_uring_sqe_set_data(sqe, f);
  }

  void SubmitStat(FileCopy* f, Step step) {
    f->step = step;
    io_uring_sqe* sqe = Sqe();
    io_uring_prep_statx(sqe, f->src_fd, "", AT_EMPTY_PATH, STATX_BASIC_STATS, &f->stx);
    io_uring_sqe_set_data(sqe, f);
  }

  void ReleaseBuffer(FileCopy* f) {
    if (f->buffer < 0) return;
    free_buffers.push_back(f->buffer);
    f->buffer = -1;
    in_use.fetch_sub(1);
  }

  // Ends a copy that will not be published: closes, aborts the slot, reports, forgets.
  void Finish(FileCopy* f, CopyResult result, Status status, bool cache_side = false) {
    ReleaseBuffer(f);
    if (f->src_fd >= 0) close(f->src_fd);
    f->src_fd = -1;
    if (f->has_slot) store->Abort(&f->slot);
    f->has_slot = false;
    if (result == CopyResult::kSkipped) {
      Log(LogLevel::kDebug, "not staging %s: %s", f->job.path.c_str(), status.message().c_str());
    } else if (result == CopyResult::kFailed && cache_side) {
      LogOnce("stage-write-" + std::to_string(status.code()), LogLevel::kWarn,
              "staging %s failed: %s (copy dropped; logged once)", f->job.path.c_str(),
              status.message().c_str());
    } else if (result == CopyResult::kFailed) {
      Log(LogLevel::kWarn, "staging %s failed: %s", f->job.path.c_str(), status.message().c_str());
    }
    hooks.done(f->job, result, 0, status);
    waiting.remove(f);
    files.erase(f);
    active.fetch_sub(1);
  }

  static Status Errno(int res, const std::string& what) { return Status::FromErrno(-res, what); }

  void BeginCopy(FileCopy* f) {
    auto slot = store->BeginStaging(f->job.path, f->job.identity.size);
    if (!slot.ok()) {
      int code = slot.status().code();
      if (code == EEXIST) return Finish(f, CopyResult::kAlreadyStaged, Status::Ok());
      if (code == EFBIG) return Finish(f, CopyResult::kSkipped, slot.status());
      LogOnce("stage-begin-" + std::to_string(code), LogLevel::kWarn,
              "staging %s failed: %s (files stay served from the backing store; logged once)",
              f->job.path.c_str(), slot.status().message().c_str());
      return Finish(f, CopyResult::kFailed, slot.status());
    }
    f->slot = std::move(*slot);
    f->has_slot = true;
    if (f->job.identity.size == 0) return SubmitStat(f, Step::kStatAfter);
    f->step = Step::kWaiting;
    waiting.push_back(f);
  }

  // The copy leaves the ring: the committer publishes it with whatever else is ready, then
  // reports it and frees its place in flight.
  void HandOffToCommit(FileCopy* f) {
    files.extract(f).mapped().release();  // owned by the callback below from here on
    committer->Submit(&f->slot, f->job.identity, [this, f](const Status& st) {
      std::unique_ptr<FileCopy> owned(f);
      if (st.ok()) {
        hooks.done(f->job, CopyResult::kStaged, f->job.identity.size, st);
      } else {
        LogOnce("stage-commit-" + std::to_string(st.code()), LogLevel::kWarn,
                "publishing %s failed: %s (copy dropped; logged once)", f->job.path.c_str(),
                st.message().c_str());
        hooks.done(f->job, CopyResult::kFailed, 0, st);
      }
      owned.reset();
      active.fetch_sub(1);
      Wake();
    });
  }

  void OnCompletion(FileCopy* f, int res) {
    const Status shutdown = Status::Error(ESHUTDOWN, "the mount is going away");
    switch (f->step) {
      case Step::kOpen:
        if (res < 0) return Finish(f, CopyResult::kSkipped, Errno(res, "open " + f->source));
        f->src_fd = res;
        if (stopping) return Finish(f, CopyResult::kSkipped, shutdown);
        return SubmitStat(f, Step::kStatBefore);
      case Step::kStatBefore:
        if (res < 0) return Finish(f, CopyResult::kSkipped, Errno(res, "stat " + f->source));
        if (stopping) return Finish(f, CopyResult::kSkipped, shutdown);
        if (!S_ISREG(f->stx.stx_mode)) {
          return Finish(f, CopyResult::kSkipped, Status::Error(EINVAL, "not a regular file"));
        }
        if (IdentityOfStatx(f->stx) != f->job.identity) {
          return Finish(f, CopyResult::kSkipped,
                        Status::Error(ESTALE, "backing file changed since it was listed"));
        }
        return BeginCopy(f);
      case Step::kRead:
        if (res < 0) return Finish(f, CopyResult::kFailed, Errno(res, "read " + f->source));
        if (res == 0) {
          return Finish(f, CopyResult::kSkipped,
                        Status::Error(ESTALE, "backing file shrank while staging"));
        }
        if (stopping) return Finish(f, CopyResult::kSkipped, shutdown);
        f->chunk_len = static_cast<size_t>(res);
        f->written = 0;
        f->step = Step::kWrite;
        return SubmitWrite(f);
      case Step::kWrite:
        if (res <= 0) {
          return Finish(f, CopyResult::kFailed,
                        res < 0 ? Errno(res, "write to cache")
                                : Status::Error(EIO, "write to cache made no progress"),
                        /*cache_side=*/true);
        }
        f->written += static_cast<size_t>(res);
        if (f->written < f->chunk_len) return SubmitWrite(f);
        f->offset += f->chunk_len;
        ReleaseBuffer(f);
        if (stopping) return Finish(f, CopyResult::kSkipped, shutdown);
        if (f->offset < f->job.identity.size) {
          f->step = Step::kWaiting;
          waiting.push_back(f);
          return;
        }
        return SubmitStat(f, Step::kStatAfter);
      case Step::kStatAfter: {
        if (res < 0) return Finish(f, CopyResult::kFailed, Errno(res, "stat " + f->source));
        if (IdentityOfStatx(f->stx) != f->job.identity) {
          return Finish(f, CopyResult::kSkipped,
                        Status::Error(ESTALE, "backing file changed while staging"));
        }
        if (stopping) return Finish(f, CopyResult::kSkipped, shutdown);
        f->step = Step::kFsync;
        io_uring_sqe* sqe = Sqe();
        io_uring_prep_fsync(sqe, f->slot.fd, 0);
        io_uring_sqe_set_data(sqe, f);
        return;
      }
      case Step::kFsync: {
        if (res < 0) {
          return Finish(f, CopyResult::kFailed, Errno(res, "fsync cache copy"),
                        /*cache_side=*/true);
        }
        f->slot.data_synced = true;  // this FSYNC completed after the last WRITE
        if (stopping) return Finish(f, CopyResult::kSkipped, shutdown);
        f->step = Step::kClose;
        io_uring_sqe* sqe = Sqe();
        io_uring_prep_close(sqe, f->src_fd);
        io_uring_sqe_set_data(sqe, f);
        return;
      }
      case Step::kClose:
        f->src_fd = -1;  // closed whatever res says
        if (stopping) return Finish(f, CopyResult::kSkipped, shutdown);
        return HandOffToCommit(f);
      case Step::kWaiting:
        break;
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
        while (!waiting.empty()) {
          Finish(waiting.front(), CopyResult::kSkipped,
                 Status::Error(ESHUTDOWN, "the mount is going away"));
        }
        if (active.load() == 0) break;
      } else {
        StartChunks(&wait_ns);
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
        OnCompletion(reinterpret_cast<FileCopy*>(tag), res);
      }
    }
  }
};

Result<std::unique_ptr<UringCopier>> UringCopier::Create(const UringCopierOptions& options,
                                                         ContentStore* store, CopierHooks hooks) {
  auto impl = std::make_unique<Impl>();
  impl->options = options;
  impl->options.max_files = std::max(1, options.max_files);
  impl->options.buffers = std::max(1, options.buffers);
  impl->options.chunk_size = std::max<size_t>(4096, options.chunk_size);
  impl->store = store;
  impl->hooks = std::move(hooks);

  // One operation in flight per file, plus the wake-up read.
  int r = io_uring_queue_init(static_cast<unsigned>(impl->options.max_files + 2), &impl->ring, 0);
  if (r < 0) return Status::FromErrno(-r, "io_uring_queue_init");
  impl->ring_ready = true;
  io_uring_probe* probe = io_uring_get_probe_ring(&impl->ring);
  if (probe == nullptr) return Status::Error(ENOSYS, "io_uring: cannot probe operations");
  bool complete = true;
  for (int op : {IORING_OP_OPENAT, IORING_OP_STATX, IORING_OP_READ, IORING_OP_WRITE,
                 IORING_OP_READ_FIXED, IORING_OP_WRITE_FIXED, IORING_OP_FSYNC, IORING_OP_CLOSE}) {
    complete = complete && io_uring_opcode_supported(probe, op);
  }
  io_uring_free_probe(probe);
  if (!complete) return Status::Error(ENOSYS, "io_uring lacks open/statx/read/write/fsync/close");

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
