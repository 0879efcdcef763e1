// FileTable against std::unordered_map over random inserts, finds and erases, through growth and
// the wrap-around of probe runs (a wrong backward shift loses or duplicates entries).
#include "planner/cluster/file_table.h"

#include <gtest/gtest.h>

#include <unordered_map>

namespace clairfs {
namespace {

TEST(FileTableTest, AgreesWithAnUnorderedMap) {
  FileTable<uint64_t> table;
  std::unordered_map<uint32_t, uint64_t> reference;
  uint64_t state = 12345;
  auto next = [&] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return static_cast<uint32_t>(state >> 40);
  };
  for (int i = 0; i < 200'000; ++i) {
    const uint32_t file = next() % 5000;  // few keys: long probe runs, many erases
    const uint32_t op = next() % 3;
    if (op == 0 && reference.count(file) == 0) {
      table.Insert(file, uint64_t{file} * 7 + i);
      reference[file] = uint64_t{file} * 7 + i;
    } else if (op == 1) {
      EXPECT_EQ(table.Erase(file), reference.erase(file) == 1);
    } else {
      const uint64_t* found = table.Find(file);
      auto it = reference.find(file);
      ASSERT_EQ(found != nullptr, it != reference.end()) << file;
      if (found != nullptr) {
        EXPECT_EQ(*found, it->second);
      }
    }
    ASSERT_EQ(table.size(), reference.size());
  }
  for (const auto& [file, value] : reference) {
    ASSERT_TRUE(table.Contains(file));
    EXPECT_EQ(*table.Find(file), value);
  }
  EXPECT_FALSE(table.Contains(UINT32_MAX - 1));
}

}  // namespace
}  // namespace clairfs
