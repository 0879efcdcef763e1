// Cache replay for lru, belady (demand MIN), plan (prefetching) and heat policies (see
// cache_simulator.h). Each policy is its own loop so the reference (belady) shares no code path
// with the policy it judges.
#include "planner/cache_simulator.h"

#include <algorithm>
#include <list>
#include <set>
#include <unordered_map>
#include <utility>

namespace clairfs {
namespace {

constexpr uint64_t kNever = UINT64_MAX;
// The plan policy prefetches 1/8 of the capacity ahead (the mount's prefetcher does the same).
constexpr uint64_t kPrefetchDepthDivisor = 8;

// The flattened trace and, for each access, the index of the same file's next access.
struct Flat {
  std::vector<uint32_t> files;
  std::vector<uint64_t> next;
  std::vector<uint64_t> epoch_end;  // one past each epoch's last access
};

Flat Flatten(const SimTrace& trace, size_t num_files) {
  Flat flat;
  for (const auto& epoch : trace.accesses) {
    flat.files.insert(flat.files.end(), epoch.begin(), epoch.end());
    flat.epoch_end.push_back(flat.files.size());
  }
  flat.next.assign(flat.files.size(), kNever);
  std::vector<uint64_t> seen(num_files, kNever);
  for (uint64_t i = flat.files.size(); i-- > 0;) {
    flat.next[i] = seen[flat.files[i]];
    seen[flat.files[i]] = i;
  }
  return flat;
}

// Accumulates per-epoch counters as the replay advances.
class Tally {
 public:
  explicit Tally(const SimTrace& trace) {
    for (uint64_t e : trace.epochs) results_.push_back(SimEpochResult{e, 0, 0, 0, 0});
  }
  void Access(size_t epoch, bool hit, uint64_t miss_bytes) {
    SimEpochResult& r = results_[epoch];
    ++r.accesses;
    if (hit) {
      ++r.hits;
    } else {
      ++r.misses;
      r.backing_bytes += miss_bytes;
    }
  }
  void Prefetch(size_t epoch, uint64_t bytes) { results_[epoch].backing_bytes += bytes; }
  std::vector<SimEpochResult> Take() { return std::move(results_); }

