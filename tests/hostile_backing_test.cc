// A backing tree that another user writes while root's mount serves it: links swapped in on the
// path of a listed file, files replaced by FIFOs, and the backing root's own path swapped. The
// mount must never serve bytes of a file it did not list, nor hang (cache/backing_tree.h).
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

constexpr uid_t kUser = 65534;  // nobody: the hostile user

// Runs a shell command line as kUser (no supplementary groups).
CommandResult AsUser(const std::string& command_line, int timeout_seconds = 30) {
  return RunAs(kUser, {"/bin/sh", "-c", command_line}, timeout_seconds);
}

class HostileBackingTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The user must reach the tree: the temporary directory is 0700 root.
    ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
    backing_ = dir_ / "uback";
    mnt_ = dir_ / "mnt";
    cache_ = dir_ / "cache";
    secret_dir_ = dir_ / "rootonly";
    MakeDirs(mnt_);
    MakeDirs(secret_dir_);
    // What root keeps from everyone: a file named as the user's is, in a directory the user can
    // name but not list or read.
    WriteFile(secret_dir_ + "/shadow", "SECRET root-only bytes\n");
    ASSERT_EQ(chmod((secret_dir_ + "/shadow").c_str(), 0600), 0);
    ASSERT_EQ(chmod(secret_dir_.c_str(), 0711), 0);
    // The user's tree: d/shadow and e/file hold bytes of the user's own.
    MakeDirs(backing_);
    ASSERT_EQ(chown(backing_.c_str(), kUser, kUser), 0);
    CommandResult made = AsUser("cd " + backing_ +
                                " && mkdir d e && head -c 8192 /dev/zero | tr '\\0' A > d/shadow"
                                " && printf user > e/file && chmod 644 d/shadow e/file");
    ASSERT_EQ(made.exit_code, 0) << made.err;
  }

  TempDir dir_;
  std::string backing_, mnt_, cache_, secret_dir_;
};

TEST_F(HostileBackingTest, ALinkSwappedOntoTheListedPathIsNeverFollowed) {
  for (const char* revalidate : {"never", "open"}) {
    SCOPED_TRACE(revalidate);
    ClairfsMount mount(backing_, mnt_, cache_);
    CommandResult mounted =
        mount.Mount({"-o", "allow_other", "--revalidate", revalidate, "--no-read-through"});
    ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
    // The kernel learns d/ and d/shadow as listed.
    CommandResult before = AsUser("stat -c %s " + mnt_ + "/d/shadow");
    ASSERT_EQ(before.exit_code, 0) << before.err;
    EXPECT_EQ(before.out, "8192\n");

    CommandResult swapped = AsUser("cd " + backing_ + " && mv d d.orig && ln -s " + secret_dir_ +
                                   " d && ls -l d/shadow");
    ASSERT_EQ(swapped.exit_code, 0) << swapped.err;

    for (int attempt = 0; attempt < 2; ++attempt) {
      CommandResult user_read = AsUser("head -c 100 " + mnt_ + "/d/shadow");
      EXPECT_EQ(user_read.out.find("SECRET"), std::string::npos) << user_read.out;
      EXPECT_NE(user_read.exit_code, 0) << user_read.out;
      // As root too: root's reads through the mount are the daemon's opens all the same.
      int fd = open((mnt_ + "/d/shadow").c_str(), O_RDONLY);
      if (fd >= 0) {
        char buf[64] = {};
        ssize_t n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        EXPECT_LT(n, 0) << "root read " << buf;
        if (n > 0) {
          EXPECT_EQ(std::string(buf).find("SECRET"), std::string::npos);
        }
      }
    }
    // Staging it on request never copies the root-only file either.
    CommandResult staged = testing::Run({ClairfsBin(), "stage", mnt_, "d/shadow", "--wait"});
    EXPECT_NE(staged.exit_code, 0) << staged.out;
    CommandResult listed = testing::Run({ClairfsBin(), "ls", mnt_, "d/shadow", "--json"});
    nlohmann::json entries = nlohmann::json::parse(listed.out, nullptr, false)["entries"];
    ASSERT_EQ(entries.size(), 1u) << listed.out;
    EXPECT_EQ(entries[0]["staged"], false) << listed.out;
    // The daemon says why, once per refusal, and keeps serving the rest.
    EXPECT_EQ(AsUser("cat " + mnt_ + "/e/file").out, "user");
    EXPECT_EQ(mount.Umount().exit_code, 0);
    std::string log = ReadFile(cache_ + "/daemon.log");
    EXPECT_NE(log.find("d/shadow: a link or another file is on its path"), std::string::npos)
        << log;
    // Back as it was for the next round.
    ASSERT_EQ(AsUser("cd " + backing_ + " && rm d && mv d.orig d").exit_code, 0);
  }
}

