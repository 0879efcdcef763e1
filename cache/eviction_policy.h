// EvictionPolicy: decides which staged copy leaves the cache when space is needed.
//
// The content store reports every insert, access and removal; when it needs room it asks for
// victims in order and takes the first one it may evict (not pinned, not in use by staging).
// Implementations: LruPolicy (read-through default); plan- and heat-aware policies come later and
// plug in here. All methods are thread-safe and never do I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

namespace clairfs {

class EvictionPolicy {
 public:
  virtual ~EvictionPolicy() = default;
  virtual const char* name() const = 0;
  virtual void OnInsert(const std::string& path, uint64_t bytes) = 0;
  virtual void OnAccess(const std::string& path) = 0;
  virtual void OnRemove(const std::string& path) = 0;
  // The best victim for which `evictable(path)` is true, or nullopt if none.
  virtual std::optional<std::string> PickVictim(
      const std::function<bool(const std::string&)>& evictable) = 0;
};

// Least recently used (insert counts as a use). One short mutex around an intrusive list; no I/O.
std::unique_ptr<EvictionPolicy> NewLruPolicy();

}  // namespace clairfs
