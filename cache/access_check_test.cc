// MayAccess: mode bits, root, POSIX ACLs and malformed ACLs, and a comparison with what the
// kernel decides for real files given the same modes and ACLs (setfacl + access(2) as other uids).
#include "cache/access_check.h"

#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace clairfs {
namespace {

constexpr uint16_t kUserObj = 0x01, kUser = 0x02, kGroupObj = 0x04, kGroup = 0x08, kMask = 0x10,
                   kOther = 0x20;

struct Entry {
  uint16_t tag;
  uint16_t perm;
  uint32_t id = 0;
};

std::string Acl(const std::vector<Entry>& entries, uint32_t version = 2) {
  std::string out;
  PutFixed32(&out, version);
  for (const Entry& e : entries) {
    out.push_back(static_cast<char>(e.tag & 0xff));
    out.push_back(static_cast<char>(e.tag >> 8));
    out.push_back(static_cast<char>(e.perm & 0xff));
    out.push_back(static_cast<char>(e.perm >> 8));
    PutFixed32(&out, e.id);
  }
  return out;
}

NodeAttr Node(uint32_t type, uint32_t perms, uint32_t uid, uint32_t gid, std::string acl = "") {
  NodeAttr a;
  a.mode = type | perms;
  a.uid = uid;
  a.gid = gid;
  a.acl_access = std::move(acl);
  return a;
}
NodeAttr File(uint32_t perms, std::string acl = "") {
  return Node(S_IFREG, perms, 1000, 100, std::move(acl));
}
NodeAttr Dir(uint32_t perms, std::string acl = "") {
  return Node(S_IFDIR, perms, 1000, 100, std::move(acl));
}

const Caller kRoot{0, 0, {}};
const Caller kOwner{1000, 1000, {}};
const Caller kGroupMember{2000, 100, {}};
const Caller kSupplementary{2001, 2001, {7, 100}};
const Caller kStranger{3000, 3000, {}};

TEST(AccessCheckTest, ModeBitsByClass) {
  const NodeAttr f = File(0640);
  EXPECT_TRUE(MayAccess(f, kOwner, R_OK | W_OK));
  EXPECT_FALSE(MayAccess(f, kOwner, X_OK));
  EXPECT_TRUE(MayAccess(f, kGroupMember, R_OK));
  EXPECT_FALSE(MayAccess(f, kGroupMember, W_OK));
  EXPECT_TRUE(MayAccess(f, kSupplementary, R_OK));
  EXPECT_FALSE(MayAccess(f, kStranger, R_OK));
  EXPECT_TRUE(MayAccess(f, kStranger, 0));
  // Classes do not add up: the owner of a 0077 file may not read it, others may.
  const NodeAttr inverted = File(0077);
  EXPECT_FALSE(MayAccess(inverted, kOwner, R_OK));
  EXPECT_TRUE(MayAccess(inverted, kStranger, R_OK | W_OK | X_OK));
  // A group member gets the group bits, not other's, even when other's are wider.
  const NodeAttr group_less = File(0604);
  EXPECT_FALSE(MayAccess(group_less, kGroupMember, R_OK));
  EXPECT_TRUE(MayAccess(group_less, kStranger, R_OK));
  // Every asked bit must be granted.
  const NodeAttr d = Dir(0751);
  EXPECT_TRUE(MayAccess(d, kGroupMember, R_OK | X_OK));
  EXPECT_FALSE(MayAccess(d, kStranger, R_OK | X_OK));
  EXPECT_TRUE(MayAccess(d, kStranger, X_OK));
}

TEST(AccessCheckTest, RootReadsAndWritesAllButExecutesOnlyWithAnXBit) {
  EXPECT_TRUE(MayAccess(File(0000), kRoot, R_OK | W_OK));
  EXPECT_FALSE(MayAccess(File(0644), kRoot, X_OK));
  EXPECT_TRUE(MayAccess(File(0001), kRoot, X_OK));
  EXPECT_TRUE(MayAccess(File(0100), kRoot, R_OK | X_OK));
  EXPECT_TRUE(MayAccess(Dir(0000), kRoot, R_OK | W_OK | X_OK));
  EXPECT_TRUE(MayAccess(File(0000, "garbage"), kRoot, R_OK));
}

TEST(AccessCheckTest, NamedUserEntryIsMasked) {
  const std::string acl =
      Acl({{kUserObj, 6}, {kUser, 7, 3000}, {kGroupObj, 4}, {kMask, 5}, {kOther, 0}});
  const NodeAttr f = File(0650, acl);  // group bits = the mask r-x
  EXPECT_TRUE(MayAccess(f, kStranger, R_OK | X_OK));
  EXPECT_FALSE(MayAccess(f, kStranger, W_OK));               // rwx & r-x
  EXPECT_FALSE(MayAccess(f, Caller{3001, 3001, {}}, R_OK));  // other: ---
  // The owner is decided by the owner bits alone.
  EXPECT_TRUE(MayAccess(f, kOwner, R_OK | W_OK));
  EXPECT_FALSE(MayAccess(f, kOwner, X_OK));
  // A named user who is also in the owning group: the user entry decides.
  const std::string denying =
      Acl({{kUserObj, 6}, {kUser, 0, 2000}, {kGroupObj, 4}, {kMask, 4}, {kOther, 4}});
  EXPECT_FALSE(MayAccess(File(0644, denying), kGroupMember, R_OK));
}

TEST(AccessCheckTest, GroupEntriesAnyMatchThatGrantsElseDeny) {
  const std::string acl =
      Acl({{kUserObj, 6}, {kGroupObj, 0}, {kGroup, 1, 7}, {kGroup, 4, 9}, {kMask, 7}, {kOther, 4}});
  const NodeAttr f = File(0674, acl);
  // In groups 7, 9 and the owning 100: group 9 grants r, the owning group grants nothing; any
  // grant wins.
  const Caller in_all{2002, 2002, {7, 9, 100}};
  EXPECT_TRUE(MayAccess(f, in_all, R_OK));
  EXPECT_TRUE(MayAccess(f, in_all, X_OK));
  EXPECT_FALSE(MayAccess(f, in_all, R_OK | X_OK));  // no single entry grants both
  // In the owning group only (perm ---): a matching group that does not grant means deny, even
  // though other would grant r.
  EXPECT_FALSE(MayAccess(f, kGroupMember, R_OK));
  EXPECT_TRUE(MayAccess(f, kStranger, R_OK));  // no group matched: other
  // The mask limits group entries too.
  const std::string masked =
      Acl({{kUserObj, 6}, {kGroupObj, 6}, {kGroup, 7, 7}, {kMask, 4}, {kOther, 0}});
  EXPECT_TRUE(MayAccess(File(0640, masked), kSupplementary, R_OK));
  EXPECT_FALSE(MayAccess(File(0640, masked), kSupplementary, W_OK));
  EXPECT_FALSE(MayAccess(File(0640, masked), kGroupMember, W_OK));
}

TEST(AccessCheckTest, MinimalAclIsTheModeBits) {
  const std::string acl = Acl({{kUserObj, 6}, {kGroupObj, 4}, {kOther, 0}});
  EXPECT_TRUE(MayAccess(File(0640, acl), kGroupMember, R_OK));
  EXPECT_FALSE(MayAccess(File(0640, acl), kStranger, R_OK));
  // A header without entries is no ACL (as the kernel reads it): the mode bits decide.
  EXPECT_TRUE(MayAccess(File(0644, Acl({})), kStranger, R_OK));
}

TEST(AccessCheckTest, AclIsIgnoredWhileTheGroupBitsAreClear) {
  // The kernel consults the ACL only when the group class (the mask) is not ---: a named user
  // then gets other's bits.
  const std::string acl =
      Acl({{kUserObj, 6}, {kUser, 7, 3000}, {kGroupObj, 4}, {kMask, 0}, {kOther, 4}});
  EXPECT_TRUE(MayAccess(File(0604, acl), kStranger, R_OK));
  EXPECT_FALSE(MayAccess(File(0604, acl), kStranger, W_OK));
  EXPECT_TRUE(MayAccess(File(0604, "malformed"), kStranger, R_OK));
}

TEST(AccessCheckTest, MalformedAclDeniesAllButOwnerAndRoot) {
  const std::vector<std::string> bad = {
      std::string("\x02\x00\x00", 3),                                       // short header
      Acl({{kUserObj, 6}, {kGroupObj, 4}, {kOther, 4}}, 1),                 // version 1
      Acl({{kUserObj, 6}, {kGroupObj, 4}, {kOther, 4}}) + "x",              // ragged size
      Acl({{kUserObj, 6}, {0x40, 4}, {kGroupObj, 4}, {kOther, 4}}),         // unknown tag
      Acl({{kGroupObj, 4}, {kUserObj, 6}, {kOther, 4}}),                    // out of order
      Acl({{kUserObj, 6}, {kGroupObj, 4}}),                                 // no OTHER
      Acl({{kUserObj, 6}, {kUser, 4, 3000}, {kGroupObj, 4}, {kOther, 4}}),  // no mask
      Acl({{kUserObj, 6}, {kGroupObj, 4}, {kOther, 4}, {kOther, 4}}),       // OTHER twice
      Acl({{kUserObj, 6}, {kGroupObj, 4}, {kOther, 014}}),                  // perm beyond rwx
  };
  for (const std::string& acl : bad) {
    const NodeAttr f = File(0644, acl);
    EXPECT_FALSE(MayAccess(f, kStranger, R_OK)) << ::testing::PrintToString(acl);
    EXPECT_FALSE(MayAccess(f, kGroupMember, R_OK)) << ::testing::PrintToString(acl);
    EXPECT_TRUE(MayAccess(f, kOwner, R_OK)) << ::testing::PrintToString(acl);
    EXPECT_TRUE(MayAccess(f, kRoot, R_OK)) << ::testing::PrintToString(acl);
  }
}

// The kernel's verdicts: files and directories with modes and ACLs set by chmod and setfacl,
// checked with access(2) (test -r/-w/-x) by processes of other uids and groups, against
// MayAccess over the same lstat and system.posix_acl_access value.
TEST(AccessCheckTest, AgreesWithTheKernel) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to chown and to run as other uids";
  if (testing::Run({"sh", "-c", "command -v setfacl && command -v setpriv"}).exit_code != 0) {
    GTEST_SKIP() << "needs setfacl (apt-get install acl) and setpriv";
  }
  testing::TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  struct Case {
    bool is_dir;
    unsigned mode;
    std::string acl;  // setfacl -m spec, "" for none
  };
  const std::vector<Case> cases = {
      {false, 0640, ""},
      {false, 0604, ""},
      {false, 0460, ""},
      {false, 0000, ""},
      {false, 0777, ""},
      {false, 0751, ""},
      {false, 0705, ""},
      {false, 0640, "u:4004:rwx,m::r-x"},
      {false, 0640, "u:4004:rw-,g:4200:r--,m::rw-"},
      {false, 0644, "g:4200:--x,g::r--"},
      {false, 0644, "u:4004:rwx,m::---"},
      {false, 0600, "g:4200:rwx,m::r--"},
      {false, 0660, "u:4003:---,g:4100:rw-"},
      {false, 0604, "g:4300:-w-,o::r--"},
      {true, 0700, "u:4004:r-x"},
      {true, 0710, "g:4200:r-x,m::--x"},
      {true, 0750, ""},
      {true, 0701, ""},
      {true, 0770, "u:4002:---"},
  };
  std::vector<std::string> paths;
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string path = dir / ("n" + std::to_string(i));
    if (cases[i].is_dir) {
      ASSERT_EQ(mkdir(path.c_str(), 0700), 0);
    } else {
      testing::WriteFile(path, "x");
    }
    ASSERT_EQ(chown(path.c_str(), 4001, 4100), 0);
    ASSERT_EQ(chmod(path.c_str(), cases[i].mode), 0);
    if (!cases[i].acl.empty()) {
      testing::CommandResult r = testing::Run({"setfacl", "-m", cases[i].acl, path});
      ASSERT_EQ(r.exit_code, 0) << r.err;
    }
    paths.push_back(path);
  }
  struct Who {
    Caller caller;
    std::string groups;  // for setpriv --groups, "" for none
  };
  const std::vector<Who> callers = {
      {{4001, 4001, {}}, ""},  // the owner
      {{4002, 4100, {}}, ""},  // the owning group, as primary group
      {{4003, 4001, {4100, 4200}}, "4100,4200"},
      {{4004, 4300, {}}, ""},          // named in ACLs
      {{4005, 4005, {4200}}, "4200"},  // a named group, as supplementary group
      {{4006, 4006, {}}, ""},          // nobody in particular
      {{0, 0, {}}, ""},                // root
  };
  std::string script;
  for (const std::string& p : paths) {
    for (const char* op : {"-r", "-w", "-x"}) {
      script += "if test " + std::string(op) + " '" + p + "'; then printf 1; else printf 0; fi;";
    }
  }
  for (const Who& who : callers) {
    std::vector<std::string> argv = {"setpriv", "--reuid=" + std::to_string(who.caller.uid),
                                     "--regid=" + std::to_string(who.caller.gid)};
    argv.push_back(who.groups.empty() ? "--clear-groups" : "--groups=" + who.groups);
    argv.insert(argv.end(), {"sh", "-c", script});
    testing::CommandResult r = testing::Run(argv);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_EQ(r.out.size(), paths.size() * 3) << r.out;
    for (size_t i = 0; i < paths.size(); ++i) {
      struct stat st;
      ASSERT_EQ(lstat(paths[i].c_str(), &st), 0);
      NodeAttr attr = NodeAttr::FromStat(st, 2);
      char acl[4096];
      ssize_t n = lgetxattr(paths[i].c_str(), "system.posix_acl_access", acl, sizeof(acl));
      if (n > 0) attr.acl_access.assign(acl, static_cast<size_t>(n));
      EXPECT_EQ(cases[i].acl.empty(), n <= 0) << paths[i];
      const int masks[] = {R_OK, W_OK, X_OK};
      for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(MayAccess(attr, who.caller, masks[k]), r.out[i * 3 + k] == '1')
            << "uid " << who.caller.uid << " mask " << masks[k] << " on "
            << (cases[i].is_dir ? "dir" : "file") << " mode " << std::oct << cases[i].mode
            << " acl '" << cases[i].acl << "'";
      }
    }
  }
}

}  // namespace
}  // namespace clairfs
