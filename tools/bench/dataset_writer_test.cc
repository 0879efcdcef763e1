// Tests of WriteSyntheticDataset on real temporary directories.
#include "tools/bench/dataset_writer.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "planner/synthetic_content.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::PathExists;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

std::vector<SyntheticFile> Plan(uint64_t files, uint64_t classes, const char* sizes = "imagenet") {
  SyntheticSpec spec;
  spec.files = files;
  spec.classes = classes;
  spec.sizes = ParseSyntheticSizes(sizes).value();
  return PlanSyntheticDataset(spec).value();
}

TEST(DatasetWriter, WritesVerifiableFilesAndReusesThem) {
  TempDir tmp;
  std::string dir = tmp / "ds";
  auto files = Plan(30, 3);
  auto stats = WriteSyntheticDataset(dir, files, {});
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  EXPECT_EQ(stats->written_files, 30u);
  EXPECT_EQ(stats->written_bytes, TotalSize(files));
  for (const auto& f : files) {
    std::string data = ReadFile(dir + "/" + f.relpath);
    ASSERT_EQ(data.size(), f.size);
    ASSERT_TRUE(VerifySyntheticFile(f.relpath, data).ok()) << f.relpath;
  }
  auto again = WriteSyntheticDataset(dir, files, {});
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->written_files, 0u);
  EXPECT_EQ(again->reused_files, 30u);
}

TEST(DatasetWriter, RewritesACorruptedFile) {
  TempDir tmp;
  std::string dir = tmp / "ds";
  auto files = Plan(5, 1, "fixed:64K");
  ASSERT_TRUE(WriteSyntheticDataset(dir, files, {}).ok());
  std::string path = dir + "/" + files[2].relpath;
  std::string data = ReadFile(path);
  data[100] ^= 1;
  WriteFile(path, data);
  auto stats = WriteSyntheticDataset(dir, files, {});
  ASSERT_TRUE(stats.ok());
  EXPECT_EQ(stats->written_files, 1u);
  EXPECT_TRUE(VerifySyntheticFile(files[2].relpath, ReadFile(path)).ok());
}

TEST(DatasetWriter, ANewSpecReplacesThePreviousDataset) {
  TempDir tmp;
  std::string dir = tmp / "ds";
  ASSERT_TRUE(WriteSyntheticDataset(dir, Plan(20, 4), {}).ok());
  auto smaller = Plan(6, 2, "fixed:1K");
  auto stats = WriteSyntheticDataset(dir, smaller, {});
  ASSERT_TRUE(stats.ok()) << stats.status().message();
  // Old: class_0000 img 0-4, class_0001 img 5-9. New: class_0000 img 0-2, class_0001 img 3-5.
  // Four paths are in both (rewritten in place: other sizes); the other 16 old files go.
  EXPECT_EQ(stats->removed_files, 16u);
  EXPECT_EQ(stats->written_files, 6u);
  size_t count = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) ++count;
  }
  EXPECT_EQ(count, 6u);
  EXPECT_FALSE(PathExists(dir + "/class_0003"));  // emptied class directories are removed
}

TEST(DatasetWriter, RefusesForeignFilesUnlessForced) {
  TempDir tmp;
  std::string dir = tmp / "ds";
  WriteFile(dir + "/notes.txt", "mine");
  WriteFile(dir + "/empty", "");
  auto refused = WriteSyntheticDataset(dir, Plan(3, 1), {});
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), ENOTEMPTY);
  EXPECT_NE(refused.status().message().find("--force"), std::string::npos);
  EXPECT_FALSE(PathExists(dir + "/class_0000"));

  DatasetWriteOptions force;
  force.force = true;
  auto forced = WriteSyntheticDataset(dir, Plan(3, 1), force);
  ASSERT_TRUE(forced.ok()) << forced.status().message();
  EXPECT_EQ(forced->foreign_entries, 2u);
  EXPECT_EQ(ReadFile(dir + "/notes.txt"), "mine");
  EXPECT_TRUE(PathExists(dir + "/empty"));
}

TEST(DatasetWriter, RefusesAFileAsTarget) {
  TempDir tmp;
  WriteFile(tmp / "file", "x");
  auto r = WriteSyntheticDataset(tmp / "file", Plan(1, 1), {});
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ENOTDIR);
}

}  // namespace
}  // namespace clairfs
