// LiveHandles: handles register and leave on destruction from many threads at once, and TakeAll
// hands over exactly those still registered.
#include "fs/live_handles.h"

#include <gtest/gtest.h>

#include <memory>
#include <thread>
#include <vector>

namespace clairfs {
namespace {

struct Handle : LiveHandle<Handle> {
  int id = 0;
};

TEST(LiveHandlesTest, DestroyedHandlesLeaveAndTakeAllHandsOverTheRest) {
  LiveHandles<Handle> live;
  std::vector<std::unique_ptr<Handle>> kept;
  for (int i = 0; i < 100; ++i) {
    auto h = std::make_unique<Handle>();
    h->id = i;
    live.Add(h.get());
    kept.push_back(std::move(h));
  }
  EXPECT_EQ(live.size(), 100u);
  // Destroy every other one, from the middle of lists and their heads alike.
  for (int i = 0; i < 100; i += 2) kept[static_cast<size_t>(i)].reset();
  EXPECT_EQ(live.size(), 50u);
  std::vector<Handle*> taken = live.TakeAll();
  ASSERT_EQ(taken.size(), 50u);
  int odd_ids = 0;
  for (Handle* h : taken) odd_ids += h->id % 2;
  EXPECT_EQ(odd_ids, 50);
  EXPECT_EQ(live.size(), 0u);
  kept.clear();  // taken handles are in no list: destroying them touches none
  EXPECT_TRUE(live.TakeAll().empty());
}

TEST(LiveHandlesTest, ThreadsAddAndDestroyAtOnce) {
  LiveHandles<Handle> live;
  constexpr int kThreads = 4, kPerThread = 5000;
  std::vector<std::thread> threads;
  std::vector<std::vector<std::unique_ptr<Handle>>> survivors(kThreads);
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kPerThread; ++i) {
        auto h = std::make_unique<Handle>();
        live.Add(h.get());
        if (i % 10 == 0) survivors[static_cast<size_t>(t)].push_back(std::move(h));
      }  // the others are destroyed at once, on this thread
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(live.size(), static_cast<size_t>(kThreads * kPerThread / 10));
  EXPECT_EQ(live.TakeAll().size(), static_cast<size_t>(kThreads * kPerThread / 10));
}

TEST(LiveHandlesTest, ARegistryGoneFirstLeavesItsHandlesFree) {
  auto h = std::make_unique<Handle>();
  {
    LiveHandles<Handle> live;
    live.Add(h.get());
  }
  // Must not touch the registry that is gone: under ASan (CI runs this test so) a touch of its
  // freed memory fails here.
  h.reset();
}

}  // namespace
}  // namespace clairfs
