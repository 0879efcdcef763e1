// PlanPolicy: evicts the cached file whose next planned use is farthest (see eviction_policy.h).
//
// Order of victims: files no rank will read again (within the loaded epochs) go first, least
// recently used first; then files by next planned use, farthest first. A file whose next use is at
// or before the protection limit (the end of the prefetcher's look-ahead window, or the next use
// of the file being brought in) is never a victim: the policy refuses rather than evict a file
// needed sooner than the one that would take its place. Without an oracle, or while the oracle
// says the plan is inactive (dropped or cleared), every file is keyed by recency only: plain LRU.
//
// Next uses come from a PlanOracle when a file is inserted or accessed, and are recomputed for
// all cached files by Rekey() (epoch rollover, plan set/clear/drop). Keys live in one ordered map,
// so PickVictim costs O(log n) plus the refused entries it steps over.
//
// Thread-safety: all methods take one short mutex; lock order policy mutex -> oracle's lock
// (the oracle must never call into the policy while holding its own lock). No I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

#include "cache/eviction_policy.h"

namespace clairfs {

// Answers the policy's questions about the plan (implemented by the mount's PlanTracker).
class PlanOracle {
 public:
  virtual ~PlanOracle() = default;
  // Whether next uses are meaningful (false once the plan is dropped).
  virtual bool PlanActive() = 0;
  // Time of the next planned use of `path`, or UINT64_MAX for none (or a path not in the plan).
  virtual uint64_t NextUse(const std::string& path) = 0;
  // Files whose next use is <= this time are inside the look-ahead window.
  virtual uint64_t ProtectUntil() = 0;
};

class PlanPolicy final : public EvictionPolicy {
 public:
  PlanPolicy() = default;
  const char* name() const override { return "plan"; }

  // Replaces the oracle (nullptr: plain LRU) and rekeys every cached file.
  void SetOracle(std::shared_ptr<PlanOracle> oracle);
  // Recomputes every cached file's key from the oracle.
  void Rekey();

  void OnInsert(const std::string& path, uint64_t bytes) override;
  void OnAccess(const std::string& path) override;
  void OnRemove(const std::string& path) override;
  // PickVictimFor(the oracle's ProtectUntil()).
  std::optional<std::string> PickVictim(
      const std::function<bool(const std::string&)>& evictable) override;
  // The best evictable victim whose next use is later than `candidate_next_use` (or none).
  std::optional<std::string> PickVictimFor(
      uint64_t candidate_next_use, const std::function<bool(const std::string&)>& evictable);

  size_t size();
  // Forgets every file (a PlanOrHeatPolicy whose plan stopped being active).
  void Clear();
  // The key's next use for `path` (UINT64_MAX = none), for tests and status.
  std::optional<uint64_t> KeyOf(const std::string& path);

 private:
  // (next use, tiebreak): largest evicted first. Never-used-again files have next use UINT64_MAX
  // and tiebreak UINT64_MAX - recency tick, so the least recently used of them is largest.
  using Key = std::pair<uint64_t, uint64_t>;
  Key KeyForLocked(const std::string& path);
  void TouchLocked(const std::string& path);

  std::mutex mu_;  // guards everything below
  std::shared_ptr<PlanOracle> oracle_;
  uint64_t tick_ = 0;
  std::map<Key, std::string> by_key_;
  std::unordered_map<std::string, Key> key_of_;
};

}  // namespace clairfs
