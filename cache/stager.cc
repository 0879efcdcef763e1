// Stager: priority queue, worker threads, token bucket and the copy step (see stager.h).
#include "cache/stager.h"

#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <memory>

#include "planner/base/log.h"

namespace clairfs {
namespace {

// The longest a waiting worker (or the ring) sleeps before looking at deferred requests again,
// whatever their due time says: the realtime clock may be stepped meanwhile.
constexpr uint64_t kMaxDeferWaitNs = 100'000'000;

}  // namespace

Stager::Stager(const StagerOptions& options, ContentStore* store, Env* env)
    : options_(options), store_(store), env_(env), backing_(options.backing) {
  last_refill_ns_ = env_->NowMonotonicNanos();
  if (!backing_) {
    auto tree = BackingTree::Open(options_.backing_root, env_);
    if (tree.ok()) {
      backing_ = std::move(*tree);
    } else {
      backing_error_ = tree.status();
      Log(LogLevel::kWarn, "staging unavailable: %s", backing_error_.message().c_str());
    }
  }
  const bool want_uring = options_.engine == StageEngine::kUring ||
                          (options_.engine == StageEngine::kAuto && env_ == Env::Default());
  if (want_uring && backing_) {
    UringCopierOptions copier_options;
    copier_options.backing = backing_;
    copier_options.max_files = std::max(1, options_.threads);
    copier_options.buffers = options_.buffers > 0 ? options_.buffers : copier_options.max_files;
    copier_options.chunk_size = options_.chunk_size;
    copier_options.flush_every = options_.flush_every;
    copier_options.drop_pages = options_.drop_pages;
    CopierHooks hooks;
    hooks.next = [this](CopyJob* job, uint64_t* retry_ns) { return NextForCopier(job, retry_ns); };
    hooks.take_tokens = [this](size_t bytes, uint64_t* wait_ns) {
      return TakeTokens(bytes, wait_ns);
    };
    hooks.done = [this](const CopyJob& job, CopyResult result, uint64_t bytes,
                        const Status& status) { CopierDone(job, result, bytes, status); };
    auto copier = UringCopier::Create(copier_options, store_, std::move(hooks));
    if (copier.ok()) {
      copier_ = std::move(*copier);
      workers_.emplace_back([this] {
        pthread_setname_np(pthread_self(), "clairfs-stage");
        copier_->Run();
      });
      return;
    }
    LogOnce("stage-uring-unavailable", LogLevel::kWarn,
            "io_uring unavailable (%s): staging with a pool of %d threads",
            copier.status().message().c_str(), std::max(1, options_.threads));
  }
  committer_ = std::make_unique<GroupCommitter>(store_, GroupCommitterOptions{});
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    workers_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "clairfs-stage");
      WorkerLoop();
    });
  }
}

Stager::~Stager() { Shutdown(); }

bool Stager::Enqueue(const std::string& path, const FileIdentity& identity, StagePriority priority,
                     Callback done, bool may_evict) {
  if (store_->Contains(path)) {
    if (done) done(StageOutcome{path, Status::Ok()});
    return false;
  }
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_) {
    lock.unlock();  // callbacks run without the lock: they may call back into the stager
    if (done) done(StageOutcome{path, Status::Error(ESHUTDOWN, "the mount is going away")});
    return false;
  }
  if (auto flight = in_flight_.find(path); flight != in_flight_.end()) {
    if (done) flight->second.callbacks.push_back(std::move(done));
    return false;
  }
  if (auto d = deferred_keys_.find(path); d != deferred_keys_.end()) {
    // Waiting for its file to settle: it keeps its due time; a higher priority applies once due.
    Request& waiting = deferred_[d->second];
    if (done) waiting.callbacks.push_back(std::move(done));
    waiting.may_evict = waiting.may_evict && may_evict;
    if (static_cast<int>(priority) > static_cast<int>(waiting.priority))
      waiting.priority = priority;
    return false;
  }
  if (auto p = pending_.find(path); p != pending_.end()) {
    auto node = queue_.extract(p->second);
    if (done) node.mapped().callbacks.push_back(std::move(done));
    node.mapped().may_evict = node.mapped().may_evict && may_evict;
    if (static_cast<int>(priority) > static_cast<int>(node.mapped().priority)) {
      node.mapped().priority = priority;
      node.key() = QueueKey{-static_cast<int>(priority), node.key().second};
    }
    p->second = node.key();
    queue_.insert(std::move(node));
    return false;
  }
  QueueKey key{-static_cast<int>(priority), seq_++};
  Request request{path, identity, priority, key.second, {}, may_evict};
  if (done) request.callbacks.push_back(std::move(done));
  queue_.emplace(key, std::move(request));
  pending_.emplace(path, key);
  work_cv_.notify_one();
  if (copier_) copier_->Wake();
  return true;
}

