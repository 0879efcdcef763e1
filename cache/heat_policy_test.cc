// Tests of HeatPolicy: victim order by heat per byte then recency, files without heat, the
// admission rule (never evict a hotter copy), disabling while a plan is active, rekeying, and the
// policy inside a real ContentStore.
#include "cache/heat_policy.h"

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "cache/cache_dir.h"
#include "cache/content_store.h"
#include "cache/index_db.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

auto Any() {
  return [](const std::string&) { return true; };
}

// A heat map with the given heat per byte (counters are irrelevant to the policy).
std::shared_ptr<const HeatMap> Heat(const std::vector<std::pair<std::string, double>>& entries) {
  auto map = std::make_shared<HeatMap>();
  for (const auto& [path, hpb] : entries) (*map)[path] = HeatEntry{HeatCounters{}, hpb};
  return map;
}

TEST(HeatPolicyTest, WithoutHeatItIsLru) {
  HeatPolicy p;
  EXPECT_STREQ(p.name(), "lru");
  EXPECT_FALSE(p.PickVictim(Any()).has_value());
  for (const char* f : {"a", "b", "c"}) p.OnInsert(f, 1);
  p.OnAccess("a");
  EXPECT_EQ(p.PickVictim(Any()), "b");
  EXPECT_EQ(p.PickVictimToAdmit("new", Any()), "b");
  p.OnRemove("b");
  EXPECT_EQ(p.PickVictim(Any()), "c");
  p.SetHeat(Heat({}));  // an empty map is no heat
  EXPECT_STREQ(p.name(), "lru");
  EXPECT_EQ(p.PickVictim(Any()), "c");
}

TEST(HeatPolicyTest, ColdestFirstThenLeastRecentlyUsed) {
  HeatPolicy p;
  p.SetHeat(Heat({{"hot", 9.0}, {"warm", 3.0}, {"warm2", 3.0}, {"zero", 0.0}}));
  EXPECT_STREQ(p.name(), "heat");
  for (const char* f : {"hot", "warm", "warm2", "zero", "none"}) p.OnInsert(f, 1);
  // "zero" and "none" (no heat) are equally cold: the least recently used goes first.
  EXPECT_EQ(p.PickVictim(Any()), "zero");
  p.OnAccess("zero");
  EXPECT_EQ(p.PickVictim(Any()), "none");
  p.OnRemove("none");
  EXPECT_EQ(p.PickVictim(Any()), "zero");
  p.OnRemove("zero");
  // Equal heat: LRU among them; an access does not lift a file above hotter ones.
  EXPECT_EQ(p.PickVictim(Any()), "warm");
  p.OnAccess("warm");
  EXPECT_EQ(p.PickVictim(Any()), "warm2");
  p.OnAccess("warm2");
  EXPECT_EQ(p.PickVictim(Any()), "warm");
  p.OnRemove("warm");
  p.OnRemove("warm2");
  EXPECT_EQ(p.PickVictim(Any()), "hot");
  EXPECT_DOUBLE_EQ(p.HeatOf("hot"), 9.0);
  EXPECT_DOUBLE_EQ(p.HeatOf("unknown"), 0.0);
}

TEST(HeatPolicyTest, AdmissionNeverEvictsAHotterCopy) {
  HeatPolicy p;
  p.SetHeat(Heat({{"h9", 9.0}, {"h5", 5.0}, {"h2", 2.0}, {"in7", 7.0}, {"in5", 5.0}}));
  for (const char* f : {"h9", "h5", "h2", "cold"}) p.OnInsert(f, 1);
  // A file with heat 7 may push out "cold", "h2" and "h5", never "h9".
  auto all_but = [](std::vector<std::string> kept) {
    return [kept](const std::string& path) {
      for (const auto& k : kept) {
        if (k == path) return false;
      }
      return true;
    };
  };
  EXPECT_EQ(p.PickVictimToAdmit("in7", Any()), "cold");
  EXPECT_EQ(p.PickVictimToAdmit("in7", all_but({"cold"})), "h2");
  EXPECT_EQ(p.PickVictimToAdmit("in7", all_but({"cold", "h2"})), "h5");
  EXPECT_FALSE(p.PickVictimToAdmit("in7", all_but({"cold", "h2", "h5"})).has_value());
  // Equal heat is not evicted for a hot file (no churn among equals)...
  EXPECT_FALSE(p.PickVictimToAdmit("in5", all_but({"cold", "h2"})).has_value());
  // A file without heat only pushes out files without heat.
  EXPECT_EQ(p.PickVictimToAdmit("other", Any()), "cold");
  EXPECT_FALSE(p.PickVictimToAdmit("other", all_but({"cold"})).has_value());
  // Shrinking to a capacity (PickVictim) may take any file, coldest first.
  EXPECT_EQ(p.PickVictim(all_but({"cold", "h2", "h5"})), "h9");
}

TEST(HeatPolicyTest, DisabledWhileAPlanIsActiveMeansLru) {
  HeatPolicy p;
  p.SetHeat(Heat({{"hot", 9.0}}));
  p.OnInsert("hot", 1);
  p.OnInsert("cold", 1);
  EXPECT_EQ(p.PickVictim(Any()), "cold");
  p.SetEnabled(false);
  EXPECT_STREQ(p.name(), "lru");
  EXPECT_EQ(p.PickVictim(Any()), "hot");  // the least recently used
  EXPECT_EQ(p.PickVictimToAdmit("cold2", Any()), "hot");
  EXPECT_DOUBLE_EQ(p.HeatOf("hot"), 0.0);
  p.SetEnabled(true);
  EXPECT_STREQ(p.name(), "heat");
  EXPECT_EQ(p.PickVictim(Any()), "cold");
}

