// IndexFaultFs: write-ahead log faults for the index (see index_fault_fs.h).
#include "cache/testing/index_fault_fs.h"

namespace clairfs {
namespace {

bool IsLog(const std::string& name) {
  return name.size() > 4 && name.compare(name.size() - 4, 4, ".log") == 0;
}

}  // namespace

class IndexFaultFs::LogFile : public rocksdb::FSWritableFileOwnerWrapper {
 public:
  LogFile(std::unique_ptr<rocksdb::FSWritableFile> target, IndexFaultFs* fs)
      : FSWritableFileOwnerWrapper(std::move(target)), fs_(fs) {}

  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           rocksdb::IODebugContext* dbg) override {
    if (fs_->mode() == Mode::kFailAppend) return Injected("append");
    return FSWritableFileOwnerWrapper::Append(data, options, dbg);
  }
  rocksdb::IOStatus Append(const rocksdb::Slice& data, const rocksdb::IOOptions& options,
                           const rocksdb::DataVerificationInfo& info,
                           rocksdb::IODebugContext* dbg) override {
    if (fs_->mode() == Mode::kFailAppend) return Injected("append");
    return FSWritableFileOwnerWrapper::Append(data, options, info, dbg);
  }
  rocksdb::IOStatus Sync(const rocksdb::IOOptions& options, rocksdb::IODebugContext* dbg) override {
    if (fs_->mode() != Mode::kNone) return Injected("sync");
    rocksdb::IOStatus s = FSWritableFileOwnerWrapper::Sync(options, dbg);
    if (s.ok()) fs_->log_syncs_.fetch_add(1);
    return s;
  }
  rocksdb::IOStatus Fsync(const rocksdb::IOOptions& options,
                          rocksdb::IODebugContext* dbg) override {
    if (fs_->mode() != Mode::kNone) return Injected("fsync");
    rocksdb::IOStatus s = FSWritableFileOwnerWrapper::Fsync(options, dbg);
    if (s.ok()) fs_->log_syncs_.fetch_add(1);
    return s;
  }

 private:
  static rocksdb::IOStatus Injected(const char* what) {
    return rocksdb::IOStatus::IOError(std::string("injected log ") + what + " failure");
  }
  IndexFaultFs* fs_;
};

IndexFaultFs::IndexFaultFs() : FileSystemWrapper(rocksdb::FileSystem::Default()) {}

rocksdb::IOStatus IndexFaultFs::NewWritableFile(const std::string& name,
                                                const rocksdb::FileOptions& options,
                                                std::unique_ptr<rocksdb::FSWritableFile>* result,
                                                rocksdb::IODebugContext* dbg) {
  rocksdb::IOStatus s = target()->NewWritableFile(name, options, result, dbg);
  if (s.ok() && IsLog(name)) result->reset(new LogFile(std::move(*result), this));
  return s;
}

rocksdb::IOStatus IndexFaultFs::ReuseWritableFile(const std::string& name,
                                                  const std::string& old_name,
                                                  const rocksdb::FileOptions& options,
                                                  std::unique_ptr<rocksdb::FSWritableFile>* result,
                                                  rocksdb::IODebugContext* dbg) {
  rocksdb::IOStatus s = target()->ReuseWritableFile(name, old_name, options, result, dbg);
  if (s.ok() && IsLog(name)) result->reset(new LogFile(std::move(*result), this));
  return s;
}

IndexFaults::IndexFaults()
    : fs_(std::make_shared<IndexFaultFs>()), env_(rocksdb::NewCompositeEnv(fs_)) {}

}  // namespace clairfs
