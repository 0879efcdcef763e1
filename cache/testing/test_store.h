// Test support for the cache layer's unit tests: a cache directory, its index and a ContentStore
// (LRU) on it, opened together and torn down in the right order (store, index, directory: the
// reverse of the members' order below).
#pragma once

#include <memory>
#include <string>

#include "cache/cache_dir.h"
#include "cache/content_store.h"
#include "cache/index_db.h"

namespace clairfs::testing {

struct OpenStore {
  std::unique_ptr<CacheDir> dir;
  std::unique_ptr<IndexDb> index;
  std::unique_ptr<ContentStore> store;
};

// Opens (creating if needed) the cache at `root`; the index in `index_dir` if given, on
// `index_env` if given (fault injection).
inline Result<OpenStore> OpenTestStore(const std::string& root, Env* env,
                                       ContentStoreOptions options = {},
                                       const std::string& index_dir = "",
                                       rocksdb::Env* index_env = nullptr) {
  OpenStore s;
  auto dir = CacheDir::Acquire(root, env);
  if (!dir.ok()) return dir.status();
  s.dir = std::move(*dir);
  auto index = IndexDb::Open(index_dir.empty() ? s.dir->index_dir() : index_dir, index_env);
  if (!index.ok()) return index.status();
  s.index = std::move(*index);
  auto store = ContentStore::Open(s.dir.get(), s.index.get(), env, options, NewLruPolicy());
  if (!store.ok()) return store.status();
  s.store = std::move(*store);
  return s;
}

}  // namespace clairfs::testing