void Stager::Cancel(const std::string& path) {
  std::vector<Callback> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (auto p = pending_.find(path); p != pending_.end()) {
      callbacks = std::move(queue_[p->second].callbacks);
      queue_.erase(p->second);
      pending_.erase(p);
    } else if (auto d = deferred_keys_.find(path); d != deferred_keys_.end()) {
      callbacks = std::move(deferred_[d->second].callbacks);
      deferred_.erase(d->second);
      deferred_keys_.erase(d);
    } else {
      return;
    }
    ++delivering_;
  }
  for (auto& cb : callbacks) cb(StageOutcome{path, Status::Error(ECANCELED, "cancelled")});
  std::lock_guard<std::mutex> lock(mu_);
  --delivering_;
  if (IdleLocked()) idle_cv_.notify_all();
}

bool Stager::CancelUnwaited(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto p = pending_.find(path); p != pending_.end()) {
    if (!queue_[p->second].callbacks.empty()) return false;
    queue_.erase(p->second);
    pending_.erase(p);
  } else if (auto d = deferred_keys_.find(path); d != deferred_keys_.end()) {
    if (!deferred_[d->second].callbacks.empty()) return false;
    deferred_.erase(d->second);
    deferred_keys_.erase(d);
  } else {
    return false;
  }
  if (IdleLocked()) idle_cv_.notify_all();
  return true;
}

CopyProgress Stager::ProgressOf(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  if (in_flight_.count(path) != 0) return CopyProgress::kInFlight;
  if (pending_.count(path) != 0 || deferred_keys_.count(path) != 0) return CopyProgress::kQueued;
  return CopyProgress::kNone;
}

void Stager::Shutdown() {
  std::vector<Request> dropped;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ && workers_.empty()) return;
    stopping_ = true;
    for (auto& [key, request] : queue_) dropped.push_back(std::move(request));
    for (auto& [key, request] : deferred_) dropped.push_back(std::move(request));
    queue_.clear();
    pending_.clear();
    deferred_.clear();
    deferred_keys_.clear();
    work_cv_.notify_all();
  }
  if (copier_) copier_->RequestStop();  // the ring aborts its copies and returns from Run()
  for (auto& r : dropped) {
    for (auto& cb : r.callbacks) {
      cb(StageOutcome{r.path, Status::Error(ESHUTDOWN, "the mount is going away")});
    }
  }
  for (auto& t : workers_) {
    if (t.joinable()) t.join();
  }
  workers_.clear();
  idle_cv_.notify_all();
}

void Stager::WaitIdle() {
  std::unique_lock<std::mutex> lock(mu_);
  idle_cv_.wait(lock, [&] { return IdleLocked() || stopping_; });
}

StagerStats Stager::stats() {
  StagerStats s;
  {
    std::lock_guard<std::mutex> lock(mu_);
    s.queued = queue_.size() + deferred_.size();
    s.deferred = deferred_.size();
    s.in_flight = in_flight_.size();
  }
  s.files_staged = files_staged_.load();
  s.bytes_staged = bytes_staged_.load();
  s.failures = failures_.load();
  s.skipped = skipped_.load();
  s.deferred_unsettled = deferred_unsettled_.load();
  s.settle_ns = options_.settle_ns;
  if (copier_) {
    s.uring = true;
    s.buffers_in_use = static_cast<uint64_t>(copier_->buffers_in_use());
    s.peak_buffers_in_use = static_cast<uint64_t>(copier_->peak_buffers_in_use());
    s.buffer_count = static_cast<uint64_t>(copier_->buffer_count());
  }
  return s;
}

