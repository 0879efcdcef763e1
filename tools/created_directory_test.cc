// Unit tests of CreatedDirectory: only a directory made here is removed, with its contents,
// never through a link and never after it was swapped for another.
#include "tools/created_directory.h"

#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cstdio>

#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::PathExists;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

TEST(CreatedDirectory, RemovesWhatItMadeWithEverythingBelowButNotLinkTargets) {
  TempDir dir;
  WriteFile(dir / "outside/keep", "mine");
  auto made = CreatedDirectory::Make(dir / "new", 0700);
  ASSERT_TRUE(made.ok()) << made.status().message();
  ASSERT_TRUE((*made)->created());
  struct stat st;
  ASSERT_EQ(stat((dir / "new").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  WriteFile(dir / "new/index/000001.log", "x");
  WriteFile(dir / "new/lock", "");
  ASSERT_EQ(symlink((dir / "outside").c_str(), (dir / "new/link").c_str()), 0);
  ASSERT_EQ(symlink((dir / "outside/keep").c_str(), (dir / "new/index/file-link").c_str()), 0);
  ASSERT_TRUE((*made)->Remove().ok());
  EXPECT_FALSE((*made)->created());
  EXPECT_FALSE(PathExists(dir / "new"));
  EXPECT_EQ(ReadFile(dir / "outside/keep"), "mine");
  EXPECT_TRUE((*made)->Remove().ok());  // once only
}

TEST(CreatedDirectory, LeavesADirectoryThatExistedBefore) {
  TempDir dir;
  WriteFile(dir / "old/keep", "mine");
  auto found = CreatedDirectory::Make(dir / "old", 0700);
  ASSERT_TRUE(found.ok());
  EXPECT_FALSE((*found)->created());
  EXPECT_TRUE((*found)->Remove().ok());
  EXPECT_EQ(ReadFile(dir / "old/keep"), "mine");
}

TEST(CreatedDirectory, LeavesAloneWhatReplacedIt) {
  TempDir dir;
  auto made = CreatedDirectory::Make(dir / "new", 0700);
  ASSERT_TRUE(made.ok());
  // Someone moves it away and puts a link to another directory in its place.
  WriteFile(dir / "target/keep", "mine");
  ASSERT_EQ(rename((dir / "new").c_str(), (dir / "moved").c_str()), 0);
  ASSERT_EQ(symlink((dir / "target").c_str(), (dir / "new").c_str()), 0);
  Status removed = (*made)->Remove();
  EXPECT_FALSE(removed.ok());
  EXPECT_EQ(ReadFile(dir / "target/keep"), "mine");
  EXPECT_TRUE(PathExists(dir / "moved"));

  // Or another directory of the same name (the first kept, so that its inode is not reused).
  auto again = CreatedDirectory::Make(dir / "other", 0700);
  ASSERT_TRUE(again.ok());
  ASSERT_EQ(rename((dir / "other").c_str(), (dir / "other-moved").c_str()), 0);
  WriteFile(dir / "other/keep", "mine");
  EXPECT_NE((*again)->Remove().message().find("no longer the directory"), std::string::npos);
  EXPECT_EQ(ReadFile(dir / "other/keep"), "mine");
}

TEST(CreatedDirectory, ErrorsNameThePath) {
  TempDir dir;
  auto made = CreatedDirectory::Make(dir / "no/such/dir", 0700);
  ASSERT_FALSE(made.ok());
  EXPECT_NE(made.status().message().find("no/such/dir"), std::string::npos);
  EXPECT_FALSE(PathExists(dir / "no"));
  EXPECT_FALSE(CreatedDirectory::Make(dir / "..", 0700).ok());
}

}  // namespace
}  // namespace clairfs
