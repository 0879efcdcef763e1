// Tests of PlanPolicy: farthest next use first, unused files first in LRU order, protection of
// the look-ahead window, LRU fallback without an active plan.
#include "cache/plan_policy.h"

#include <gtest/gtest.h>

#include <map>

namespace clairfs {
namespace {

class FakePlanOracle : public PlanOracle {
 public:
  bool PlanActive() override { return active; }
  uint64_t NextUse(const std::string& path) override {
    auto it = next.find(path);
    return it == next.end() ? UINT64_MAX : it->second;
  }
  uint64_t ProtectUntil() override { return protect; }

  bool active = true;
  std::map<std::string, uint64_t> next;
  uint64_t protect = 0;
};

const auto kAnyPath = [](const std::string&) { return true; };

TEST(PlanPolicyTest, EvictsUnusedFilesFirstThenFarthestNextUse) {
  auto oracle = std::make_shared<FakePlanOracle>();
  oracle->next = {{"a", 10}, {"b", 30}, {"c", 20}};
  PlanPolicy policy;
  policy.SetOracle(oracle);
  for (const char* p : {"a", "b", "c", "old", "newer"}) policy.OnInsert(p, 1);
  // "old" and "newer" have no planned use: least recently used first.
  EXPECT_EQ(policy.PickVictim(kAnyPath), "old");
  policy.OnRemove("old");
  EXPECT_EQ(policy.PickVictim(kAnyPath), "newer");
  policy.OnRemove("newer");
  EXPECT_EQ(policy.PickVictim(kAnyPath), "b");
  // Skips what the store cannot evict.
  EXPECT_EQ(policy.PickVictim([](const std::string& p) { return p != "b"; }), "c");
}

TEST(PlanPolicyTest, NeverEvictsAFileNeededSoonerThanTheCandidate) {
  auto oracle = std::make_shared<FakePlanOracle>();
  oracle->next = {{"a", 10}, {"b", 30}, {"c", 20}};
  PlanPolicy policy;
  policy.SetOracle(oracle);
  for (const char* p : {"a", "b", "c"}) policy.OnInsert(p, 1);
  EXPECT_EQ(policy.PickVictimFor(25, kAnyPath), "b");
  EXPECT_EQ(policy.PickVictimFor(30, kAnyPath), std::nullopt);
  EXPECT_EQ(policy.PickVictimFor(15, [](const std::string& p) { return p != "b"; }), "c");
  // The prefetcher's window protects through PickVictim.
  oracle->protect = 30;
  EXPECT_EQ(policy.PickVictim(kAnyPath), std::nullopt);
  oracle->protect = 12;
  EXPECT_EQ(policy.PickVictim(kAnyPath), "b");
}

TEST(PlanPolicyTest, AccessRecomputesTheKey) {
  auto oracle = std::make_shared<FakePlanOracle>();
  oracle->next = {{"a", 10}, {"b", 30}};
  PlanPolicy policy;
  policy.SetOracle(oracle);
  policy.OnInsert("a", 1);
  policy.OnInsert("b", 1);
  oracle->next["a"] = 50;  // "a" was read; its next use moved on
  policy.OnAccess("a");
  EXPECT_EQ(policy.KeyOf("a"), 50u);
  EXPECT_EQ(policy.PickVictim(kAnyPath), "a");
}

TEST(PlanPolicyTest, LruWithoutOracleOrWhenThePlanIsDropped) {
  PlanPolicy policy;
  for (const char* p : {"a", "b", "c"}) policy.OnInsert(p, 1);
  policy.OnAccess("a");
  EXPECT_EQ(policy.PickVictim(kAnyPath), "b");

  auto oracle = std::make_shared<FakePlanOracle>();
  oracle->next = {{"a", 100}, {"b", 1}, {"c", 2}};
  oracle->protect = 1000;
  policy.SetOracle(oracle);
  EXPECT_EQ(policy.PickVictim(kAnyPath), std::nullopt);  // all inside the window
  oracle->active = false;
  policy.Rekey();
  // Rekeyed as LRU, keeping the previous eviction order (farthest next use first): a, c, b.
  EXPECT_EQ(policy.PickVictim(kAnyPath), "a");
  policy.OnRemove("a");
  EXPECT_EQ(policy.PickVictim(kAnyPath), "c");
  EXPECT_EQ(policy.size(), 2u);
}

}  // namespace
}  // namespace clairfs
