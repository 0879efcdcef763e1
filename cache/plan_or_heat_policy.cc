// PlanOrHeatPolicy (see plan_or_heat_policy.h).
#include "cache/plan_or_heat_policy.h"

namespace clairfs {

const char* PlanOrHeatPolicy::name() const {
  return plan_active_.load(std::memory_order_acquire) ? plan_.name() : heat_.name();
}

void PlanOrHeatPolicy::SetPlanActive(bool active) {
  std::lock_guard<std::mutex> lock(mu_);
  if (active == plan_on_) return;
  plan_on_ = active;
  if (active) {
    for (const std::string& path : heat_.PathsByRecency()) plan_.OnInsert(path, 0);
  } else {
    plan_.Clear();
  }
  plan_active_.store(active, std::memory_order_release);
}

void PlanOrHeatPolicy::OnInsert(const std::string& path, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  heat_.OnInsert(path, bytes);
  if (plan_on_) plan_.OnInsert(path, bytes);
}

void PlanOrHeatPolicy::OnAccess(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  heat_.OnAccess(path);
  if (plan_on_) plan_.OnAccess(path);
}

void PlanOrHeatPolicy::OnRemove(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  heat_.OnRemove(path);
  if (plan_on_) plan_.OnRemove(path);
}

std::optional<std::string> PlanOrHeatPolicy::PickVictim(
    const std::function<bool(const std::string&)>& evictable) {
  if (plan_active_.load(std::memory_order_acquire)) return plan_.PickVictim(evictable);
  return heat_.PickVictim(evictable);
}

std::optional<std::string> PlanOrHeatPolicy::PickVictimToAdmit(
    const std::string& incoming, const std::function<bool(const std::string&)>& evictable) {
  if (plan_active_.load(std::memory_order_acquire)) {
    return plan_.PickVictimToAdmit(incoming, evictable);
  }
  return heat_.PickVictimToAdmit(incoming, evictable);
}

}  // namespace clairfs
