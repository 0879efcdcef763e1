// Tests of IndexDb's sizing for its device and of where RocksDB's messages go: a small device
// gets small buffers and preallocations, and no LOG file is written into the index directory (a
// failed LOG write used to abort the daemon, docs/RELIABILITY.md).
#include "cache/index_db.h"

#include <gtest/gtest.h>

#include <filesystem>

#include "tests/test_util.h"

namespace clairfs {
namespace {

constexpr uint64_t kMiB = uint64_t{1} << 20;

TEST(IndexDbTest, BuffersAndPreallocationsAreSizedForTheDevice) {
  const IndexSizing small = IndexSizingFor(16 * kMiB);
  EXPECT_EQ(small.write_buffer_bytes, 1 * kMiB);
  EXPECT_EQ(small.max_wal_bytes, 2 * kMiB);
  EXPECT_EQ(small.manifest_preallocation_bytes, 256 * 1024u);

  const IndexSizing medium = IndexSizingFor(128 * kMiB);
  EXPECT_EQ(medium.write_buffer_bytes, 8 * kMiB);
  EXPECT_EQ(medium.max_wal_bytes, 16 * kMiB);

  const IndexSizing tiny = IndexSizingFor(2 * kMiB);
  EXPECT_EQ(tiny.write_buffer_bytes, 256 * 1024u);

  const IndexSizing nvme = IndexSizingFor(uint64_t{4} << 40);
  EXPECT_EQ(nvme.write_buffer_bytes, 16 * kMiB);
  EXPECT_EQ(nvme.max_wal_bytes, 32 * kMiB);
  EXPECT_EQ(nvme.manifest_preallocation_bytes, 4 * kMiB);
}

TEST(IndexDbTest, RocksDbWritesNoLogFileIntoTheIndexDirectory) {
  testing::TempDir tmp;
  {
    auto index = IndexDb::Open(tmp / "index");
    ASSERT_TRUE(index.ok()) << index.status().message();
    ASSERT_TRUE((*index)->Put(IndexDb::kMeta, "k", "v", /*sync=*/true).ok());
    ASSERT_TRUE((*index)->Flush().ok());
  }
  for (const auto& entry : std::filesystem::directory_iterator(tmp / "index")) {
    const std::string name = entry.path().filename();
    EXPECT_NE(name.rfind("LOG", 0), 0u) << name;
  }
}

}  // namespace
}  // namespace clairfs
