// SimulatedNodeCache (see simulated_node_cache.h).
#include "planner/cluster/simulated_node_cache.h"

#include <algorithm>

#include "planner/cluster/epoch_reads.h"

namespace clairfs {

SimulatedNodeCache::SimulatedNodeCache(uint64_t capacity, std::vector<uint32_t> holds)
    : capacity_(capacity), holds_(std::move(holds)) {
  std::sort(holds_.begin(), holds_.end());
}

size_t SimulatedNodeCache::HeldCopies() const {
  size_t count = 0;
  for (uint32_t file : holds_) count += copies_.Contains(file);
  return count;
}

bool SimulatedNodeCache::Holds(uint32_t file) const {
  return std::binary_search(holds_.begin(), holds_.end(), file);
}

SimulatedNodeCache::Key SimulatedNodeCache::KeyFor(uint32_t file, uint64_t next_use, uint64_t now) {
  return next_use == kNeverRead ? Key{kNeverRead, ~now} : Key{next_use, file};
}

bool SimulatedNodeCache::MakeRoom(uint64_t bytes, std::optional<uint64_t> protect_until,
                                  const std::vector<uint64_t>& sizes) {
  while (used_ + bytes > capacity_ && !evictable_.empty()) {
    auto victim = std::prev(evictable_.end());
    if (protect_until && victim->first.first <= *protect_until) break;
    const uint32_t file = victim->second;
    used_ -= sizes[file];
    copies_.Erase(file);
    evictable_.erase(victim);
  }
  return used_ + bytes <= capacity_;
}

void SimulatedNodeCache::Insert(uint32_t file, Key key, const std::vector<uint64_t>& sizes) {
  const bool held = Holds(file);
  copies_.Insert(file, Copy{key, held});
  if (!held) evictable_.insert({key, file});
  used_ += sizes[file];
  peak_ = std::max(peak_, used_);
}

void SimulatedNodeCache::Drop(uint32_t file, const std::vector<uint64_t>& sizes) {
  Copy* copy = copies_.Find(file);
  if (copy == nullptr || copy->held) return;
  evictable_.erase({copy->key, file});
  copies_.Erase(file);
  used_ -= sizes[file];
}

void SimulatedNodeCache::Rekey(uint32_t file, Key key) {
  Copy* copy = copies_.Find(file);
  if (copy == nullptr || copy->held || copy->key == key) return;
  evictable_.erase({copy->key, file});
  copy->key = key;
  evictable_.insert({key, file});
}

std::vector<uint32_t> SimulatedNodeCache::NeverUsedAgain() const {
  std::vector<uint32_t> files;
  for (auto it = evictable_.rbegin(); it != evictable_.rend() && it->first.first == kNeverRead;
       ++it) {
    files.push_back(it->second);
  }
  return files;
}

}  // namespace clairfs
