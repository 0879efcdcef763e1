// PlanOrHeatPolicy: heat (here plain LRU) until a plan becomes active, then the plan's order over
// every staged copy, then heat again; the plan side holds nothing while no plan is active.
#include "cache/plan_or_heat_policy.h"

#include <map>
#include <memory>

#include <gtest/gtest.h>

namespace clairfs {
namespace {

class FakeOracle : public PlanOracle {
 public:
  bool PlanActive() override { return true; }
  uint64_t NextUse(const std::string& path) override {
    auto it = next.find(path);
    return it == next.end() ? UINT64_MAX : it->second;
  }
  uint64_t ProtectUntil() override { return 0; }
  std::map<std::string, uint64_t> next;
};

const auto kAny = [](const std::string&) { return true; };

TEST(PlanOrHeatPolicyTest, HeatUntilAPlanIsActiveThenThePlanThenHeatAgain) {
  PlanOrHeatPolicy policy;
  policy.OnInsert("a", 10);
  policy.OnInsert("b", 10);
  policy.OnInsert("c", 10);
  policy.OnAccess("a");  // LRU order now b, c, a
  EXPECT_STREQ(policy.name(), "lru");
  EXPECT_EQ(policy.PickVictim(kAny), "b");
  EXPECT_EQ(policy.plan()->size(), 0u) << "nothing kept for a plan that is not there";

  // A plan set later: c is needed soonest, b never again, a last.
  auto oracle = std::make_shared<FakeOracle>();
  oracle->next = {{"a", 300}, {"c", 100}};
  policy.plan()->SetOracle(oracle);
  policy.SetPlanActive(true);
  EXPECT_STREQ(policy.name(), "plan");
  EXPECT_EQ(policy.plan()->size(), 3u);
  EXPECT_EQ(policy.PickVictim(kAny), "b");
  policy.OnRemove("b");
  EXPECT_EQ(policy.PickVictim(kAny), "a") << "farthest next use";
  oracle->next["d"] = 50;
  policy.OnInsert("d", 10);
  EXPECT_EQ(policy.plan()->size(), 3u);
  EXPECT_EQ(policy.PickVictimToAdmit("e", kAny), "a");

  // The plan is dropped or cleared: heat (LRU) again, the plan side emptied.
  policy.SetPlanActive(false);
  EXPECT_STREQ(policy.name(), "lru");
  EXPECT_EQ(policy.plan()->size(), 0u);
  EXPECT_EQ(policy.PickVictim(kAny), "c");  // least recently used of c, a, d
}

}  // namespace
}  // namespace clairfs
