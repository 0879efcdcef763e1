// PlanOrHeatPolicy: the eviction policy of a mount started without a plan. While no plan is
// active it is HeatPolicy (coldest by Darshan heat per byte, plain LRU without heat); while a plan
// given later is active (`clairfs plan set`, or one adopted under `plan set --plan auto`) it is
// PlanPolicy (farthest next planned use), as on a mount started with the plan.
//
// The plan policy is filled only while a plan is active: SetPlanActive(true) hands it every staged
// copy, least recently used first, and from then on every insert, access and removal; (false)
// empties it. So a mount that never gets a plan pays nothing for it.
//
// Thread-safety: all methods are thread-safe. Events and SetPlanActive take one short mutex (lock
// order: this mutex -> the inner policies' -> the plan oracle's); PickVictim* read an atomic
// flag and call the active policy without it. No I/O.
#pragma once

#include <atomic>
#include <mutex>
#include <string>

#include "cache/heat_policy.h"
#include "cache/plan_policy.h"

namespace clairfs {

class PlanOrHeatPolicy final : public EvictionPolicy {
 public:
  PlanOrHeatPolicy() = default;
  // "plan" while a plan is active, else the heat policy's name ("heat" or "lru").
  const char* name() const override;

  HeatPolicy* heat() { return &heat_; }
  PlanPolicy* plan() { return &plan_; }
  // A plan became active (or stopped being so).
  void SetPlanActive(bool active);

  void OnInsert(const std::string& path, uint64_t bytes) override;
  void OnAccess(const std::string& path) override;
  void OnRemove(const std::string& path) override;
  std::optional<std::string> PickVictim(
      const std::function<bool(const std::string&)>& evictable) override;
  std::optional<std::string> PickVictimToAdmit(
      const std::string& incoming,
      const std::function<bool(const std::string&)>& evictable) override;

 private:
  HeatPolicy heat_;
  PlanPolicy plan_;
  std::mutex mu_;  // orders SetPlanActive against the events forwarded to plan_
  bool plan_on_ = false;
  std::atomic<bool> plan_active_{false};  // plan_on_, read without the mutex
};

}  // namespace clairfs