TEST_F(HostileBackingTest, AFileReplacedByAnotherOrByAFifoIsNotServedAndHangsNothing) {
  ClairfsMount mount(backing_, mnt_, cache_);
  ASSERT_EQ(mount.Mount({"-o", "allow_other", "--no-read-through"}).exit_code, 0);
  ASSERT_EQ(AsUser("stat " + mnt_ + "/e/file " + mnt_ + "/d/shadow").exit_code, 0);
  // e/file becomes a FIFO; d/shadow becomes a hard link to another file of the user's (same
  // bytes would not matter: it is not the listed inode).
  CommandResult changed = AsUser("cd " + backing_ + " && rm e/file && mkfifo e/file && " +
                                 "printf other > other && rm d/shadow && ln other d/shadow");
  ASSERT_EQ(changed.exit_code, 0) << changed.err;
  CommandResult fifo = AsUser("cat " + mnt_ + "/e/file", 10);
  EXPECT_NE(fifo.exit_code, 0);
  EXPECT_NE(fifo.err.find("Stale file handle"), std::string::npos) << fifo.err;
  CommandResult other = AsUser("cat " + mnt_ + "/d/shadow", 10);
  EXPECT_NE(other.exit_code, 0);
  EXPECT_EQ(other.out, "");
  EXPECT_NE(other.err.find("Stale file handle"), std::string::npos) << other.err;
  // Staging either must neither hang on the FIFO nor copy the other file.
  CommandResult staged =
      testing::Run({ClairfsBin(), "stage", mnt_, "e/file", "d/shadow", "--wait"}, 30);
  EXPECT_NE(staged.exit_code, 0);
  EXPECT_LT(staged.exit_code, 128) << "stage --wait did not return";
  CommandResult status = testing::Run({ClairfsBin(), "status", mnt_, "--json"});
  EXPECT_EQ(status.exit_code, 0) << status.err;
  EXPECT_EQ(mount.Umount().exit_code, 0);
}

// The user owns the directory above the backing root, so after the mount they swap the root
// itself for a link to root's directory. The daemon reaches files from the root it opened at
// mount, so the user still reads the listed bytes (or an error), never root's.
TEST_F(HostileBackingTest, TheBackingRootSwappedForALinkIsNeverFollowed) {
  const std::string parent = dir_ / "uparent";
  MakeDirs(parent);
  ASSERT_EQ(chown(parent.c_str(), kUser, kUser), 0);
  const std::string root = parent + "/back";
  ASSERT_EQ(AsUser("mkdir -p " + root + "/d && head -c 8192 /dev/zero | tr '\\0' A > " + root +
                   "/d/shadow && chmod 644 " + root + "/d/shadow")
                .exit_code,
            0);
  for (const char* revalidate : {"never", "open"}) {
    SCOPED_TRACE(revalidate);
    ClairfsMount mount(root, mnt_, cache_);
    ASSERT_EQ(mount.Mount({"-o", "allow_other", "--revalidate", revalidate, "--no-read-through"})
                  .exit_code,
              0);
    ASSERT_EQ(AsUser("stat " + mnt_ + "/d/shadow").exit_code, 0);
    CommandResult swapped =
        AsUser("cd " + parent + " && mv back back.orig && mkdir fake && ln -s " + secret_dir_ +
               " fake/d && ln -s fake back");
    ASSERT_EQ(swapped.exit_code, 0) << swapped.err;
    for (int attempt = 0; attempt < 2; ++attempt) {
      CommandResult user_read = AsUser("head -c 100 " + mnt_ + "/d/shadow");
      EXPECT_EQ(user_read.out.find("SECRET"), std::string::npos) << user_read.out;
      if (user_read.exit_code == 0) {
        EXPECT_EQ(user_read.out, std::string(100, 'A'));
      }
    }
    // Root stages it: the copy is of the listed file, whatever the path now names.
    CommandResult staged = testing::Run({ClairfsBin(), "stage", mnt_, "d/shadow", "--wait"});
    CommandResult user_read = AsUser("head -c 100 " + mnt_ + "/d/shadow");
    EXPECT_EQ(user_read.out.find("SECRET"), std::string::npos) << user_read.out;
    if (staged.exit_code == 0) {
      EXPECT_EQ(user_read.out, std::string(100, 'A')) << user_read.err;
    }
    EXPECT_EQ(mount.Umount().exit_code, 0);
    ASSERT_EQ(AsUser("cd " + parent + " && rm back && rm -r fake && mv back.orig back").exit_code,
              0);
    std::filesystem::remove_all(cache_);
  }
}

