// IndexDb: the RocksDB database under CACHE/index, with one column family per kind of record.
//
//   default   metadata: format version, backing root, manifest state
//   names     manifest: "<parent path>\0<name>" -> NodeRecord (see manifest.h); root is ""
//   inodes    manifest: big-endian inode number -> names key
//   entries   staged copies: relative path -> CacheEntry (see cache_entry.h)
//   heat      per-path heat imported from Darshan logs
//
// Sized for its device (IndexSizingFor); RocksDB logs through clairfs logging, never into a file
// on the device. RocksDB statuses become clairfs Status values here and nowhere else. Thread-safe
// (RocksDB is); ResetManifest() must not race with readers of the manifest column families.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <rocksdb/cache.h>
#include <rocksdb/db.h>
#include <rocksdb/write_batch.h>

#include "planner/base/status.h"

namespace clairfs {

// What the index may take of its device. The write buffers (and with them the write-ahead log,
// flushed at two buffers) are a sixteenth of the device, between 256 KiB and 16 MiB; the MANIFEST's
// preallocation at most a 64th of it.
struct IndexSizing {
  uint64_t write_buffer_bytes = 16 << 20;
  uint64_t max_wal_bytes = 32 << 20;
  uint64_t manifest_preallocation_bytes = 4 << 20;
};
IndexSizing IndexSizingFor(uint64_t device_bytes);

class IndexDb {
 public:
  enum Family { kMeta = 0, kNames, kInodes, kEntries, kHeat, kFamilyCount };

  // `env`: the RocksDB Env to do file I/O through (tests inject log faults, see
  // index_fault_fs.h); nullptr = RocksDB's default. It must outlive the IndexDb.
  static Result<std::unique_ptr<IndexDb>> Open(const std::string& dir, rocksdb::Env* env = nullptr);
  ~IndexDb();
  IndexDb(const IndexDb&) = delete;
  IndexDb& operator=(const IndexDb&) = delete;

  // The value, std::nullopt if absent, or an error.
  Result<std::optional<std::string>> Get(Family family, std::string_view key) const;
  Status Put(Family family, std::string_view key, std::string_view value, bool sync);
  Status Delete(Family family, std::string_view key, bool sync);
  // sync: fsync the log before returning. unlogged: skip the write-ahead log (bulk loads that
  // are made durable by Flush()).
  Status Write(rocksdb::WriteBatch* batch, bool sync, bool unlogged = false);
  // An iterator over one family (caller deletes).
  std::unique_ptr<rocksdb::Iterator> NewIterator(Family family) const;
  rocksdb::ColumnFamilyHandle* handle(Family family) const { return handles_[family]; }
  // The directory it was opened in.
  const std::string& dir() const { return dir_; }

  // Empties the manifest families (names, inodes) for a rescan.
  Status ResetManifest();
  // Flushes memtables of every family to SST files (after unlogged bulk loads).
  Status Flush();

  // Maps a RocksDB status to a clairfs Status naming `what`.
  static Status FromRocks(const rocksdb::Status& s, std::string_view what);

 private:
  IndexDb() = default;
  std::string dir_;
  uint64_t write_buffer_bytes_ = 16 << 20;
  std::shared_ptr<rocksdb::Cache> block_cache_;  // bounded, shared by every family
  std::unique_ptr<rocksdb::DB> db_;
  std::vector<rocksdb::ColumnFamilyHandle*> handles_;
};

}  // namespace clairfs
