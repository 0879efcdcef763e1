// The control socket's directory: candidates, the checks that refuse another user's or a writable
// directory, symlinks and files, the fallback a pre-created path cannot block, and the daemon's
// liveness lock.
#include "fs/control/control_socket_dir.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace clairfs {
namespace {

TEST(ControlSocketDirTest, Candidates) {
  EXPECT_EQ(ControlDirCandidates(0, "/run/user/0"), std::vector<std::string>{"/run/clairfs"});
  EXPECT_EQ(ControlDirCandidates(1000, "/run/user/1000"),
            (std::vector<std::string>{"/run/user/1000/clairfs", "/run/user/1000/clairfs",
                                      "/tmp/clairfs-1000"}));
  EXPECT_EQ(ControlDirCandidates(1000, nullptr),
            (std::vector<std::string>{"/run/user/1000/clairfs", "/tmp/clairfs-1000"}));
  EXPECT_EQ(ControlDirCandidates(1000, "relative/dir"),
            (std::vector<std::string>{"/run/user/1000/clairfs", "/tmp/clairfs-1000"}));
  EXPECT_EQ(ControlFileStem("/datasets/imagenet").size(), 16u);
  EXPECT_NE(ControlFileStem("/a"), ControlFileStem("/b"));
}

class ControlDirCheckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to create other users' directories";
    ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
  }
  std::string Make(const std::string& name, mode_t mode, uid_t owner = 0) {
    std::string path = dir_ / name;
    EXPECT_EQ(mkdir(path.c_str(), 0700), 0);
    EXPECT_EQ(chmod(path.c_str(), mode), 0);
    EXPECT_EQ(chown(path.c_str(), owner, owner), 0);
    return path;
  }
  testing::TempDir dir_;
};

TEST_F(ControlDirCheckTest, OnlyAnOwnDirectoryNobodyElseCanWriteIsUsed) {
  EXPECT_TRUE(CheckControlDir(Make("good", 0700), 0).ok());
  EXPECT_TRUE(CheckControlDir(Make("reachable", 0711), 0).ok());
  Status st = CheckControlDir(Make("open", 0777), 0);
  EXPECT_EQ(st.code(), EPERM);
  EXPECT_NE(st.message().find("writable by group or others (mode 0777"), std::string::npos)
      << st.message();
  st = CheckControlDir(Make("theirs", 0700, 4242), 0);
  EXPECT_NE(st.message().find("owned by uid 4242, not by uid 0"), std::string::npos)
      << st.message();
  EXPECT_TRUE(CheckControlDir(dir_ / "theirs", 4242).ok());
  const std::string link = dir_ / "link";
  ASSERT_EQ(symlink((dir_ / "good").c_str(), link.c_str()), 0);
  st = CheckControlDir(link, 0);
  EXPECT_EQ(st.code(), ELOOP);
  EXPECT_NE(st.message().find("symbolic link"), std::string::npos) << st.message();
  testing::WriteFile(dir_ / "file", "x");
  st = CheckControlDir(dir_ / "file", 0);
  EXPECT_EQ(st.code(), ENOTDIR);
  EXPECT_EQ(CheckControlDir(dir_ / "missing", 0).code(), ENOENT);
}

TEST_F(ControlDirCheckTest, ADirectoryAboveThatOthersMayWriteIsRefusedUnlessSticky) {
  const std::string open = Make("open", 0777);
  const std::string inner = open + "/inner";
  ASSERT_EQ(mkdir(inner.c_str(), 0700), 0);
  Status st = CheckControlDir(inner, 0);
  EXPECT_NE(st.message().find("is writable by others"), std::string::npos) << st.message();
  ASSERT_EQ(chmod(open.c_str(), 01777), 0);  // like /tmp
  EXPECT_TRUE(CheckControlDir(inner, 0).ok());
  const std::string theirs = Make("theirs", 0755, 4242);
  const std::string mine = theirs + "/mine";
  ASSERT_EQ(mkdir(mine.c_str(), 0700), 0);
  st = CheckControlDir(mine, 0);
  EXPECT_NE(st.message().find("is owned by uid 4242"), std::string::npos) << st.message();
}

