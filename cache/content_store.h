// ContentStore: whole-file staged copies on node-local storage, indexed in RocksDB.
//
// Publish protocol (a copy is served only after every step succeeded):
//   1. BeginStaging: reserve space (evicting if needed) and create CACHE/tmp/<name>
//   2. the caller writes the bytes into the slot's fd
//   3. Commit: fsync the file, close it, rename it into CACHE/data/<xx>/<name>, fsync that
//      directory, then a synced index write recording the backing file's identity
//   Abort (or any failure) unlinks the temp file and releases the reservation.
// CommitBatch publishes many slots with the same steps in the same order, paying the durable ones
// once per batch: every copy's data fsync (skipped for a slot whose writer already fsynced it and
// said so in data_synced), every rename into ONE data/<xx> directory (the batch's first copy's),
// one fsync of that directory, one synced index write (a RocksDB WriteBatch) for every entry.
// So nothing reaches data/ before its bytes are durable and no entry reaches the index before its
// rename is; a crash between steps leaves temp files and unindexed data files, which recovery
// removes. Per-copy steps fail per copy; a failed shared step (directory fsync, index write)
// fails every copy that reached it.
// Recovery (on Open): CACHE/tmp is emptied, index entries whose data file is missing or of the
// wrong size are dropped, data files with no index entry are deleted. So a crash at any instant
// leaves a cache in which every entry names complete, durable bytes.
//
// Capacity: staged bytes are counted in allocated blocks (st_blocks) and never exceed `capacity`;
// the device's free space is kept above `min_free`. A copy in flight reserves its size in whole
// blocks (EstimateAlloc); if its st_blocks at commit say more, the difference is reserved before it
// is published (evicting, unless the slot may not), or the copy is dropped (ENOSPC). A file larger
// than the capacity is refused (EFBIG) and stays served from the backing store.
//
// The index's room: RocksDB on the cache device must never meet ENOSPC (its write-ahead log
// grows between flushes; a failed log write aborts the daemon in Debian's RocksDB 7.8), so when
// the index lives on the cache device the floor is --min-free plus kIndexReserve (64 MiB, or a
// sixteenth of a smaller device): room for two 16 MiB write buffers' log and their flush.
//
// The device: a copy refused because the device's free space is below the floor (with nothing
// left to evict), and any error the device gives a copy (here, or reported by the stagers through
// ReportDeviceError), is counted by one CacheDeviceLog: a line when the device becomes full or
// lost, counts at most once a minute, a line when it is over; never a line per file. Open()
// refuses a --min-free that is not below the device's size (EINVAL) and logs a capacity larger
// than the device.
//
// Threading: all methods are thread-safe. Find() (the open path) takes one shard mutex briefly and
// does no I/O. Lock order: policy mutex -> shard mutex -> space mutex; no lock is held across I/O
// except the space mutex around statvfs of the cache device.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "cache/cache_dir.h"
#include "cache/copy_seal.h"
#include "cache/device_log.h"
#include "cache/env.h"
#include "cache/eviction_policy.h"
#include "cache/index_db.h"
#include "cache/node_attr.h"
#include "planner/base/status.h"

namespace clairfs {

struct ContentStoreOptions {
  uint64_t capacity = 0;  // bytes of allocated blocks; 0 = no bound but the device's
  uint64_t min_free = 0;  // free bytes to keep on the cache device
  // The site's peer key (docs/PEERS.md): when set, every copy committed without a seal gets one
  // (its SHA-256, computed from the temp file before it is published, and an authenticator).
  std::shared_ptr<const PeerKey> seal_key;
};

// Where a copy's bytes came from.
enum class CopyOrigin : uint8_t { kBackingStore = 0, kPeer = 1 };

// What recovery found and fixed (reported by `clairfs fsck` and logged at mount).
struct RecoveryReport {
  uint64_t entries = 0;          // valid entries kept
  uint64_t bytes = 0;            // their allocated bytes
  uint64_t temp_removed = 0;     // in-flight copies discarded
  uint64_t entries_dropped = 0;  // index entries without (complete) data
  uint64_t orphans_removed = 0;  // data files without an index entry
  uint64_t evicted = 0;          // valid copies evicted to fit a capacity smaller than before
};

struct StagedCopy {
  std::string data_path;  // absolute path of the published copy
  FileIdentity identity;  // the backing file's identity when it was copied
  uint64_t alloc_bytes = 0;
  bool pinned = false;
  std::optional<CopySeal> seal;  // with a peer key: the copy's digest and authenticator
  CopyOrigin origin = CopyOrigin::kBackingStore;
};

struct ContentStoreStats {
  uint64_t files = 0;
  uint64_t used_bytes = 0;      // allocated bytes of published copies
  uint64_t reserved_bytes = 0;  // space held by copies in flight
  uint64_t capacity = 0;        // effective capacity (0 = unbounded)
  uint64_t evictions = 0;
  uint64_t evicted_bytes = 0;
};

// A copy in flight: owned by the stager between BeginStaging and Commit/Abort.
struct StagingSlot {
  std::string path;       // relative path in the dataset
  std::string temp_path;  // CACHE/tmp/<name>
  std::string data_name;  // <xx>/<name> under CACHE/data (CommitBatch may pick another <xx>)
  int fd = -1;            // open for writing
  uint64_t reserved = 0;  // bytes reserved
  bool may_evict = true;  // whether room for this copy may be made by evicting others
  // Set only by whoever fsynced `fd` after the last write to it (and saw it succeed); Commit then
  // skips its own fsync. Never set it on the strength of an fsync that may not have happened.
  bool data_synced = false;
};

// One copy of a batch publish: the slot and the identity it was copied from (in), the outcome
// (out: ok = published; otherwise the slot was aborted).
struct CommitItem {
  StagingSlot* slot = nullptr;
  FileIdentity identity;
  // A seal that came with the bytes (a peer's, checked by the caller); none: computed at commit
  // when the store has a seal key.
  std::optional<CopySeal> seal;
  CopyOrigin origin = CopyOrigin::kBackingStore;
  Status status;
};

class ContentStore {
 public:
  // Opens the store on an acquired cache directory and runs recovery.
  static Result<std::unique_ptr<ContentStore>> Open(CacheDir* dir, IndexDb* index, Env* env,
                                                    const ContentStoreOptions& options,
                                                    std::unique_ptr<EvictionPolicy> policy);
  ~ContentStore();

