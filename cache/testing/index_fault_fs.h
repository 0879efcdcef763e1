// IndexFaultFs: a RocksDB FileSystem for tests that fails the index's write-ahead log on demand,
// as a device error or a crash during a synced index write would, and counts the log's syncs so
// tests can assert how many synced index writes a publish cost.
//
// Modes (armed at run time, thread-safe; they apply to every *.log file RocksDB opens):
//   kNone        everything is forwarded
//   kFailAppend  appends to the log fail with EIO: no byte of the write reaches the log
//   kFailSync    appends succeed (the record sits in the log file, not yet durable) and the sync
//                that makes them durable fails: after a re-open, RocksDB may replay the record
// Open the index with IndexDb::Open(dir, faults.env()); the IndexFaultFs must outlive it. Note that
// RocksDB stops accepting writes after a failed log write until the database is re-opened.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <rocksdb/env.h>
#include <rocksdb/file_system.h>

namespace clairfs {

class IndexFaultFs : public rocksdb::FileSystemWrapper {
 public:
  enum class Mode { kNone, kFailAppend, kFailSync };

  IndexFaultFs();
  static const char* kClassName() { return "ClairfsIndexFaultFs"; }
  const char* Name() const override { return kClassName(); }

  void set_mode(Mode mode) { mode_.store(mode); }
  Mode mode() const { return mode_.load(); }
  // Syncs of the write-ahead log that reached the device (failed ones not counted).
  uint64_t log_syncs() const { return log_syncs_.load(); }

  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* result,
                                    rocksdb::IODebugContext* dbg) override;
  rocksdb::IOStatus ReuseWritableFile(const std::string& name, const std::string& old_name,
                                      const rocksdb::FileOptions& options,
                                      std::unique_ptr<rocksdb::FSWritableFile>* result,
                                      rocksdb::IODebugContext* dbg) override;

 private:
  class LogFile;
  std::atomic<Mode> mode_{Mode::kNone};
  std::atomic<uint64_t> log_syncs_{0};
};

// An IndexFaultFs and the RocksDB Env that routes the index's files through it.
class IndexFaults {
 public:
  IndexFaults();
  IndexFaultFs* fs() { return fs_.get(); }
  rocksdb::Env* env() { return env_.get(); }

 private:
  std::shared_ptr<IndexFaultFs> fs_;
  std::unique_ptr<rocksdb::Env> env_;
};

}  // namespace clairfs
