// EvictionPolicy: decides which staged copy leaves the cache when space is needed.
//
// The content store reports every insert, access and removal; when it needs room it asks for
// victims in order and takes the first one it may evict (not pinned, not in use by staging).
// Implementations: LruPolicy, PlanPolicy (cache/plan_policy.h: farthest next planned use) and
// HeatPolicy (cache/heat_policy.h: coldest by Darshan heat per byte, LRU among equals). All
// methods are thread-safe and never do I/O.
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
  // The best victim to make room for `incoming` (a copy about to be staged). A policy may refuse
  // every victim it ranks above `incoming` (nullopt: staging it would evict something better).
  // Default: PickVictim.
  virtual std::optional<std::string> PickVictimToAdmit(
      const std::string& incoming, const std::function<bool(const std::string&)>& evictable) {
    (void)incoming;
    return PickVictim(evictable);
  }
};

// Least recently used (insert counts as a use). One short mutex around an intrusive list; no I/O.
std::unique_ptr<EvictionPolicy> NewLruPolicy();

}  // namespace clairfs
