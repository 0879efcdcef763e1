// KeptFiles: the files a no-open mount keeps open between READs, by inode (docs/NO-OPEN.md).
//
// On a no-open mount the kernel sends no OPEN or RELEASE: a READ names only the inode. Opening the
// file's source (its staged copy or the backing file) for every READ would cost an open(2) each,
// so the filesystem keeps the last `capacity` sources it opened; the least recently used is let
// go first. A kept file whose staged copy leaves the store is let go at once (RemoveCopy), so an
// evicted copy's blocks are freed as soon as no READ in flight still reads them.
//
// Entries are shared: a READ holds its file while it reads, so one let go meanwhile is closed
// (by its owner's deleter) when that READ ends. Every method returns what it let go to the caller,
// which drops it outside the lock: closing a file is I/O and no lock is held across it.
//
// Thread-safety: every method may be called from any thread; one mutex, held for map work only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

namespace clairfs {

struct OpenFile;

class KeptFiles {
 public:
  using FilePtr = std::shared_ptr<OpenFile>;

  explicit KeptFiles(size_t capacity) : capacity_(capacity == 0 ? 1 : capacity) {}

  // The file kept for `ino`, now the most recently used; null if none.
  FilePtr Get(uint64_t ino);
  // Keeps `file` for `ino` (`data_path`: its staged copy's path, empty for a backing file),
  // replacing any file kept for it; returns the files let go (the replaced one and, past the
  // capacity, the least recently used).
  std::vector<FilePtr> Put(uint64_t ino, FilePtr file, const std::string& data_path);
  // Lets go of the file kept for `ino` if it is `file`.
  std::vector<FilePtr> Remove(uint64_t ino, const OpenFile* file);
  // Lets go of the file kept for the staged copy at `data_path` (it left the store).
  std::vector<FilePtr> RemoveCopy(const std::string& data_path);
  // Lets go of every file.
  std::vector<FilePtr> Clear();
  // Every kept file, most recently used first (for reports).
  std::vector<FilePtr> Snapshot() const;

  size_t size() const;
  size_t capacity() const { return capacity_; }

 private:
  struct Entry {
    uint64_t ino;
    FilePtr file;
    std::string data_path;
  };
  using Order = std::list<Entry>;
  // Unlinks `it` from every index and moves its file into `out`.
  void EraseLocked(Order::iterator it, std::vector<FilePtr>* out);

  const size_t capacity_;
  mutable std::mutex mu_;  // guards the three fields below
  Order order_;            // most recently used first
  std::unordered_map<uint64_t, Order::iterator> by_ino_;
  std::unordered_map<std::string, Order::iterator> by_copy_;
};

}  // namespace clairfs
