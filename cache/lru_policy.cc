// LruPolicy: a list ordered by last use and a map into it (see eviction_policy.h).
#include <list>
#include <mutex>
#include <unordered_map>

#include "cache/eviction_policy.h"

namespace clairfs {
namespace {

class LruPolicy final : public EvictionPolicy {
 public:
  const char* name() const override { return "lru"; }

  void OnInsert(const std::string& path, uint64_t) override { Touch(path); }
  void OnAccess(const std::string& path) override { Touch(path); }

  void OnRemove(const std::string& path) override {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = where_.find(path);
    if (it == where_.end()) return;
    order_.erase(it->second);
    where_.erase(it);
  }

  std::optional<std::string> PickVictim(
      const std::function<bool(const std::string&)>& evictable) override {
    std::lock_guard<std::mutex> lock(mu_);
    // Oldest first: the back of the list.
    for (auto it = order_.rbegin(); it != order_.rend(); ++it) {
      if (evictable(*it)) return *it;
    }
    return std::nullopt;
  }

 private:
  void Touch(const std::string& path) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = where_.find(path);
    if (it != where_.end()) {
      order_.splice(order_.begin(), order_, it->second);
      return;
    }
    order_.push_front(path);
    where_.emplace(path, order_.begin());
  }

  std::mutex mu_;                 // guards order_ and where_
  std::list<std::string> order_;  // most recent first
  std::unordered_map<std::string, std::list<std::string>::iterator> where_;
};

}  // namespace

std::unique_ptr<EvictionPolicy> NewLruPolicy() { return std::make_unique<LruPolicy>(); }

}  // namespace clairfs
