// Manifest: parallel listing into the index and the namespace queries (see manifest.h).
#include "cache/manifest.h"

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "cache/backing_tree.h"
#include "planner/base/log.h"

namespace clairfs {
namespace {

// Named for the record format (NodeAttr version 2): a manifest written in an older format reads
// as absent, so --manifest reuse asks for a rescan instead of failing at every lookup.
constexpr char kManifestStateKey[] = "manifest_state_v2";
constexpr char kBackingRootKey[] = "backing_root";

std::string ChildPath(std::string_view parent, std::string_view name) {
  if (parent.empty()) return std::string(name);
  std::string p(parent);
  p += '/';
  p += name;
  return p;
}

std::string ChildKey(std::string_view parent_path, std::string_view name) {
  std::string key(parent_path);
  key += '\0';
  key += name;
  return key;
}

// A directory still to list: its path and the identity it had when its parent was listed.
struct PendingDir {
  std::string rel;
  uint64_t backing_ino = 0;  // 0 for the root (opened by the tree itself)
};

// Shared state of one parallel listing: a queue of directories and the totals.
struct ScanState {
  std::mutex mu;  // guards queue, busy, status
  std::condition_variable cv;
  std::deque<PendingDir> queue;  // directories still to list
  int busy = 0;                  // workers listing a directory now
  Status status;                 // first fatal error
  std::atomic<uint64_t> next_ino{kRootIno + 1};
  std::atomic<uint64_t> files{0}, dirs{1}, others{0}, bytes{0}, unreadable{0}, acls{0};
};

// The entry's access ACL, or "" when it has none (or its filesystem keeps no ACLs).
std::string AccessAcl(Env* env, int dir_fd, const std::string& name, const std::string& shown) {
  auto acl = env->GetXattrAt(dir_fd, name, "system.posix_acl_access");
  if (acl.ok()) return *acl;
  const int code = acl.status().code();
  if (code != ENODATA && code != ENOTSUP && code != EOPNOTSUPP) {
    Log(LogLevel::kWarn, "cannot read the ACL of %s: %s (served by its mode bits alone)",
        shown.c_str(), acl.status().message().c_str());
  }
  return "";
}

// Lists one directory, reached beneath the root with no link followed (a directory swapped for
// a link since its parent was listed is refused; one swapped for another directory is left out).
Status ListOneDir(const BackingTree& tree, const PendingDir& pending, IndexDb* index,
                  ScanState* state, std::vector<PendingDir>* subdirs) {
  Env* env = tree.env();
  const std::string& rel = pending.rel;
  const std::string shown = rel.empty() ? tree.root() : tree.root() + "/" + rel;
  auto unreadable = [&](const Status& st) {
    // An unreadable directory is shown empty rather than failing the whole mount.
    Log(LogLevel::kWarn, "cannot list %s: %s (shown empty)", shown.c_str(), st.message().c_str());
    state->unreadable.fetch_add(1);
    return Status::Ok();
  };
  int dir_fd = tree.root_fd();
  if (!rel.empty()) {
    auto opened = tree.OpenDir(rel);
    if (!opened.ok()) return unreadable(opened.status());
    dir_fd = *opened;
  }
  struct DirCloser {
    Env* env;
    int fd;
    bool owned;
    ~DirCloser() {
      if (owned) (void)env->Close(fd);
    }
  } closer{env, dir_fd, !rel.empty()};
  if (pending.backing_ino != 0) {
    struct stat dir_st;
    Status st = env->Fstat(dir_fd, &dir_st);
    if (!st.ok()) return unreadable(st);
    if (static_cast<uint64_t>(dir_st.st_ino) != pending.backing_ino) {
      return unreadable(Status::Error(ESTALE, "replaced by another directory while listing"));
    }
  }
  std::vector<DirEntry> entries;
  Status st = env->ListDirFd(dir_fd, &entries);
  if (!st.ok()) return unreadable(st);
  rocksdb::WriteBatch batch;
  for (const auto& e : entries) {
    struct stat sb;
    Status ls = env->StatAt(dir_fd, e.name, &sb);
    if (!ls.ok()) {
      if (ls.code() == ENOENT) continue;  // vanished while listing
      Log(LogLevel::kWarn, "cannot stat %s/%s: %s (left out)", shown.c_str(), e.name.c_str(),
          ls.message().c_str());
      continue;
    }
    uint64_t ino = state->next_ino.fetch_add(1);
    NodeAttr attr = NodeAttr::FromStat(sb, ino);
    if (S_ISLNK(sb.st_mode)) {
      auto target = env->ReadLinkAt(dir_fd, e.name);
      if (target.ok()) attr.link_target = std::move(*target);
      state->others.fetch_add(1);
    } else if (S_ISDIR(sb.st_mode)) {
      state->dirs.fetch_add(1);
      subdirs->push_back(PendingDir{ChildPath(rel, e.name), static_cast<uint64_t>(sb.st_ino)});
    } else if (S_ISREG(sb.st_mode)) {
      state->files.fetch_add(1);
      state->bytes.fetch_add(static_cast<uint64_t>(sb.st_size));
    } else {
      state->others.fetch_add(1);
    }
    if (S_ISREG(sb.st_mode) || S_ISDIR(sb.st_mode)) {
      attr.acl_access = AccessAcl(env, dir_fd, e.name, shown + "/" + e.name);
      if (!attr.acl_access.empty()) state->acls.fetch_add(1);
    }
    std::string key = ChildKey(rel, e.name);
    batch.Put(index->handle(IndexDb::kNames), key, EncodeNodeAttr(attr));
    batch.Put(index->handle(IndexDb::kInodes), BigEndian64(ino), key);
  }
  // A bulk load: made durable by the Flush at the end of the scan, before it is marked complete.
  return index->Write(&batch, /*sync=*/false, /*unlogged=*/true);
}

}  // namespace

std::string Manifest::KeyForPath(std::string_view path) {
  if (path.empty()) return "";
  size_t slash = path.rfind('/');
  if (slash == std::string_view::npos) return ChildKey("", path);
  return ChildKey(path.substr(0, slash), path.substr(slash + 1));
}

std::string Manifest::PathForKey(std::string_view key) {
  size_t nul = key.find('\0');
  if (nul == std::string_view::npos) return std::string(key);
  return ChildPath(key.substr(0, nul), key.substr(nul + 1));
}

Status Manifest::Rescan(const std::string& root, int threads, Env* env) {
  auto tree = BackingTree::Open(root, env);
  if (!tree.ok()) {
    // A rescan that fails leaves no manifest marked complete, however early it fails.
    (void)index_->Delete(IndexDb::kMeta, kManifestStateKey, true);
    return tree.status();
  }
  return Rescan(**tree, threads);
}

Status Manifest::Rescan(const BackingTree& tree, int threads) {
  auto start = std::chrono::steady_clock::now();
  nodes_.Clear();  // inode numbers are assigned anew
  CLAIRFS_RETURN_IF_ERROR(index_->Delete(IndexDb::kMeta, kManifestStateKey, true));
  CLAIRFS_RETURN_IF_ERROR(index_->ResetManifest());
  struct stat root_st;
  CLAIRFS_RETURN_IF_ERROR(tree.env()->Fstat(tree.root_fd(), &root_st));
  NodeAttr root_attr = NodeAttr::FromStat(root_st, kRootIno);
  root_attr.acl_access = AccessAcl(tree.env(), tree.root_fd(), ".", tree.root());
  rocksdb::WriteBatch root_batch;
  root_batch.Put(index_->handle(IndexDb::kNames), "", EncodeNodeAttr(root_attr));
  root_batch.Put(index_->handle(IndexDb::kInodes), BigEndian64(kRootIno), "");
  CLAIRFS_RETURN_IF_ERROR(index_->Write(&root_batch, false, true));

  ScanState state;
  if (!root_attr.acl_access.empty()) state.acls.fetch_add(1);
  state.queue.push_back(PendingDir{"", 0});
  auto worker = [&]() {
    std::unique_lock<std::mutex> lock(state.mu);
    for (;;) {
      state.cv.wait(lock, [&] { return !state.queue.empty() || state.busy == 0; });
      if (state.queue.empty() || !state.status.ok()) {
        state.cv.notify_all();
        return;
      }
      PendingDir dir = std::move(state.queue.front());
      state.queue.pop_front();
      ++state.busy;
      lock.unlock();
      std::vector<PendingDir> subdirs;
      Status st = ListOneDir(tree, dir, index_, &state, &subdirs);
      lock.lock();
      --state.busy;
      if (!st.ok() && state.status.ok()) state.status = st;
      for (auto& d : subdirs) state.queue.push_back(std::move(d));
      state.cv.notify_all();
    }
  };
  std::vector<std::thread> pool;
  for (int i = 0; i < std::max(1, threads); ++i) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  CLAIRFS_RETURN_IF_ERROR(state.status);
  CLAIRFS_RETURN_IF_ERROR(index_->Flush());

  summary_.files = state.files.load();
  summary_.dirs = state.dirs.load();
  summary_.others = state.others.load();
  summary_.bytes = state.bytes.load();
  summary_.unreadable_dirs = state.unreadable.load();
  summary_.acl_entries = state.acls.load();
  summary_.scan_seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::string meta = std::to_string(summary_.files) + " " + std::to_string(summary_.dirs) + " " +
                     std::to_string(summary_.others) + " " + std::to_string(summary_.bytes) + " " +
                     std::to_string(summary_.acl_entries);
  CLAIRFS_RETURN_IF_ERROR(index_->Put(IndexDb::kMeta, kBackingRootKey, tree.root(), true));
  return index_->Put(IndexDb::kMeta, kManifestStateKey, meta, true);
}

Status Manifest::UseStored(const std::string& root) {
  nodes_.Clear();
  auto state = index_->Get(IndexDb::kMeta, kManifestStateKey);
  if (!state.ok()) return state.status();
  auto stored_root = index_->Get(IndexDb::kMeta, kBackingRootKey);
  if (!stored_root.ok()) return stored_root.status();
  if (!state->has_value()) {
    return Status::Error(ENOENT,
                         "--manifest reuse: this cache holds no complete manifest; mount once "
                         "with --manifest rescan");
  }
  if (!stored_root->has_value() || **stored_root != root) {
    return Status::Error(EINVAL, "--manifest reuse: the stored manifest lists " +
                                     stored_root->value_or("?") + ", not " + root);
  }
  unsigned long long files = 0, dirs = 0, others = 0, bytes = 0, acls = 0;
  if (sscanf((*state)->c_str(), "%llu %llu %llu %llu %llu", &files, &dirs, &others, &bytes,
             &acls) != 5) {
    return Status::Error(EUCLEAN, "--manifest reuse: corrupt manifest state record");
  }
  summary_ = ManifestSummary{files, dirs, others, bytes, 0, 0};
  summary_.acl_entries = acls;
  return Status::Ok();
}

Result<std::optional<std::string>> Manifest::PathOf(uint64_t ino) const {
  auto key = index_->Get(IndexDb::kInodes, BigEndian64(ino));
  if (!key.ok()) return key.status();
  if (!key->has_value()) return std::optional<std::string>();
  return std::optional<std::string>(**key);  // the names key
}

Result<std::optional<ManifestNode>> Manifest::Get(uint64_t ino) const {
  NodeCache::Node cached;
  if (nodes_.Get(ino, &cached)) {
    return std::optional<ManifestNode>(
        ManifestNode{std::move(cached.path), std::move(cached.attr)});
  }
  const uint64_t version = nodes_.Version();
  auto key = PathOf(ino);
  if (!key.ok()) return key.status();
  if (!key->has_value()) return std::optional<ManifestNode>();
  auto value = index_->Get(IndexDb::kNames, **key);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return std::optional<ManifestNode>();
  auto attr = DecodeNodeAttr(**value);
  if (!attr.ok()) return attr.status();
  ManifestNode node{PathForKey(**key), std::move(*attr)};
  nodes_.Insert(ino, NodeCache::Node{node.path, node.attr}, version);
  return std::optional<ManifestNode>(std::move(node));
}

Result<std::optional<ManifestNode>> Manifest::GetByPath(std::string_view path) const {
  std::string key = KeyForPath(path);
  auto value = index_->Get(IndexDb::kNames, key);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return std::optional<ManifestNode>();
  auto attr = DecodeNodeAttr(**value);
  if (!attr.ok()) return attr.status();
  return std::optional<ManifestNode>(ManifestNode{std::string(path), std::move(*attr)});
}

Result<std::optional<ManifestNode>> Manifest::Lookup(uint64_t parent, std::string_view name) const {
  const uint64_t version = nodes_.Version();  // before the reads (see NodeCache)
  uint64_t child_ino = 0;
  NodeCache::Node cached;
  if (nodes_.GetChild(parent, name, &child_ino) && nodes_.Get(child_ino, &cached)) {
    return std::optional<ManifestNode>(
        ManifestNode{std::move(cached.path), std::move(cached.attr)});
  }
  auto parent_node = Get(parent);
  if (!parent_node.ok()) return parent_node.status();
  if (!parent_node->has_value()) return std::optional<ManifestNode>();
  const std::string& parent_path = (*parent_node)->path;
  std::string key = ChildKey(parent_path, name);
  auto value = index_->Get(IndexDb::kNames, key);
  if (!value.ok()) return value.status();
  if (!value->has_value()) return std::optional<ManifestNode>();
  auto attr = DecodeNodeAttr(**value);
  if (!attr.ok()) return attr.status();
  ManifestNode node{ChildPath(parent_path, name), std::move(*attr)};
  // The kernel's OPEN or GETATTR of this inode usually follows at once.
  nodes_.Insert(node.attr.ino, NodeCache::Node{node.path, node.attr}, version);
  nodes_.InsertChild(parent, name, node.attr.ino, version);
  return std::optional<ManifestNode>(std::move(node));
}

Status Manifest::List(uint64_t dir_ino, std::vector<ManifestChild>* children, bool remember) const {
  children->clear();
  const uint64_t version = nodes_.Version();  // before the reads (see NodeCache)
  auto key = PathOf(dir_ino);
  if (!key.ok()) return key.status();
  if (!key->has_value()) return Status::Error(ENOENT, "no such directory");
  const std::string dir_path = PathForKey(**key);
  std::string prefix = dir_path;
  prefix += '\0';
  auto it = index_->NewIterator(IndexDb::kNames);
  for (it->Seek(prefix); it->Valid() && it->key().starts_with(prefix); it->Next()) {
    auto attr = DecodeNodeAttr(std::string_view(it->value().data(), it->value().size()));
    if (!attr.ok()) return attr.status();
    std::string_view k(it->key().data(), it->key().size());
    children->push_back(ManifestChild{std::string(k.substr(prefix.size())), std::move(*attr)});
  }
  CLAIRFS_RETURN_IF_ERROR(IndexDb::FromRocks(it->status(), "list manifest"));
  // A directory larger than the whole cache would only push out nodes that are still in use.
  if (remember && children->size() <= NodeCache::kCapacity) {
    for (const ManifestChild& child : *children) {
      nodes_.Insert(child.attr.ino, NodeCache::Node{ChildPath(dir_path, child.name), child.attr},
                    version);
      nodes_.InsertChild(dir_ino, child.name, child.attr.ino, version);
    }
  }
  return Status::Ok();
}

void Manifest::Remember(uint64_t parent_ino, const std::string& path, const NodeAttr& attr,
                        uint64_t version) const {
  const size_t slash = path.rfind('/');
  const std::string_view name = slash == std::string::npos
                                    ? std::string_view(path)
                                    : std::string_view(path).substr(slash + 1);
  nodes_.Insert(attr.ino, NodeCache::Node{path, attr}, version);
  nodes_.InsertChild(parent_ino, name, attr.ino, version);
}

Status Manifest::Update(const ManifestNode& node) {
  Status st = index_->Put(IndexDb::kNames, KeyForPath(node.path), EncodeNodeAttr(node.attr), false);
  if (st.ok()) nodes_.Put(node.attr.ino, NodeCache::Node{node.path, node.attr});
  return st;
}

Status Manifest::ForEachFile(
    const std::function<bool(const std::string&, const NodeAttr&)>& fn) const {
  auto it = index_->NewIterator(IndexDb::kNames);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    auto attr = DecodeNodeAttr(std::string_view(it->value().data(), it->value().size()));
    if (!attr.ok()) return attr.status();
    if (!attr->is_reg()) continue;
    if (!fn(PathForKey(std::string_view(it->key().data(), it->key().size())), *attr)) break;
  }
  return IndexDb::FromRocks(it->status(), "iterate manifest");
}

}  // namespace clairfs
