// Tests of NodeCache: hits return what was inserted, the bound holds (oldest dropped first),
// Put replaces, and an index read that raced with an update or a new listing is not inserted;
// the same for children by (parent, name).
#include "cache/node_cache.h"

#include <gtest/gtest.h>

#include <string>

namespace clairfs {
namespace {

NodeCache::Node MakeNode(uint64_t ino, const std::string& path, uint64_t size) {
  NodeCache::Node node;
  node.path = path;
  node.attr.ino = ino;
  node.attr.mode = S_IFREG | 0644;
  node.attr.size = size;
  return node;
}

TEST(NodeCacheTest, ReturnsWhatWasInserted) {
  NodeCache cache;
  NodeCache::Node out;
  EXPECT_FALSE(cache.Get(7, &out));
  cache.Insert(7, MakeNode(7, "a/b.jpg", 10), cache.Version());
  ASSERT_TRUE(cache.Get(7, &out));
  EXPECT_EQ(out.path, "a/b.jpg");
  EXPECT_EQ(out.attr.size, 10u);
  // A second insert of a cached node does not replace it.
  cache.Insert(7, MakeNode(7, "a/other.jpg", 20), cache.Version());
  ASSERT_TRUE(cache.Get(7, &out));
  EXPECT_EQ(out.path, "a/b.jpg");
}

TEST(NodeCacheTest, HoldsAtMostItsCapacityDroppingTheOldestFirst) {
  NodeCache cache;
  const uint64_t n = NodeCache::kCapacity + 5 * NodeCache::kShards;
  for (uint64_t ino = 1; ino <= n; ++ino) {
    cache.Insert(ino, MakeNode(ino, "f" + std::to_string(ino), ino), cache.Version());
  }
  EXPECT_EQ(cache.size(), NodeCache::kCapacity);
  NodeCache::Node out;
  EXPECT_FALSE(cache.Get(1, &out));  // among the first inserted into its shard
  ASSERT_TRUE(cache.Get(n, &out));   // the newest
  EXPECT_EQ(out.attr.size, n);
}

TEST(NodeCacheTest, PutReplacesAndAStaleReadIsNotInserted) {
  NodeCache cache;
  cache.Insert(3, MakeNode(3, "x", 1), cache.Version());
  const uint64_t before_update = cache.Version();  // a reader about to read the index
  cache.Put(3, MakeNode(3, "x", 2));               // the update lands first
  cache.Put(4, MakeNode(4, "y", 5));               // a node that was not cached is added
  NodeCache::Node out;
  ASSERT_TRUE(cache.Get(3, &out));
  EXPECT_EQ(out.attr.size, 2u);
  ASSERT_TRUE(cache.Get(4, &out));
  EXPECT_EQ(out.attr.size, 5u);
  // The reader's old value, for a node evicted or not cached, must not come back.
  cache.Clear();
  cache.Insert(3, MakeNode(3, "x", 1), before_update);
  EXPECT_FALSE(cache.Get(3, &out));
}

TEST(NodeCacheTest, ClearDropsEverythingAndReadsInFlight) {
  NodeCache cache;
  cache.Insert(1, MakeNode(1, "", 0), cache.Version());
  const uint64_t in_flight = cache.Version();
  cache.Clear();
  NodeCache::Node out;
  EXPECT_FALSE(cache.Get(1, &out));
  EXPECT_EQ(cache.size(), 0u);
  cache.Insert(2, MakeNode(2, "z", 1), in_flight);
  EXPECT_FALSE(cache.Get(2, &out));
  cache.Insert(2, MakeNode(2, "z", 1), cache.Version());
  EXPECT_TRUE(cache.Get(2, &out));
}

TEST(NodeCacheTest, ChildrenByParentAndName) {
  NodeCache cache;
  uint64_t ino = 0;
  EXPECT_FALSE(cache.GetChild(1, "a.jpg", &ino));
  cache.InsertChild(1, "a.jpg", 10, cache.Version());
  cache.InsertChild(2, "a.jpg", 20, cache.Version());
  // A name longer than any small-string buffer, and one that differs only in its parent.
  const std::string long_name(100, 'n');
  cache.InsertChild(1, long_name, 30, cache.Version());
  ASSERT_TRUE(cache.GetChild(1, "a.jpg", &ino));
  EXPECT_EQ(ino, 10u);
  ASSERT_TRUE(cache.GetChild(2, "a.jpg", &ino));
  EXPECT_EQ(ino, 20u);
  ASSERT_TRUE(cache.GetChild(1, long_name, &ino));
  EXPECT_EQ(ino, 30u);
  EXPECT_FALSE(cache.GetChild(1, "a.jp", &ino));
  EXPECT_FALSE(cache.GetChild(3, "a.jpg", &ino));
  // Never replaced (a name's inode changes only with a new listing).
  cache.InsertChild(1, "a.jpg", 11, cache.Version());
  ASSERT_TRUE(cache.GetChild(1, "a.jpg", &ino));
  EXPECT_EQ(ino, 10u);

  // A read in flight across a Clear inserts nothing; Clear drops every child.
  const uint64_t in_flight = cache.Version();
  cache.Clear();
  EXPECT_FALSE(cache.GetChild(1, "a.jpg", &ino));
  cache.InsertChild(1, "b.jpg", 12, in_flight);
  EXPECT_FALSE(cache.GetChild(1, "b.jpg", &ino));
}

TEST(NodeCacheTest, ChildrenStayWithinTheBoundDroppingTheOldestFirst) {
  NodeCache cache;
  const size_t n = NodeCache::kCapacity * 2;
  for (size_t i = 0; i < n; ++i) {
    cache.InsertChild(1, "f" + std::to_string(i), i + 100, cache.Version());
  }
  size_t held = 0;
  uint64_t ino = 0;
  for (size_t i = 0; i < n; ++i) held += cache.GetChild(1, "f" + std::to_string(i), &ino) ? 1 : 0;
  EXPECT_LE(held, NodeCache::kCapacity);
  EXPECT_GE(held, NodeCache::kCapacity * 3 / 4);  // shards fill unevenly, none beyond its share
  EXPECT_TRUE(cache.GetChild(1, "f" + std::to_string(n - 1), &ino));  // the newest stays
  EXPECT_FALSE(cache.GetChild(1, "f0", &ino));                        // the oldest went first
}

}  // namespace
}  // namespace clairfs