  const RecoveryReport& recovery() const { return recovery_; }

  // The published copy of `path`, or nullopt. Counts as a use for eviction if `touch`.
  std::optional<StagedCopy> Find(const std::string& path, bool touch = true);
  // Counts a use of `path` for eviction, as Find with `touch` does (after a Find without it).
  void Touch(const std::string& path);
  bool Contains(const std::string& path);

  // Reserves room for `size` bytes (evicting others, as the policy admits, unless !may_evict)
  // and opens a temp file. ENOSPC if the file cannot fit; EFBIG if it never could; EEXIST if
  // `path` is already published or being staged.
  Result<StagingSlot> BeginStaging(const std::string& path, uint64_t size, bool may_evict = true);
  // Makes the slot's bytes durable and publishes them as the copy of `identity` (a batch of one).
  Status Commit(StagingSlot* slot, const FileIdentity& identity);
  // Publishes every item's slot as Commit would, the durable steps shared (see the top of this
  // file); sets each item's status. Fsyncs of slots not yet data_synced run one after another:
  // callers that can overlap them (the staging engines) fsync before and set data_synced.
  void CommitBatch(std::span<CommitItem> items);
  // Fsyncs the slot's bytes and sets data_synced (the slot is left as it is on failure).
  Status SyncData(StagingSlot* slot);
  // Discards a slot (idempotent).
  void Abort(StagingSlot* slot);

  // Removes a published copy (no-op if absent). Pinned copies are evicted only if `force`.
  Status Evict(const std::string& path, bool force = false);
  Status SetPinned(const std::string& path, bool pinned);
  // Paths whose copies eviction passes over while the set is in place (a peer agent's home
  // files, docs/PEERS.md): like pins, but not recorded in the index, and for eviction only (an
  // explicit Evict still removes them). Null clears. Thread-safe; takes effect for the next
  // victim chosen.
  void SetHolds(std::shared_ptr<const std::unordered_set<std::string>> holds);
  bool IsHeld(const std::string& path);
  // The seal key of the store's options (null without one).
  const std::shared_ptr<const PeerKey>& seal_key() const { return options_.seal_key; }
  // Called with a copy's absolute data path after it is removed from the store (evicted,
  // invalidated or dropped), outside the store's locks. Set before concurrent use.
  void set_removal_listener(std::function<void(const std::string& data_path)> listener) {
    removal_listener_ = std::move(listener);
  }
  // Called with a file's path after its copy is published (served from then on), on the
  // committing thread, outside the store's locks. Set before concurrent use.
  void set_publish_listener(std::function<void(const std::string& path)> listener) {
    publish_listener_ = std::move(listener);
  }

  // Drops every copy whose identity differs from `current(path)` (nullopt = file gone).
  // Used at mount after a fresh listing. Returns the number dropped.
  template <typename Fn>
  Result<uint64_t> DropStale(Fn current);

