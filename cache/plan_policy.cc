// PlanPolicy (see plan_policy.h).
#include "cache/plan_policy.h"

#include <vector>

namespace clairfs {

void PlanPolicy::SetOracle(std::shared_ptr<PlanOracle> oracle) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    oracle_ = std::move(oracle);
  }
  Rekey();
}

PlanPolicy::Key PlanPolicy::KeyForLocked(const std::string& path) {
  const uint64_t tick = ++tick_;
  uint64_t next = UINT64_MAX;
  if (oracle_ && oracle_->PlanActive()) next = oracle_->NextUse(path);
  if (next == UINT64_MAX) return Key{UINT64_MAX, UINT64_MAX - tick};
  return Key{next, tick};
}

void PlanPolicy::TouchLocked(const std::string& path) {
  // Re-key the existing node in place: no allocation and no copy of the path per open.
  const Key key = KeyForLocked(path);
  auto it = key_of_.find(path);
  if (it == key_of_.end()) {
    by_key_.emplace(key, path);
    key_of_.emplace(path, key);
    return;
  }
  auto node = by_key_.extract(it->second);
  node.key() = key;
  by_key_.insert(std::move(node));
  it->second = key;
}

void PlanPolicy::Rekey() {
  std::lock_guard<std::mutex> lock(mu_);
  // Keep the recency order among never-used files: rekey from least to most recent.
  std::vector<std::string> paths;
  paths.reserve(by_key_.size());
  for (auto it = by_key_.rbegin(); it != by_key_.rend(); ++it) paths.push_back(it->second);
  by_key_.clear();
  key_of_.clear();
  for (const std::string& path : paths) TouchLocked(path);
}

void PlanPolicy::OnInsert(const std::string& path, uint64_t) {
  std::lock_guard<std::mutex> lock(mu_);
  TouchLocked(path);
}

void PlanPolicy::OnAccess(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  TouchLocked(path);
}

void PlanPolicy::Clear() {
  std::lock_guard<std::mutex> lock(mu_);
  by_key_.clear();
  key_of_.clear();
}

void PlanPolicy::OnRemove(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = key_of_.find(path);
  if (it == key_of_.end()) return;
  by_key_.erase(it->second);
  key_of_.erase(it);
}

std::optional<std::string> PlanPolicy::PickVictim(
    const std::function<bool(const std::string&)>& evictable) {
  uint64_t limit = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (oracle_ && oracle_->PlanActive()) limit = oracle_->ProtectUntil();
  }
  return PickVictimFor(limit, evictable);
}

std::optional<std::string> PlanPolicy::PickVictimFor(
    uint64_t candidate_next_use, const std::function<bool(const std::string&)>& evictable) {
  std::lock_guard<std::mutex> lock(mu_);
  for (auto it = by_key_.rbegin(); it != by_key_.rend(); ++it) {
    if (it->first.first != UINT64_MAX && it->first.first <= candidate_next_use) break;
    if (evictable(it->second)) return it->second;
  }
  return std::nullopt;
}

size_t PlanPolicy::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return key_of_.size();
}

std::optional<uint64_t> PlanPolicy::KeyOf(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = key_of_.find(path);
  if (it == key_of_.end()) return std::nullopt;
  return it->second.first;
}

}  // namespace clairfs
