// Integration tests of bounded inputs and strict arguments (issue 17, items 8 and 10), through
// the real `clairfs` binary and real mounts:
//   - list files (plan and layout) that are /dev/zero, a FIFO or a sparse file over the bound are
//     refused at once by `plan show`, `simulate` and a running mount's `plan set` (the daemon
//     stays up and keeps serving);
//   - unknown commands, negative and malformed numbers, sizes such as -0 and 1e3, a setting
//     given twice, --layout without --plan: usage errors naming what is wrong;
//   - --min-free above the device and an unwritable --log-file fail the mount, leaving nothing
//     mounted; a relative --log-file is the caller's;
//   - fsck by a user who may not read the cache says so (not "no FORMAT file");
//   - the PFS emulator shows the backing files' inode numbers, so copies staged over it survive
//     an emulator restart.
// Every mount is owned by a guard that unmounts it even when an assertion fails.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/mount_helpers.h"
#include "tests/test_util.h"
#include "tests/user_fuse_namespace.h"

namespace clairfs {
namespace {

using testing::ClairfsBin;
using testing::ClairfsMount;
using testing::Cli;
using testing::CommandResult;
using testing::IsFuseMounted;
using testing::MakeDirs;
using testing::MountGuard;
using testing::WriteFile;

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void MakeSparse(const std::string& path, uint64_t size) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
  close(fd);
}

// A FIFO, /dev/zero and a sparse file one byte over the 1 GiB bound.
class BadListFiles : public testing::MountDirsTest {
 protected:
  void SetUp() override {
    MountDirsTest::SetUp();
    fifo_ = dir_ / "fifo";
    ASSERT_EQ(mkfifo(fifo_.c_str(), 0600), 0);
    huge_ = dir_ / "huge.list";
    ASSERT_NO_FATAL_FAILURE(MakeSparse(huge_, (uint64_t{1} << 30) + 1));
    for (int i = 0; i < 6; ++i) WriteFile(backing_ + "/c/img" + std::to_string(i) + ".jpg", "x");
  }
  std::vector<std::string> Bad() const { return {"/dev/zero", fifo_, huge_}; }
  std::string fifo_, huge_;
};

TEST_F(BadListFiles, PlanShowAndSimulateRefuseThemAtOnce) {
  for (const std::string& file : Bad()) {
    const auto start = std::chrono::steady_clock::now();
    CommandResult r = Cli({"plan", "show", "--plan", "list:" + file, "--epoch", "0"});
    EXPECT_LT(SecondsSince(start), 10.0) << file;
    EXPECT_EQ(r.exit_code, 2) << file << ": " << r.err;
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("bad_alloc"), std::string::npos) << r.err;

    r = Cli({"plan", "show", "--backing", backing_, "--plan", "sequential", "--layout",
             "list:" + file, "--epoch", "0"});
    EXPECT_EQ(r.exit_code, 2) << file << ": " << r.err;
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;

    r = Cli({"simulate", "--backing", backing_, "--plan", "list:" + file, "--capacity", "1M"});
    EXPECT_EQ(r.exit_code, 2) << file << ": " << r.err;
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
  }
  CommandResult r = Cli({"plan", "show", "--plan", "list:/dev/zero", "--epoch", "0"});
  EXPECT_NE(r.err.find("character device"), std::string::npos) << r.err;
  r = Cli({"plan", "show", "--plan", "list:" + huge_, "--epoch", "0"});
  EXPECT_NE(r.err.find("1.0 GiB"), std::string::npos) << r.err;
}

