// Page-cache probes: a file just read is resident, a dropped clean file is not, and errors name
// the file.
#include "tools/bench/page_cache_probe.h"

#include <fcntl.h>
#include <sys/vfs.h>
#include <unistd.h>

#include <linux/magic.h>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace clairfs {
namespace {

TEST(PageCacheProbe, ReadFileIsResidentAndDroppedCleanFileIsNot) {
  testing::TempDir dir;
  const std::string path = dir / "f.bin";
  const size_t size = (1 << 20) + 123;  // a partial last page takes a whole page
  testing::WriteFile(path, testing::RandomBytes(size, 7));
  ASSERT_EQ(testing::ReadFile(path).size(), size);
  auto resident = ResidentBytes(path);
  ASSERT_TRUE(resident.ok()) << resident.status().message();
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  EXPECT_EQ(*resident, (size + page - 1) / page * page);

  struct statfs fs {};
  ASSERT_EQ(statfs(dir.path().c_str(), &fs), 0);
  if (fs.f_type == TMPFS_MAGIC) GTEST_SKIP() << "tmpfs pages cannot be dropped";
  int fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(fsync(fd), 0);  // only clean pages can be dropped
  close(fd);
  ASSERT_TRUE(DropPages(path).ok());
  resident = ResidentBytes(path);
  ASSERT_TRUE(resident.ok()) << resident.status().message();
  EXPECT_LT(*resident, size);
}

TEST(PageCacheProbe, CachedBytesIsPositiveAndMissingFilesAreNamed) {
  auto cached = CachedBytes();
  ASSERT_TRUE(cached.ok()) << cached.status().message();
  EXPECT_GT(*cached, 0u);
  auto missing = ResidentBytes("/nonexistent/clairfs-probe");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ENOENT);
  EXPECT_NE(missing.status().message().find("/nonexistent/clairfs-probe"), std::string::npos);
  EXPECT_EQ(DropPages("/nonexistent/clairfs-probe").code(), ENOENT);
}

}  // namespace
}  // namespace clairfs
