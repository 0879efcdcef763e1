// Parsing mountinfo lines: optional fields, escapes, superblock options and the FUSE owner.
#include "fs/fuse/mount_table.h"

#include <gtest/gtest.h>

namespace clairfs {
namespace {

TEST(MountTableTest, ParsesFuseLinesWithTheirOwner) {
  auto e = ParseMountinfoLine(
      "66 44 0:40 / /tmp/a\\040b/mnt ro,nosuid,nodev,relatime shared:12 master:3 - fuse.clairfs "
      "clairfs:/tmp/back ro,user_id=65534,group_id=65534,default_permissions,allow_other");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->mountpoint, "/tmp/a b/mnt");
  EXPECT_EQ(e->fstype, "fuse.clairfs");
  EXPECT_EQ(e->FuseOwner(), std::optional<uid_t>(65534));
  EXPECT_EQ(e->SuperOption("allow_other"), std::optional<std::string>(""));
  EXPECT_EQ(e->SuperOption("group_id"), std::optional<std::string>("65534"));
  EXPECT_FALSE(e->SuperOption("user").has_value());  // a prefix of user_id is not a match
  EXPECT_FALSE(e->SuperOption("allow").has_value());
}

TEST(MountTableTest, NoOwnerOrBadLines) {
  auto ext4 = ParseMountinfoLine("29 1 254:1 / / rw,relatime - ext4 /dev/vda rw");
  ASSERT_TRUE(ext4.has_value());
  EXPECT_FALSE(ext4->FuseOwner().has_value());
  auto bad_uid = ParseMountinfoLine("1 2 0:1 / /m rw - fuse.x s rw,user_id=12x");
  ASSERT_TRUE(bad_uid.has_value());
  EXPECT_FALSE(bad_uid->FuseOwner().has_value());
  EXPECT_FALSE(ParseMountinfoLine("").has_value());
  EXPECT_FALSE(ParseMountinfoLine("1 2 0:1 / /m rw no separator").has_value());
  EXPECT_FALSE(ParseMountinfoLine("1 2").has_value());
}

TEST(MountTableTest, TheRootIsMounted) {
  EXPECT_TRUE(FindMount("/").has_value());
  EXPECT_FALSE(FindMount("/no/such/mount/point").has_value());
}

}  // namespace
}  // namespace clairfs
