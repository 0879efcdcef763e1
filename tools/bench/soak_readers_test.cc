// Unit tests of the soak's readers (soak_readers.h) on a plain directory: the count of opens is
// exact, a correct dataset reads with no wrong byte, and a flipped byte, a truncated file and an
// extended file are each counted to the byte; a missing file is a failed open.
#include "tools/bench/soak_readers.h"

#include <fcntl.h>
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include "tests/test_util.h"
#include "tools/bench/dataset_writer.h"

namespace clairfs {
namespace {

std::vector<SyntheticFile> WriteDataset(const std::string& dir) {
  SyntheticSpec spec;
  spec.files = 20;
  spec.classes = 2;
  spec.sizes.kind = SyntheticSizes::Kind::kFixed;
  spec.sizes.fixed_bytes = 10000;
  auto files = PlanSyntheticDataset(spec);
  EXPECT_TRUE(files.ok());
  EXPECT_TRUE(WriteSyntheticDataset(dir, *files, {}).ok());
  return *files;
}

void ReadAll(SoakReaders* readers) {
  readers->Start();
  readers->Join();
}

TEST(SoakReaders, CountsOpensExactlyAndFindsNothingWrongInACorrectDataset) {
  testing::TempDir dir;
  auto files = WriteDataset(dir.path());
  SoakReaders readers(dir.path(), files, {4, 1000, /*drop_pages=*/true, 7});
  ReadAll(&readers);
  EXPECT_TRUE(readers.Done());
  EXPECT_EQ(readers.opens(), 1000u);
  EXPECT_EQ(readers.bytes(), 1000u * 10000);
  EXPECT_EQ(readers.wrong_bytes(), 0u);
  EXPECT_EQ(readers.failed_opens(), 0u);
  EXPECT_TRUE(readers.errors().empty());
}

TEST(SoakReaders, CountsEachWrongByte) {
  testing::TempDir dir;
  auto files = WriteDataset(dir.path());
  // One flipped byte, 100 bytes cut off, 7 bytes appended: one open of each file.
  const std::string flipped = dir / files[0].relpath;
  int fd = open(flipped.c_str(), O_RDWR);
  ASSERT_GE(fd, 0);
  char byte = 0;
  ASSERT_EQ(pread(fd, &byte, 1, 5000), 1);
  byte = static_cast<char>(byte ^ 0x40);
  ASSERT_EQ(pwrite(fd, &byte, 1, 5000), 1);
  close(fd);
  std::filesystem::resize_file(dir / files[1].relpath, 9900);
  std::filesystem::resize_file(dir / files[2].relpath, 10007);
  SoakReaders readers(dir.path(), files, {1, files.size(), false, 1});
  ReadAll(&readers);
  EXPECT_EQ(readers.opens(), files.size());
  EXPECT_EQ(readers.wrong_bytes(), 1u + 100u + 7u);
  EXPECT_EQ(readers.failed_opens(), 0u);
  EXPECT_EQ(readers.errors().size(), 3u);
}

TEST(SoakReaders, AMissingFileIsAFailedOpenAndTheReadersGoOn) {
  testing::TempDir dir;
  auto files = WriteDataset(dir.path());
  std::filesystem::remove(dir / files[3].relpath);
  SoakReaders readers(dir.path(), files, {2, 3 * files.size(), false, 1});
  ReadAll(&readers);
  EXPECT_EQ(readers.opens(), 3 * files.size());
  // A reader that opens n files has opened each one at least floor(n / 20) times: 60 opens over
  // two readers open the missing file at least twice.
  EXPECT_GE(readers.failed_opens(), 2u);
  EXPECT_EQ(readers.wrong_bytes(), 0u);
  ASSERT_FALSE(readers.errors().empty());
  EXPECT_NE(readers.errors()[0].find(files[3].relpath), std::string::npos);
}

}  // namespace
}  // namespace clairfs