// A daemon of uid 4245 whose /tmp/clairfs-4245 someone else prepared (0777, a symlink, a file)
// still gets a directory of its own.
TEST_F(ControlDirCheckTest, APreparedPathCannotBlockTheChoice) {
  const std::string predictable = "/tmp/clairfs-4245";
  auto clear = [&] { std::filesystem::remove_all(predictable); };
  clear();
  for (const std::string kind : {"dir0777", "symlink", "file", "none"}) {
    if (kind == "dir0777") {
      ASSERT_EQ(mkdir(predictable.c_str(), 0777), 0);
      ASSERT_EQ(chmod(predictable.c_str(), 0777), 0);
    } else if (kind == "symlink") {
      ASSERT_EQ(symlink(dir_.path().c_str(), predictable.c_str()), 0);
    } else if (kind == "file") {
      testing::WriteFile(predictable, "x");
    }
    int p[2];
    ASSERT_EQ(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      if (setresgid(4245, 4245, 4245) != 0 || setresuid(4245, 4245, 4245) != 0) _exit(99);
      unsetenv("XDG_RUNTIME_DIR");
      auto chosen = ChooseControlDir(4245);
      std::string out = chosen.ok() ? *chosen : "ERR " + chosen.status().message();
      _exit(write(p[1], out.data(), out.size()) == static_cast<ssize_t>(out.size()) ? 0 : 1);
    }
    close(p[1]);
    std::string chosen;
    char buf[512];
    ssize_t n;
    while ((n = read(p[0], buf, sizeof(buf))) > 0) chosen.append(buf, static_cast<size_t>(n));
    close(p[0]);
    int status = 0;
    waitpid(pid, &status, 0);
    ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << kind;
    if (kind == "none") {
      EXPECT_EQ(chosen, predictable) << kind;
    } else {
      EXPECT_EQ(chosen.rfind("/tmp/clairfs-4245-", 0), 0u) << kind << ": " << chosen;
    }
    EXPECT_TRUE(CheckControlDir(chosen, 4245).ok()) << kind << ": " << chosen;
    struct stat st;
    ASSERT_EQ(stat(chosen.c_str(), &st), 0) << chosen;
    EXPECT_EQ(st.st_mode & 07777, 0711u) << kind;
    if (kind != "none") std::filesystem::remove_all(chosen);
    clear();
  }
}

TEST(DaemonLockTest, HeldUntilDestroyedAndSeenByUmount) {
  testing::TempDir dir;
  const std::string mountpoint = "/datasets/x";
  const std::string path = dir / (ControlFileStem(mountpoint) + ".lock");
  auto lock = DaemonLock::Acquire(path);
  ASSERT_TRUE(lock.ok()) << lock.status().message();
  EXPECT_FALSE(DaemonLock::Acquire(path).ok());  // one daemon per mountpoint
  HeldDaemonLock held = OpenHeldDaemonLock(dir.path(), mountpoint, geteuid());
  ASSERT_GE(held.fd, 0);
  EXPECT_EQ(held.pid, getpid());
  EXPECT_TRUE(DaemonLockHeld(held.fd));
  EXPECT_EQ(OpenHeldDaemonLock(dir.path(), mountpoint, geteuid() + 1).fd, -1);  // not its owner's
  EXPECT_EQ(OpenHeldDaemonLock(dir.path(), "/datasets/y", geteuid()).fd, -1);
  lock->reset();
  EXPECT_FALSE(DaemonLockHeld(held.fd));
  EXPECT_FALSE(testing::PathExists(path));
  close(held.fd);
  EXPECT_EQ(OpenHeldDaemonLock(dir.path(), mountpoint, geteuid()).fd, -1);
}

}  // namespace
}  // namespace clairfs
