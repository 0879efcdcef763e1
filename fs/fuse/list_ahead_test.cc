// Tests of ListAhead on a real directory tree, through a recording Env: the walk's order (depth
// first, in listing order), that it only lists (never opens or stats a file), its bound, that a
// directory it cannot list is counted and skipped, and that it stops when asked.
#include "fs/fuse/list_ahead.h"

#include <algorithm>
#include <set>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "cache/testing/fault_env.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

// Records every directory listed (with the bound asked for) and counts every other call that
// names a path.
class RecordingEnv : public EnvWrapper {
 public:
  explicit RecordingEnv(Env* target) : EnvWrapper(target) {}
  Status ListDir(const std::string& path, std::vector<DirEntry>* entries,
                 size_t max_entries = SIZE_MAX) override {
    listed.emplace_back(path, max_entries);
    return target()->ListDir(path, entries, max_entries);
  }
  Result<int> Open(const std::string& path, int flags, mode_t mode = 0) override {
    ++other_calls;
    return target()->Open(path, flags, mode);
  }
  Status Lstat(const std::string& path, struct stat* st) override {
    ++other_calls;
    return target()->Lstat(path, st);
  }

  std::vector<std::pair<std::string, size_t>> listed;
  int other_calls = 0;
};

class ListAheadTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = dir_.path() + "/tree";
    // Directories and files interleave in name order: a/, b, c/ (with c/d/), e.
    testing::WriteFile(root_ + "/a/1", "x");
    testing::WriteFile(root_ + "/a/2", "x");
    testing::WriteFile(root_ + "/b", "x");
    testing::WriteFile(root_ + "/c/3", "x");
    testing::WriteFile(root_ + "/c/d/4", "x");
    testing::WriteFile(root_ + "/e", "x");
  }

  std::vector<std::string> ListedPaths(const RecordingEnv& env) const {
    std::vector<std::string> paths;
    for (const auto& [path, max] : env.listed) paths.push_back(path.substr(root_.size()));
    return paths;
  }

  testing::TempDir dir_;
  std::string root_;
};

TEST_F(ListAheadTest, ListsEveryDirectoryOnceAndNothingElse) {
  RecordingEnv env(Env::Default());
  ListAhead walk(&env, 1000);
  ASSERT_TRUE(walk.Run(root_).ok());
  std::vector<std::string> paths = ListedPaths(env);
  std::vector<std::string> sorted = paths;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, (std::vector<std::string>{"", "/a", "/c", "/c/d"}));
  // Depth first: a subdirectory's own subdirectories come before its later siblings.
  auto at = [&](const std::string& p) { return std::find(paths.begin(), paths.end(), p); };
  EXPECT_EQ(paths.front(), "");
  EXPECT_LT(at("/c"), at("/c/d"));
  EXPECT_EQ(env.other_calls, 0);
  ListAhead::Stats s = walk.stats();
  EXPECT_TRUE(s.started);
  EXPECT_TRUE(s.done);
  EXPECT_FALSE(s.stopped);
  EXPECT_EQ(s.directories, 4u);
  EXPECT_EQ(s.names, 9u);  // a b c e | 1 2 | 3 d | 4
  EXPECT_EQ(s.failed_directories, 0u);
}

TEST_F(ListAheadTest, StopsAtTheBoundOfNames) {
  RecordingEnv env(Env::Default());
  ListAhead walk(&env, 5);
  ASSERT_TRUE(walk.Run(root_).ok());
  ListAhead::Stats s = walk.stats();
  EXPECT_EQ(s.names, 5u);
  EXPECT_TRUE(s.done);
  // The root (4 names) left room for 1 more: its next directory was read no further.
  ASSERT_EQ(env.listed.size(), 2u);
  EXPECT_EQ(env.listed[0].second, 5u);
  EXPECT_EQ(env.listed[1].second, 1u);
}

TEST_F(ListAheadTest, ADirectoryThatCannotBeListedIsCountedAndSkipped) {
  FaultInjectionEnv faults(Env::Default());
  faults.FailPath(FaultOp::kListDir, "/tree/a", EACCES);
  ListAhead walk(&faults, 1000);
  Status st = walk.Run(root_);
  EXPECT_EQ(st.code(), EACCES);
  ListAhead::Stats s = walk.stats();
  EXPECT_TRUE(s.done);
  EXPECT_EQ(s.failed_directories, 1u);
  EXPECT_EQ(s.directories, 3u);  // the root, c and c/d
  EXPECT_EQ(s.names, 7u);
}

TEST_F(ListAheadTest, AMissingMountpointEndsTheWalkWithItsError) {
  ListAhead walk(Env::Default(), 1000);
  EXPECT_EQ(walk.Run(root_ + "/nowhere").code(), ENOENT);
  EXPECT_TRUE(walk.stats().done);
  EXPECT_EQ(walk.stats().failed_directories, 1u);
}

TEST_F(ListAheadTest, StopsWhenAskedAndOnlyOnce) {
  ListAhead walk(Env::Default(), 1000);
  walk.RequestStop();
  ASSERT_TRUE(walk.Run(root_).ok());
  ListAhead::Stats s = walk.stats();
  EXPECT_TRUE(s.done);
  EXPECT_TRUE(s.stopped);
  EXPECT_EQ(s.directories, 0u);

  ListAhead background(Env::Default(), 1000);
  EXPECT_FALSE(background.stats().started);
  background.Start(root_);
  background.Stop();  // joins, whether or not the walk had ended
  EXPECT_TRUE(background.stats().done);
}

}  // namespace
}  // namespace clairfs
