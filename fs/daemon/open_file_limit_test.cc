// RaiseOpenFileLimit: the soft limit ends at the hard one, and a lowered soft limit is raised.
#include "fs/daemon/open_file_limit.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

namespace clairfs {
namespace {

TEST(OpenFileLimitTest, RaisesALoweredSoftLimitToTheHardLimit) {
  // In a child: the test process's own limits stay as they were.
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    rlimit lim{};
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_max < 512) _exit(10);
    const rlim_t hard = lim.rlim_max;
    lim.rlim_cur = 256;
    if (setrlimit(RLIMIT_NOFILE, &lim) != 0) _exit(11);
    OpenFileLimit got = RaiseOpenFileLimit();
    if (!got.error.empty()) _exit(12);
    if (got.before != 256 || got.after != hard) _exit(13);
    if (getrlimit(RLIMIT_NOFILE, &lim) != 0 || lim.rlim_cur != hard) _exit(14);
    // At the hard limit already: nothing to do, reported as such.
    got = RaiseOpenFileLimit();
    _exit(got.error.empty() && got.before == hard && got.after == hard ? 0 : 15);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

}  // namespace
}  // namespace clairfs
