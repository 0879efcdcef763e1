// HeatPolicy: evicts the coldest staged copy by Darshan heat per byte (see eviction_policy.h).
//
// Order of victims: lowest heat_per_byte first; among equal heat, least recently used first.
// Files without heat count as heat 0, so they go before any file with heat, LRU among
// themselves. To admit a copy (PickVictimToAdmit) only victims strictly colder than the incoming
// file are offered, or, for an incoming file without heat, other files without heat: a hot file
// may push out colder ones, never a hotter or equally hot one (so files of equal heat do not
// evict each other in turn), and a cold file only other cold ones, least recently used first.
// When nothing may go the store refuses to stage the file, which stays served from the backing
// store.
// PickVictim, used to shrink the cache to a smaller capacity at startup, offers every file.
//
// The daemon installs this policy whenever no plan is given at mount. Without heat (SetHeat with
// an empty map or never called) every key is (0, recency): exactly LRU, and name() says "lru".
// While a plan is active (SetEnabled(false)) heat is ignored the same way, so the plan, not old
// heat, governs the cache.
//
// Thread-safety: all methods take one short mutex; no I/O. Heat maps are immutable snapshots
// (cache/heat_store.h) shared by pointer. Rekeying (SetHeat, SetEnabled) keeps each file's
// recency, costs O(n log n) in the staged files and happens only on import or plan changes.
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "cache/eviction_policy.h"
#include "cache/heat_store.h"

namespace clairfs {

class HeatPolicy final : public EvictionPolicy {
 public:
  HeatPolicy() = default;
  // "heat" while heat is set and enabled, else "lru" (the order is then plain LRU).
  const char* name() const override;

  // Replaces the heat (nullptr or empty: none) and rekeys every staged file.
  void SetHeat(std::shared_ptr<const HeatMap> heat);
  // false: order by recency only (a plan is active); true: by heat again.
  void SetEnabled(bool enabled);

  void OnInsert(const std::string& path, uint64_t bytes) override;
  void OnAccess(const std::string& path) override;
  void OnRemove(const std::string& path) override;
  std::optional<std::string> PickVictim(
      const std::function<bool(const std::string&)>& evictable) override;
  std::optional<std::string> PickVictimToAdmit(
      const std::string& incoming,
      const std::function<bool(const std::string&)>& evictable) override;

  // The heat per byte the policy uses for `path` (0 without heat or while disabled).
  double HeatOf(const std::string& path);
  size_t size();
  // Every file the policy holds, least recently used first.
  std::vector<std::string> PathsByRecency();

 private:
  // (heat_per_byte, recency tick): the smallest key is the first victim.
  using Key = std::pair<double, uint64_t>;
  double HeatLocked(const std::string& path) const;
  void TouchLocked(const std::string& path);
  void RekeyLocked();
  std::optional<std::string> PickLocked(double limit,
                                        const std::function<bool(const std::string&)>& evictable);

  std::mutex mu_;  // guards everything below
  std::shared_ptr<const HeatMap> heat_;
  bool enabled_ = true;
  uint64_t tick_ = 0;
  std::map<Key, std::string> by_key_;
  std::unordered_map<std::string, Key> key_of_;
  std::atomic<bool> ordering_by_heat_{false};  // for name(), without the mutex
};

}  // namespace clairfs
