// HeldCopies: staged copies the kernel already holds open for an inode (FUSE passthrough keeps
// the backing file of recently released inodes), so that an open can skip opening the copy.
//
// On this class of machine a system call costs microseconds, and an open of a small staged file
// that reaches the daemon is dominated by them: reusing a held copy saves the open and close of
// the copy and the register/unregister calls of passthrough. FileSystem::Open asks Claim for a
// staged hit; a successful claim is an open served from that copy with no daemon fd (the adapter
// then answers it in passthrough with `handle`). CopyRemoved is called (by the content store's
// removal listener) after a copy is evicted or dropped, so a held copy never outlives its entry
// and never pins evicted bytes on the cache device.
//
// Threading: every method is called from any thread; Claim on the FUSE thread serving the open.
#pragma once

#include <cstdint>
#include <string>

#include "cache/node_attr.h"

namespace clairfs {

// Where a copy held ahead of its first open ranks among the held copies when their bound is full.
enum class HoldRank {
  // A guess (the mount-time walk in name order): behind every released copy, so it is the first
  // closed when the bound is reached, and not held at all while the bound is full.
  kBehindReleased,
  // Just staged for a use ahead (a copy published while mounted): ranked like a copy released
  // now; when the bound is full, the lowest-ranked held copy is closed to make room.
  kMostRecent,
};

class HeldCopies {
 public:
  virtual ~HeldCopies() = default;
  // True if a held copy of exactly `data_path` with the bytes of `identity` is now also held for
  // this open of `ino`; `*handle` names it for the reply. The open is ended by the adapter's
  // usual release path.
  virtual bool Claim(uint64_t ino, const FileIdentity& identity, const std::string& data_path,
                     int* handle) = 0;
  // `data_path` no longer belongs to the cache: stop holding it once no open needs it.
  virtual void CopyRemoved(const std::string& data_path) = 0;

  // Holding ahead (HeldCopyWarmup): how many more copies could be held now; 0 once the bound is
  // reached or holding is off.
  virtual size_t HoldRoom() const = 0;
  // Holds `fd`, an open copy at `data_path` with the bytes of `identity`, for the first open of
  // `ino` to claim, as if an earlier open had released it, ranked by `rank`. False (nothing held)
  // if `ino` already has an entry, holding is off (a bound of 0), its share of the bound is full
  // (kBehindReleased only), or the kernel refused. The caller keeps and closes `fd`; it must call
  // CopyRemoved if the copy left the store meanwhile.
  virtual bool Hold(uint64_t ino, int fd, const FileIdentity& identity,
                    const std::string& data_path, HoldRank rank) = 0;
};

}  // namespace clairfs
