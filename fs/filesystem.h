// FileSystem: the read-only filesystem core behind the FUSE adapter. It has no libfuse types, so
// it is tested without a mount.
//
// Namespace requests (lookup, getattr, readdir, readlink) are answered from the manifest with no
// backing-store call. Open decides where a file's bytes come from: a published copy whose
// recorded identity equals the manifest's (a hit), else the backing store (a miss, which queues
// the file for staging when read-through is on; the reader never waits for that copy). With
// revalidate=open each open also stats the backing file; a change updates the manifest, drops the
// stale copy, asks the adapter to invalidate the kernel's cached pages and attributes, and the
// open is answered without keep_cache. One thread records a change and invalidates; an open
// that finds no change while that invalidation is still under way is answered without
// keep_cache and with direct I/O: it read the fresh attributes, but the kernel may still hold
// the old size and pages. Backing files are reached
// beneath the backing root with no link followed, and a file opened for its bytes must be the
// listed version: another file under its name is ESTALE for that open, never its bytes
// (cache/backing_tree.h). Every mutating call answers EROFS; FIFOs, sockets and devices cannot be
// opened (EPERM).
//
// No-open mode (config.no_open, docs/NO-OPEN.md): the kernel sends no OPEN or RELEASE and a READ
// names only the inode. FileForRead gives the READ a kept file (fs/kept_files.h): the file's first
// READ (at offset 0) that reaches the daemon counts as its open (a hit or a miss, the open
// observer, read-through); later READs reuse the kept file uncounted. The bytes the daemon reads
// to answer them are dropped from the page cache (the FUSE file's pages are the cache), except a
// backing file's while it is queued for staging (the stager reads them next).
//
// Threading: every method may run concurrently on any FUSE worker thread. OpenFile handles are
// immutable after Open and freed by Release; Read uses pread on the handle's fd with no lock.
#pragma once

#include <sys/statvfs.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "cache/access_check.h"
#include "cache/backing_tree.h"
#include "cache/content_store.h"
#include "cache/env.h"
#include "cache/manifest.h"
#include "cache/stager.h"
#include "fs/counters.h"
#include "fs/file_stats.h"
#include "fs/held_copies.h"
#include "fs/kept_files.h"
#include "fs/live_handles.h"
#include "fs/open_observer.h"
#include "fs/revalidate.h"
#include "planner/base/status.h"

