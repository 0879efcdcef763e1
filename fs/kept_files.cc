// KeptFiles: a bounded, least-recently-used set of open files by inode (see kept_files.h).
#include "fs/kept_files.h"

namespace clairfs {

KeptFiles::FilePtr KeptFiles::Get(uint64_t ino) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_ino_.find(ino);
  if (it == by_ino_.end()) return nullptr;
  order_.splice(order_.begin(), order_, it->second);
  return it->second->file;
}

void KeptFiles::EraseLocked(Order::iterator it, std::vector<FilePtr>* out) {
  by_ino_.erase(it->ino);
  if (!it->data_path.empty()) {
    auto copy = by_copy_.find(it->data_path);
    if (copy != by_copy_.end() && copy->second == it) by_copy_.erase(copy);
  }
  out->push_back(std::move(it->file));
  order_.erase(it);
}

std::vector<KeptFiles::FilePtr> KeptFiles::Put(uint64_t ino, FilePtr file,
                                               const std::string& data_path) {
  std::vector<FilePtr> let_go;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = by_ino_.find(ino); it != by_ino_.end()) EraseLocked(it->second, &let_go);
  // One inode's copy has one path; a stale index entry for it (an earlier inode of the path
  // after a remount cannot happen within one mount) is replaced.
  if (!data_path.empty()) {
    if (auto it = by_copy_.find(data_path); it != by_copy_.end()) EraseLocked(it->second, &let_go);
  }
  order_.push_front(Entry{ino, std::move(file), data_path});
  by_ino_[ino] = order_.begin();
  if (!data_path.empty()) by_copy_[data_path] = order_.begin();
  while (order_.size() > capacity_) EraseLocked(std::prev(order_.end()), &let_go);
  return let_go;
}

std::vector<KeptFiles::FilePtr> KeptFiles::Remove(uint64_t ino, const OpenFile* file) {
  std::vector<FilePtr> let_go;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_ino_.find(ino);
  if (it != by_ino_.end() && it->second->file.get() == file) EraseLocked(it->second, &let_go);
  return let_go;
}

std::vector<KeptFiles::FilePtr> KeptFiles::RemoveCopy(const std::string& data_path) {
  std::vector<FilePtr> let_go;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_copy_.find(data_path);
  if (it != by_copy_.end()) EraseLocked(it->second, &let_go);
  return let_go;
}

std::vector<KeptFiles::FilePtr> KeptFiles::Clear() {
  std::vector<FilePtr> let_go;
  std::lock_guard<std::mutex> lock(mu_);
  let_go.reserve(order_.size());
  for (Entry& e : order_) let_go.push_back(std::move(e.file));
  order_.clear();
  by_ino_.clear();
  by_copy_.clear();
  return let_go;
}

std::vector<KeptFiles::FilePtr> KeptFiles::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<FilePtr> files;
  files.reserve(order_.size());
  for (const Entry& e : order_) files.push_back(e.file);
  return files;
}

size_t KeptFiles::size() const {
  std::lock_guard<std::mutex> lock(mu_);
  return order_.size();
}

}  // namespace clairfs