bool Stager::Unsettled(int64_t ctime_ns, int64_t start_ns) const {
  if (options_.settle_ns == 0) return false;
  return ctime_ns >= start_ns - static_cast<int64_t>(options_.settle_ns);
}

void Stager::DeferLocked(Request request) {
  // Due once the copy's start is past ctime + settle, i.e. the file is older than the settle.
  const DeferKey key{request.identity.ctime_ns + static_cast<int64_t>(options_.settle_ns) + 1,
                     request.seq};
  deferred_keys_[request.path] = key;
  deferred_.emplace(key, std::move(request));
  deferred_unsettled_.fetch_add(1);
}

bool Stager::TakeNextLocked(Request* out, int64_t* start_ns, uint64_t* retry_ns) {
  const int64_t now = static_cast<int64_t>(env_->NowRealtimeNanos());
  bool promoted = false;
  while (!deferred_.empty() && deferred_.begin()->first.first <= now) {
    auto node = deferred_.extract(deferred_.begin());
    Request& request = node.mapped();
    deferred_keys_.erase(request.path);
    // Back in its place: its priority and its original sequence number.
    const QueueKey key{-static_cast<int>(request.priority), request.seq};
    pending_[request.path] = key;
    queue_.emplace(key, std::move(request));
    promoted = true;
  }
  // Other workers may sleep without a timeout: they take the rest.
  if (promoted) work_cv_.notify_all();
  while (!queue_.empty()) {
    auto node = queue_.extract(queue_.begin());
    pending_.erase(node.mapped().path);
    // The copy would check that the file's ctime after it equals this one: deferred before it
    // reads a byte rather than after.
    if (Unsettled(node.mapped().identity.ctime_ns, now)) {
      DeferLocked(std::move(node.mapped()));
      continue;
    }
    *out = std::move(node.mapped());
    *start_ns = now;
    return true;
  }
  *retry_ns = 0;
  if (!deferred_.empty()) {
    *retry_ns = std::min<uint64_t>(kMaxDeferWaitNs, static_cast<uint64_t>(std::max<int64_t>(
                                                        1, deferred_.begin()->first.first - now)));
  }
  return false;
}

void Stager::StartInFlightLocked(Request* request) {
  Request& flight = in_flight_[request->path];
  flight.path = request->path;
  flight.identity = request->identity;
  flight.priority = request->priority;
  flight.seq = request->seq;
  flight.may_evict = request->may_evict;
  flight.callbacks = std::move(request->callbacks);
  request->callbacks.clear();
}

void Stager::DeferInFlight(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (!stopping_) {
      auto flight = in_flight_.extract(path);
      DeferLocked(std::move(flight.mapped()));
      return;
    }
  }
  // Shutdown() has dropped what waits: this one ends as they did.
  DeliverInFlight(path, Status::Error(ESHUTDOWN, "the mount is going away"));
}

void Stager::WorkerLoop() {
  for (;;) {
    Request request;
    int64_t start_ns = 0;
    {
      std::unique_lock<std::mutex> lock(mu_);
      for (;;) {
        if (stopping_) return;
        uint64_t retry_ns = 0;
        if (TakeNextLocked(&request, &start_ns, &retry_ns)) break;
        if (retry_ns == 0) {
          work_cv_.wait(lock);
        } else {
          work_cv_.wait_for(lock, std::chrono::nanoseconds(retry_ns));
        }
      }
      StartInFlightLocked(&request);
    }
    bool unsettled = false;
    Status status = CopyOne(request, start_ns, &unsettled);
    if (unsettled) {
      DeferInFlight(request.path);
    } else {
      DeliverInFlight(request.path, status);
    }
  }
}

void Stager::DeliverInFlight(const std::string& path, const Status& status) {
  std::vector<Callback> callbacks;
  {
    std::lock_guard<std::mutex> lock(mu_);
    callbacks = std::move(in_flight_[path].callbacks);
    in_flight_.erase(path);
    ++delivering_;
  }
  for (auto& cb : callbacks) cb(StageOutcome{path, status});
  {
    // Idle only once the outcome is delivered: WaitIdle() callers may free what callbacks use.
    std::lock_guard<std::mutex> lock(mu_);
    --delivering_;
    if (IdleLocked()) idle_cv_.notify_all();
  }
}

