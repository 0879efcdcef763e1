// IndexDb: RocksDB setup with bounded memory and the status mapping (see index_db.h).
#include "cache/index_db.h"

#include <sys/statvfs.h>

#include <algorithm>
#include <cerrno>
#include <cstdarg>
#include <cstdio>

#include <rocksdb/cache.h>
#include <rocksdb/filter_policy.h>
#include <rocksdb/table.h>
#include <rocksdb/write_buffer_manager.h>

#include "planner/base/log.h"
#include "planner/base/units.h"

namespace clairfs {
namespace {

const char* const kFamilyNames[IndexDb::kFamilyCount] = {rocksdb::kDefaultColumnFamilyName.c_str(),
                                                         "names", "inodes", "entries", "heat"};

// RocksDB's messages go to the daemon's log, never to a LOG file in the cache directory: a LOG
// write that fails (a full or immutable device) leaves RocksDB 7.8's file writer in an error
// state in which its next log line aborts the process (an assertion in WritableFileWriter), which
// is how a full or read-only cache device used to kill the mount.
class IndexLogger final : public rocksdb::Logger {
 public:
  IndexLogger() : rocksdb::Logger(rocksdb::WARN_LEVEL) {}
  using rocksdb::Logger::Logv;
  void Logv(const char* format, va_list ap) override { Logv(rocksdb::INFO_LEVEL, format, ap); }
  void Logv(const rocksdb::InfoLogLevel level, const char* format, va_list ap) override {
    if (level < GetInfoLogLevel()) return;
    char line[1024];
    vsnprintf(line, sizeof(line), format, ap);
    Log(level >= rocksdb::ERROR_LEVEL ? LogLevel::kWarn : LogLevel::kInfo, "index (rocksdb): %s",
        line);
  }
};

rocksdb::ColumnFamilyOptions FamilyOptions(const std::shared_ptr<rocksdb::Cache>& block_cache,
                                           uint64_t write_buffer_bytes) {
  rocksdb::ColumnFamilyOptions options;
  rocksdb::BlockBasedTableOptions table;
  table.block_cache = block_cache;  // one bounded cache shared by all families
  table.filter_policy.reset(rocksdb::NewBloomFilterPolicy(10));
  table.cache_index_and_filter_blocks = true;  // keeps index memory inside the bounded cache
  table.pin_l0_filter_and_index_blocks_in_cache = true;
  // Partitioned index and filters: a lookup loads 4 KiB partitions, not a table's whole index
  // and filter (about 2 MB for a million names), which a bounded cache evicts and reloads on
  // nearly every lookup: the cause of 1.5 ms per stat at 1M entries. The top level stays pinned.
  table.index_type = rocksdb::BlockBasedTableOptions::kTwoLevelIndexSearch;
  table.partition_filters = true;
  table.metadata_block_size = 4096;
  table.cache_index_and_filter_blocks_with_high_priority = true;
  table.pin_top_level_index_and_filter = true;
  options.table_factory.reset(rocksdb::NewBlockBasedTableFactory(table));
  options.write_buffer_size = write_buffer_bytes;
  options.max_write_buffer_number = 2;
  options.compression = rocksdb::kNoCompression;
  return options;
}

}  // namespace

IndexSizing IndexSizingFor(uint64_t device_bytes) {
  IndexSizing sizing;
  sizing.write_buffer_bytes =
      std::clamp<uint64_t>(device_bytes / 16, uint64_t{256} << 10, uint64_t{16} << 20);
  sizing.max_wal_bytes = 2 * sizing.write_buffer_bytes;
  // RocksDB preallocates 1.1 write buffers for each log and 4 MiB for its MANIFEST; on an ext4 a
  // preallocation that does not fit takes the free space it finds and then fails.
  sizing.manifest_preallocation_bytes = std::min<uint64_t>(uint64_t{4} << 20, device_bytes / 64);
  return sizing;
}

Status IndexDb::FromRocks(const rocksdb::Status& s, std::string_view what) {
  if (s.ok()) return Status::Ok();
  int code = EIO;
  if (s.IsNotFound())
    code = ENOENT;
  else if (s.IsNoSpace())
    code = ENOSPC;
  else if (s.IsBusy() || s.IsTryAgain())
    code = EBUSY;
  else if (s.IsCorruption())
    code = EUCLEAN;
  else if (s.IsInvalidArgument())
    code = EINVAL;
  return Status::Error(code, std::string(what) + ": " + s.ToString());
}

Result<std::unique_ptr<IndexDb>> IndexDb::Open(const std::string& dir, rocksdb::Env* env) {
  // The index lives on the cache device: its buffers, logs and preallocations are sized for that
  // device, so that a small one (a test's tmpfs, a 16 MiB partition) holds an index too.
  const size_t slash = dir.rfind('/');
  const std::string device_path =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : dir.substr(0, slash));
  struct statvfs vfs;
  if (statvfs(device_path.c_str(), &vfs) != 0) {
    return Status::FromErrno(errno, "open index " + dir + ": statvfs " + device_path);
  }
  const IndexSizing sizing = IndexSizingFor(static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize);
  auto block_cache = rocksdb::NewLRUCache(32 << 20);
  rocksdb::DBOptions db_options;
  // Every family's memtables together stay within one write buffer (16 MiB at most), charged to
  // the block cache, so the index's memory is 32 MiB in all however long the mount runs and
  // whatever stages, evicts and imports do (without it five families could hold 160 MiB of
  // memtables, which a soak of admin churn sees as RSS growing for hours). Reaching the bound
  // flushes the largest memtable, which also keeps the write-ahead log short on a small cache
  // device.
  db_options.write_buffer_manager =
      std::make_shared<rocksdb::WriteBufferManager>(sizing.write_buffer_bytes, block_cache);
  db_options.max_total_wal_size = sizing.max_wal_bytes;
  db_options.manifest_preallocation_size = sizing.manifest_preallocation_bytes;
  db_options.create_if_missing = true;
  db_options.create_missing_column_families = true;
  db_options.max_open_files = 256;  // bounded fds whatever the index size
  db_options.max_background_jobs = 2;
  db_options.info_log_level = rocksdb::WARN_LEVEL;
  db_options.info_log = std::make_shared<IndexLogger>();
  if (env != nullptr) db_options.env = env;
  std::vector<rocksdb::ColumnFamilyDescriptor> families;
  for (const char* name : kFamilyNames) {
    families.emplace_back(name, FamilyOptions(block_cache, sizing.write_buffer_bytes));
  }
  auto index = std::unique_ptr<IndexDb>(new IndexDb());
  index->dir_ = dir;
  index->write_buffer_bytes_ = sizing.write_buffer_bytes;
  index->block_cache_ = block_cache;
  rocksdb::DB* raw = nullptr;
  rocksdb::Status s = rocksdb::DB::Open(db_options, dir, families, &index->handles_, &raw);
  if (!s.ok()) return FromRocks(s, "open index " + dir);
  index->db_.reset(raw);
  return index;
}

