// Manifest: the namespace of the backing tree, listed once at mount and kept in the index.
//
// Every backing entry gets a clairfs inode number at listing time (1 = root). Records live in two
// index families: names ("<parent path>\0<name>" -> NodeAttr) and inodes (ino -> names key), so a
// lookup is one index read and getattr two, with no backing-store call and no per-file memory in
// the daemon: a multi-million-file manifest costs RocksDB's bounded caches, not RAM per entry.
// In front of the index, a bounded cache (NodeCache, at most 64 Ki nodes) keeps the nodes read
// last by inode, by lookup, by a listing for the kernel or remembered ahead (Remember), so the
// OPEN that follows a LOOKUP or a READDIRPLUS, the LOOKUP of a remembered file, and reopens of a
// dataset that fits, read no index record.
//
// Rescan() replaces the stored manifest by a fresh parallel listing (several threads, one
// directory each at a time). UseStored() serves a previous listing as is (--manifest reuse): it
// asserts the dataset has not changed. Queries are thread-safe; Rescan/UseStored run before any
// query. Paths are relative to the backing root, "" for the root, '/'-separated.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "cache/backing_tree.h"
#include "cache/env.h"
#include "cache/index_db.h"
#include "cache/node_attr.h"
#include "cache/node_cache.h"
#include "planner/base/status.h"

namespace clairfs {

constexpr uint64_t kRootIno = 1;

struct ManifestNode {
  std::string path;  // relative to the backing root; "" for the root
  NodeAttr attr;
};

struct ManifestChild {
  std::string name;
  NodeAttr attr;
};

struct ManifestSummary {
  uint64_t files = 0;   // regular files
  uint64_t dirs = 0;    // directories, root included
  uint64_t others = 0;  // symlinks and special files
  uint64_t bytes = 0;   // total size of regular files
  uint64_t unreadable_dirs = 0;
  double scan_seconds = 0;
  uint64_t acl_entries = 0;  // files and directories with an access ACL
};

class Manifest {
 public:
  explicit Manifest(IndexDb* index) : index_(index) {}

  // Lists the backing tree with `threads` threads into the index, replacing what was there. Every
  // directory is reached beneath the tree's root with no link followed (backing_tree.h); each
  // file's and directory's access ACL is recorded with it.
  Status Rescan(const BackingTree& tree, int threads);
  // The same over a tree opened here from `backing_root`.
  Status Rescan(const std::string& backing_root, int threads, Env* env);
  // Uses the stored manifest; fails if none is complete or it belongs to another backing root.
  Status UseStored(const std::string& backing_root);

  const ManifestSummary& summary() const { return summary_; }

  Result<std::optional<ManifestNode>> Lookup(uint64_t parent_ino, std::string_view name) const;
  Result<std::optional<ManifestNode>> Get(uint64_t ino) const;
  Result<std::optional<ManifestNode>> GetByPath(std::string_view path) const;
  // The children of a directory, in byte order of their names. With `remember`, the children
  // also enter the node cache when they all fit in it: a listing for the kernel (READDIRPLUS)
  // gives it their dentries, so their OPENs and GETATTRs come next with no LOOKUP before them.
  Status List(uint64_t dir_ino, std::vector<ManifestChild>* children, bool remember = false) const;
  // Replaces the attributes of an existing node (after revalidation found it changed).
  Status Update(const ManifestNode& node);
  // Enters a file read from the index (by ForEachFile) in the node cache as a LOOKUP of it
  // would, so the kernel's LOOKUP and OPEN of it read no index record. `version`: CacheVersion()
  // taken before that read; `parent_ino`: its directory's inode.
  void Remember(uint64_t parent_ino, const std::string& path, const NodeAttr& attr,
                uint64_t version) const;
  uint64_t CacheVersion() const { return nodes_.Version(); }
  // Calls `fn(path, attr)` for every regular file, in key order; stops early if fn returns false.
  Status ForEachFile(const std::function<bool(const std::string&, const NodeAttr&)>& fn) const;

  // "<parent path>\0<name>" for a relative path; "" for the root.
  static std::string KeyForPath(std::string_view path);
  static std::string PathForKey(std::string_view key);

 private:
  Result<std::optional<std::string>> PathOf(uint64_t ino) const;
  IndexDb* index_;
  mutable NodeCache nodes_;  // recently read nodes by inode (bounded; see node_cache.h)
  ManifestSummary summary_;
};

}  // namespace clairfs
