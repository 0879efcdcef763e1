// ReaderProcesses: threads map to their process, workers to the process that forked them, a
// launcher's ranks stay apart (fake /proc trees), and a real forked child maps to this process.
#include "fs/prefetch/reader_processes.h"

#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace clairfs {
namespace {

using namespace std::string_literals;

void FakeProcess(const std::string& root, int pid, int tgid, int ppid, const std::string& cmdline) {
  testing::MakeDirs(root + "/" + std::to_string(pid));
  testing::WriteFile(root + "/" + std::to_string(pid) + "/status",
                     "Name:\tpython3\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t" +
                         std::to_string(tgid) + "\nNgid:\t0\nPid:\t" + std::to_string(pid) +
                         "\nPPid:\t" + std::to_string(ppid) + "\n");
  testing::WriteFile(root + "/" + std::to_string(pid) + "/cmdline", cmdline);
}

TEST(ReaderProcessesTest, ParsesTgidAndParent) {
  auto parsed = ParseTgidAndParent("Name:\tx\nTgid:\t42\nNgid:\t0\nPid:\t43\nPPid:\t7\n");
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->first, 42);
  EXPECT_EQ(parsed->second, 7);
  EXPECT_FALSE(ParseTgidAndParent("Name:\tx\nPid:\t43\n").has_value());
  EXPECT_FALSE(ParseTgidAndParent("Tgid:\tabc\nPPid:\t1\n").has_value());
}

TEST(ReaderProcessesTest, WorkersMapToTheirRankAndRanksStayApart) {
  testing::TempDir dir;
  const std::string root = dir / "proc";
  const std::string torchrun = "/usr/bin/python3\0-m\0torchrun\0train.py\0"s;
  const std::string rank = "/usr/bin/python3\0-u\0train.py\0--rank\0"s;
  FakeProcess(root, 100, 100, 1, torchrun);      // the launcher
  FakeProcess(root, 200, 200, 100, rank);        // rank 0, exec'd by the launcher
  FakeProcess(root, 201, 200, 100, rank);        // a thread of rank 0 (status of the thread)
  FakeProcess(root, 300, 300, 100, rank + "1");  // rank 1: another command line
  FakeProcess(root, 210, 210, 200, rank);        // a forked DataLoader worker of rank 0
  FakeProcess(root, 211, 210, 200, rank);        // one of its threads
  // A spawned worker of rank 1: Python's spawn entry point on its command line.
  FakeProcess(root, 310, 310, 300,
              "/usr/bin/python3\0-c\0from multiprocessing.spawn import spawn_main\0"s);
  ReaderProcesses readers(root);
  EXPECT_EQ(readers.ReaderOf(200), 200u);
  EXPECT_EQ(readers.ReaderOf(201), 200u);
  EXPECT_EQ(readers.ReaderOf(210), 200u);
  EXPECT_EQ(readers.ReaderOf(211), 200u);
  EXPECT_EQ(readers.ReaderOf(300), 300u);
  EXPECT_EQ(readers.ReaderOf(310), 300u);
  EXPECT_EQ(readers.ReaderOf(0), 0u);
  EXPECT_EQ(readers.ReaderOf(999), 999u);  // gone: its own reader
  EXPECT_EQ(readers.cached(), 7u);
}

TEST(ReaderProcessesTest, AForkedChildAndAThreadMapToThisProcess) {
  ReaderProcesses readers;
  uint32_t thread_id = 0;
  // A live thread of this process (its /proc entry must exist while asked about).
  int ready[2], done[2];
  ASSERT_EQ(pipe(ready), 0);
  ASSERT_EQ(pipe(done), 0);
  std::thread alive([&] {
    thread_id = static_cast<uint32_t>(syscall(SYS_gettid));
    char c = 1;
    ASSERT_EQ(write(ready[1], &c, 1), 1);
    ASSERT_EQ(read(done[0], &c, 1), 1);
  });
  char c = 0;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  EXPECT_EQ(readers.ReaderOf(thread_id), static_cast<uint64_t>(getpid()));
  const pid_t child = fork();
  if (child == 0) {
    char b = 0;
    (void)!read(done[0], &b, 1);
    _exit(0);
  }
  ASSERT_GT(child, 0);
  EXPECT_EQ(readers.ReaderOf(static_cast<uint32_t>(child)), static_cast<uint64_t>(getpid()));
  ASSERT_EQ(write(done[1], "xx", 2), 2);
  alive.join();
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  // A process that exec'd something else is its own reader.
  const pid_t other = fork();
  if (other == 0) {
    execl("/bin/sleep", "sleep", "5", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(other, 0);
  for (int i = 0; i < 200; ++i) {  // until the exec shows on its command line
    std::ifstream cmd("/proc/" + std::to_string(other) + "/cmdline");
    std::string text((std::istreambuf_iterator<char>(cmd)), std::istreambuf_iterator<char>());
    if (text.rfind("sleep", 0) == 0) break;
    usleep(10000);
  }
  EXPECT_EQ(readers.ReaderOf(static_cast<uint32_t>(other)), static_cast<uint64_t>(other));
  kill(other, SIGKILL);
  ASSERT_EQ(waitpid(other, &status, 0), other);
  close(ready[0]);
  close(ready[1]);
  close(done[0]);
  close(done[1]);
}

}  // namespace
}  // namespace clairfs
