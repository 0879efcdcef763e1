// PfsEmuInodes: lookup counting and forget (see pfs_emu_inodes.h).
#include "tools/bench/pfs_emu_inodes.h"

namespace clairfs {

PfsEmuInodes::PfsEmuInodes(dev_t root_dev, ino_t root_ino) {
  Entry root;
  root.inode = PfsInode{"", root_dev, root_ino};
  root.lookups = 1;  // never forgotten: the kernel does not send FORGET for the root
  by_id_.emplace(kRootId, std::move(root));
  by_key_.emplace(Key{root_dev, root_ino}, kRootId);
}

std::optional<PfsInode> PfsEmuInodes::Find(uint64_t id) const {
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return std::nullopt;
  return it->second.inode;
}

uint64_t PfsEmuInodes::AddLookup(dev_t dev, ino_t ino, const std::string& relpath) {
  std::lock_guard<std::mutex> lock(mutex_);
  auto [key_it, inserted] = by_key_.try_emplace(Key{dev, ino}, next_id_);
  uint64_t id = key_it->second;
  if (inserted) {
    ++next_id_;
    Entry entry;
    entry.inode = PfsInode{relpath, dev, ino};
    by_id_.emplace(id, std::move(entry));
  }
  if (id != kRootId) ++by_id_[id].lookups;
  return id;
}

void PfsEmuInodes::Forget(uint64_t id, uint64_t count) {
  if (id == kRootId) return;
  std::lock_guard<std::mutex> lock(mutex_);
  auto it = by_id_.find(id);
  if (it == by_id_.end()) return;
  Entry& entry = it->second;
  entry.lookups = count >= entry.lookups ? 0 : entry.lookups - count;
  if (entry.lookups == 0) {
    by_key_.erase(Key{entry.inode.dev, entry.inode.ino});
    by_id_.erase(it);
  }
}

size_t PfsEmuInodes::size() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return by_id_.size();
}

}  // namespace clairfs