namespace clairfs {

// Implemented by the FUSE adapter: drop what the kernel caches for an inode.
class KernelNotifier {
 public:
  virtual ~KernelNotifier() = default;
  virtual void InvalidateInode(uint64_t ino) = 0;
};

// Who sent a request, for the checks the daemon makes itself (the kernel makes the usual ones).
// Asked only when needed: the adapter's implementation reads the caller's groups, which costs.
class RequestCaller {
 public:
  virtual ~RequestCaller() = default;
  virtual Caller Get() const = 0;
  // The requesting thread's id (the kernel's view; 0 when unknown) and uid. Cheap: no /proc read.
  virtual Opener Who() const { return Opener{}; }
};

// Registered in the FileSystem while it lives (fs/live_handles.h): one the kernel never releases
// is released when the FileSystem is.
struct OpenFile : LiveHandle<OpenFile> {
  // The data's fd. A staged copy opened with open_copy_now=false stays -1 until a READ needs it
  // (DataFd): with the page cache warm and keep_cache, most opens never see a READ.
  std::atomic<int> fd{-1};
  bool from_cache = false;
  bool from_peer_copy = false;  // from_cache, and the copy came from a peer (docs/PEERS.md)
  // The copy could not be read (its device failed): `fd` is the backing file's now, and the copy's
  // fd, if one was open, waits in `retired_fd` until release (a READ may still be using it).
  std::atomic<bool> copy_failed{false};
  std::atomic<int> retired_fd{-1};
  uint64_t ino = 0;
  uint64_t size = 0;
  std::string path;
  std::string data_path;  // the staged copy's file, when from_cache
  FileIdentity identity;  // the backing file version these bytes are
  int held_handle = -1;   // >= 0: served from a copy the kernel holds (HeldCopies), fd is -1
  // No-open mode: the bytes Read gets from `fd` are dropped from the page cache after each read.
  bool drop_pages = false;
  OpenFileStats stats;  // this open's counters, merged into the mount's table at release
};

struct OpenResult {
  // Null only when `deferred`.
  std::unique_ptr<OpenFile> file;
  // Open with defer_backing: the open must call the backing store (a miss, or any open under
  // revalidate=open), which may hang. Nothing was done or counted; open again with
  // defer_backing false on a thread that may wait (fs/fuse/backing_calls.h).
  bool deferred = false;
  bool keep_cache = true;
  // With revalidate=open, this open's reads must bypass the kernel's page cache and its cached
  // size (FOPEN_DIRECT_IO): opens of another version of this file are still live, and their reads
  // may fill the shared page cache with their version's bytes; or this open is of a version a
  // change recorded since its open began has superseded; or another thread's invalidation of a
  // change is under way, and the kernel may still hold the old size and pages.
  // docs/RELIABILITY.md, backing store faults, finding 2.
  bool direct_io = false;
};

struct DirListing : LiveHandle<DirListing> {  // registered as OpenFile is
  std::vector<ManifestChild> children;  // in name order; "." and ".." are added by the adapter
  uint64_t ino = 0;
  uint64_t parent_ino = 0;
};

struct FileSystemConfig {
  std::string backing_root;
  // The tree backing files are opened from (cache/backing_tree.h); when null, opened from
  // backing_root by the constructor (and every miss fails with that error if it cannot be).
  std::shared_ptr<const BackingTree> backing;
  Revalidate revalidate = Revalidate::kNever;
  bool read_through = true;
  // No-open mode (see the top of this file): READs by inode from at most `kept_files` kept files.
  bool no_open = false;
  size_t kept_files = 1024;
  // With revalidate=open, the settle time (the mount's --stage-settle, 0 = off): an open of a
  // file whose ctime is within it of now is answered without keep_cache, and the first open
  // after the file has settled drops the kernel's pages and attributes. A write sets ctime when
  // it begins, so while it is under way the file already has the identity it will have when it
  // ends; pages read meanwhile (new bytes up to where the write has got, old ones after) would
  // stay cached with no change left to find (docs/RELIABILITY.md, backing store faults,
  // finding 2; the stager's settle rule, cache/stager.h, for copies).
  uint64_t settle_ns = 0;
};

class FileSystem {
 public:
  FileSystem(const FileSystemConfig& config, Manifest* manifest, ContentStore* store,
             Stager* stager, Env* env);
  // Stops the store's removals reaching this filesystem (the stager must be shut down first).
  ~FileSystem();
  FileSystem(const FileSystem&) = delete;
  FileSystem& operator=(const FileSystem&) = delete;

  void set_notifier(KernelNotifier* notifier) { notifier_ = notifier; }
  // Told of every file open (the plan tracker); set before the mount serves requests.
  void set_open_observer(OpenObserver* observer) { open_observer_ = observer; }
  // Copies the kernel holds (passthrough), told of the store's removals from then on. Set
  // before the mount serves requests (staging may already run).
  void set_held_copies(HeldCopies* held) { held_copies_.store(held, std::memory_order_release); }
  MountCounters& counters() { return counters_; }
  const FileStatsTable& file_stats() const { return file_stats_; }
  // Seconds since the filesystem was created (the time base of the per-file counters).
  double Elapsed() const;
  // Wall-clock time (ns since the epoch) when the filesystem was created.
  uint64_t start_realtime_ns() const { return start_realtime_ns_; }
  const FileSystemConfig& config() const { return config_; }