TEST_F(HostileBackingTest, ALinkSwappedInWhileListingLeavesTheDirectoryOut) {
  // A directory that is a link when the mount lists the tree is shown as a link and never
  // listed through: its target's names do not enter the manifest.
  ASSERT_EQ(AsUser("cd " + backing_ + " && ln -s " + secret_dir_ + " secretlink").exit_code, 0);
  ClairfsMount mount(backing_, mnt_, cache_);
  ASSERT_EQ(mount.Mount({"-o", "allow_other"}).exit_code, 0);
  CommandResult ls = testing::Run({ClairfsBin(), "ls", mnt_, "-r", "--json"});
  EXPECT_EQ(ls.exit_code, 0) << ls.err;
  EXPECT_EQ(ls.out.find("secretlink/"), std::string::npos) << ls.out;
  struct stat st;
  ASSERT_EQ(lstat((mnt_ + "/secretlink").c_str(), &st), 0);
  EXPECT_TRUE(S_ISLNK(st.st_mode));
  EXPECT_EQ(mount.Umount().exit_code, 0);
}

TEST_F(HostileBackingTest, PosixAclsHoldThroughTheMountAsOnTheBackingStore) {
  // Root's files in the tree, each readable by its mode and changed by an ACL: one denies the
  // user what the mode bits give everyone, one grants the user what the mode bits deny, and a
  // directory's ACL denies the user the search its mode bits give.
  const std::string acls = backing_ + "/acls";
  MakeDirs(acls + "/closed");
  WriteFile(acls + "/denied", "denied bytes");
  WriteFile(acls + "/granted", "granted bytes");
  WriteFile(acls + "/closed/inside", "inside bytes");
  ASSERT_EQ(chmod((acls + "/denied").c_str(), 0644), 0);
  ASSERT_EQ(chmod((acls + "/granted").c_str(), 0600), 0);
  ASSERT_EQ(chmod((acls + "/closed/inside").c_str(), 0644), 0);
  const std::string user = std::to_string(kUser);
  CommandResult set =
      Shell("setfacl -m u:" + user + ":--- " + acls + "/denied && setfacl -m u:" + user + ":r " +
            acls + "/granted && setfacl -m u:" + user + ":--- " + acls + "/closed");
  ASSERT_EQ(set.exit_code, 0) << set.err;
  // What the backing store itself says, as the oracle.
  EXPECT_NE(AsUser("cat " + acls + "/denied").exit_code, 0);
  EXPECT_EQ(AsUser("cat " + acls + "/granted").out, "granted bytes");
  EXPECT_NE(AsUser("cat " + acls + "/closed/inside").exit_code, 0);

  ClairfsMount mount(backing_, mnt_, cache_);
  ASSERT_EQ(mount.Mount({"-o", "allow_other"}).exit_code, 0);
  const std::string m = mnt_ + "/acls";
  CommandResult denied = AsUser("cat " + m + "/denied");
  EXPECT_NE(denied.exit_code, 0) << denied.out;
  EXPECT_NE(denied.err.find("Permission denied"), std::string::npos) << denied.err;
  EXPECT_EQ(AsUser("cat " + m + "/granted").out, "granted bytes");
  CommandResult inside = AsUser("cat " + m + "/closed/inside");
  EXPECT_NE(inside.exit_code, 0) << inside.out;
  EXPECT_NE(inside.err.find("Permission denied"), std::string::npos) << inside.err;
  // Everyone else keeps what the mode bits give, and getfacl shows the backing store's ACL.
  EXPECT_EQ(ReadFile(m + "/denied"), "denied bytes");
  CommandResult shown = Shell("getfacl -cpn " + m + "/denied");
  EXPECT_NE(shown.out.find("user:" + user + ":---"), std::string::npos) << shown.out;
  EXPECT_EQ(mount.Umount().exit_code, 0);
}

