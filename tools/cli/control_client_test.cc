// ConnectTrusted: a socket served by another uid than the mount's owner is refused.
#include "tools/cli/control_client.h"

#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstring>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace clairfs::cli {
namespace {

TEST(ControlClientTest, RefusesASocketServedByAnotherUid) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to serve a socket as another uid";
  testing::TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0777), 0);
  const std::string path = dir / "forged.sock";
  int ready[2];
  ASSERT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    close(ready[0]);
    if (setresgid(4242, 4242, 4242) != 0 || setresuid(4242, 4242, 4242) != 0) _exit(99);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un addr {};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    if (bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0 ||
        listen(fd, 8) != 0) {
      _exit(98);
    }
    if (write(ready[1], "r", 1) != 1) _exit(97);
    for (;;) {
      int c = accept(fd, nullptr, nullptr);
      const char forged[] = "{\"ok\":true,\"evicted\":12345}\n";
      if (c >= 0 && write(c, forged, sizeof(forged) - 1) < 0) _exit(96);
    }
  }
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  close(ready[0]);
  auto refused = ConnectTrusted(path, 0);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), EPERM);
  EXPECT_NE(refused.status().message().find(
                "is served by uid 4242, not by the mount's owner uid 0; not trusting it"),
            std::string::npos)
      << refused.status().message();
  auto trusted = ConnectTrusted(path, 4242);
  ASSERT_TRUE(trusted.ok()) << trusted.status().message();
  close(*trusted);
  EXPECT_EQ(ConnectTrusted(dir / "missing.sock", 0).status().code(), ENOENT);
  kill(pid, SIGKILL);
  waitpid(pid, nullptr, 0);
}

}  // namespace
}  // namespace clairfs::cli
