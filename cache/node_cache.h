// NodeCache: a bounded in-memory cache of manifest nodes (path and attributes) by inode number,
// in front of the index.
//
// Every OPEN and GETATTR names an inode; without this cache each costs two index reads (inode ->
// names key -> attributes): about a third of the daemon's user CPU per open of a small staged
// file on the project's 2-vCPU VM, spent while the opening process waits for the reply. The
// cache keeps the most recently inserted nodes (lookups and inode reads insert them), so a LOOKUP
// followed by an OPEN of the same file reads the index once, and a dataset of up to kCapacity
// files is reopened with no index read at all. Larger datasets read in random order gain in
// proportion to the share that fits. Memory is bounded: at most kCapacity nodes (a path and its
// attributes, a few hundred bytes each: about 16 MiB at most); each shard drops the node it
// inserted first (FIFO).
//
// Consistency: Put() replaces a node (the manifest calls it after writing the index), Clear()
// drops all (a new listing); Insert() adds a node read from the index only if no Put() or
// Clear() ran since the caller took Version() before that read, so a read that raced with an
// update never brings back the old attributes. Updates are rare (a file found changed at open),
// so one cache-wide count serves, and a lookup need not know the inode before it reads.
//
// Children: a second bounded map, (parent inode, name) -> inode, answers a LOOKUP without the
// index when the child's node is cached too. A name's inode changes only with a new listing, so
// its entries are never replaced; Clear() drops them and InsertChild() follows Insert()'s rule.
//
// Threading: every method may be called from any thread; each takes one shard mutex for a map
// operation and a copy (no I/O under it).
#pragma once

#include <array>
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "cache/node_attr.h"

namespace clairfs {

class NodeCache {
 public:
  static constexpr size_t kShards = 16;
  static constexpr size_t kCapacity = 64 * 1024;
  static constexpr size_t kPerShard = kCapacity / kShards;

  struct Node {
    std::string path;
    NodeAttr attr;
  };

  // Copies the cached node of `ino` into `*out`; false if it is not cached.
  bool Get(uint64_t ino, Node* out);
  // The update count, to take before reading the index and pass to Insert after.
  uint64_t Version() const { return version_.load(std::memory_order_acquire); }
  // Adds a node read from the index after Version() returned `version`, unless a Put() or
  // Clear() came since or the node is cached already.
  void Insert(uint64_t ino, const Node& node, uint64_t version);
  // Adds or replaces a node whose index record was just written.
  void Put(uint64_t ino, const Node& node);
  // Drops every node and child (the manifest was replaced); reads in flight do not insert.
  void Clear();
  size_t size();

  // The inode of `name` in directory `parent`, if cached.
  bool GetChild(uint64_t parent, std::string_view name, uint64_t* ino);
  // Adds a child read from the index after Version() returned `version` (as Insert).
  void InsertChild(uint64_t parent, std::string_view name, uint64_t ino, uint64_t version);

 private:
  // Keys are the parent's inode (8 bytes) then the name; looked up without a copy.
  struct KeyHash {
    using is_transparent = void;
    size_t operator()(std::string_view key) const { return std::hash<std::string_view>{}(key); }
  };
  struct ChildShard {
    std::mutex mu;  // guards inos and order
    std::unordered_map<std::string, uint64_t, KeyHash, std::equal_to<>> inos;
    // Keys in insertion order, oldest first: the map's own key strings (a node's key stays put
    // when the map rehashes), so a child costs one key allocation.
    std::deque<const std::string*> order;
  };
  // The key of (parent, name) in a buffer of the calling thread.
  static std::string_view ChildKey(uint64_t parent, std::string_view name);
  ChildShard& ChildShardOf(std::string_view key) { return children_[KeyHash{}(key) % kShards]; }

  struct Shard {
    std::mutex mu;  // guards nodes and order
    std::unordered_map<uint64_t, Node> nodes;
    std::deque<uint64_t> order;  // inodes in insertion order, oldest first
  };
  Shard& ShardOf(uint64_t ino) { return shards_[ino % kShards]; }
  // Adds a node the shard does not hold, dropping the oldest beyond the bound (lock held).
  static void AddLocked(Shard& shard, uint64_t ino, const Node& node);

  std::array<Shard, kShards> shards_;
  std::array<ChildShard, kShards> children_;
  // Put() and Clear() calls so far; changed under the shard lock of the node put (all for Clear),
  // checked by Insert under its node's shard lock.
  std::atomic<uint64_t> version_{0};
};

}  // namespace clairfs