TEST_F(BadListFiles, APlanSetOnAMountIsRefusedAndTheDaemonStaysUp) {
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  const pid_t pid = m.pid();
  ASSERT_GT(pid, 0);
  for (const std::string& file : Bad()) {
    const auto start = std::chrono::steady_clock::now();
    CommandResult r = Cli({"plan", "set", mnt_, "--plan", "list:" + file});
    EXPECT_LT(SecondsSince(start), 10.0) << file;
    EXPECT_NE(r.exit_code, 0) << file;
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
    r = Cli({"plan", "set", mnt_, "--plan", "sequential", "--layout", "list:" + file});
    EXPECT_NE(r.exit_code, 0) << file;
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
    // Alive, serving, and without a plan.
    EXPECT_EQ(kill(pid, 0), 0);
    auto status = m.Status();
    ASSERT_FALSE(status.empty()) << file;
    EXPECT_TRUE(status["plan"].is_null()) << status["plan"].dump();
    EXPECT_EQ(testing::ReadFile(mnt_ + "/c/img0.jpg"), "x");
  }
  // A good list is still taken.
  WriteFile(dir_ / "good.list", "# epoch 0\nc/img1.jpg\nc/img0.jpg\n# epoch 1\nc/img0.jpg\n");
  CommandResult r = Cli({"plan", "set", mnt_, "--plan", "list:" + (dir_ / "good.list")});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(m.Status()["plan"].is_null());
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// Another user of root's mount (allow_other: they may read it) asks it to take a list plan or
// layout from /dev/zero, a FIFO or an oversized file: refused as not theirs to change, before the
// daemon opens anything (an open of the FIFO would hold the request), and the daemon serves on
// without a plan. The same files given to their own `plan show` and `simulate` are refused at once.
TEST_F(BadListFiles, AnotherUsersPlanSetIsRefusedBeforeTheFileIsOpened) {
  if (!testing::CanRunAsOtherUsers()) GTEST_SKIP() << "needs root and setpriv";
  constexpr uid_t kNobody = 65534;
  ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
  ASSERT_EQ(chmod(fifo_.c_str(), 0666), 0);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"-o", "allow_other"}).exit_code, 0);
  const pid_t pid = m.pid();
  ASSERT_GT(pid, 0);
  const std::string denied = "permission denied: only root or the user who mounted (uid 0)";
  for (const std::string& file : Bad()) {
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"plan", "set", mnt_, "--plan", "list:" + file},
          std::vector<std::string>{"plan", "set", mnt_, "--plan", "sequential", "--layout",
                                   "list:" + file}}) {
      const auto start = std::chrono::steady_clock::now();
      std::vector<std::string> argv = {ClairfsBin()};
      argv.insert(argv.end(), args.begin(), args.end());
      CommandResult r = testing::RunAs(kNobody, argv, 30);
      EXPECT_LT(SecondsSince(start), 10.0) << file;
      EXPECT_EQ(r.exit_code, 1) << file << ": " << r.err;
      EXPECT_NE(r.err.find(denied), std::string::npos) << r.err;
    }
    const auto start = std::chrono::steady_clock::now();
    CommandResult r = testing::RunAs(
        kNobody, {ClairfsBin(), "plan", "show", "--plan", "list:" + file, "--epoch", "0"}, 30);
    EXPECT_LT(SecondsSince(start), 10.0) << file;
    EXPECT_EQ(r.exit_code, 2) << file << ": " << r.err;
    EXPECT_NE(r.err.find(file), std::string::npos) << r.err;
    r = testing::RunAs(kNobody,
                       {ClairfsBin(), "simulate", "--backing", backing_, "--plan", "list:" + file,
                        "--capacity", "1M"},
                       30);
    EXPECT_EQ(r.exit_code, 2) << file << ": " << r.err;
    // Alive, serving the other user, and without a plan.
    EXPECT_EQ(kill(pid, 0), 0);
    EXPECT_TRUE(m.Status()["plan"].is_null());
    EXPECT_EQ(testing::RunAs(kNobody, {"cat", mnt_ + "/c/img0.jpg"}).out, "x");
  }
  CommandResult r = testing::RunAs(kNobody, {ClairfsBin(), "plan", "clear", mnt_});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(denied), std::string::npos) << r.err;
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST(CliArguments, UnknownCommandsAreNamedAndExitTwo) {
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"frobnicate"}, std::vector<std::string>{"frobnicate", "--help"},
        std::vector<std::string>{"frobnicate", "x", "-h"}}) {
    CommandResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 2) << args.size();
    EXPECT_NE(r.err.find("clairfs: unknown command 'frobnicate'"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("mount"), std::string::npos) << r.err;  // the list of commands
    EXPECT_EQ(r.out, "");                                        // no help on stdout
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"plan", "frobnicate", "--help"},
        std::vector<std::string>{"plan", "--log-level", "debug", "frobnicate"},
        std::vector<std::string>{"bench", "frobnicate"},
        std::vector<std::string>{"darshan", "frobnicate"}}) {
    CommandResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 2) << args[0];
    EXPECT_NE(r.err.find("clairfs " + args[0] + ": unknown command 'frobnicate'"),
              std::string::npos)
        << r.err;
  }
  // Known commands keep their help and exit 0.
  EXPECT_EQ(Cli({"--help"}).exit_code, 0);
  EXPECT_EQ(Cli({"plan", "--help"}).exit_code, 0);
  EXPECT_EQ(Cli({"plan", "show", "--help"}).exit_code, 0);
}