TEST(HeatPolicyTest, NewHeatRekeysAndKeepsRecency) {
  HeatPolicy p;
  for (const char* f : {"a", "b", "c", "d"}) p.OnInsert(f, 1);
  p.OnAccess("a");  // recency now: b c d a
  p.SetHeat(Heat({{"b", 4.0}, {"c", 4.0}}));
  EXPECT_EQ(p.PickVictim(Any()), "d");
  p.OnRemove("d");
  EXPECT_EQ(p.PickVictim(Any()), "a");
  p.OnRemove("a");
  EXPECT_EQ(p.PickVictim(Any()), "b");  // b was used before c
  p.SetHeat(Heat({{"b", 8.0}, {"c", 1.0}}));
  EXPECT_EQ(p.PickVictim(Any()), "c");
  p.SetHeat(nullptr);
  EXPECT_STREQ(p.name(), "lru");
  EXPECT_EQ(p.PickVictim(Any()), "b");
  EXPECT_EQ(p.size(), 2u);
}

TEST(HeatPolicyTest, ConcurrentUseKeepsItConsistent) {
  HeatPolicy p;
  std::vector<std::pair<std::string, double>> entries;
  for (int i = 0; i < 200; ++i) entries.emplace_back("f" + std::to_string(i), i % 7);
  p.SetHeat(Heat(entries));
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 5000; ++i) {
        std::string f = "f" + std::to_string((i * 7 + t) % 200);
        if (i % 3 == 0) p.OnInsert(f, 1);
        if (i % 3 == 1) p.OnAccess(f);
        if (i % 5 == 0) p.OnRemove(f);
        if (i % 11 == 0) (void)p.PickVictimToAdmit(f, Any());
      }
    });
  }
  threads.emplace_back([&] {
    for (int i = 0; i < 50 && !stop; ++i) {
      p.SetEnabled(i % 2 == 0);
      p.SetHeat(Heat(entries));
    }
  });
  for (auto& t : threads) t.join();
  p.SetEnabled(true);
  // Every staged file is keyed once: removing each victim in turn empties the policy.
  size_t n = p.size();
  for (size_t i = 0; i < n; ++i) {
    auto v = p.PickVictim(Any());
    ASSERT_TRUE(v.has_value());
    p.OnRemove(*v);
  }
  EXPECT_EQ(p.size(), 0u);
  EXPECT_FALSE(p.PickVictim(Any()).has_value());
}

// The policy inside a content store: a cold file finds no room among hotter copies, a hot file
// evicts the coldest, and a request that may not evict takes only free room.
TEST(HeatPolicyTest, ContentStoreAdmitsByHeat) {
  testing::TempDir tmp;
  auto dir = CacheDir::Acquire(tmp / "cache", Env::Default());
  ASSERT_TRUE(dir.ok());
  auto index = IndexDb::Open((*dir)->index_dir());
  ASSERT_TRUE(index.ok());
  auto policy = std::make_unique<HeatPolicy>();
  HeatPolicy* heat = policy.get();
  heat->SetHeat(Heat({{"h1", 1.0}, {"h2", 2.0}, {"h3", 3.0}, {"h5", 5.0}}));
  // Room for three 4 KiB copies (one block each, as reserved: EstimateAlloc) and no fourth.
  const uint64_t per_file = ContentStore::EstimateAlloc(4096);
  ASSERT_EQ(per_file, 4096u);
  auto store = ContentStore::Open(dir->get(), index->get(), Env::Default(),
                                  ContentStoreOptions{3 * 4096, 0, nullptr}, std::move(policy));
  ASSERT_TRUE(store.ok());
  auto publish = [&](const std::string& path, bool may_evict) -> Status {
    auto slot = (*store)->BeginStaging(path, 4096, may_evict);
    if (!slot.ok()) return slot.status();
    std::string data = testing::RandomBytes(4096, path.size());
    Status w = Env::Default()->PwriteAll(slot->fd, data.data(), data.size(), 0);
    if (!w.ok()) {
      (*store)->Abort(&*slot);
      return w;
    }
    return (*store)->Commit(&*slot, FileIdentity{4096, 1, 2, 3});
  };
  ASSERT_TRUE(publish("h1", true).ok());
  ASSERT_TRUE(publish("h2", true).ok());
  ASSERT_TRUE(publish("h3", true).ok());
  ASSERT_EQ((*store)->stats().used_bytes, 3u * 4096) << "a 4 KiB file takes one block here";
  auto room = (*store)->RoomWithoutEviction();
  ASSERT_TRUE(room.ok());
  EXPECT_LT(*room, per_file);
  // Full: a file without heat evicts nothing hotter.
  Status cold = publish("cold", true);
  EXPECT_EQ(cold.code(), ENOSPC) << cold.message();
  // A file that may not evict is refused even though colder copies exist.
  Status fit = publish("h5", false);
  EXPECT_EQ(fit.code(), ENOSPC) << fit.message();
  EXPECT_EQ((*store)->Paths().size(), 3u);
  // A hot file evicts the coldest copy.
  ASSERT_TRUE(publish("h5", true).ok());
  EXPECT_FALSE((*store)->Contains("h1"));
  EXPECT_TRUE((*store)->Contains("h2"));
  EXPECT_TRUE((*store)->Contains("h3"));
  EXPECT_EQ((*store)->stats().evictions, 1u);
  store->reset();
}

}  // namespace
}  // namespace clairfs
