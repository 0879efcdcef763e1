// PeerDeliverer (see peer_deliverer.h).
#include "fs/peer/peer_deliverer.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <vector>

#include "planner/base/log.h"
#include "planner/base/name_escape.h"

namespace clairfs {
namespace {

uint64_t Nanos(std::chrono::steady_clock::duration d) {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(d).count());
}

}  // namespace

PeerDeliverer::PeerDeliverer(ContentStore* store, Manifest* manifest,
                             std::shared_ptr<const PeerKey> key, Outcome on_outcome,
                             PeerDelivererOptions options)
    : store_(store),
      manifest_(manifest),
      key_(std::move(key)),
      on_outcome_(std::move(on_outcome)),
      options_(options),
      committer_(std::make_unique<GroupCommitter>(store, GroupCommitterOptions{})) {
  for (int i = 0; i < options_.workers; ++i) workers_.emplace_back([this] { Work(); });
}

PeerDeliverer::~PeerDeliverer() {
  std::deque<Job> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
    left.swap(jobs_);
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
  for (Job& job : left) {
    close(job.file.fd);
    Finish(job.path, Status::Error(ECANCELED, "the mount is stopping"), 0);
  }
  committer_.reset();  // publishes what it holds; its callbacks run Finish
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [path, opened] : open_) close(opened.fd);
  open_.clear();
}

Result<int> PeerDeliverer::Open(const std::string& path) {
  auto node = manifest_->GetByPath(path);
  if (!node.ok()) return node.status();
  if (!node->has_value() || !(*node)->attr.is_reg()) {
    return Status::Error(ENOENT, EscapeName(path) + " is not a listed file");
  }
  const FileIdentity identity = (*node)->attr.identity();
  if (store_->Contains(path)) return Status::Error(EEXIST, EscapeName(path) + " is staged");
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (open_.count(path) != 0) return Status::Error(EEXIST, EscapeName(path) + " is on its way");
    if (open_.size() >= options_.max_open ||
        open_bytes_ + identity.size > options_.max_open_bytes) {
      return Status::Error(EAGAIN, "too many peer transfers under way");
    }
    // Reserved before the memory file exists, so that concurrent opens respect the bound.
    open_.emplace(path, Opened{-1, identity.size, identity, std::chrono::steady_clock::now()});
    open_bytes_ += identity.size;
  }
  int fd = memfd_create("clairfs-peer", MFD_CLOEXEC | MFD_ALLOW_SEALING);
  Status failed;
  if (fd < 0) {
    failed = Status::FromErrno(errno, "memfd_create");
  } else if (ftruncate(fd, static_cast<off_t>(identity.size)) != 0) {
    failed = Status::FromErrno(errno, "sizing a peer transfer's memory file");
    close(fd);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(path);
  if (it == open_.end() || it->second.fd >= 0) {  // abandoned meanwhile
    if (failed.ok()) close(fd);
    return Status::Error(ECANCELED, "the transfer of " + EscapeName(path) + " was abandoned");
  }
  // The caller sends and closes its own descriptor; this one stays for the seal and the copy.
  const int handed = failed.ok() ? fcntl(fd, F_DUPFD_CLOEXEC, 0) : -1;
  if (failed.ok() && handed < 0) {
    failed = Status::FromErrno(errno, "duplicating a peer transfer's memory file");
    close(fd);
  }
  if (!failed.ok()) {
    open_bytes_ -= it->second.size;
    open_.erase(it);
    return failed;
  }
  it->second.fd = fd;
  return handed;
}

Status PeerDeliverer::Deliver(const std::string& path, const CopySeal& claimed) {
  Opened file;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = open_.find(path);
    if (it == open_.end() || it->second.fd < 0) {
      return Status::Error(ENOENT, "no transfer of " + EscapeName(path) + " is open");
    }
    file = it->second;
    open_bytes_ -= file.size;
    open_.erase(it);
  }
  // From here on nobody can change the bytes: the agent's descriptor and mappings included.
  if (fcntl(file.fd, F_ADD_SEALS, F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE | F_SEAL_SEAL) != 0) {
    Status st =
        Status::Error(EBADMSG, "the transfer of " + EscapeName(path) + " could not be sealed (" +
                                   strerror(errno) + "; is it still mapped for writing?)");
    close(file.fd);
    Finish(path, st, 0);
    return Status::Ok();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    jobs_.push_back(Job{path, file, claimed, std::chrono::steady_clock::now()});
  }
  cv_.notify_one();
  return Status::Ok();
}

void PeerDeliverer::Abandon(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = open_.find(path);
  if (it == open_.end()) return;
  if (it->second.fd >= 0) close(it->second.fd);
  open_bytes_ -= it->second.size;
  open_.erase(it);
}