  // ENOENT if the name does not exist.
  Result<NodeAttr> Lookup(uint64_t parent, std::string_view name);
  Result<NodeAttr> GetAttr(uint64_t ino);
  Result<std::string> ReadLink(uint64_t ino);
  Result<std::unique_ptr<DirListing>> OpenDir(uint64_t ino);
  // `flags` are the open(2) flags; any write access answers EROFS. With `open_copy_now` false a
  // staged copy is opened at its first READ instead (DataFd), saving two system calls per open
  // that the page cache serves.
  // With revalidate=open, a file found changed is checked against `caller` with its fresh
  // attributes (the kernel checked the cached ones): a new mode or owner that denies applies to
  // this very open (EACCES). `caller` may be null (no check).
  // With `defer_backing`, an open that must call the backing store returns `deferred` before it
  // does anything (see OpenResult); the decision costs no I/O: the manifest node and the store's
  // index, as every open looks them up anyway, so a hit costs what it did.
  Result<OpenResult> Open(uint64_t ino, int flags, bool open_copy_now = true,
                          const RequestCaller* caller = nullptr, bool defer_backing = false);
  // No-open mode: the file a READ of `ino` at `offset` reads from (Read, DataFd), held by the
  // caller while it reads. A READ at offset 0 counts as an open of the file (see the top).
  // With `defer_backing`, null (and nothing done or counted) when the READ would call the
  // backing store: to open the file, or to read a file kept from it (ReadCallsBacking).
  // `reader`: who reads, for the open observer.
  Result<std::shared_ptr<OpenFile>> FileForRead(uint64_t ino, uint64_t offset,
                                                bool defer_backing = false, Opener reader = {});
  // Whether a READ of `file` calls the backing store: its bytes come from the backing file (a
  // miss, or a copy that failed). No I/O, no lock. A staged copy opened lazily (fd -1) reads
  // the copy; only a copy evicted since its open is then read from the backing file (rare).
  static bool ReadCallsBacking(const OpenFile& file) {
    return !file.from_cache || file.copy_failed.load(std::memory_order_acquire);
  }
  // No-open mode: the files kept open between READs (for status).
  size_t kept_files() const { return kept_.size(); }
  size_t kept_files_bound() const { return kept_.capacity(); }
  // The per-file counters: the table of released files plus, on a no-open mount, the kept files'
  // counters so far.
  std::vector<FileStatsRow> FileStatsSnapshot() const;
  // The fd to read `file`'s bytes from, opening a deferred staged copy now (a copy evicted since
  // the open is read from the backing file, which has the same bytes or newer ones).
  Result<int> DataFd(OpenFile& file);
  // Reads up to `size` bytes at `offset` into `buf`; returns the count (0 at end of file).
  Result<size_t> Read(OpenFile& file, char* buf, size_t size, off_t offset);
  // Counts a read served without Read() (the adapter's splice path): `bytes` at `offset`,
  // started at `start` (Elapsed()).
  void NoteRead(OpenFile& file, uint64_t offset, uint64_t bytes, double start);
  // Drops the pages of `bytes` at `offset` of `file`'s source from the page cache: the bytes a
  // no-open mount's READ sent (file.drop_pages), which the FUSE file's pages hold now. Called
  // after the reply: it costs tens of microseconds the reader need not wait for.
  static void DropPages(const OpenFile& file, uint64_t offset, uint64_t bytes);
  // Counts an open served by kernel passthrough: the daemon will see no READ, so the whole file
  // is counted as one (estimated) read from the cache, in the totals and the per-file stats.
  void NotePassthroughOpen(OpenFile& file);
  void Release(std::unique_ptr<OpenFile> file);
  void StatFs(struct statvfs* out);
  // Virtual attributes: "user.clairfs.state" (staged|unstaged|directory|other) on every node and
  // "user.clairfs.control" (the control socket path) on the root; "system.posix_acl_access" is
  // the backing entry's ACL as listed (for the kernel, which enforces it). Others: ENODATA.
  Result<std::string> GetXattr(uint64_t ino, std::string_view name);
  Result<std::string> ListXattr(uint64_t ino);
  void set_control_socket(std::string path) { control_socket_ = std::move(path); }

