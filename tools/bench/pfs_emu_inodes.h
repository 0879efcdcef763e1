// PfsEmuInodes: the PFS emulator's inode table (FUSE inode numbers <-> backing files).
//
// These numbers are FUSE node ids, the kernel's handles for lookups; they follow lookup order and
// differ from one emulator run to the next. The inode numbers readers see (stat, readdir) are the
// backing files' own (pfs_emu_fs.h).
//
// Each backing file is identified by its (st_dev, st_ino); the first lookup of it creates an
// entry with a fresh FUSE inode number and the path (relative to the backing root) through which
// it was found, later lookups of the same file reuse the entry and add to its lookup count, and
// FORGET subtracts; at zero the entry goes. FUSE inode numbers are never reused, so no
// generation numbers are needed. The root (FUSE_ROOT_ID, relpath "") is never forgotten.
// Entries hold a path, not an fd: the emulated store is path-based (like a PFS client), and a
// million looked-up files must not pin a million descriptors. A file with several hard links
// keeps the path of its first lookup (datasets do not rename or re-link files while mounted).
//
// Thread-safety: all methods may be called concurrently; one mutex guards both maps (no other
// lock is taken while it is held). Find() copies the entry out, so callers do I/O unlocked.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

namespace clairfs {

struct PfsInode {
  std::string relpath;  // "" for the root
  dev_t dev = 0;
  ino_t ino = 0;
};

class PfsEmuInodes {
 public:
  static constexpr uint64_t kRootId = 1;  // FUSE_ROOT_ID

  PfsEmuInodes(dev_t root_dev, ino_t root_ino);

  // The entry for FUSE inode `id`, or nullopt if unknown (already forgotten).
  std::optional<PfsInode> Find(uint64_t id) const;
  // Records one more kernel reference to the backing file (dev, ino) found at `relpath`;
  // returns its FUSE inode number.
  uint64_t AddLookup(dev_t dev, ino_t ino, const std::string& relpath);
  // Drops `count` kernel references to `id`; removes the entry at zero.
  void Forget(uint64_t id, uint64_t count);
  // Entries, including the root (for tests and stats).
  size_t size() const;

 private:
  struct Key {
    dev_t dev;
    ino_t ino;
    bool operator==(const Key& other) const { return dev == other.dev && ino == other.ino; }
  };
  struct KeyHash {
    size_t operator()(const Key& k) const {
      return std::hash<uint64_t>()(static_cast<uint64_t>(k.ino) * 0x9E3779B97F4A7C15ULL ^
                                   static_cast<uint64_t>(k.dev));
    }
  };
  struct Entry {
    PfsInode inode;
    uint64_t lookups = 0;
  };

  mutable std::mutex mutex_;  // guards by_id_, by_key_ and next_id_
  std::unordered_map<uint64_t, Entry> by_id_;
  std::unordered_map<Key, uint64_t, KeyHash> by_key_;
  uint64_t next_id_ = kRootId + 1;
};

}  // namespace clairfs