 private:
  std::vector<SimEpochResult> results_;
};

std::vector<SimEpochResult> RunLru(const SimTrace& trace, const Flat& flat,
                                   const std::vector<uint64_t>& sizes, uint64_t capacity) {
  Tally tally(trace);
  std::list<uint32_t> order;  // most recent first
  std::unordered_map<uint32_t, std::list<uint32_t>::iterator> where;
  uint64_t used = 0;
  size_t epoch = 0;
  for (uint64_t i = 0; i < flat.files.size(); ++i) {
    while (i >= flat.epoch_end[epoch]) ++epoch;
    const uint32_t f = flat.files[i];
    auto it = where.find(f);
    if (it != where.end()) {
      order.splice(order.begin(), order, it->second);
      tally.Access(epoch, true, 0);
      continue;
    }
    tally.Access(epoch, false, sizes[f]);
    if (sizes[f] > capacity) continue;
    while (used + sizes[f] > capacity) {
      used -= sizes[order.back()];
      where.erase(order.back());
      order.pop_back();
    }
    order.push_front(f);
    where[f] = order.begin();
    used += sizes[f];
  }
  return tally.Take();
}

// Keys of cached files for the farthest-next-use policies: (next use, tiebreak), evicted largest
// first. Files never used again get next use kNever and tiebreak ~last access, so the least
// recently used of them goes first.
using Key = std::pair<uint64_t, uint64_t>;

Key KeyFor(uint32_t file, uint64_t next_use, uint64_t now) {
  return next_use == kNever ? Key{kNever, ~now} : Key{next_use, file};
}

std::vector<SimEpochResult> RunBelady(const SimTrace& trace, const Flat& flat,
                                      const std::vector<uint64_t>& sizes, uint64_t capacity) {
  Tally tally(trace);
  std::set<std::pair<Key, uint32_t>> by_next;  // value: the file
  std::unordered_map<uint32_t, Key> key_of;
  uint64_t used = 0;
  size_t epoch = 0;
  for (uint64_t i = 0; i < flat.files.size(); ++i) {
    while (i >= flat.epoch_end[epoch]) ++epoch;
    const uint32_t f = flat.files[i];
    const Key key = KeyFor(f, flat.next[i], i);
    auto it = key_of.find(f);
    if (it != key_of.end()) {
      tally.Access(epoch, true, 0);
      by_next.erase({it->second, f});
      by_next.insert({key, f});
      it->second = key;
      continue;
    }
    tally.Access(epoch, false, sizes[f]);
    if (sizes[f] > capacity) continue;
    while (used + sizes[f] > capacity) {
      auto victim = std::prev(by_next.end());
      used -= sizes[victim->second];
      key_of.erase(victim->second);
      by_next.erase(victim);
    }
    by_next.insert({key, f});
    key_of[f] = key;
    used += sizes[f];
  }
  return tally.Take();
}

std::vector<SimEpochResult> RunPlan(const SimTrace& trace, const Flat& flat,
                                    const std::vector<uint64_t>& sizes, uint64_t capacity) {
  Tally tally(trace);
  // Prefetch depth in accesses: about kPrefetchDepthFraction of the capacity in average files.
  uint64_t total_bytes = 0;
  for (uint64_t s : sizes) total_bytes += s;
  const uint64_t average = sizes.empty() ? 1 : std::max<uint64_t>(1, total_bytes / sizes.size());
  const uint64_t depth = std::max<uint64_t>(1, capacity / kPrefetchDepthDivisor / average);
  // Value: the file (so never-again keys can be resolved without a search).
  std::set<std::pair<Key, uint32_t>> by_next;
  std::unordered_map<uint32_t, Key> key_of;
  uint64_t used = 0;
  uint64_t ahead = 0;  // next trace index the prefetcher looks at
  size_t epoch = 0;
  auto set_key = [&](uint32_t f, Key key) {
    auto it = key_of.find(f);
    if (it != key_of.end()) {
      by_next.erase({it->second, f});
      it->second = key;
    } else {
      key_of.emplace(f, key);
    }
    by_next.insert({key, f});
  };
  for (uint64_t i = 0; i < flat.files.size(); ++i) {
    while (i >= flat.epoch_end[epoch]) ++epoch;
    // Prefetch in plan order while the next planned file fits by evicting only files needed
    // later than it.
    if (ahead < i) ahead = i;
    while (ahead < flat.files.size()) {
      const uint32_t g = flat.files[ahead];
      // Beyond the prefetch depth only free space is used: evicting a retained file to fetch one
      // early costs a second fetch of the evicted file (prefetching the whole capacity ahead
      // degenerates to fetching every file just in time and retaining nothing).
      if (ahead >= i + depth && used + sizes[g] > capacity) break;
      if (key_of.count(g) != 0) {
        ++ahead;
        continue;
      }
      if (sizes[g] > capacity) {
        ++ahead;
        continue;
      }
      while (used + sizes[g] > capacity && !by_next.empty()) {
        auto victim = std::prev(by_next.end());
        if (victim->first.first <= ahead) break;
        used -= sizes[victim->second];
        key_of.erase(victim->second);
        by_next.erase(victim);
      }
      if (used + sizes[g] > capacity) break;
      set_key(g, Key{ahead, g});
      used += sizes[g];
      tally.Prefetch(epoch, sizes[g]);
      ++ahead;
    }
    const uint32_t f = flat.files[i];
    if (key_of.count(f) != 0) {
      tally.Access(epoch, true, 0);
      set_key(f, KeyFor(f, flat.next[i], i));
    } else {
      tally.Access(epoch, false, sizes[f]);
    }
  }
  return tally.Take();
}

// The mount's heat policy (cache/heat_policy.h): read-through, victims coldest per byte first
// and least recently used among equals; a file may only push out strictly colder ones (files
// without heat: other files without heat), else it is not cached.
std::vector<SimEpochResult> RunHeat(const SimTrace& trace, const Flat& flat,
                                    const std::vector<uint64_t>& sizes, uint64_t capacity,
                                    const SimHeat& heat) {
  Tally tally(trace);
  auto heat_of = [&](uint32_t f) {
    return f < heat.heat_per_byte.size() ? heat.heat_per_byte[f] : 0.0;
  };
  using HeatKey = std::pair<double, uint64_t>;  // (heat per byte, recency tick)
  std::set<std::pair<HeatKey, uint32_t>> by_key;
  std::unordered_map<uint32_t, HeatKey> key_of;
  uint64_t used = 0;
  uint64_t tick = 0;
  auto touch = [&](uint32_t f) {
    auto it = key_of.find(f);
    if (it != key_of.end()) by_key.erase({it->second, f});
    const HeatKey key{heat_of(f), ++tick};
    by_key.insert({key, f});
    key_of[f] = key;
  };
  // Makes room for `f` as ContentStore::MakeRoom does with this policy: one admissible victim at
  // a time (those evicted stay evicted if room still cannot be found).
  auto admit = [&](uint32_t f) {
    const double limit = heat_of(f);
    while (used + sizes[f] > capacity) {
      if (by_key.empty()) return false;
      auto victim = by_key.begin();
      const double h = victim->first.first;
      if (h > limit || (h == limit && limit > 0)) return false;
      used -= sizes[victim->second];
      key_of.erase(victim->second);
      by_key.erase(victim);
    }
    touch(f);
    used += sizes[f];
    return true;
  };
  if (heat.stage_hot && !trace.epochs.empty()) {
    // `clairfs stage --hot --fit`: files with heat, hottest per byte first, each if it fits in
    // the room left.
    std::vector<uint32_t> hot;
    for (uint32_t f = 0; f < sizes.size(); ++f) {
      if (heat_of(f) > 0) hot.push_back(f);
    }
    std::stable_sort(hot.begin(), hot.end(),
                     [&](uint32_t a, uint32_t b) { return heat_of(a) > heat_of(b); });
    for (uint32_t f : hot) {
      if (used + sizes[f] > capacity) continue;
      touch(f);
      used += sizes[f];
      tally.Prefetch(0, sizes[f]);
    }
  }
  size_t epoch = 0;
  for (uint64_t i = 0; i < flat.files.size(); ++i) {
    while (i >= flat.epoch_end[epoch]) ++epoch;
    const uint32_t f = flat.files[i];
    if (key_of.count(f) != 0) {
      touch(f);
      tally.Access(epoch, true, 0);
      continue;
    }
    tally.Access(epoch, false, sizes[f]);
    if (sizes[f] <= capacity) (void)admit(f);
  }
  return tally.Take();
}

}  // namespace

const char* SimPolicyName(SimPolicy policy) {
  switch (policy) {
    case SimPolicy::kLru:
      return "lru";
    case SimPolicy::kBelady:
      return "belady";
    case SimPolicy::kPlan:
      return "plan";
  }
  return "?";
}

std::vector<SimEpochResult> SimulateCache(const SimTrace& trace, const std::vector<uint64_t>& sizes,
                                          uint64_t capacity, SimPolicy policy) {
  Flat flat = Flatten(trace, sizes.size());
  switch (policy) {
    case SimPolicy::kLru:
      return RunLru(trace, flat, sizes, capacity);
    case SimPolicy::kBelady:
      return RunBelady(trace, flat, sizes, capacity);
    case SimPolicy::kPlan:
      return RunPlan(trace, flat, sizes, capacity);
  }
  return {};
}

std::vector<SimEpochResult> SimulateHeatCache(const SimTrace& trace,
                                              const std::vector<uint64_t>& sizes, uint64_t capacity,
                                              const SimHeat& heat) {
  return RunHeat(trace, Flatten(trace, sizes.size()), sizes, capacity, heat);
}

}  // namespace clairfs
