// Tests of HeatStore: the value encoding, merge and replace semantics, refusing a log imported
// twice, persistence across reopening the index, and dropping undecodable entries.
#include "cache/heat_store.h"

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace clairfs {
namespace {

HeatCounters Counters(uint64_t bytes, uint64_t reads, uint64_t opens, int64_t max_byte) {
  HeatCounters c;
  c.bytes_read = bytes;
  c.reads = reads;
  c.opens = opens;
  c.max_byte_read = max_byte;
  c.read_time = 0.25;
  c.records = 1;
  return c;
}

TEST(HeatStoreTest, EncodingRoundTripsAndRejectsDamage) {
  HeatCounters c = Counters(123456789012ULL, 77, 3, 4095);
  c.read_time = 1.5;
  auto back = DecodeHeatCounters(EncodeHeatCounters(c));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->bytes_read, c.bytes_read);
  EXPECT_EQ(back->reads, 77u);
  EXPECT_EQ(back->opens, 3u);
  EXPECT_EQ(back->max_byte_read, 4095);
  EXPECT_DOUBLE_EQ(back->read_time, 1.5);
  EXPECT_EQ(back->records, 1u);
  std::string bytes = EncodeHeatCounters(c);
  EXPECT_FALSE(DecodeHeatCounters(bytes.substr(1)).ok());
  bytes[0] = 9;
  EXPECT_FALSE(DecodeHeatCounters(bytes).ok());
}

TEST(HeatStoreTest, MergeAddsReplaceDropsAndKnownLogsAreRefused) {
  testing::TempDir tmp;
  auto index = IndexDb::Open(tmp / "index");
  ASSERT_TRUE(index.ok());
  auto store = HeatStore::Open(index->get(), Env::Default());
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->summary().files, 0u);
  EXPECT_TRUE((*store)->snapshot()->empty());

  auto first = (*store)->Import({{"a", Counters(4096, 1, 1, 4095)}, {"b", Counters(0, 0, 1, -1)}},
                                {"log1"}, false);
  ASSERT_TRUE(first.ok()) << first.status().message();
  EXPECT_EQ(first->files_new, 2u);
  EXPECT_EQ(first->files_total, 2u);
  EXPECT_EQ(first->logs_total, 1u);
  auto snap = (*store)->snapshot();
  EXPECT_DOUBLE_EQ(snap->at("a").heat_per_byte, HeatPerByte(Counters(4096, 1, 1, 4095)));
  EXPECT_DOUBLE_EQ(snap->at("b").heat_per_byte, 0.0);
  HeatSummary s = (*store)->summary();
  EXPECT_EQ(s.files, 2u);
  EXPECT_EQ(s.files_hot, 1u);
  EXPECT_EQ(s.logs, 1u);
  EXPECT_GT(s.imported_at_ns, 0u);

  // Merge: counters add, the maximum byte is the larger; a known log is refused untouched.
  EXPECT_EQ((*store)->KnownLogs({"log1", "log2"}), std::vector<std::string>{"log1"});
  auto again = (*store)->Import({{"a", Counters(1, 1, 1, 4095)}}, {"log1"}, false);
  EXPECT_EQ(again.status().code(), EALREADY);
  auto second = (*store)->Import({{"a", Counters(8192, 2, 1, 8191)}, {"c", Counters(10, 1, 1, 9)}},
                                 {"log2"}, false);
  ASSERT_TRUE(second.ok());
  EXPECT_EQ(second->files_new, 1u);
  EXPECT_EQ(second->files_merged, 1u);
  EXPECT_EQ(second->files_total, 3u);
  snap = (*store)->snapshot();
  EXPECT_EQ(snap->at("a").counters.bytes_read, 4096u + 8192u);
  EXPECT_EQ(snap->at("a").counters.reads, 3u);
  EXPECT_EQ(snap->at("a").counters.max_byte_read, 8191);
  EXPECT_EQ(snap->at("a").counters.records, 2u);
  EXPECT_DOUBLE_EQ(snap->at("a").counters.read_time, 0.5);

  // Persistent: a new store on the same index sees the same heat and logs.
  store->reset();
  store = HeatStore::Open(index->get(), Env::Default());
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->snapshot()->size(), 3u);
  EXPECT_EQ((*store)->snapshot()->at("a").counters.bytes_read, 4096u + 8192u);
  EXPECT_EQ((*store)->KnownLogs({"log1", "log2", "log3"}).size(), 2u);

  // Replace: the old heat and log ids go; a log imported before may come back.
  auto replaced = (*store)->Import({{"c", Counters(5, 1, 1, 9)}}, {"log1"}, true);
  ASSERT_TRUE(replaced.ok()) << replaced.status().message();
  EXPECT_EQ(replaced->files_dropped, 2u);
  EXPECT_EQ(replaced->files_total, 1u);
  EXPECT_EQ(replaced->logs_total, 1u);
  EXPECT_EQ((*store)->snapshot()->at("c").counters.bytes_read, 5u);
  store->reset();
  store = HeatStore::Open(index->get(), Env::Default());
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->snapshot()->size(), 1u);
  EXPECT_EQ((*store)->KnownLogs({"log1", "log2"}), std::vector<std::string>{"log1"});
}

TEST(HeatStoreTest, UndecodableEntriesAreDroppedAtOpen) {
  testing::TempDir tmp;
  auto index = IndexDb::Open(tmp / "index");
  ASSERT_TRUE(index.ok());
  ASSERT_TRUE(
      (*index)->Put(IndexDb::kHeat, "good", EncodeHeatCounters(Counters(1, 1, 1, 0)), true).ok());
  ASSERT_TRUE((*index)->Put(IndexDb::kHeat, "bad", "garbage", true).ok());
  auto store = HeatStore::Open(index->get(), Env::Default());
  ASSERT_TRUE(store.ok());
  EXPECT_EQ((*store)->snapshot()->size(), 1u);
  auto bad = (*index)->Get(IndexDb::kHeat, "bad");
  ASSERT_TRUE(bad.ok());
  EXPECT_FALSE(bad->has_value());
}

}  // namespace
}  // namespace clairfs
