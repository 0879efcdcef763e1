// NodeCache: bounded FIFO cache of manifest nodes by inode number (see node_cache.h).
#include "cache/node_cache.h"

namespace clairfs {

bool NodeCache::Get(uint64_t ino, Node* out) {
  Shard& shard = ShardOf(ino);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.nodes.find(ino);
  if (it == shard.nodes.end()) return false;
  *out = it->second;
  return true;
}

void NodeCache::AddLocked(Shard& shard, uint64_t ino, const Node& node) {
  shard.nodes.emplace(ino, node);
  shard.order.push_back(ino);
  while (shard.order.size() > kPerShard) {
    shard.nodes.erase(shard.order.front());
    shard.order.pop_front();
  }
}

void NodeCache::Insert(uint64_t ino, const Node& node, uint64_t version) {
  Shard& shard = ShardOf(ino);
  std::lock_guard<std::mutex> lock(shard.mu);
  if (version_.load(std::memory_order_acquire) != version || shard.nodes.count(ino) > 0) return;
  AddLocked(shard, ino, node);
}

void NodeCache::Put(uint64_t ino, const Node& node) {
  Shard& shard = ShardOf(ino);
  std::lock_guard<std::mutex> lock(shard.mu);
  version_.fetch_add(1, std::memory_order_acq_rel);
  auto it = shard.nodes.find(ino);
  if (it != shard.nodes.end()) {
    it->second = node;
    return;
  }
  AddLocked(shard, ino, node);
}

void NodeCache::Clear() {
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    version_.fetch_add(1, std::memory_order_acq_rel);
    shard.nodes.clear();
    shard.order.clear();
  }
  for (ChildShard& shard : children_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    version_.fetch_add(1, std::memory_order_acq_rel);
    shard.inos.clear();
    shard.order.clear();
  }
}

std::string_view NodeCache::ChildKey(uint64_t parent, std::string_view name) {
  thread_local std::string key;
  key.assign(reinterpret_cast<const char*>(&parent), sizeof(parent));
  key.append(name);
  return key;
}

bool NodeCache::GetChild(uint64_t parent, std::string_view name, uint64_t* ino) {
  const std::string_view key = ChildKey(parent, name);
  ChildShard& shard = ChildShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.inos.find(key);
  if (it == shard.inos.end()) return false;
  *ino = it->second;
  return true;
}

void NodeCache::InsertChild(uint64_t parent, std::string_view name, uint64_t ino,
                            uint64_t version) {
  const std::string_view key = ChildKey(parent, name);
  ChildShard& shard = ChildShardOf(key);
  std::lock_guard<std::mutex> lock(shard.mu);
  if (version_.load(std::memory_order_acquire) != version || shard.inos.count(key) > 0) return;
  auto added = shard.inos.emplace(std::string(key), ino).first;
  shard.order.push_back(&added->first);
  while (shard.order.size() > kPerShard) {
    shard.inos.erase(shard.inos.find(*shard.order.front()));
    shard.order.pop_front();
  }
}

size_t NodeCache::size() {
  size_t n = 0;
  for (Shard& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    n += shard.nodes.size();
  }
  return n;
}

}  // namespace clairfs