  // All published paths (for status listings and validation).
  std::vector<std::string> Paths();
  ContentStoreStats stats();
  uint64_t capacity() const { return capacity_; }
  // The free space kept on the device: --min-free, plus the index's room when it is there.
  uint64_t free_floor() const { return floor_; }
  static constexpr uint64_t kIndexReserve = uint64_t{64} << 20;
  // Bytes that can be reserved now without evicting anything (capacity and free-space floor).
  Result<uint64_t> RoomWithoutEviction();
  // The space BeginStaging reserves for a file of `size` bytes: its size in whole 4 KiB blocks.
  // CommitBatch reserves the rest (evicting, if the slot may) when the copy's st_blocks say more.
  static uint64_t EstimateAlloc(uint64_t size);
  EvictionPolicy* policy() { return policy_.get(); }
  // A copy failed on the cache device outside the store (a stager's write or fsync): counted
  // toward the device's full or lost condition (see the top of this file).
  void ReportDeviceError(const Status& error) { device_log_.Failed(error); }
  // A published copy could not be opened or read (an error other than its being gone, e.g. the
  // device died): counted as the device lost, and copies are not served (copies_readable() is
  // false, so opens go to the backing store) for kCopyReadPause, or until a copy is published
  // again; then the next open tries its copy again (one failed open per pause on a dead device,
  // while one bad copy does not turn the cache off for the rest of the mount).
  void ReportCopyReadError(const Status& error);
  static constexpr int64_t kCopyReadPauseNanos = 10'000'000'000;
  // A relaxed load and a clock read, for the open path.
  bool copies_readable() const;
  CacheDeviceLog& device_log() { return device_log_; }

 private:
  struct Entry {
    std::string data_name;
    FileIdentity identity;
    uint64_t alloc_bytes = 0;
    int64_t staged_at_ns = 0;
    bool pinned = false;
    std::optional<CopySeal> seal;
    CopyOrigin origin = CopyOrigin::kBackingStore;
  };
  struct Shard {
    std::mutex mu;  // guards entries and staging
    std::unordered_map<std::string, Entry> entries;
    std::unordered_set<std::string> staging;  // paths with a copy in flight
  };
  static constexpr size_t kShards = 16;

  ContentStore(CacheDir* dir, IndexDb* index, Env* env, const ContentStoreOptions& options,
               uint64_t index_reserve, std::unique_ptr<EvictionPolicy> policy);
  Shard& ShardFor(const std::string& path);
  Status Recover();
  // Evicts until `need` more bytes fit under capacity and min_free. Called without locks.
  Status MakeRoom(uint64_t need, const std::string& for_path, bool may_evict);
  // MakeRoom found no room: ENOSPC, counted as the device being full when its free space (not
  // the capacity) is what is short.
  Status NoRoom(uint64_t need, const std::string& for_path, bool may_evict, uint64_t device_free);
  // "64.0 MiB (--min-free 0 B, plus 64.0 MiB for the index)".
  std::string FloorText() const;
  bool FitsLocked(uint64_t need, uint64_t device_free) const;
  Status RemoveEntry(const std::string& path, bool force, bool count_eviction);
  // The seal of a committed slot's temp file (read back from disk) under options_.seal_key.
  Result<CopySeal> SealTempFile(const StagingSlot& slot, const FileIdentity& identity);
  std::string NewDataName(const std::string& path);

  CacheDir* dir_;
  IndexDb* index_;
  Env* env_;
  ContentStoreOptions options_;
  const uint64_t index_reserve_;  // free space kept for the index (0 when it is elsewhere)
  const uint64_t floor_;          // options_.min_free + index_reserve_
  uint64_t capacity_;
  std::unique_ptr<EvictionPolicy> policy_;
  std::function<void(const std::string& data_path)> removal_listener_;
  std::function<void(const std::string& path)> publish_listener_;
  Shard shards_[kShards];
  // Guards holds_ (a snapshot is copied out under it; never held with another lock).
  std::mutex holds_mu_;
  std::shared_ptr<const std::unordered_set<std::string>> holds_;
  std::mutex space_mu_;  // guards used_bytes_, reserved_bytes_; taken after any shard mutex
  uint64_t used_bytes_ = 0;
  uint64_t reserved_bytes_ = 0;
  std::atomic<uint64_t> files_{0};
  std::atomic<uint64_t> evictions_{0};
  std::atomic<uint64_t> evicted_bytes_{0};
  std::atomic<uint64_t> next_generation_;
  RecoveryReport recovery_;
  CacheDeviceLog device_log_;
  std::atomic<int64_t> copies_unreadable_until_ns_{0};  // steady clock; 0: readable
};

// Encoding of index entries (CACHE/index, family "entries").
struct CacheEntryRecord {
  std::string data_name;
  FileIdentity identity;
  uint64_t alloc_bytes = 0;
  int64_t staged_at_ns = 0;
  bool pinned = false;
  std::optional<CopySeal> seal;
  CopyOrigin origin = CopyOrigin::kBackingStore;
};
std::string EncodeCacheEntry(const CacheEntryRecord& record);
Result<CacheEntryRecord> DecodeCacheEntry(std::string_view bytes);

template <typename Fn>
Result<uint64_t> ContentStore::DropStale(Fn current) {
  uint64_t dropped = 0;
  for (const std::string& path : Paths()) {
    auto copy = Find(path, /*touch=*/false);
    if (!copy) continue;
    std::optional<FileIdentity> now = current(path);
    if (now && *now == copy->identity) continue;
    Status st = RemoveEntry(path, /*force=*/true, /*count_eviction=*/false);
    if (!st.ok()) return st;
    ++dropped;
  }
  return dropped;
}

}  // namespace clairfs
