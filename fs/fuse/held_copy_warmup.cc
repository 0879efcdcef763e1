// HeldCopyWarmup: holds staged copies ahead of their first open (see held_copy_warmup.h).
#include "fs/fuse/held_copy_warmup.h"

#include <fcntl.h>
#include <unistd.h>

#include "fs/fuse/sched_policy.h"
#include "planner/base/log.h"

namespace clairfs {

HeldCopyWarmup::HeldCopyWarmup(Manifest* manifest, ContentStore* store, Env* env)
    : manifest_(manifest), store_(store), env_(env) {}

HeldCopyWarmup::~HeldCopyWarmup() { Stop(); }

void HeldCopyWarmup::Start(HeldCopies* held) {
  if (thread_.joinable()) return;
  held_.store(held, std::memory_order_release);  // OnPublished may hold from now on
  thread_ = std::thread([this, held] {
    BecomeWarmUpThread("clairfs-hold");  // a first OPEN never waits behind the warm-up
    (void)Run(held);
  });
}

void HeldCopyWarmup::Stop() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
}

HeldCopyWarmup::Stats HeldCopyWarmup::stats() const {
  Stats s;
  s.started = started_.load();
  s.held = held_count_.load();
  s.scanned = scanned_.load();
  s.done = done_.load();
  s.seconds = seconds_.load();
  s.held_when_staged = held_when_staged_.load();
  return s;
}

bool HeldCopyWarmup::HoldOne(HeldCopies* held, const std::string& path, const NodeAttr& attr,
                             HoldRank rank, bool* staged) {
  auto copy = store_->Find(path, /*touch=*/false);  // holding ahead is not a use
  *staged = copy.has_value();
  if (!copy || !(copy->identity == attr.identity())) return false;
  auto fd = env_->Open(copy->data_path, O_RDONLY | O_NOATIME);
  if (!fd.ok() && fd.status().code() == EPERM) fd = env_->Open(copy->data_path, O_RDONLY);
  if (!fd.ok()) return false;  // evicted meanwhile
  const bool holding = held->Hold(attr.ino, *fd, copy->identity, copy->data_path, rank);
  (void)env_->Close(*fd);
  if (!holding) return false;
  // The store removes an entry before it tells its listener: if the copy is gone now, the
  // listener may have run before the hold, so release it here.
  auto still = store_->Find(path, /*touch=*/false);
  if (!still || still->data_path != copy->data_path) {
    held->CopyRemoved(copy->data_path);
    return false;
  }
  return true;
}

void HeldCopyWarmup::OnPublished(const std::string& path) {
  HeldCopies* held = held_.load(std::memory_order_acquire);
  if (held == nullptr || stop_.load(std::memory_order_relaxed)) return;
  auto node = manifest_->GetByPath(path);
  if (!node.ok() || !node->has_value() || !(*node)->attr.is_reg()) return;
  bool staged = false;
  // Staged for a use ahead: it outranks the copies held longest when the bound is full.
  if (HoldOne(held, path, (*node)->attr, HoldRank::kMostRecent, &staged)) {
    held_when_staged_.fetch_add(1, std::memory_order_relaxed);
  }
}

Status HeldCopyWarmup::Run(HeldCopies* held) {
  held_.store(held, std::memory_order_release);
  started_.store(true);
  const uint64_t start = env_->NowMonotonicNanos();
  const uint64_t cache_version = manifest_->CacheVersion();  // before the walk reads the index
  // Once every copy the store had at the start was seen, the rest of a large manifest has
  // nothing to hold (copies staged since are held by OnPublished).
  const uint64_t staged_at_start = store_->stats().files;
  uint64_t staged_seen = 0;
  std::string dir_path = "";  // the last file's directory
  uint64_t dir_ino = kRootIno;
  Status walked = manifest_->ForEachFile([&](const std::string& path, const NodeAttr& attr) {
    if (stop_.load(std::memory_order_relaxed) || held->HoldRoom() == 0 ||
        staged_seen >= staged_at_start) {
      return false;
    }
    scanned_.fetch_add(1, std::memory_order_relaxed);
    bool staged = false;
    const bool holding = HoldOne(held, path, attr, HoldRank::kBehindReleased, &staged);
    if (staged) ++staged_seen;
    if (!holding) return true;
    held_count_.fetch_add(1, std::memory_order_relaxed);
    // Its LOOKUP and OPEN will find the node in memory. Files come in directory order, so the
    // directory's inode is read once per directory.
    const size_t slash = path.rfind('/');
    const std::string parent = slash == std::string::npos ? "" : path.substr(0, slash);
    if (parent != dir_path) {
      auto dir = manifest_->GetByPath(parent);
      if (!dir.ok() || !dir->has_value()) return true;
      dir_path = parent;
      dir_ino = (*dir)->attr.ino;
    }
    manifest_->Remember(dir_ino, path, attr, cache_version);
    return true;
  });
  seconds_.store(static_cast<double>(env_->NowMonotonicNanos() - start) / 1e9);
  done_.store(true);
  if (!walked.ok()) {
    Log(LogLevel::kWarn, "passthrough: holding staged copies ahead stopped: %s",
        walked.message().c_str());
    return walked;
  }
  Log(LogLevel::kInfo,
      "passthrough: held %llu staged copies ahead of their first open (%llu files looked at, "
      "%.3f s%s)",
      static_cast<unsigned long long>(held_count_.load()),
      static_cast<unsigned long long>(scanned_.load()), seconds_.load(),
      stop_.load() ? ", stopped at unmount" : "");
  return Status::Ok();
}

}  // namespace clairfs
