// Tests of KeptFiles: the bound (least recently used let go first), replacement, removal by
// inode and by copy, and that files let go are handed back to be closed outside the lock.
#include "fs/kept_files.h"

#include <gtest/gtest.h>

#include "fs/filesystem.h"

namespace clairfs {
namespace {

KeptFiles::FilePtr File(uint64_t ino) {
  auto f = std::make_shared<OpenFile>();
  f->ino = ino;
  return f;
}

TEST(KeptFilesTest, TheLeastRecentlyUsedIsLetGoPastTheBound) {
  KeptFiles kept(2);
  auto a = File(1), b = File(2), c = File(3);
  EXPECT_TRUE(kept.Put(1, a, "/cache/a").empty());
  EXPECT_TRUE(kept.Put(2, b, "").empty());
  EXPECT_EQ(kept.Get(1), a);  // 1 is now the most recent
  auto let_go = kept.Put(3, c, "/cache/c");
  ASSERT_EQ(let_go.size(), 1u);
  EXPECT_EQ(let_go[0], b);
  EXPECT_EQ(kept.Get(2), nullptr);
  EXPECT_EQ(kept.size(), 2u);
  EXPECT_EQ(kept.capacity(), 2u);
}

TEST(KeptFilesTest, PutReplacesAndRemovalsMatchTheirFile) {
  KeptFiles kept(4);
  auto a = File(1), a2 = File(1);
  kept.Put(1, a, "/cache/a");
  auto replaced = kept.Put(1, a2, "/cache/a2");
  ASSERT_EQ(replaced.size(), 1u);
  EXPECT_EQ(replaced[0], a);
  // The replaced file's copy no longer names an entry; the new one's does.
  EXPECT_TRUE(kept.RemoveCopy("/cache/a").empty());
  EXPECT_TRUE(kept.Remove(1, a.get()).empty());  // not the kept one
  auto removed = kept.RemoveCopy("/cache/a2");
  ASSERT_EQ(removed.size(), 1u);
  EXPECT_EQ(removed[0], a2);
  EXPECT_EQ(kept.size(), 0u);
  kept.Put(1, a, "");
  kept.Put(2, File(2), "");
  EXPECT_EQ(kept.Remove(1, a.get()).size(), 1u);
  EXPECT_EQ(kept.Snapshot().size(), 1u);
  EXPECT_EQ(kept.Clear().size(), 1u);
  EXPECT_EQ(kept.size(), 0u);
}

TEST(KeptFilesTest, ABoundOfZeroKeepsOne) {
  KeptFiles kept(0);
  kept.Put(1, File(1), "");
  EXPECT_EQ(kept.Put(2, File(2), "").size(), 1u);
  EXPECT_EQ(kept.size(), 1u);
}

}  // namespace
}  // namespace clairfs