// --revalidate open: a mode changed in the backing store applies at the very next open, in both
// directions (the kernel asks for fresh attributes when its cached ones deny; the daemon checks
// the fresh ones when they deny what the cached ones allowed).
TEST_F(HostileBackingTest, UnderRevalidateOpenAChangedModeAppliesAtThatOpen) {
  WriteFile(backing_ + "/e/closed", "was closed");
  WriteFile(backing_ + "/e/open", "was open");
  ASSERT_EQ(chmod((backing_ + "/e/closed").c_str(), 0600), 0);
  ASSERT_EQ(chmod((backing_ + "/e/open").c_str(), 0644), 0);
  ClairfsMount mount(backing_, mnt_, cache_);
  ASSERT_EQ(mount.Mount({"-o", "allow_other", "--revalidate", "open"}).exit_code, 0);
  EXPECT_NE(AsUser("cat " + mnt_ + "/e/closed").exit_code, 0);
  EXPECT_EQ(AsUser("cat " + mnt_ + "/e/open").out, "was open");
  ASSERT_EQ(chmod((backing_ + "/e/closed").c_str(), 0644), 0);
  ASSERT_EQ(chmod((backing_ + "/e/open").c_str(), 0600), 0);
  CommandResult now_open = AsUser("cat " + mnt_ + "/e/closed");
  EXPECT_EQ(now_open.exit_code, 0) << now_open.err;
  EXPECT_EQ(now_open.out, "was closed");
  CommandResult now_closed = AsUser("cat " + mnt_ + "/e/open");
  EXPECT_NE(now_closed.exit_code, 0) << now_closed.out;
  EXPECT_EQ(now_closed.out, "");
  EXPECT_EQ(mount.Umount().exit_code, 0);
}

// The same for the owner: a file of root's, 0600, given to the user by chown in the backing store
// opens for them at that very open, and taken back is refused at that very open.
TEST_F(HostileBackingTest, UnderRevalidateOpenAChangedOwnerAppliesAtThatOpen) {
  WriteFile(backing_ + "/e/given", "given bytes");
  ASSERT_EQ(chmod((backing_ + "/e/given").c_str(), 0600), 0);
  ClairfsMount mount(backing_, mnt_, cache_);
  ASSERT_EQ(mount.Mount({"-o", "allow_other", "--revalidate", "open"}).exit_code, 0);
  EXPECT_NE(AsUser("cat " + mnt_ + "/e/given").exit_code, 0);
  ASSERT_EQ(chown((backing_ + "/e/given").c_str(), kUser, kUser), 0);
  CommandResult now_theirs = AsUser("cat " + mnt_ + "/e/given");
  EXPECT_EQ(now_theirs.exit_code, 0) << now_theirs.err;
  EXPECT_EQ(now_theirs.out, "given bytes");
  ASSERT_EQ(chown((backing_ + "/e/given").c_str(), 0, 0), 0);
  CommandResult taken_back = AsUser("cat " + mnt_ + "/e/given");
  EXPECT_NE(taken_back.exit_code, 0) << taken_back.out;
  EXPECT_EQ(taken_back.out, "");
  EXPECT_EQ(mount.Umount().exit_code, 0);
}

// --revalidate never (the default): the user rewrites files of theirs while root's mount serves
// them. The staged one keeps serving the version listed at mount; the unstaged one is refused
// (ESTALE, counted), never served in its new version or size.
TEST_F(HostileBackingTest, WithoutRevalidationAUsersRewriteIsServedAsListedOrRefused) {
  ClairfsMount mount(backing_, mnt_, cache_);
  ASSERT_EQ(
      mount.Mount({"-o", "allow_other", "--no-read-through", "--passthrough", "off"}).exit_code, 0);
  ASSERT_EQ(testing::Run({ClairfsBin(), "stage", mnt_, "d/shadow", "--wait"}).exit_code, 0);
  CommandResult rewritten =
      AsUser("cd " + backing_ + " && printf BBBB > d/shadow && printf 'another version' > e/file");
  ASSERT_EQ(rewritten.exit_code, 0) << rewritten.err;
  EXPECT_EQ(AsUser("cat " + mnt_ + "/d/shadow").out, std::string(8192, 'A'));
  CommandResult unstaged = AsUser("cat " + mnt_ + "/e/file");
  EXPECT_NE(unstaged.exit_code, 0) << unstaged.out;
  EXPECT_EQ(unstaged.out, "");
  EXPECT_NE(unstaged.err.find("Stale file handle"), std::string::npos) << unstaged.err;
  EXPECT_GE(mount.Status().value("not_as_listed", 0), 1);
  EXPECT_EQ(mount.Umount().exit_code, 0);
}

}  // namespace
}  // namespace clairfs::testing
