// OpenCache: the cache stack in order, and back (see cache_opener.h).
#include "cache/cache_opener.h"

namespace clairfs {

std::optional<FileIdentity> ListedIdentity(const Manifest& manifest, const std::string& path) {
  auto node = manifest.GetByPath(path);
  if (node.ok() && node->has_value() && (*node)->attr.is_reg()) return (*node)->attr.identity();
  return std::nullopt;
}

OpenedCache::~OpenedCache() { (void)Close(); }

Status OpenedCache::Close() {
  store.reset();
  heat.reset();
  manifest.reset();
  Status flushed;
  if (index) {
    flushed = index->Flush();
    index.reset();
  }
  dir.reset();
  return flushed;
}

Result<OpenedCache> OpenCache(CacheOpenOptions options, Env* env) {
  OpenedCache cache;
  if (options.acquired) {
    cache.dir = std::move(options.acquired);
  } else {
    auto dir = CacheDir::Acquire(options.cache_dir, env);
    if (!dir.ok()) return dir.status();
    cache.dir = std::move(*dir);
  }
  auto index = IndexDb::Open(cache.dir->index_dir());
  if (!index.ok()) return index.status();
  cache.index = std::move(*index);

  if (options.listing != ManifestListing::kNone) {
    cache.manifest = std::make_unique<Manifest>(cache.index.get());
    if (options.listing == ManifestListing::kRescan) {
      if (!options.backing) return Status::Invalid("opening the cache: no backing tree to list");
      CLAIRFS_RETURN_IF_ERROR(cache.manifest->Rescan(*options.backing, options.scan_threads));
    } else {
      const std::string root = options.backing_root.empty() && options.backing
                                   ? options.backing->root()
                                   : options.backing_root;
      CLAIRFS_RETURN_IF_ERROR(cache.manifest->UseStored(root));
    }
  }
  if (options.open_heat) {
    auto heat = HeatStore::Open(cache.index.get(), env);
    if (!heat.ok()) return heat.status();
    cache.heat = std::move(*heat);
  }
  if (options.open_store) {
    std::unique_ptr<EvictionPolicy> policy;
    if (options.make_policy) policy = options.make_policy(cache.heat.get());
    if (!policy) policy = NewLruPolicy();
    auto store = ContentStore::Open(cache.dir.get(), cache.index.get(), env, options.store_options,
                                    std::move(policy));
    if (!store.ok()) return store.status();
    cache.store = std::move(*store);
    if (cache.manifest) {
      // A staged copy is valid only for the backing file it was copied from. (With kReuse
      // nothing was listed: the stored listing is taken as the truth.)
      const Manifest* manifest = cache.manifest.get();
      auto dropped = cache.store->DropStale(
          [manifest](const std::string& path) { return ListedIdentity(*manifest, path); });
      if (!dropped.ok()) return dropped.status();
      cache.stale_dropped = *dropped;
    }
  }
  return cache;
}

}  // namespace clairfs
