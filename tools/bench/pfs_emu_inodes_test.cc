// Tests of the PFS emulator's inode table: lookup counting, forget, identity by (dev, ino).
#include "tools/bench/pfs_emu_inodes.h"

#include <gtest/gtest.h>

namespace clairfs {
namespace {

TEST(PfsEmuInodes, RootIsPresentAndNeverForgotten) {
  PfsEmuInodes inodes(1, 100);
  auto root = inodes.Find(PfsEmuInodes::kRootId);
  ASSERT_TRUE(root.has_value());
  EXPECT_EQ(root->relpath, "");
  inodes.Forget(PfsEmuInodes::kRootId, 1000);
  EXPECT_TRUE(inodes.Find(PfsEmuInodes::kRootId).has_value());
}

TEST(PfsEmuInodes, SameBackingFileSameIdUntilForgotten) {
  PfsEmuInodes inodes(1, 100);
  uint64_t a = inodes.AddLookup(1, 200, "class_0000/a.jpg");
  uint64_t again = inodes.AddLookup(1, 200, "class_0000/a.jpg");
  uint64_t other = inodes.AddLookup(1, 201, "class_0000/b.jpg");
  uint64_t other_dev = inodes.AddLookup(2, 200, "mnt/a.jpg");
  EXPECT_EQ(a, again);
  EXPECT_NE(a, other);
  EXPECT_NE(a, other_dev);
  EXPECT_NE(a, PfsEmuInodes::kRootId);
  EXPECT_EQ(inodes.size(), 4u);

  inodes.Forget(a, 1);  // one of two lookups
  ASSERT_TRUE(inodes.Find(a).has_value());
  EXPECT_EQ(inodes.Find(a)->relpath, "class_0000/a.jpg");
  inodes.Forget(a, 1);
  EXPECT_FALSE(inodes.Find(a).has_value());
  EXPECT_EQ(inodes.size(), 3u);

  // A new lookup after forget gets a fresh number (numbers are never reused).
  uint64_t later = inodes.AddLookup(1, 200, "class_0000/a.jpg");
  EXPECT_NE(later, a);
  inodes.Forget(later, 5);  // over-forgetting clamps to zero and removes
  EXPECT_FALSE(inodes.Find(later).has_value());
  inodes.Forget(later, 1);  // unknown ids are ignored
}

TEST(PfsEmuInodes, HardLinksKeepTheFirstPath) {
  PfsEmuInodes inodes(1, 100);
  uint64_t first = inodes.AddLookup(1, 300, "a/x");
  uint64_t second = inodes.AddLookup(1, 300, "b/y");
  EXPECT_EQ(first, second);
  EXPECT_EQ(inodes.Find(first)->relpath, "a/x");
}

}  // namespace
}  // namespace clairfs
