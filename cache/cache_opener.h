// OpenCache: a cache directory opened as a unit, the one way the daemon and every offline command
// (stage --offline, fsck, darshan import, bench stage) open it.
//
// In order: the directory's lock (CacheDir), the RocksDB index, the manifest (listed anew from the
// backing tree, the stored listing reused, or none), the heat store, the content store with its
// eviction policy (whose Open runs recovery), and, when there is a manifest, the staged copies
// whose backing file changed or vanished since they were staged are dropped (StaleCopies). Each
// step's failure is returned as is and undoes the steps before it. Closing goes the other way:
// Close() (or the destructor) releases the store, heat and manifest, flushes the index and
// releases the lock.
//
// Thread-safety: OpenCache and Close run on one thread; the objects opened follow their own
// contracts once open.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "cache/backing_tree.h"
#include "cache/cache_dir.h"
#include "cache/content_store.h"
#include "cache/env.h"
#include "cache/eviction_policy.h"
#include "cache/heat_store.h"
#include "cache/index_db.h"
#include "cache/manifest.h"
#include "planner/base/status.h"

namespace clairfs {

enum class ManifestListing {
  kNone,    // no manifest (fsck, verification of copies)
  kRescan,  // list the backing tree now, replacing the stored listing
  kReuse,   // the stored listing, asserted to be the backing tree's (--manifest reuse)
};

struct CacheOpenOptions {
  std::string cache_dir;
  // Taken by the caller before (the daemon locks the cache before it forks); null: acquired here.
  std::unique_ptr<CacheDir> acquired;
  ManifestListing listing = ManifestListing::kNone;
  // kRescan lists this tree (required); kReuse checks the stored listing names backing_root.
  std::shared_ptr<const BackingTree> backing;
  std::string backing_root;  // kReuse (and messages); defaults to backing->root()
  int scan_threads = 8;
  bool open_heat = false;
  bool open_store = true;
  ContentStoreOptions store_options;
  // The store's eviction policy, made once the heat store is open (it may be null); null or
  // returning null: LRU.
  std::function<std::unique_ptr<EvictionPolicy>(HeatStore* heat)> make_policy;
};

struct OpenedCache {
  std::unique_ptr<CacheDir> dir;
  std::unique_ptr<IndexDb> index;
  std::unique_ptr<Manifest> manifest;   // null with ManifestListing::kNone
  std::unique_ptr<HeatStore> heat;      // null unless open_heat
  std::unique_ptr<ContentStore> store;  // null unless open_store
  uint64_t stale_dropped = 0;           // copies dropped: their backing file changed or is gone

  OpenedCache() = default;
  OpenedCache(OpenedCache&&) = default;
  OpenedCache& operator=(OpenedCache&&) = default;
  ~OpenedCache();
  // Releases everything in reverse order; the index's flush is the result.
  Status Close();
};

Result<OpenedCache> OpenCache(CacheOpenOptions options, Env* env);

// The identity a staged copy of `path` must have, per `manifest`: that of the regular file it
// lists at `path`, or none (the copy is stale). What ContentStore::DropStale takes.
std::optional<FileIdentity> ListedIdentity(const Manifest& manifest, const std::string& path);

}  // namespace clairfs
