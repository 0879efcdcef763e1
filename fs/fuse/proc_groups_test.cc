// Tests of the procfs group reader: the Groups line parsed exactly (none, one, many, at the start
// or the end of the text, with no newline after it), and this process's own groups as getgroups(2)
// gives them.
#include "fs/fuse/proc_groups.h"

#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>

namespace clairfs {
namespace {

TEST(ProcGroupsTest, TheGroupsLineIsParsedWhereverItIs) {
  EXPECT_EQ(ParseStatusGroups("Name:\tx\nUid:\t0\t0\t0\t0\nGroups:\t4 24 27 \nNgid:\t0\n"),
            (std::vector<gid_t>{4, 24, 27}));
  EXPECT_EQ(ParseStatusGroups("Name:\tx\nGroups:\t\nNgid:\t0\n"), std::vector<gid_t>{});
  EXPECT_EQ(ParseStatusGroups("Groups:\t1000\nName:\tx\n"), std::vector<gid_t>{1000});
  EXPECT_EQ(ParseStatusGroups("Name:\tx\nGroups:\t4294967294 7"),
            (std::vector<gid_t>{4294967294u, 7}));
  EXPECT_EQ(ParseStatusGroups("Name:\tx\nNgid:\t0\n"), std::vector<gid_t>{});
  EXPECT_EQ(ParseStatusGroups(""), std::vector<gid_t>{});
  // A name that merely contains the key is not the line.
  EXPECT_EQ(ParseStatusGroups("Name:\tGroups: 5\n"), std::vector<gid_t>{});
}

TEST(ProcGroupsTest, ThisThreadsGroupsAreWhatGetgroupsSays) {
  std::vector<gid_t> expected(static_cast<size_t>(getgroups(0, nullptr)));
  ASSERT_EQ(getgroups(static_cast<int>(expected.size()), expected.data()),
            static_cast<int>(expected.size()));
  std::vector<gid_t> got = GroupsOfThread(static_cast<pid_t>(syscall(SYS_gettid)));
  std::sort(expected.begin(), expected.end());
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, expected);
  EXPECT_TRUE(GroupsOfThread(-1).empty());
}

}  // namespace
}  // namespace clairfs