IndexDb::~IndexDb() {
  if (db_) {
    for (auto* h : handles_) db_->DestroyColumnFamilyHandle(h);
    db_->Close();
  }
}

Result<std::optional<std::string>> IndexDb::Get(Family family, std::string_view key) const {
  std::string value;
  rocksdb::Status s = db_->Get(rocksdb::ReadOptions(), handles_[family],
                               rocksdb::Slice(key.data(), key.size()), &value);
  if (s.IsNotFound()) return std::optional<std::string>();
  if (!s.ok()) return FromRocks(s, "index read");
  return std::optional<std::string>(std::move(value));
}

Status IndexDb::Put(Family family, std::string_view key, std::string_view value, bool sync) {
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  return FromRocks(db_->Put(wo, handles_[family], rocksdb::Slice(key.data(), key.size()),
                            rocksdb::Slice(value.data(), value.size())),
                   "index write");
}

Status IndexDb::Delete(Family family, std::string_view key, bool sync) {
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  return FromRocks(db_->Delete(wo, handles_[family], rocksdb::Slice(key.data(), key.size())),
                   "index delete");
}

Status IndexDb::Write(rocksdb::WriteBatch* batch, bool sync, bool unlogged) {
  rocksdb::WriteOptions wo;
  wo.sync = sync;
  wo.disableWAL = unlogged;
  return FromRocks(db_->Write(wo, batch), "index write");
}

std::unique_ptr<rocksdb::Iterator> IndexDb::NewIterator(Family family) const {
  rocksdb::ReadOptions ro;
  ro.fill_cache = false;
  return std::unique_ptr<rocksdb::Iterator>(db_->NewIterator(ro, handles_[family]));
}

Status IndexDb::ResetManifest() {
  for (Family family : {kNames, kInodes}) {
    std::string name = kFamilyNames[family];
    auto* old = handles_[family];
    CLAIRFS_RETURN_IF_ERROR(FromRocks(db_->DropColumnFamily(old), "drop " + name));
    db_->DestroyColumnFamilyHandle(old);
    handles_[family] = nullptr;
    rocksdb::ColumnFamilyHandle* fresh = nullptr;
    auto options = FamilyOptions(block_cache_, write_buffer_bytes_);
    CLAIRFS_RETURN_IF_ERROR(
        FromRocks(db_->CreateColumnFamily(options, name, &fresh), "create " + name));
    handles_[family] = fresh;
  }
  return Status::Ok();
}

Status IndexDb::Flush() {
  rocksdb::FlushOptions fo;
  fo.wait = true;
  return FromRocks(db_->Flush(fo, handles_), "index flush");
}

}  // namespace clairfs