CopierHooks::Next Stager::NextForCopier(CopyJob* job, uint64_t* retry_ns) {
  std::lock_guard<std::mutex> lock(mu_);
  if (stopping_) return CopierHooks::Next::kStopping;
  Request request;
  int64_t start_ns = 0;
  if (!TakeNextLocked(&request, &start_ns, retry_ns)) return CopierHooks::Next::kNone;
  StartInFlightLocked(&request);
  job->path = std::move(request.path);
  job->identity = request.identity;
  job->may_evict = request.may_evict;
  job->unsettled_from_ns =
      options_.settle_ns > 0 ? start_ns - static_cast<int64_t>(options_.settle_ns) : INT64_MAX;
  return CopierHooks::Next::kJob;
}

void Stager::CopierDone(const CopyJob& job, CopyResult result, uint64_t bytes,
                        const Status& status) {
  switch (result) {
    case CopyResult::kStaged:
      files_staged_.fetch_add(1);
      bytes_staged_.fetch_add(bytes);
      break;
    case CopyResult::kAlreadyStaged:
      break;
    case CopyResult::kSkipped:
      skipped_.fetch_add(1);
      break;
    case CopyResult::kUnsettled:
      // Copied while its file may still have been written: staged again once it has settled.
      return DeferInFlight(job.path);
    case CopyResult::kFailed:
      failures_.fetch_add(1);
      break;
  }
  DeliverInFlight(job.path, status);
}

bool Stager::TakeTokens(size_t bytes, uint64_t* wait_ns) {
  if (options_.bandwidth == 0) return true;
  const double rate = static_cast<double>(options_.bandwidth);
  const double burst = std::max(rate / 10, static_cast<double>(options_.chunk_size));
  std::lock_guard<std::mutex> lock(bucket_mu_);
  uint64_t now = env_->NowMonotonicNanos();
  tokens_ = std::min(burst, tokens_ + rate * static_cast<double>(now - last_refill_ns_) / 1e9);
  last_refill_ns_ = now;
  if (tokens_ >= static_cast<double>(bytes) || tokens_ >= burst) {
    tokens_ -= static_cast<double>(bytes);  // may go negative for a chunk larger than burst
    return true;
  }
  *wait_ns = static_cast<uint64_t>((static_cast<double>(bytes) - tokens_) / rate * 1e9);
  return false;
}

bool Stager::Throttle(size_t bytes) {
  for (;;) {
    uint64_t wait_ns = 0;
    if (TakeTokens(bytes, &wait_ns)) return true;
    // A staging worker sleeping here never holds up a reader: readers do not wait for staging.
    std::this_thread::sleep_for(std::chrono::nanoseconds(std::min<uint64_t>(wait_ns, 50000000)));
    // A low rate can mean minutes of waiting: Shutdown() must not wait for it.
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_) return false;
  }
}

