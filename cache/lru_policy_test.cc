// Tests of LruPolicy: victim order by last use, removal, the evictable filter, and concurrent use.
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cache/eviction_policy.h"

namespace clairfs {
namespace {

auto AnyPath() {
  return [](const std::string&) { return true; };
}

TEST(LruPolicyTest, EmptyHasNoVictim) {
  auto lru = NewLruPolicy();
  EXPECT_STREQ(lru->name(), "lru");
  EXPECT_FALSE(lru->PickVictim(AnyPath()).has_value());
}

TEST(LruPolicyTest, OldestInsertIsTheVictim) {
  auto lru = NewLruPolicy();
  lru->OnInsert("a", 1);
  lru->OnInsert("b", 1);
  lru->OnInsert("c", 1);
  EXPECT_EQ(lru->PickVictim(AnyPath()), "a");
  // Picking does not remove: the same victim until the store reports the removal.
  EXPECT_EQ(lru->PickVictim(AnyPath()), "a");
  lru->OnRemove("a");
  EXPECT_EQ(lru->PickVictim(AnyPath()), "b");
}

TEST(LruPolicyTest, AccessMakesMostRecent) {
  auto lru = NewLruPolicy();
  for (const char* p : {"a", "b", "c", "d"}) lru->OnInsert(p, 1);
  lru->OnAccess("a");
  lru->OnAccess("b");
  std::vector<std::string> order;
  while (auto v = lru->PickVictim(AnyPath())) {
    order.push_back(*v);
    lru->OnRemove(*v);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"c", "d", "a", "b"}));
}

TEST(LruPolicyTest, ReinsertMovesToFrontWithoutDuplicates) {
  auto lru = NewLruPolicy();
  lru->OnInsert("a", 1);
  lru->OnInsert("b", 1);
  lru->OnInsert("a", 1);
  EXPECT_EQ(lru->PickVictim(AnyPath()), "b");
  lru->OnRemove("b");
  EXPECT_EQ(lru->PickVictim(AnyPath()), "a");
  lru->OnRemove("a");
  EXPECT_FALSE(lru->PickVictim(AnyPath()).has_value());
}

TEST(LruPolicyTest, FilterSkipsUnevictableInOrder) {
  auto lru = NewLruPolicy();
  for (const char* p : {"pinned", "busy", "x", "y"}) lru->OnInsert(p, 1);
  std::vector<std::string> asked;
  auto victim = lru->PickVictim([&](const std::string& p) {
    asked.push_back(p);
    return p != "pinned" && p != "busy";
  });
  EXPECT_EQ(victim, "x");
  EXPECT_EQ(asked, (std::vector<std::string>{"pinned", "busy", "x"}));
  EXPECT_FALSE(lru->PickVictim([](const std::string&) { return false; }).has_value());
}

TEST(LruPolicyTest, RemovingUnknownPathsAndAccessOfUnknownAreHarmless) {
  auto lru = NewLruPolicy();
  lru->OnRemove("never");
  lru->OnAccess("new");  // an access of an unknown path tracks it
  lru->OnInsert("b", 1);
  EXPECT_EQ(lru->PickVictim(AnyPath()), "new");
}

TEST(LruPolicyTest, ConcurrentUseKeepsEveryPathOnce) {
  auto lru = NewLruPolicy();
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 2000; ++i) {
        std::string p = std::to_string((i * 7 + t) % 500);
        if (i % 3 == 0) {
          lru->OnInsert(p, 1);
        } else if (i % 3 == 1) {
          lru->OnAccess(p);
        } else {
          (void)lru->PickVictim(AnyPath());
        }
      }
    });
  }
  for (auto& th : threads) th.join();
  std::vector<std::string> seen;
  while (auto v = lru->PickVictim(AnyPath())) {
    seen.push_back(*v);
    lru->OnRemove(*v);
  }
  std::sort(seen.begin(), seen.end());
  EXPECT_EQ(std::adjacent_find(seen.begin(), seen.end()), seen.end());
  EXPECT_EQ(seen.size(), 500u);
}

}  // namespace
}  // namespace clairfs