TEST(CliArguments, NegativeAndMalformedNumbersNameTheFlag) {
  testing::TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string flag;
  };
  const std::vector<Case> cases = {
      {{"bench", "make-dataset", dir / "ds", "--files", "-1"}, "--files"},
      {{"bench", "make-dataset", dir / "ds", "--files", "0x10"}, "--files"},
      {{"simulate", "--files", "-1", "--sizes", "fixed:4K", "--plan", "sequential", "--capacity",
        "1M"},
       "--files"},
      {{"simulate", "--files", "10", "--sizes", "fixed:4K", "--plan", "sequential", "--capacity",
        "1M", "--epochs", "-3"},
       "--epochs"},
      {{"demo", "--files", "-1"}, "--files"},
      {{"plan", "show", "--plan", "sequential", "--epoch", "-1"}, "--epoch"},
      {{"simulate", "--files", "10", "--sizes", "fixed:4K", "--plan", "sequential", "--capacity",
        "-0"},
       "--capacity"},
      {{"simulate", "--files", "10", "--sizes", "fixed:4K", "--plan", "sequential", "--capacity",
        "1e3"},
       "--capacity"},
  };
  for (const Case& c : cases) {
    CommandResult r = Cli(c.args);
    EXPECT_EQ(r.exit_code, 2) << c.args[0] << " " << c.flag << ": " << r.err;
    EXPECT_NE(r.err.find(c.flag), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("18446744073709551615"), std::string::npos) << r.err;
  }
  EXPECT_FALSE(testing::PathExists(dir / "ds"));
  // Plain decimal is decimal: "010" files are ten (CLI11 alone reads it as octal 8).
  CommandResult r =
      Cli({"bench", "make-dataset", dir / "ds", "--files", "010", "--sizes", "fixed:1K", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(nlohmann::json::parse(r.out).value("files", 0), 10);
}

class MountArguments : public testing::MountDirsTest {
 protected:
  void SetUp() override {
    MountDirsTest::SetUp();
    WriteFile(backing_ + "/f", "content");
  }
  void ExpectRefused(const std::vector<std::string>& extra, int code, const std::string& phrase) {
    ClairfsMount m(backing_, mnt_, cache_);
    CommandResult r = m.Mount(extra);
    EXPECT_EQ(r.exit_code, code) << extra[0] << ": " << r.err;
    EXPECT_NE(r.err.find(phrase), std::string::npos) << r.err;
    EXPECT_FALSE(IsFuseMounted(mnt_));
  }
};

TEST_F(MountArguments, BadSizesRepeatsAndPlanlessLayoutsAreUsageErrors) {
  ExpectRefused({"--capacity", "-0"}, 2, "--capacity");
  ExpectRefused({"--capacity", "1e3"}, 2, "--capacity (-o capacity): invalid size '1e3'");
  ExpectRefused({"--min-free", "0x10"}, 2, "--min-free (-o min_free): invalid size '0x10'");
  ExpectRefused({"--stage-threads", "-1"}, 2, "--stage-threads");
  ExpectRefused({"-o", "capacity=1G", "-o", "capacity=2G"}, 2,
                "--capacity (-o capacity) given twice");
  ExpectRefused({"-o", "capacity=1G,capacity=2G"}, 2, "given twice");
  ExpectRefused({"--capacity", "1G", "-o", "capacity=2G"}, 2, "given twice");
  ExpectRefused({"--layout", "bogus"}, 2, "--layout (-o layout) needs --plan");
  ExpectRefused({"--layout-root", "train"}, 2, "needs --plan");
  ExpectRefused({"--plan", "sequential", "--layout", "bogus"}, 2, "layout 'bogus'");
}

TEST_F(MountArguments, AFreeSpaceFloorAboveTheDeviceFailsTheMount) {
  ExpectRefused({"--min-free", "999P"}, 1, "--min-free");
  ClairfsMount m(backing_, mnt_, cache_);
  CommandResult r = m.Mount({"--min-free", "999P"});
  EXPECT_NE(r.err.find("999.0 PiB is not below the size of the cache device"), std::string::npos)
      << r.err;
}

TEST_F(MountArguments, AnUnwritableLogFileFailsTheMount) {
  ExpectRefused({"--log-file", dir_ / "no/such/dir/daemon.log"}, 1, "--log-file");
  ExpectRefused({"--log-file", dir_.path()}, 1, "--log-file");
  ExpectRefused({"-o", "log_file=" + (dir_ / "no/such/dir/daemon.log")}, 1, "cannot be written");
}

TEST_F(MountArguments, ARelativeLogFileIsTheCallersAndGetsTheDaemonsLines) {
  MakeDirs(dir_ / "work");
  MountGuard guard(mnt_);
  CommandResult r =
      testing::Shell("cd '" + (dir_ / "work") + "' && '" + ClairfsBin() + "' mount '" + backing_ +
                     "' '" + mnt_ + "' --cache '" + cache_ + "' --log-file daemon.log");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Cli({"umount", mnt_}).exit_code, 0);
  const std::string log = testing::ReadFile(dir_ / "work/daemon.log");
  EXPECT_NE(log.find("unmounting"), std::string::npos) << log;
}

