// PosixFileTree::ReadFile's bounds: regular files only (no FIFO, device or directory, each
// refused at once with a message naming the path), and no file larger than the bound, checked
// before a byte is read (a sparse file of any size costs nothing) and again while reading.
// Also through the readers of list files: list: plans and list: layouts.
#include "planner/file_tree.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include <gtest/gtest.h>

#include "planner/layout.h"
#include "planner/plan.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::TempDir;
using testing::WriteFile;

void MakeSparse(const std::string& path, uint64_t size) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  ASSERT_GE(fd, 0) << path;
  ASSERT_EQ(ftruncate(fd, static_cast<off_t>(size)), 0);
  close(fd);
}

double SecondsOf(const std::chrono::steady_clock::time_point& start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

TEST(PosixFileTreeReadFile, ReadsARegularFileWithinTheBound) {
  TempDir dir;
  WriteFile(dir / "list.txt", "a/b.jpg\nc.jpg\n");
  auto content = PosixFileTreeInstance()->ReadFile(dir / "list.txt", 14);
  ASSERT_TRUE(content.ok()) << content.status().message();
  EXPECT_EQ(*content, "a/b.jpg\nc.jpg\n");
}

TEST(PosixFileTreeReadFile, RefusesAFileLargerThanTheBoundWithoutReadingIt) {
  TempDir dir;
  WriteFile(dir / "list.txt", "a/b.jpg\nc.jpg\n");
  auto small = PosixFileTreeInstance()->ReadFile(dir / "list.txt", 13);
  ASSERT_FALSE(small.ok());
  EXPECT_EQ(small.status().code(), EFBIG);
  EXPECT_NE(small.status().message().find(dir / "list.txt"), std::string::npos);

  // One byte over the real bound, sparse: refused from its size, in no time and no memory.
  MakeSparse(dir / "huge.txt", kMaxListFileBytes + 1);
  const auto start = std::chrono::steady_clock::now();
  auto huge = PosixFileTreeInstance()->ReadFile(dir / "huge.txt", kMaxListFileBytes);
  EXPECT_LT(SecondsOf(start), 1.0);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), EFBIG);
  EXPECT_NE(huge.status().message().find("huge.txt"), std::string::npos);
  EXPECT_NE(huge.status().message().find("1.0 GiB"), std::string::npos) << huge.status().message();
}

TEST(PosixFileTreeReadFile, RefusesDevicesFifosAndDirectoriesAtOnce) {
  TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  const auto start = std::chrono::steady_clock::now();
  for (const std::string& path : {std::string("/dev/zero"), fifo, dir.path()}) {
    auto content = PosixFileTreeInstance()->ReadFile(path, kMaxListFileBytes);
    ASSERT_FALSE(content.ok()) << path;
    EXPECT_NE(content.status().message().find(path), std::string::npos)
        << content.status().message();
  }
  // A FIFO without a writer would block an open(2) for reading forever; /dev/zero never ends.
  EXPECT_LT(SecondsOf(start), 1.0);
  auto zero = PosixFileTreeInstance()->ReadFile("/dev/zero", kMaxListFileBytes);
  EXPECT_EQ(zero.status().code(), EINVAL);
  EXPECT_NE(zero.status().message().find("character device"), std::string::npos);
  auto pipe = PosixFileTreeInstance()->ReadFile(fifo, kMaxListFileBytes);
  EXPECT_NE(pipe.status().message().find("a FIFO"), std::string::npos);
  auto directory = PosixFileTreeInstance()->ReadFile(dir.path(), kMaxListFileBytes);
  EXPECT_EQ(directory.status().code(), EISDIR);
}

TEST(PosixFileTreeReadFile, ListPlansAndLayoutsAreBounded) {
  TempDir dir;
  const std::string fifo = dir / "fifo";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  MakeSparse(dir / "huge.txt", kMaxListFileBytes + 1);
  WriteFile(dir / "ds/a.jpg", "x");
  for (const std::string& file : {std::string("/dev/zero"), fifo, dir / "huge.txt"}) {
    auto spec = ParsePlanSpec("list:" + file);
    ASSERT_TRUE(spec.ok()) << spec.status().message();
    auto plan = Plan::CreateFromList(*spec, PosixFileTreeInstance());
    ASSERT_FALSE(plan.ok()) << file;
    EXPECT_EQ(plan.status().code(), EINVAL);  // a bad spec, as any unreadable list file
    EXPECT_NE(plan.status().message().find(file), std::string::npos) << plan.status().message();

    auto layout_spec = ParseLayoutSpec("list:" + file, "");
    ASSERT_TRUE(layout_spec.ok());
    auto layout = BuildLayout(PosixFileTreeInstance(), dir / "ds", *layout_spec);
    ASSERT_FALSE(layout.ok()) << file;
    EXPECT_EQ(layout.status().code(), EINVAL);
    EXPECT_NE(layout.status().message().find(file), std::string::npos) << layout.status().message();
  }
}

}  // namespace
}  // namespace clairfs
