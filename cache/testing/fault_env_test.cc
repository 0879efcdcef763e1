// Tests of FaultInjectionEnv itself: the Nth-call and path faults fire exactly where asked, fd
// operations match the path they were opened with, short reads, the crash point, and counting.
#include "cache/testing/fault_env.h"

#include <fcntl.h>

#include <string>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::TempDir;
using testing::WriteFile;

TEST(FaultEnvTest, NthCallFailsOnceWithTheGivenErrno) {
  TempDir tmp;
  WriteFile(tmp / "f", "x");
  FaultInjectionEnv env;
  struct stat st;
  ASSERT_TRUE(env.Lstat(tmp / "f", &st).ok());
  env.FailNth(FaultOp::kLstat, 2, ENOSPC);  // counted from now: the 3rd call overall
  EXPECT_TRUE(env.Lstat(tmp / "f", &st).ok());
  Status second = env.Lstat(tmp / "f", &st);
  EXPECT_EQ(second.code(), ENOSPC);
  EXPECT_NE(second.message().find("injected"), std::string::npos);
  EXPECT_TRUE(env.Lstat(tmp / "f", &st).ok());
  EXPECT_EQ(env.calls(FaultOp::kLstat), 4u);
  EXPECT_EQ(env.calls(FaultOp::kOpen), 0u);
}

TEST(FaultEnvTest, PathFaultsMatchFdOperationsByTheirOpenPath) {
  TempDir tmp;
  WriteFile(tmp / "good", "good bytes");
  WriteFile(tmp / "bad", "bad bytes");
  FaultInjectionEnv env;
  env.FailPath(FaultOp::kPread, "/bad", EIO);
  auto good = env.Open(tmp / "good", O_RDONLY, 0);
  auto bad = env.Open(tmp / "bad", O_RDONLY, 0);
  ASSERT_TRUE(good.ok() && bad.ok());
  char buf[16];
  EXPECT_TRUE(env.Pread(*good, buf, sizeof(buf), 0).ok());
  EXPECT_EQ(env.Pread(*bad, buf, sizeof(buf), 0).status().code(), EIO);
  EXPECT_TRUE(env.Close(*good).ok());
  EXPECT_TRUE(env.Close(*bad).ok());
  env.FailPath(FaultOp::kAny, "/good", EACCES);
  EXPECT_EQ(env.Open(tmp / "good", O_RDONLY, 0).status().code(), EACCES);
  env.ClearFaults();
  auto again = env.Open(tmp / "good", O_RDONLY, 0);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(env.Close(*again).ok());
}

TEST(FaultEnvTest, ShortReadsReturnPiecesButAllBytes) {
  TempDir tmp;
  std::string data = testing::RandomBytes(10000, 1);
  WriteFile(tmp / "f", data);
  FaultInjectionEnv env;
  env.SetShortReads(777);
  auto fd = env.Open(tmp / "f", O_RDONLY, 0);
  ASSERT_TRUE(fd.ok());
  std::string got;
  char buf[4096];
  for (;;) {
    auto n = env.Pread(*fd, buf, sizeof(buf), static_cast<off_t>(got.size()));
    ASSERT_TRUE(n.ok());
    if (*n == 0) break;
    EXPECT_LE(*n, 777u);
    got.append(buf, *n);
  }
  EXPECT_EQ(got, data);
  EXPECT_EQ(env.calls(FaultOp::kPread), 10000u / 777 + 2);
  EXPECT_TRUE(env.Close(*fd).ok());
}

TEST(FaultEnvTest, CrashStopsEverythingAfterKStepsAndTouchesNothing) {
  TempDir tmp;
  WriteFile(tmp / "a", "a");
  FaultInjectionEnv env;
  env.SetTracing(true);
  env.CrashAfter(2);
  struct stat st;
  EXPECT_TRUE(env.Lstat(tmp / "a", &st).ok());
  auto fd = env.Open(tmp / "a", O_RDONLY, 0);
  ASSERT_TRUE(fd.ok());
  EXPECT_FALSE(env.crashed());
  EXPECT_EQ(env.Rename(tmp / "a", tmp / "b").code(), EIO);
  EXPECT_TRUE(env.crashed());
  EXPECT_EQ(env.Unlink(tmp / "a").code(), EIO);
  EXPECT_EQ(env.Close(*fd).code(), EIO);  // reported as failed, but the fd is released
  EXPECT_TRUE(testing::PathExists(tmp / "a"));
  EXPECT_FALSE(testing::PathExists(tmp / "b"));
  EXPECT_EQ(env.trace().size(), 5u);
  EXPECT_EQ(env.trace()[2].rfind("rename ", 0), 0u);
  env.ClearFaults();
  EXPECT_FALSE(env.crashed());
  EXPECT_TRUE(env.Unlink(tmp / "a").ok());
}

TEST(FaultEnvTest, FreeBytesOverrideStatvfs) {
  TempDir tmp;
  FaultInjectionEnv env;
  env.SetFreeBytes(123 * 4096);
  struct statvfs vfs;
  ASSERT_TRUE(env.StatVfs(tmp.path(), &vfs).ok());
  EXPECT_EQ(static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize, 123u * 4096);
  env.SetFreeBytes(std::nullopt);
  ASSERT_TRUE(env.StatVfs(tmp.path(), &vfs).ok());
  EXPECT_NE(static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize, 123u * 4096);
}

}  // namespace
}  // namespace clairfs