TEST_F(MountArguments, ARelativeListFileOfAPlanIsTheCallers) {
  MakeDirs(dir_ / "work");
  WriteFile(dir_ / "work/plan.list", "# epoch 0\nf\n# epoch 1\nf\n");
  MountGuard guard(mnt_);
  // The daemon reads the list after it moved to "/": the command makes the path absolute.
  CommandResult r =
      testing::Shell("cd '" + (dir_ / "work") + "' && '" + ClairfsBin() + "' mount '" + backing_ +
                     "' '" + mnt_ + "' --cache '" + cache_ + "' --plan list:plan.list");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  CommandResult status = Cli({"status", mnt_, "--json"});
  ASSERT_EQ(status.exit_code, 0) << status.err;
  const auto plan = nlohmann::json::parse(status.out)["plan"];
  ASSERT_FALSE(plan.is_null());
  EXPECT_NE(plan.dump().find(dir_ / "work/plan.list"), std::string::npos) << plan.dump();
  EXPECT_EQ(Cli({"umount", mnt_}).exit_code, 0);
}

TEST_F(MountArguments, FsckByAUserWhoCannotReadTheCacheSaysSo) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run fsck as nobody";
  if (testing::Run({"sh", "-c", "command -v setpriv"}).exit_code != 0) {
    GTEST_SKIP() << "no setpriv";
  }
  {
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount().exit_code, 0);
    ASSERT_EQ(m.Umount().exit_code, 0);
  }
  ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);  // the cache itself stays 0700
  CommandResult r = testing::Run({"setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                  ClairfsBin(), "fsck", "--cache", cache_});
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("owner or root"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("no FORMAT"), std::string::npos) << r.err;
  // The owner's fsck finds the cache consistent.
  EXPECT_EQ(Cli({"fsck", "--cache", cache_}).exit_code, 0);
}

// A user's own mount (nobody, in a private mount namespace) cannot aim its log at a file of
// root's: the mount command opens the log as the user, is refused, and fails before anything is
// mounted; the file is left as it was.
TEST(UserMountArguments, ALogFileTheUserMayNotWriteFailsTheMount) {
  testing::UserFuseNamespace ns;
  if (!ns.ok()) GTEST_SKIP() << ns.error();
  testing::TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const std::string backing = dir / "back", mnt = dir / "mnt", cache = dir / "cache";
  WriteFile(backing + "/f", "content");
  MakeDirs(mnt);
  MakeDirs(cache);
  ASSERT_EQ(testing::Run({"chown", "-R", "65534:65534", backing, mnt, cache}).exit_code, 0);
  const std::string roots = dir / "roots.log";
  WriteFile(roots, "root's own lines\n");
  ASSERT_EQ(chmod(roots.c_str(), 0644), 0);
  ns.Track(mnt);
  for (const std::vector<std::string>& how :
       {std::vector<std::string>{"--log-file", roots},
        std::vector<std::string>{"-o", "log_file=" + roots}}) {
    std::vector<std::string> args = {"mount", backing, mnt, "--cache", cache};
    args.insert(args.end(), how.begin(), how.end());
    CommandResult r = ns.Clairfs(65534, args);
    EXPECT_EQ(r.exit_code, 1) << how[0] << ": " << r.err;
    EXPECT_NE(r.err.find("cannot be written"), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("Permission denied"), std::string::npos) << r.err;
    EXPECT_EQ(ns.Clairfs(65534, {"status", mnt}).exit_code, 1) << "something was mounted";
  }
  EXPECT_EQ(testing::ReadFile(roots), "root's own lines\n");
}

// The emulator between the backing tree and clairfs, restarted while clairfs is not mounted.
class PfsEmuRestart : public testing::MountDirsTest {
 protected:
  void StartEmulator() {
    emulator_ = std::make_unique<MountGuard>(emu_);
    CommandResult r = Cli({"pfs-emu", backing_, emu_});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    ASSERT_TRUE(IsFuseMounted(emu_));
    emulator_->set_pid(testing::DaemonPid(emu_));
  }
  void StopEmulator() {
    ASSERT_EQ(testing::Run({"fusermount3", "-u", emu_}).exit_code, 0);
    emulator_.reset();
  }
  ino_t InodeOf(const std::string& path) {
    struct stat st;
    EXPECT_EQ(stat(path.c_str(), &st), 0) << path;
    return st.st_ino;
  }

  std::string emu_ = dir_ / "emu";
  std::unique_ptr<MountGuard> emulator_;
};

TEST_F(PfsEmuRestart, CopiesStagedOverTheEmulatorSurviveItsRestart) {
  MakeDirs(emu_);
  std::vector<std::string> files;
  for (int i = 0; i < 12; ++i) {
    files.push_back("d" + std::to_string(i % 3) + "/f" + std::to_string(i));
    WriteFile(backing_ + "/" + files.back(), testing::RandomBytes(3000 + i, i));
  }
  ASSERT_NO_FATAL_FAILURE(StartEmulator());
  for (const std::string& f : files) {
    EXPECT_EQ(InodeOf(emu_ + "/" + f), InodeOf(backing_ + "/" + f)) << f;
  }
  {
    ClairfsMount m(emu_, mnt_, cache_);
    ASSERT_EQ(m.Mount({"--no-read-through"}).exit_code, 0);
    ASSERT_EQ(Cli({"stage", mnt_, "--wait"}).exit_code, 0);
    EXPECT_EQ(m.Status().value("staged_files", 0), 12);
    ASSERT_EQ(m.Umount().exit_code, 0);
  }
  ASSERT_NO_FATAL_FAILURE(StopEmulator());
  ASSERT_NO_FATAL_FAILURE(StartEmulator());
  // Looked up in another order than clairfs's listing did before: numbers handed out in lookup
  // order would now differ, and clairfs would drop every copy whose inode changed.
  for (auto it = files.rbegin(); it != files.rend(); ++it) {
    EXPECT_EQ(InodeOf(emu_ + "/" + *it), InodeOf(backing_ + "/" + *it)) << *it;
  }
  {
    ClairfsMount m(emu_, mnt_, cache_);
    ASSERT_EQ(m.Mount({"--no-read-through"}).exit_code, 0);
    auto status = m.Status();
    EXPECT_EQ(status.value("staged_files", 0), 12) << status.dump();
    for (const std::string& f : files) {
      EXPECT_EQ(testing::ReadFile(mnt_ + "/" + f), testing::ReadFile(backing_ + "/" + f)) << f;
    }
    EXPECT_EQ(m.Status().value("hits", 0), 12);
    ASSERT_EQ(m.Umount().exit_code, 0);
  }
  ASSERT_NO_FATAL_FAILURE(StopEmulator());
}

}  // namespace
}  // namespace clairfs
