// HeatPolicy (see heat_policy.h).
#include "cache/heat_policy.h"

#include <algorithm>
#include <limits>

namespace clairfs {

const char* HeatPolicy::name() const { return ordering_by_heat_.load() ? "heat" : "lru"; }

double HeatPolicy::HeatLocked(const std::string& path) const {
  if (!enabled_ || !heat_) return 0;
  auto it = heat_->find(path);
  return it == heat_->end() ? 0 : it->second.heat_per_byte;
}

void HeatPolicy::TouchLocked(const std::string& path) {
  // Every open of a staged file lands here: re-key the existing node in place (no allocation,
  // no copy of the path); the end() hint makes the common case (no heat: the newest tick is the
  // largest key) constant time.
  const Key key{HeatLocked(path), ++tick_};
  auto it = key_of_.find(path);
  if (it == key_of_.end()) {
    by_key_.emplace_hint(by_key_.end(), key, path);
    key_of_.emplace(path, key);
    return;
  }
  auto node = by_key_.extract(it->second);
  node.key() = key;
  by_key_.insert(by_key_.end(), std::move(node));
  it->second = key;
}

void HeatPolicy::RekeyLocked() {
  std::map<Key, std::string> rekeyed;
  for (auto& [path, key] : key_of_) {
    key.first = HeatLocked(path);  // the tick, and so the recency order, stays
    rekeyed.emplace(key, path);
  }
  by_key_ = std::move(rekeyed);
  ordering_by_heat_ = enabled_ && heat_ && !heat_->empty();
}

void HeatPolicy::SetHeat(std::shared_ptr<const HeatMap> heat) {
  std::lock_guard<std::mutex> lock(mu_);
  heat_ = std::move(heat);
  RekeyLocked();
}

void HeatPolicy::SetEnabled(bool enabled) {
  std::lock_guard<std::mutex> lock(mu_);
  if (enabled_ == enabled) return;
  enabled_ = enabled;
  RekeyLocked();
}

void HeatPolicy::OnInsert(const std::string& path, uint64_t) {
  std::lock_guard<std::mutex> lock(mu_);
  TouchLocked(path);
}

void HeatPolicy::OnAccess(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  TouchLocked(path);
}

std::vector<std::string> HeatPolicy::PathsByRecency() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<uint64_t, const std::string*>> ticks;
  ticks.reserve(key_of_.size());
  for (const auto& [path, key] : key_of_) ticks.emplace_back(key.second, &path);
  std::sort(ticks.begin(), ticks.end());
  std::vector<std::string> out;
  out.reserve(ticks.size());
  for (const auto& [tick, path] : ticks) out.push_back(*path);
  return out;
}

void HeatPolicy::OnRemove(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = key_of_.find(path);
  if (it == key_of_.end()) return;
  by_key_.erase(it->second);
  key_of_.erase(it);
}

std::optional<std::string> HeatPolicy::PickLocked(
    double limit, const std::function<bool(const std::string&)>& evictable) {
  for (const auto& [key, path] : by_key_) {
    // Strictly colder only, except among files without heat (plain LRU there): hot files of
    // equal heat must not evict each other in turn.
    if (key.first > limit || (key.first == limit && limit > 0)) break;
    if (evictable(path)) return path;
  }
  return std::nullopt;
}

std::optional<std::string> HeatPolicy::PickVictim(
    const std::function<bool(const std::string&)>& evictable) {
  std::lock_guard<std::mutex> lock(mu_);
  return PickLocked(std::numeric_limits<double>::infinity(), evictable);
}

std::optional<std::string> HeatPolicy::PickVictimToAdmit(
    const std::string& incoming, const std::function<bool(const std::string&)>& evictable) {
  std::lock_guard<std::mutex> lock(mu_);
  return PickLocked(HeatLocked(incoming), evictable);
}

double HeatPolicy::HeatOf(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  return HeatLocked(path);
}

size_t HeatPolicy::size() {
  std::lock_guard<std::mutex> lock(mu_);
  return key_of_.size();
}

}  // namespace clairfs
