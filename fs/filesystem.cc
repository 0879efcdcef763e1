// FileSystem core: namespace from the manifest, open-time source selection, reads (see
// filesystem.h).
#include "fs/filesystem.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <unordered_map>

#include "planner/base/log.h"

namespace clairfs {
namespace {

constexpr char kStateXattr[] = "user.clairfs.state";
constexpr char kControlXattr[] = "user.clairfs.control";
// Served from the manifest so that the kernel enforces the backing store's ACLs (FUSE_POSIX_ACL).
constexpr char kAclXattr[] = "system.posix_acl_access";

// Backing-store errors a reader may act on keep their errno; anything else is EIO for that file.
Status ReaderError(const Status& st) {
  switch (st.code()) {
    case ENOENT:
    case ESTALE:  // not the listed file (cache/backing_tree.h)
    case EACCES:
    case EPERM:
    case ENOMEM:
    case EMFILE:
    case ENFILE:
      return st;
    default:
      return Status::Error(EIO, st.message());
  }
}

}  // namespace

FileSystem::FileSystem(const FileSystemConfig& config, Manifest* manifest, ContentStore* store,
                       Stager* stager, Env* env)
    : config_(config),
      backing_(config.backing),
      manifest_(manifest),
      store_(store),
      stager_(stager),
      env_(env),
      start_monotonic_ns_(env->NowMonotonicNanos()),
      start_realtime_ns_(env->NowRealtimeNanos()),
      kept_(config.kept_files) {
  if (!backing_ && config_.backing_root.empty()) {
    backing_error_ = Status::Error(ENOENT, "no backing store configured");
  } else if (!backing_) {
    auto tree = BackingTree::Open(config_.backing_root, env_);
    if (tree.ok()) {
      backing_ = std::move(*tree);
    } else {
      backing_error_ = tree.status();
      Log(LogLevel::kError, "backing store unavailable: %s", backing_error_.message().c_str());
    }
  }
  if (store_ != nullptr) {
    store_->set_removal_listener([this](const std::string& data_path) {
      if (HeldCopies* held = held_copies_.load(std::memory_order_acquire)) {
        held->CopyRemoved(data_path);
      }
      // An evicted copy's blocks are freed once no READ in flight still reads it.
      if (config_.no_open) kept_.RemoveCopy(data_path);
    });
  }
}

FileSystem::~FileSystem() {
  if (store_ != nullptr) store_->set_removal_listener(nullptr);
  kept_.Clear();  // merges the kept files' counters while the table still stands
  // No request thread is left (the adapter is gone): what the kernel held when its connection
  // ended never gets a RELEASE. Release it as RELEASE would: its fds closed, its counters merged.
  const std::vector<OpenFile*> files = live_files_.TakeAll();
  for (OpenFile* file : files) Release(std::unique_ptr<OpenFile>(file));
  const std::vector<DirListing*> dirs = live_dirs_.TakeAll();
  for (DirListing* dir : dirs) delete dir;
  if (!files.empty() || !dirs.empty()) {
    Log(LogLevel::kInfo, "released %zu files and %zu directories still open at the stop",
        files.size(), dirs.size());
  }
}

double FileSystem::Elapsed() const {
  return static_cast<double>(env_->NowMonotonicNanos() - start_monotonic_ns_) / 1e9;
}

Result<OpenResult> FileSystem::OpenFrom(int fd, bool from_cache, uint64_t ino,
                                        const FileIdentity& identity, std::string path,
                                        double open_start, OpenResult result,
                                        std::string data_path) {
  // Whether the kernel's pages or size may be another version's (NoteLiveOpen).
  if (config_.revalidate == Revalidate::kOpen) {
    const bool bypass = NoteLiveOpen(ino, identity);
    // Checked after the open is counted live: an open of the new version counted before it sees
    // it live and bypasses the page cache, one counted after it sees no change here.
    const bool superseded = !IsCurrentVersion(ino, identity);
    if (superseded) {
      // Its open began before a change that another thread has recorded since: its bytes, the
      // old version's, must not enter the page cache that opens of the new version read.
      CLAIRFS_LOG_DEBUG("open of %s: a version changed since its open began: direct I/O",
                        path.c_str());
    }
    result.direct_io = result.direct_io || bypass || superseded;
  }
  result.file = std::make_unique<OpenFile>();
  OpenFile& f = *result.file;
  live_files_.Add(&f);
  f.fd = fd;
  f.from_cache = from_cache;
  f.ino = ino;
  f.size = identity.size;
  f.identity = identity;
  f.path = std::move(path);
  f.data_path = std::move(data_path);
  if (open_start >= 0) f.stats.OnOpen(open_start, Elapsed());
  return result;
}

Result<ManifestNode> FileSystem::NodeOf(uint64_t ino) {
  auto node = manifest_->Get(ino);
  if (!node.ok()) return node.status();
  if (!node->has_value()) return Status::Error(ENOENT, "no inode " + std::to_string(ino));
  return std::move(**node);
}

Result<NodeAttr> FileSystem::Lookup(uint64_t parent, std::string_view name) {
  counters_.lookups.Add(1);
  auto node = manifest_->Lookup(parent, name);
  if (!node.ok()) return node.status();
  if (!node->has_value()) return Status::Error(ENOENT, "no such entry");
  return std::move((*node)->attr);
}

Result<NodeAttr> FileSystem::GetAttr(uint64_t ino) {
  auto node = NodeOf(ino);
  if (!node.ok()) return node.status();
  // With revalidate=open a file's attributes are the backing store's now: the kernel asks again
  // when its check of cached ones denies an access, so a mode that now grants applies at once.
  if (config_.revalidate == Revalidate::kOpen && node->attr.is_reg()) {
    auto changed = Revalidate(&*node, /*in_getattr=*/true);
    if (!changed.ok()) {
      counters_.backing_errors.Add(1);
      return changed.status();
    }
  }
  return std::move(node->attr);
}

Result<std::string> FileSystem::ReadLink(uint64_t ino) {
  auto node = NodeOf(ino);
  if (!node.ok()) return node.status();
  if (!node->attr.is_link()) return Status::Error(EINVAL, "not a symlink");
  return std::move(node->attr.link_target);
}

Result<std::unique_ptr<DirListing>> FileSystem::OpenDir(uint64_t ino) {
  auto node = NodeOf(ino);
  if (!node.ok()) return node.status();
  if (!node->attr.is_dir()) return Status::Error(ENOTDIR, "not a directory");
  auto listing = std::make_unique<DirListing>();
  live_dirs_.Add(listing.get());
  listing->ino = ino;
  if (ino == kRootIno) {
    listing->parent_ino = kRootIno;
  } else {
    size_t slash = node->path.rfind('/');
    auto parent =
        manifest_->GetByPath(slash == std::string::npos ? "" : node->path.substr(0, slash));
    listing->parent_ino = parent.ok() && parent->has_value() ? (*parent)->attr.ino : kRootIno;
  }
  // For the kernel, whose READDIRPLUS turns the children into dentries that need no LOOKUP.
  CLAIRFS_RETURN_IF_ERROR(manifest_->List(ino, &listing->children, /*remember=*/true));
  return listing;
}

Result<FileSystem::Revalidated> FileSystem::Revalidate(ManifestNode* node, bool in_getattr) {
  if (!backing_) return ReaderError(backing_error_);
  struct stat st;
  Status s = backing_->Lstat(node->path, &st);
  if (!s.ok()) return ReaderError(s);
  NodeAttr fresh = NodeAttr::FromStat(st, node->attr.ino);
  const auto same = [&fresh](const NodeAttr& a) {
    return fresh.identity() == a.identity() && fresh.mode == a.mode;
  };
  if (same(node->attr)) return Revalidated::kSame;
  const uint64_t ino = node->attr.ino;
  const NodeAttr listed = node->attr;
  {
    // One thread records a change: others that read the node before the manifest's update find
    // it recorded here and are opens during its invalidation (BeginDueInvalidation), so the
    // kernel gets one invalidation per change, not one per thread that saw it.
    std::lock_guard<std::mutex> lock(record_mu_[ino % record_mu_.size()]);
    auto now = NodeOf(ino);
    if (now.ok() && same(now->attr)) {
      *node = std::move(*now);
      return Revalidated::kRecordedElsewhere;
    }
    if (fresh.is_link()) fresh.link_target = node->attr.link_target;
    // From the manifest's update until the kernel is told, an open that reads the fresh
    // attributes finds no change, yet the kernel still holds the old size and pages: such opens
    // must not be answered from them (BeginDueInvalidation).
    BeginInvalidation(ino);
    node->attr = fresh;
    Status up = manifest_->Update(*node);
    if (!up.ok()) Log(LogLevel::kWarn, "manifest update failed: %s", up.message().c_str());
  }
  counters_.stale_detected.Add(1);
  Log(LogLevel::kInfo, "%s changed in the backing store (%s -> %s): dropping cached state",
      node->path.c_str(), listed.identity().ToString().c_str(),
      fresh.identity().ToString().c_str());
  if (store_->Contains(node->path)) (void)store_->Evict(node->path, /*force=*/true);
  // In a GETATTR, the reply carries the fresh attributes; an invalidation sent now would make
  // the kernel discard them (it bumps the attribute version). The pages go at the next open.
  if (in_getattr && EndInvalidation(ino, /*at_next_open=*/true)) return Revalidated::kRecorded;
  if (notifier_ != nullptr) notifier_->InvalidateInode(ino);
  EndInvalidation(ino, /*at_next_open=*/false);
  return Revalidated::kRecorded;
}

void FileSystem::BeginInvalidation(uint64_t ino) {
  std::lock_guard<std::mutex> lock(pages_mu_);
  ++invalidating_[ino];
}

bool FileSystem::EndInvalidation(uint64_t ino, bool at_next_open) {
  std::lock_guard<std::mutex> lock(pages_mu_);
  if (at_next_open) {
    if (pages_to_drop_.size() >= kMaxPagesToDrop) return false;
    pages_to_drop_.insert(ino);
  }
  auto it = invalidating_.find(ino);
  if (it != invalidating_.end() && --it->second == 0) invalidating_.erase(it);
  return true;
}

FileSystem::DueInvalidation FileSystem::BeginDueInvalidation(uint64_t ino) {
  std::lock_guard<std::mutex> lock(pages_mu_);
  bool due = pages_to_drop_.erase(ino) > 0;
  if (!unsettled_.empty()) {
    auto it = unsettled_.find(ino);
    if (it != unsettled_.end() && it->second <= static_cast<int64_t>(env_->NowRealtimeNanos())) {
      unsettled_.erase(it);
      due = true;
    }
  }
  if (due) {
    ++invalidating_[ino];
    return DueInvalidation::kThisOpen;
  }
  return invalidating_.count(ino) > 0 ? DueInvalidation::kUnderWay : DueInvalidation::kNone;
}

void FileSystem::NoteUnsettled(uint64_t ino, int64_t settled_at) {
  std::lock_guard<std::mutex> lock(pages_mu_);
  auto it = unsettled_.find(ino);
  if (it != unsettled_.end()) {
    it->second = std::max(it->second, settled_at);
  } else if (unsettled_.size() < kMaxPagesToDrop) {
    unsettled_.emplace(ino, settled_at);
  }
}

bool FileSystem::IsCurrentVersion(uint64_t ino, const FileIdentity& identity) {
  auto node = NodeOf(ino);
  return node.ok() && node->attr.identity() == identity;
}

bool FileSystem::NoteLiveOpen(uint64_t ino, const FileIdentity& identity) {
  std::lock_guard<std::mutex> lock(live_mu_);
  LiveOpens& live = live_opens_[ino];
  bool other = false, counted = false;
  for (auto& [version, count] : live.versions) {
    if (version == identity) {
      ++count;
      counted = true;
    } else {
      other = true;
    }
  }
  if (!counted) live.versions.emplace_back(identity, 1);
  std::lock_guard<std::mutex> pages_lock(pages_mu_);
  return other || pages_to_drop_.count(ino) > 0 || invalidating_.count(ino) > 0;
}

void FileSystem::NoteLiveRelease(uint64_t ino, const FileIdentity& identity) {
  // Read before the lock (a manifest read): a change recorded after it is invalidated by the
  // thread that records it.
  const bool current = IsCurrentVersion(ino, identity);
  bool invalidate_now = false;
  {
    std::lock_guard<std::mutex> lock(live_mu_);
    auto it = live_opens_.find(ino);
    if (it == live_opens_.end()) return;
    auto& versions = it->second.versions;
    bool last = false;  // of its version
    for (size_t i = 0; i < versions.size(); ++i) {
      if (versions[i].first != identity) continue;
      if (--versions[i].second == 0) {
        last = true;
        versions.erase(versions.begin() + static_cast<std::ptrdiff_t>(i));
      }
      break;
    }
    if (versions.empty()) live_opens_.erase(it);
    // The last open of a version the manifest no longer lists: its reads may have left that
    // version's bytes in the page cache. Its READs are all answered before its RELEASE. Queued
    // under live_mu_: an open counted live before this saw this version live (direct I/O), one
    // counted after sees the drop queued (NoteLiveOpen).
    if (last && !current) {
      std::lock_guard<std::mutex> pages_lock(pages_mu_);
      if (pages_to_drop_.size() < kMaxPagesToDrop) {
        pages_to_drop_.insert(ino);
      } else {
        invalidate_now = true;
      }
    }
  }
  if (invalidate_now && notifier_ != nullptr) notifier_->InvalidateInode(ino);
}

Result<OpenResult> FileSystem::Open(uint64_t ino, int flags, bool open_copy_now,
                                    const RequestCaller* caller, bool defer_backing) {
  return OpenCounted(ino, flags, open_copy_now, caller, /*counted=*/true, defer_backing,
                     caller != nullptr ? caller->Who() : Opener{});
}

namespace {

Result<OpenResult> Deferred() {
  OpenResult result;
  result.deferred = true;
  return result;
}

}  // namespace

Result<OpenResult> FileSystem::OpenCounted(uint64_t ino, int flags, bool open_copy_now,
                                           const RequestCaller* caller, bool counted,
                                           bool defer_backing, Opener opener) {
  if ((flags & O_ACCMODE) != O_RDONLY || (flags & (O_TRUNC | O_CREAT)) != 0) {
    return Status::Error(EROFS, "read-only filesystem");
  }
  auto node = NodeOf(ino);
  if (!node.ok()) return node.status();
  if (node->attr.is_dir()) return Status::Error(EISDIR, "is a directory");
  if (!node->attr.is_reg()) return Status::Error(EPERM, "special files cannot be opened");
  // Every open under revalidate=open stats the backing file first.
  if (defer_backing && config_.revalidate == Revalidate::kOpen) return Deferred();
  // A deferrable open is counted once it is known to be served here (below).
  if (counted && !defer_backing) counters_.opens.Add(1);
  const double open_start = counted ? Elapsed() : -1.0;

  OpenResult result;
  if (config_.revalidate == Revalidate::kOpen) {
    auto changed = Revalidate(&*node, /*in_getattr=*/false);
    if (!changed.ok()) {
      counters_.backing_errors.Add(1);
      return changed.status();
    }
    // The kernel checked the attributes it had: a new mode or owner applies to this open too.
    if (*changed != Revalidated::kSame && caller != nullptr &&
        !MayAccess(node->attr, caller->Get(), R_OK)) {
      Log(LogLevel::kInfo, "%s: its new mode or owner in the backing store denies this open",
          node->path.c_str());
      return Status::Error(EACCES, "permission denied by the backing file's new attributes");
    }
    if (*changed == Revalidated::kRecorded) {
      result.keep_cache = false;
    } else {
      switch (BeginDueInvalidation(ino)) {
        case DueInvalidation::kNone:
          break;
        case DueInvalidation::kThisOpen:
          // A GETATTR found the change and replied the fresh attributes, but the kernel drops a
          // reply whose attribute version moved on meanwhile and then keeps the old size valid
          // for the attribute timeout: reads of the new bytes at the old size. Or the last open
          // of an old version went, leaving its pages. Or the file has settled since an open
          // found it unsettled: pages read before may be half written. This open drops the
          // kernel's pages and attributes before its reply.
          result.keep_cache = false;
          if (notifier_ != nullptr) notifier_->InvalidateInode(ino);
          EndInvalidation(ino, /*at_next_open=*/false);
          break;
        case DueInvalidation::kUnderWay:
          // Another open or GETATTR found a change and updated the manifest but has not yet told
          // the kernel, which still holds the old size and pages: answered from them, this open
          // would read the old version (docs/RELIABILITY.md, backing store faults, finding 2).
          // It reads with direct I/O, past the kernel's pages and size, and sends no invalidation
          // of its own: the other thread's comes, and a second one could cross the READs of the
          // opens that thread answers, whose short READ past a smaller file's end then leaves the
          // kernel the old size (it takes a size from a READ only if no attribute changed
          // meanwhile) and zero-filled pages.
          result.keep_cache = false;
          result.direct_io = true;
          break;
      }
    }
    // The settle rule for the page cache (FileSystemConfig::settle_ns): a file changed within the
    // settle time may still be being written. Its opens keep no pages from before them, and the
    // first open after it has settled drops what was read meanwhile (BeginDueInvalidation).
    const int64_t settled_at = node->attr.ctime_ns + static_cast<int64_t>(config_.settle_ns);
    if (config_.settle_ns > 0 && settled_at > static_cast<int64_t>(env_->NowRealtimeNanos())) {
      result.keep_cache = false;
      NoteUnsettled(ino, settled_at);
    }
  }

  const FileIdentity identity = node->attr.identity();
  // Where the bytes come from is settled before the open is counted, so that a deferrable open
  // that must call the backing store can still be handed on with nothing done.
  std::optional<StagedCopy> copy;
  // After a copy failed to read, opens go to the backing store for a while (a dead device).
  if (store_->copies_readable()) copy = store_->Find(node->path, /*touch=*/false);
  if (copy && copy->identity != identity) {
    // Never serve a copy of other bytes than the backing file's current ones.
    (void)store_->Evict(node->path, /*force=*/true);
    copy.reset();
  }
  int copy_fd = -1, handle = -1;
  if (copy) {
    HeldCopies* held = held_copies_.load(std::memory_order_acquire);
    if (held == nullptr || !held->Claim(ino, identity, copy->data_path, &handle)) {
      if (open_copy_now) {
        auto fd = OpenCopy(copy->data_path);
        if (fd.ok()) {
          copy_fd = *fd;
        } else {
          // Evicted between Find and open, or unreadable: served from the backing store below.
          if (fd.status().code() != ENOENT) NoteCopyReadError(node->path, fd.status());
          copy.reset();
        }
      }
    }
  }
  if (!copy && defer_backing) return Deferred();
  if (counted && defer_backing) counters_.opens.Add(1);
  // Before the copy's touch, so that a hit's eviction key already reflects this use of the plan.
  const bool planned =
      counted && open_observer_ != nullptr && open_observer_->OnOpen(node->path, opener);
  if (copy) {
    store_->Touch(node->path);
    // Hits on copies a peer brought are counted apart (the peer tier's reads by source).
    const bool peer_copy = copy->origin == CopyOrigin::kPeer;
    if (handle >= 0) counters_.held_copy_opens.Add(1);
    if (handle >= 0 || !open_copy_now || counted) counters_.hits.Add(1);
    auto opened = OpenFrom(copy_fd, true, ino, identity, std::move(node->path), open_start,
                           std::move(result), std::move(copy->data_path));
    if (opened.ok()) {
      opened->file->held_handle = handle;
      if (peer_copy) {
        opened->file->from_peer_copy = true;
        if (counted) counters_.hits_peer_copies.Add(1);
      }
    }
    return opened;
  }
  if (counted) {
    counters_.misses.Add(1);
    CountMissCause(node->path);
  }
  auto fd = OpenBacking(node->path, identity);
  if (!fd.ok()) {
    counters_.backing_errors.Add(1);
    if (fd.status().code() == ESTALE) counters_.not_as_listed.Add(1);
    return ReaderError(fd.status());
  }
  const bool read_through = counted && config_.read_through && stager_ != nullptr && !planned;
  if (read_through) stager_->Enqueue(node->path, identity, StagePriority::kNormal);
  auto opened =
      OpenFrom(*fd, false, ino, identity, std::move(node->path), open_start, std::move(result));
  // No-open mode: the stager reads a queued file's backing pages next; others are dropped.
  if (opened.ok() && config_.no_open) opened->file->drop_pages = !read_through && !planned;
  return opened;
}

Result<std::shared_ptr<OpenFile>> FileSystem::FileForRead(uint64_t ino, uint64_t offset,
                                                          bool defer_backing, Opener reader) {
  const bool first_read = offset == 0;
  std::shared_ptr<OpenFile> kept = kept_.Get(ino);
  // A file kept from the backing store whose copy was staged since is opened again, from the
  // copy: its READs no longer go to the PFS.
  if (kept != nullptr && !kept->from_cache && store_->Contains(kept->path)) kept = nullptr;
  // A kept file read from the backing store: CountKeptHit counts only copies, so nothing is
  // counted before this.
  if (kept != nullptr && defer_backing && ReadCallsBacking(*kept))
    return std::shared_ptr<OpenFile>();
  if (kept != nullptr && (!first_read || CountKeptHit(*kept, reader))) return kept;
  auto opened = OpenCounted(ino, O_RDONLY, /*open_copy_now=*/true, nullptr, first_read,
                            defer_backing, reader);
  if (!opened.ok()) return opened.status();
  if (opened->deferred) return std::shared_ptr<OpenFile>();
  OpenFile* raw = opened->file.release();
  if (raw->from_cache) raw->drop_pages = true;  // the FUSE file's pages are the cache
  // Released (closed, counters merged) when the last READ holding it ends.
  std::shared_ptr<OpenFile> file(raw,
                                 [this](OpenFile* f) { Release(std::unique_ptr<OpenFile>(f)); });
  // A copy removed between its Find and this Put is kept until let go by the LRU bound or the
  // file's next first READ (CountKeptHit sees the store no longer has it).
  std::vector<std::shared_ptr<OpenFile>> let_go =
      kept_.Put(ino, file, file->from_cache ? file->data_path : std::string());
  return file;
}

bool FileSystem::CountKeptHit(OpenFile& file, Opener reader) {
  if (!file.from_cache || file.copy_failed.load(std::memory_order_acquire)) return false;
  if (!store_->copies_readable()) return false;
  auto copy = store_->Find(file.path, /*touch=*/false);
  if (!copy || copy->data_path != file.data_path || copy->identity != file.identity) return false;
  const double start = Elapsed();
  counters_.opens.Add(1);
  // Before the touch, so that the copy's eviction key reflects this use of the plan (as Open).
  if (open_observer_ != nullptr) (void)open_observer_->OnOpen(file.path, reader);
  (void)store_->Find(file.path);
  counters_.hits.Add(1);
  if (file.from_peer_copy) counters_.hits_peer_copies.Add(1);
  file.stats.OnOpen(start, Elapsed());
  return true;
}

std::vector<FileStatsRow> FileSystem::FileStatsSnapshot() const {
  std::vector<FileStatsRow> rows = file_stats_.Snapshot();
  if (!config_.no_open) return rows;
  std::unordered_map<std::string, size_t> row_of;
  for (size_t i = 0; i < rows.size(); ++i) row_of.emplace(rows[i].path, i);
  for (const std::shared_ptr<OpenFile>& file : kept_.Snapshot()) {
    auto [it, added] = row_of.emplace(file->path, rows.size());
    if (added) rows.push_back(FileStatsRow{file->path, {}});
    const auto source =
        static_cast<int>(file->from_cache ? ReadSource::kCache : ReadSource::kBacking);
    rows[it->second].by_source[source].Merge(file->stats.Peek());
  }
  return rows;
}

Result<int> FileSystem::OpenBacking(const std::string& path, const FileIdentity& identity) {
  if (!backing_) return backing_error_;
  return backing_->OpenListedFile(path, identity);
}

Result<int> FileSystem::OpenCopy(const std::string& data_path) {
  auto fd = env_->Open(data_path, O_RDONLY | O_NOATIME);
  if (!fd.ok() && fd.status().code() == EPERM) fd = env_->Open(data_path, O_RDONLY);
  return fd;
}

Result<int> FileSystem::DataFd(OpenFile& file) {
  int fd = file.fd.load(std::memory_order_acquire);
  if (fd >= 0) return fd;
  if (file.held_handle >= 0) {
    // A held-copy open is answered in passthrough: the kernel reads the copy itself.
    Log(LogLevel::kWarn, "READ of %s reached the daemon for a passthrough open", file.path.c_str());
    return Status::Error(EIO, "no daemon fd for a passthrough open");
  }
  auto opened = OpenCopy(file.data_path);
  const bool from_backing = !opened.ok();
  if (from_backing) {
    // Gone (evicted since the open) or unreadable (its device failed): the listed backing file
    // has the same bytes.
    if (opened.status().code() != ENOENT) NoteCopyReadError(file.path, opened.status());
    opened = OpenBacking(file.path, file.identity);
  }
  if (!opened.ok()) return opened.status();
  // Concurrent first READs: one fd wins, the others are closed; only the winner says which file
  // the fd is (another READ that opened the copy may have won).
  int expected = -1;
  if (!file.fd.compare_exchange_strong(expected, *opened, std::memory_order_acq_rel)) {
    (void)env_->Close(*opened);
    return expected;
  }
  if (from_backing) file.copy_failed.store(true, std::memory_order_release);
  return *opened;
}

Result<size_t> FileSystem::Read(OpenFile& file, char* buf, size_t size, off_t offset) {
  auto fd = DataFd(file);
  if (!fd.ok()) {
    Log(LogLevel::kWarn, "read %s: %s", file.path.c_str(), fd.status().message().c_str());
    return Status::Error(EIO, fd.status().message());
  }
  const double start = Elapsed();
  auto n = env_->Pread(*fd, buf, size, offset);
  if (!n.ok() && file.from_cache && !file.copy_failed.load(std::memory_order_acquire)) {
    NoteCopyReadError(file.path, n.status());
    auto backing_fd = SwitchToBacking(file, *fd);
    if (backing_fd.ok()) n = env_->Pread(*backing_fd, buf, size, offset);
  }
  if (!n.ok()) {
    if (!file.from_cache) counters_.backing_errors.Add(1);
    Log(LogLevel::kWarn, "read %s (%s) failed: %s", file.path.c_str(),
        file.from_cache ? "cache" : "backing store", n.status().message().c_str());
    return Status::Error(EIO, n.status().message());
  }
  NoteRead(file, static_cast<uint64_t>(offset), *n, start);
  return *n;
}

void FileSystem::DropPages(const OpenFile& file, uint64_t offset, uint64_t bytes) {
  const int fd = file.fd.load(std::memory_order_acquire);
  if (bytes == 0 || fd < 0) return;
  // The kernel drops only whole folios, and readahead makes them up to 2 MiB (PMD size) on
  // filesystems with large folios (ext4, xfs): the range starts that far back, so a folio goes
  // with the read that covers its end. Through the end of the file once a read reaches it, so
  // the last, partial page goes too.
  constexpr uint64_t kLargestFolio = 2 << 20;
  const uint64_t from = offset > kLargestFolio ? offset - kLargestFolio : 0;
  const uint64_t len = offset + bytes >= file.size ? 0 : offset + bytes - from;
  (void)posix_fadvise(fd, static_cast<off_t>(from), static_cast<off_t>(len), POSIX_FADV_DONTNEED);
}

void FileSystem::CountMissCause(const std::string& path) {
  const MissCause cause =
      open_observer_ != nullptr ? open_observer_->OnMiss(path) : MissCause::kUnplanned;
  switch (cause) {
    case MissCause::kUnplanned:
      counters_.misses_unplanned.Add(1);
      break;
    case MissCause::kCopyQueued:
      counters_.misses_copy_queued.Add(1);
      break;
    case MissCause::kCopyInFlight:
      counters_.misses_copy_in_flight.Add(1);
      break;
    case MissCause::kLeftToReader:
      counters_.misses_left_to_reader.Add(1);
      break;
    case MissCause::kNotStagedAhead:
      counters_.misses_not_staged_ahead.Add(1);
      break;
  }
}

void FileSystem::NoteCopyReadError(const std::string& path, const Status& error) {
  counters_.copy_read_fallbacks.Add(1);
  Log(LogLevel::kDebug, "copy of %s unreadable (%s): served from the backing store", path.c_str(),
      error.message().c_str());
  store_->ReportCopyReadError(error);  // the device's condition is logged there, once
}

Result<int> FileSystem::SwitchToBacking(OpenFile& file, int copy_fd) {
  auto backing_fd = OpenBacking(file.path, file.identity);
  if (!backing_fd.ok()) return backing_fd.status();
  // Only the thread that still sees the copy's fd swaps it; another READ may be using it, so it
  // is closed at release, not here.
  int expected = copy_fd;
  if (file.fd.compare_exchange_strong(expected, *backing_fd, std::memory_order_acq_rel)) {
    file.copy_failed.store(true, std::memory_order_release);
    file.retired_fd.store(copy_fd, std::memory_order_release);
    return *backing_fd;
  }
  (void)env_->Close(*backing_fd);
  return expected;
}

void FileSystem::NotePassthroughOpen(OpenFile& file) {
  counters_.passthrough_opens.Add(1);
  NoteRead(file, 0, file.size, Elapsed());
}

void FileSystem::NoteRead(OpenFile& file, uint64_t offset, uint64_t bytes, double start) {
  counters_.reads.Add(1);
  const bool from_copy = file.from_cache && !file.copy_failed.load(std::memory_order_relaxed);
  (from_copy ? counters_.bytes_from_cache : counters_.bytes_from_backing).Add(bytes);
  if (from_copy && file.from_peer_copy) counters_.bytes_from_peer_copies.Add(bytes);
  file.stats.OnRead(offset, bytes, start, Elapsed());
}

void FileSystem::Release(std::unique_ptr<OpenFile> file) {
  if (!file) return;
  const double start = Elapsed();
  if (int fd = file->fd.load(std::memory_order_acquire); fd >= 0) (void)env_->Close(fd);
  if (int fd = file->retired_fd.load(std::memory_order_acquire); fd >= 0) (void)env_->Close(fd);
  if (config_.revalidate == Revalidate::kOpen) NoteLiveRelease(file->ino, file->identity);
  file_stats_.Merge(file->path, file->from_cache ? ReadSource::kCache : ReadSource::kBacking,
                    file->stats.OnClose(start, Elapsed()));
}

void FileSystem::StatFs(struct statvfs* out) {
  // Describes the dataset from the manifest: no backing-store call, and `df` shows its size.
  const ManifestSummary& s = manifest_->summary();
  *out = {};
  out->f_bsize = 4096;
  out->f_frsize = 4096;
  out->f_blocks = (s.bytes + 4095) / 4096;
  out->f_files = s.files + s.dirs + s.others;
  out->f_namemax = 255;
  out->f_flag = ST_RDONLY;
}

Result<std::string> FileSystem::GetXattr(uint64_t ino, std::string_view name) {
  auto node = NodeOf(ino);
  if (!node.ok()) return node.status();
  if (name == kControlXattr && ino == kRootIno && !control_socket_.empty()) {
    return control_socket_;
  }
  if (name == kAclXattr) {
    if (node->attr.acl_access.empty()) return Status::Error(ENODATA, "no ACL");
    return std::move(node->attr.acl_access);
  }
  if (name == kStateXattr) {
    if (node->attr.is_dir()) return std::string("directory");
    if (!node->attr.is_reg()) return std::string("other");
    auto copy = store_->Find(node->path, /*touch=*/false);
    return std::string(copy && copy->identity == node->attr.identity() ? "staged" : "unstaged");
  }
  return Status::Error(ENODATA, "no such attribute");
}

Result<std::string> FileSystem::ListXattr(uint64_t ino) {
  std::string names(kStateXattr, sizeof(kStateXattr));  // includes the NUL separator
  auto node = NodeOf(ino);
  if (node.ok() && !node->attr.acl_access.empty()) names.append(kAclXattr, sizeof(kAclXattr));
  if (ino == kRootIno && !control_socket_.empty()) {
    names.append(kControlXattr, sizeof(kControlXattr));
  }
  return names;
}

}  // namespace clairfs