void PeerDeliverer::AbandonAll() {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [path, opened] : open_) {
    if (opened.fd >= 0) close(opened.fd);
  }
  open_.clear();
  open_bytes_ = 0;
}

size_t PeerDeliverer::Sweep(std::chrono::steady_clock::time_point now) {
  std::lock_guard<std::mutex> lock(mu_);
  size_t dropped = 0;
  for (auto it = open_.begin(); it != open_.end();) {
    if (it->second.fd >= 0 && now - it->second.opened > options_.open_timeout) {
      close(it->second.fd);
      open_bytes_ -= it->second.size;
      it = open_.erase(it);
      ++dropped;
    } else {
      ++it;
    }
  }
  stats_.dropped += dropped;
  return dropped;
}

PeerDeliveryStats PeerDeliverer::stats() {
  std::lock_guard<std::mutex> lock(mu_);
  PeerDeliveryStats s = stats_;
  s.open = open_.size();
  return s;
}

void PeerDeliverer::Work() {
  std::vector<char> buffer(1 << 20);
  for (;;) {
    Job job;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !jobs_.empty(); });
      if (jobs_.empty()) return;  // stopping
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Publish(std::move(job), &buffer);
  }
}

void PeerDeliverer::Publish(Job job, std::vector<char>* buffer) {
  const auto started = std::chrono::steady_clock::now();
  const std::string name = EscapeName(job.path);
  auto reject = [&](const std::string& why) {
    close(job.file.fd);
    Finish(job.path, Status::Error(EBADMSG, name + " from a peer: " + why), 0);
  };
  if (!key_->Verify(job.path, job.file.identity, job.claimed)) {
    return reject("its authenticator is not valid for this file's listed version");
  }
  struct stat st {};
  if (fstat(job.file.fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != job.file.size) {
    return reject("not the listed size");
  }
  auto slot = store_->BeginStaging(job.path, job.file.size);
  if (!slot.ok()) {
    close(job.file.fd);
    Finish(job.path, slot.status(), 0);
    return;
  }
  Sha256Stream digest;
  std::vector<char>& buf = *buffer;
  uint64_t offset = 0;
  Status copied;
  while (offset < job.file.size && copied.ok()) {
    ssize_t n = pread(job.file.fd, buf.data(), buf.size(), static_cast<off_t>(offset));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      copied = Status::Error(EBADMSG, name + " from a peer: shorter than its listed size");
      break;
    }
    digest.Update(buf.data(), static_cast<size_t>(n));
    size_t written = 0;
    while (written < static_cast<size_t>(n)) {
      ssize_t w = pwrite(slot->fd, buf.data() + written, static_cast<size_t>(n) - written,
                         static_cast<off_t>(offset + written));
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) {
        copied = Status::FromErrno(errno, "writing the copy of " + name);
        store_->ReportDeviceError(copied);
        break;
      }
      written += static_cast<size_t>(w);
    }
    offset += static_cast<uint64_t>(n);
  }
  close(job.file.fd);
  if (copied.ok() && digest.Finish() != job.claimed.digest) {
    copied = Status::Error(EBADMSG, name + " from a peer: its bytes do not match its digest");
  }
  if (copied.ok()) copied = store_->SyncData(&*slot);
  if (!copied.ok()) {
    store_->Abort(&*slot);
    Finish(job.path, copied, 0);
    return;
  }
  auto* owned = new StagingSlot(std::move(*slot));
  const uint64_t size = job.file.size;
  const std::string path = job.path;
  const auto opened = job.file.opened;
  const auto delivered = job.delivered;
  committer_->Submit(
      owned, job.file.identity,
      [this, owned, path, size, opened, delivered, started](const Status& status) {
        delete owned;
        if (status.ok()) {
          const auto now = std::chrono::steady_clock::now();
          std::lock_guard<std::mutex> lock(mu_);
          stats_.filling_ns += Nanos(delivered - opened);
          stats_.queued_ns += Nanos(started - delivered);
          stats_.publishing_ns += Nanos(now - started);
        }
        Finish(path, status, status.ok() ? size : 0);
      },
      job.claimed, CopyOrigin::kPeer);
}

void PeerDeliverer::Finish(const std::string& path, const Status& status, uint64_t bytes) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (status.ok()) {
      ++stats_.published;
      stats_.bytes_published += bytes;
    } else if (status.code() == EBADMSG) {
      ++stats_.rejected;
    }
  }
  if (!status.ok() && status.code() == EBADMSG) {
    Log(LogLevel::kWarn, "%s (a miss: staged from the PFS)", status.message().c_str());
  }
  if (on_outcome_) on_outcome_(path, status, bytes);
}

}  // namespace clairfs
