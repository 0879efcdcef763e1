#include "cache/cache_opener.h"

#include <gtest/gtest.h>

#include "cache/stager.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::TempDir;
using testing::WriteFile;

class CacheOpenerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backing_ = tmp_ / "backing";
    cache_ = tmp_ / "cache";
    WriteFile(backing_ + "/a", "aaaa");
    WriteFile(backing_ + "/d/b", "bbbbbb");
  }
  Result<OpenedCache> Open(ManifestListing listing, bool heat = false, bool store = true) {
    CacheOpenOptions o;
    o.cache_dir = cache_;
    o.listing = listing;
    auto tree = BackingTree::Open(backing_, Env::Default());
    if (!tree.ok()) return tree.status();
    o.backing = *tree;
    o.backing_root = backing_;
    o.open_heat = heat;
    o.open_store = store;
    return OpenCache(std::move(o), Env::Default());
  }
  // Stages every listed file into the opened cache.
  void StageAll(OpenedCache* cache) {
    Stager stager(StagerOptions{backing_, 1, 0, 1 << 20, StageEngine::kThreads}, cache->store.get(),
                  Env::Default());
    ASSERT_TRUE(cache->manifest
                    ->ForEachFile([&](const std::string& path, const NodeAttr& attr) {
                      stager.Enqueue(path, attr.identity(), StagePriority::kNormal);
                      return true;
                    })
                    .ok());
    stager.WaitIdle();
  }
  TempDir tmp_;
  std::string backing_, cache_;
};

TEST_F(CacheOpenerTest, OpensTheWholeStackAndDropsCopiesWhoseFileChanged) {
  {
    auto cache = Open(ManifestListing::kRescan, /*heat=*/true);
    ASSERT_TRUE(cache.ok()) << cache.status().message();
    ASSERT_NE(cache->manifest, nullptr);
    ASSERT_NE(cache->heat, nullptr);
    ASSERT_NE(cache->store, nullptr);
    EXPECT_EQ(cache->manifest->summary().files, 2u);
    EXPECT_EQ(cache->stale_dropped, 0u);
    StageAll(&*cache);
    EXPECT_TRUE(cache->store->Contains("a"));
    EXPECT_TRUE(cache->store->Contains("d/b"));
    EXPECT_TRUE(cache->Close().ok());
  }
  WriteFile(backing_ + "/a", "changed");
  auto cache = Open(ManifestListing::kRescan);
  ASSERT_TRUE(cache.ok()) << cache.status().message();
  EXPECT_EQ(cache->stale_dropped, 1u);
  EXPECT_FALSE(cache->store->Contains("a"));
  EXPECT_TRUE(cache->store->Contains("d/b"));
  EXPECT_EQ(cache->heat, nullptr);
}

TEST_F(CacheOpenerTest, ReuseTakesTheStoredListingAndNoneOpensNoManifest) {
  {
    auto cache = Open(ManifestListing::kRescan);
    ASSERT_TRUE(cache.ok());
  }
  WriteFile(backing_ + "/new", "unlisted");
  auto reused = Open(ManifestListing::kReuse);
  ASSERT_TRUE(reused.ok()) << reused.status().message();
  EXPECT_EQ(reused->manifest->summary().files, 2u);  // the stored listing, not the tree now
  ASSERT_TRUE(reused->Close().ok());
  auto bare = Open(ManifestListing::kNone, false, /*store=*/true);
  ASSERT_TRUE(bare.ok());
  EXPECT_EQ(bare->manifest, nullptr);
  EXPECT_NE(bare->store, nullptr);
}

TEST_F(CacheOpenerTest, TheLockHoldsUntilCloseAndAFailureReleasesIt) {
  auto first = Open(ManifestListing::kNone);
  ASSERT_TRUE(first.ok());
  auto second = Open(ManifestListing::kNone);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), EBUSY);
  ASSERT_TRUE(first->Close().ok());
  // A reuse with no stored listing fails after taking the lock: the lock goes with it.
  auto failed = Open(ManifestListing::kReuse);
  ASSERT_FALSE(failed.ok());
  auto after = Open(ManifestListing::kNone, false, /*store=*/false);
  ASSERT_TRUE(after.ok()) << after.status().message();
  EXPECT_EQ(after->store, nullptr);
}

}  // namespace
}  // namespace clairfs