 private:
  Result<ManifestNode> NodeOf(uint64_t ino);
  // Open's work; `counted`: the open is counted (opens, hits or misses, the open observer,
  // read-through and the file's open counters); uncounted opens serve a no-open READ in mid-file.
  Result<OpenResult> OpenCounted(uint64_t ino, int flags, bool open_copy_now,
                                 const RequestCaller* caller, bool counted, bool defer_backing,
                                 Opener opener);
  // No-open mode: counts a first READ served by `file`, kept open from a staged copy, as an open
  // of it (a hit). False if the copy is no longer the store's current one (then open anew).
  bool CountKeptHit(OpenFile& file, Opener reader);
  Result<int> OpenCopy(const std::string& data_path);
  // Counts a miss of `path` under its cause (the open observer's answer; unplanned without one).
  void CountMissCause(const std::string& path);
  // A copy failed to open or read for another reason than being gone: counted, and reported to
  // the store (its device's condition, and a pause of serving copies).
  void NoteCopyReadError(const std::string& path, const Status& error);
  // The backing file's fd for `file`, in place of `copy_fd`, which failed (see OpenFile).
  Result<int> SwitchToBacking(OpenFile& file, int copy_fd);
  // The listed version of backing file `path`, beneath the root (ESTALE if another is there).
  Result<int> OpenBacking(const std::string& path, const FileIdentity& identity);
  // With revalidate=open: stats the backing file; if it changed, updates the manifest, drops a
  // stale copy and invalidates the kernel's caches (kRecorded), unless another thread recorded
  // that very change since `node` was read (kRecordedElsewhere: `node` is updated, nothing else
  // done). `in_getattr`: the caller answers a GETATTR with the fresh attributes, so the kernel's
  // pages are dropped at the file's next open (pages_to_drop_) rather than by an invalidation now.
  enum class Revalidated { kSame, kRecorded, kRecordedElsewhere };
  Result<Revalidated> Revalidate(ManifestNode* node, bool in_getattr);
  // Kernel invalidations of an inode under way. A thread that found a change counts one from
  // before it updates the manifest until it has told the kernel (or, in a GETATTR, has queued
  // the pages for the next open: at_next_open; false if the queue is full, nothing ended, and
  // the caller invalidates now and ends it then).
  void BeginInvalidation(uint64_t ino);
  bool EndInvalidation(uint64_t ino, bool at_next_open);
  // For an open that found no change: kThisOpen if it must invalidate the inode before its
  // reply, because a GETATTR found it changed since its last open or the last open of an old
  // version went (pages_to_drop_), or it has settled since an open found it unsettled
  // (unsettled_; both forgotten here; one invalidation is counted as begun, and the
  // caller invalidates and calls EndInvalidation); kUnderWay if another thread's invalidation is
  // still under way (the open must not be answered from the kernel's caches).
  enum class DueInvalidation { kNone, kThisOpen, kUnderWay };
  DueInvalidation BeginDueInvalidation(uint64_t ino);
  // An open found `ino` unsettled (FileSystemConfig::settle_ns) until `settled_at` (realtime ns).
  void NoteUnsettled(uint64_t ino, int64_t settled_at);
  // With revalidate=open: counts a live open of version `identity` of `ino`; true if the open
  // must be answered with direct I/O: opens of another version are live, or the inode's pages
  // wait to be dropped or are being invalidated by another thread (checked under the same lock
  // as NoteLiveRelease queues the drop, so that an open and the last release of an old version
  // cannot both miss each other).
  bool NoteLiveOpen(uint64_t ino, const FileIdentity& identity);
  // ... and its release. When the last open of a version the manifest no longer lists goes, the
  // pages it may have read are dropped at the file's next open (pages_to_drop_).
  void NoteLiveRelease(uint64_t ino, const FileIdentity& identity);
  // Whether `identity` is the version of `ino` the manifest lists now (false if it cannot say).
  // An open counted live (NoteLiveOpen) of another version began before a change that another
  // thread recorded since: it is answered with direct I/O, so that its bytes never enter the
  // page cache opens of the new version read.
  bool IsCurrentVersion(uint64_t ino, const FileIdentity& identity);

  FileSystemConfig config_;
  std::shared_ptr<const BackingTree> backing_;  // null if it could not be opened
  Status backing_error_;                        // why not
  Manifest* manifest_;
  ContentStore* store_;
  Stager* stager_;
  Env* env_;
  KernelNotifier* notifier_ = nullptr;
  // `open_start` < 0: an uncounted open (no per-file open counters).
  Result<OpenResult> OpenFrom(int fd, bool from_cache, uint64_t ino, const FileIdentity& identity,
                              std::string path, double open_start, OpenResult result,
                              std::string data_path = {});

  OpenObserver* open_observer_ = nullptr;
  std::atomic<HeldCopies*> held_copies_{nullptr};
  MountCounters counters_;
  FileStatsTable file_stats_;
  uint64_t start_monotonic_ns_;
  uint64_t start_realtime_ns_;
  std::string control_socket_;
  static constexpr size_t kMaxPagesToDrop = 65536;  // beyond it, invalidate at once
  // Taken after live_mu_ when both are held; guards pages_to_drop_, invalidating_ and unsettled_.
  std::mutex pages_mu_;
  std::unordered_set<uint64_t> pages_to_drop_;
  std::unordered_map<uint64_t, uint32_t> invalidating_;  // inode -> invalidations under way
  std::unordered_map<uint64_t, int64_t> unsettled_;      // inode -> when it settles (realtime)
  // Striped by inode: a change is recorded in the manifest by one thread (Revalidate).
  std::array<std::mutex, 64> record_mu_;
  // With revalidate=open, per inode with live opens: the live opens of each version.
  struct LiveOpens {
    std::vector<std::pair<FileIdentity, uint64_t>> versions;  // few: usually one
  };
  std::mutex live_mu_;  // guards live_opens_; taken before pages_mu_
  std::unordered_map<uint64_t, LiveOpens> live_opens_;
  // Every OpenFile and DirListing made and not yet destroyed: what the kernel still holds when
  // the FileSystem goes (a connection that ended before its RELEASE) is released then.
  LiveHandles<OpenFile> live_files_;
  LiveHandles<DirListing> live_dirs_;
  // No-open mode's kept files; last, so that it is cleared while the rest still stands.
  KeptFiles kept_;
};

}  // namespace clairfs