Status Stager::CopyOne(const Request& request, int64_t start_ns, bool* unsettled) {
  const std::string& source = request.path;
  auto skip = [&](Status why) {
    skipped_.fetch_add(1);
    Log(LogLevel::kDebug, "not staging %s: %s", request.path.c_str(), why.message().c_str());
    return why;
  };
  if (!backing_) return skip(backing_error_);
  // Beneath the root, no link followed, and the very file that was listed (backing_tree.h).
  auto src = backing_->OpenListedFile(request.path, request.identity);
  if (!src.ok()) return skip(src.status());
  struct fd_closer {
    Env* env;
    int fd;
    ~fd_closer() { (void)env->Close(fd); }
  } closer{env_, *src};
  Status st;
  auto slot = store_->BeginStaging(request.path, request.identity.size, request.may_evict);
  if (!slot.ok()) {
    if (slot.status().code() == EEXIST) return Status::Ok();
    if (slot.status().code() == EFBIG || slot.status().code() == ENOSPC) {
      return skip(slot.status());
    }
    // The device failed (the store counts it toward "cache device lost": no line per file).
    failures_.fetch_add(1);
    CLAIRFS_LOG_DEBUG("staging %s failed: %s", request.path.c_str(),
                      slot.status().message().c_str());
    return slot.status();
  }
  std::unique_ptr<char[]> buffer(new char[options_.chunk_size]);
  uint64_t offset = 0;
  uint64_t written_back = 0;  // bytes whose writeback was waited for
  Status copy_status;
  bool cache_side_error = false;
  while (offset < request.identity.size) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (stopping_) {
        copy_status = Status::Error(ESHUTDOWN, "the mount is going away");
        break;
      }
    }
    size_t want = static_cast<size_t>(
        std::min<uint64_t>(options_.chunk_size, request.identity.size - offset));
    if (!Throttle(want)) {
      copy_status = Status::Error(ESHUTDOWN, "the mount is going away");
      break;
    }
    auto n = env_->Pread(*src, buffer.get(), want, static_cast<off_t>(offset));
    if (!n.ok()) {
      copy_status = n.status().WithContext("read " + source);
      break;
    }
    if (*n == 0) {
      copy_status = Status::Error(ESTALE, "backing file shrank while staging");
      break;
    }
    Status w = env_->PwriteAll(slot->fd, buffer.get(), *n, static_cast<off_t>(offset));
    if (!w.ok()) {
      copy_status = w.WithContext("write to cache");
      cache_side_error = true;
      break;
    }
    // Writing back while copying, as the io_uring engine does: otherwise a large file's final
    // fsync writes all of it after the copy instead of during it.
    if (offset + *n < request.identity.size) {
      env_->WriteBack(slot->fd, static_cast<off_t>(offset), static_cast<off_t>(*n), false);
    }
    offset += *n;
    if (options_.flush_every > 0 && offset - written_back >= options_.flush_every &&
        offset < request.identity.size) {
      env_->WriteBack(slot->fd, static_cast<off_t>(written_back),
                      static_cast<off_t>(offset - written_back), true);
      written_back = offset;
    }
  }
  if (copy_status.ok()) {
    struct stat after;
    copy_status = env_->Fstat(*src, &after);
    if (copy_status.ok() && IdentityOf(after) != request.identity) {
      copy_status = Status::Error(ESTALE, "backing file changed while staging");
    }
    // The settle rule (stager.h): a write that began before the copy may still be under way.
    if (copy_status.ok() && Unsettled(IdentityOf(after).ctime_ns, start_ns)) {
      store_->Abort(&*slot);
      *unsettled = true;
      Log(LogLevel::kDebug, "not staging %s yet: it changed within the settle time",
          request.path.c_str());
      return Status::Error(EAGAIN, "backing file changed within the settle time");
    }
  }
  if (!copy_status.ok()) {
    store_->Abort(&*slot);
    if (copy_status.code() == ESTALE || copy_status.code() == ESHUTDOWN) {
      return skip(copy_status);
    }
    failures_.fetch_add(1);
    if (cache_side_error) {
      // Counted toward the device's full or lost condition, which the store logs in a few lines.
      store_->ReportDeviceError(copy_status);
      CLAIRFS_LOG_DEBUG("staging %s failed: %s", request.path.c_str(),
                        copy_status.message().c_str());
    } else {
      Log(LogLevel::kWarn, "staging %s failed: %s", request.path.c_str(),
          copy_status.message().c_str());
    }
    return copy_status;
  }
  if (options_.drop_pages) (void)posix_fadvise(*src, 0, 0, POSIX_FADV_DONTNEED);
  // Fsynced here, where many workers' fsyncs overlap, not one after another in the committer.
  st = store_->SyncData(&*slot);
  if (st.ok() && options_.drop_pages) {
    (void)posix_fadvise(slot->fd, 0, 0, POSIX_FADV_DONTNEED);  // clean after the fsync
  }
  if (st.ok()) {
    st = committer_->Commit(&*slot, request.identity);  // aborts the slot on failure
    // The copy took more than reserved and no room was found for it without evicting a copy the
    // policy keeps: not staged, as when the reservation itself finds no room.
    if (st.code() == ENOSPC) return skip(st);
  } else {
    store_->Abort(&*slot);
  }
  if (!st.ok()) {
    // SyncData and the publish count their failures toward the device's condition.
    failures_.fetch_add(1);
    CLAIRFS_LOG_DEBUG("publishing %s failed: %s", request.path.c_str(), st.message().c_str());
    return st;
  }
  files_staged_.fetch_add(1);
  bytes_staged_.fetch_add(request.identity.size);
  return Status::Ok();
}

}  // namespace clairfs
