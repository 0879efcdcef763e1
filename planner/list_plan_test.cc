// list: plan files: epochs, ranks, comments, and one clear error per malformed line.
#include "planner/list_plan.h"

#include <string>

#include <gtest/gtest.h>

#include "planner/layout.h"

namespace clairfs {
namespace {

std::vector<std::string> RankPaths(const ListPlan& plan, uint64_t epoch, uint32_t rank) {
  std::vector<std::string> out;
  for (uint64_t index : plan.Epoch(epoch)->RankIndices(rank)) out.push_back(plan.paths()[index]);
  return out;
}

TEST(ListPlan, EpochsAndRanks) {
  auto plan = ListPlan::Parse(
      "# written by a test\n"
      "# epoch 0\n# rank 0\na.jpg\nb.jpg\n# rank 1\nc.jpg\n\n"
      "# epoch 3\n# rank 1\nb.jpg\n# rank 0\nc.jpg\na.jpg\n",
      "plan.txt");
  ASSERT_TRUE(plan.ok()) << plan.status().message();
  EXPECT_EQ(plan->world(), 2u);
  EXPECT_EQ(plan->epochs(), (std::vector<uint64_t>{0, 3}));
  EXPECT_FALSE(plan->HasEpoch(1));
  EXPECT_EQ(plan->paths(), (std::vector<std::string>{"a.jpg", "b.jpg", "c.jpg"}));
  EXPECT_EQ(RankPaths(*plan, 0, 0), (std::vector<std::string>{"a.jpg", "b.jpg"}));
  EXPECT_EQ(RankPaths(*plan, 0, 1), (std::vector<std::string>{"c.jpg"}));
  EXPECT_EQ(RankPaths(*plan, 3, 0), (std::vector<std::string>{"c.jpg", "a.jpg"}));
  EXPECT_EQ(RankPaths(*plan, 3, 1), (std::vector<std::string>{"b.jpg"}));
}

TEST(ListPlan, PlainListIsEpochZeroRankZero) {
  auto plan = ListPlan::Parse("x/1.png\nx/2.png", "l");
  ASSERT_TRUE(plan.ok());
  EXPECT_EQ(plan->world(), 1u);
  EXPECT_EQ(plan->epochs(), std::vector<uint64_t>{0});
  EXPECT_EQ(RankPaths(*plan, 0, 0), (std::vector<std::string>{"x/1.png", "x/2.png"}));
  auto two = ListPlan::Parse("a\n# epoch 1\nb\n", "l");
  ASSERT_TRUE(two.ok());
  EXPECT_EQ(two->epochs(), (std::vector<uint64_t>{0, 1}));
  EXPECT_EQ(RankPaths(*two, 1, 0), std::vector<std::string>{"b"});
}

TEST(ListPlan, MalformedFilesNameTheLine) {
  struct Bad {
    const char* content;
    const char* names;
  };
  const Bad cases[] = {
      {"# epoch 2\na\n# epoch 1\nb\n", "plan:3: epoch 1 after epoch 2"},
      {"# epoch 0\na\n# epoch 0\nb\n", "plan:3: epoch 0 after epoch 0"},
      {"a\n# epoch 0\nb\n", "plan:2: epoch 0 given after paths"},
      {"# epoch x\n", "plan:1: epoch='x'"},
      {"# rank -1\na\n", "plan:1: rank='-1'"},
      {"# rank 65536\na\n", "plan:1: rank='65536' is too large (max 65535)"},
      {"# rank 0\na\n# rank 0\nb\n", "plan:3: rank 0 appears twice"},
      {"a\n# rank 1\nb\n", "plan:2: '# rank' after paths"},
      {"a\n/etc/passwd\n", "plan:2: '/etc/passwd' is absolute"},
      {"a\n../b\n", "plan:2:"},
      {"# only comments\n", "names no file"},
      {"", "names no file"},
  };
  for (const Bad& bad : cases) {
    auto plan = ListPlan::Parse(bad.content, "plan");
    ASSERT_FALSE(plan.ok()) << bad.content;
    EXPECT_EQ(plan.status().code(), EINVAL);
    EXPECT_NE(plan.status().message().find(bad.names), std::string::npos)
        << bad.content << " -> " << plan.status().message();
  }
}

// Found by list_plan_fuzz: a NUL byte was taken as part of a path (no file name holds one).
TEST(ListPlan, APathWithANulByteIsRefused) {
  for (const std::string& content : {std::string("a\n\0\n", 4), std::string("a\nb\0c\n", 6)}) {
    auto plan = ListPlan::Parse(content, "plan");
    ASSERT_FALSE(plan.ok());
    EXPECT_EQ(plan.status().code(), EINVAL);
    EXPECT_NE(plan.status().message().find("plan:2: '"), std::string::npos)
        << plan.status().message();
    EXPECT_NE(plan.status().message().find("\\x00"), std::string::npos) << plan.status().message();
    EXPECT_NE(plan.status().message().find("' holds a NUL byte"), std::string::npos)
        << plan.status().message();
  }
  auto lines = ParsePathList(std::string("a\nb\0c", 5), "layout");
  ASSERT_FALSE(lines.ok());
  EXPECT_NE(lines.status().message().find("layout:2"), std::string::npos)
      << lines.status().message();
}

}  // namespace
}  // namespace clairfs

namespace clairfs {
namespace {

// Random lines made of directives, paths and junk: an error or a plan, never a crash, and every
// parsed plan's indices point into its path table.
TEST(ListPlan, GarbageNeverCrashes) {
  const char* pieces[] = {"# epoch ", "# rank ", "#",  "a",  "b/c",
                          "..",       "/",       "\n", "\n", "7",
                          "0",        "x",       " ",  "-1", "99999999999999999999999"};
  uint64_t state = 7;
  for (int i = 0; i < 5000; ++i) {
    std::string content;
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    size_t count = (state >> 40) % 30;
    for (size_t k = 0; k < count; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      content += pieces[(state >> 33) % (sizeof(pieces) / sizeof(pieces[0]))];
    }
    auto plan = ListPlan::Parse(content, "fuzz");
    if (!plan.ok()) {
      EXPECT_EQ(plan.status().code(), EINVAL);
      continue;
    }
    for (uint64_t epoch : plan->epochs()) {
      auto order = plan->Epoch(epoch);
      for (uint32_t rank = 0; rank < plan->world(); ++rank) {
        for (uint64_t index : order->RankIndices(rank)) ASSERT_LT(index, plan->paths().size());
      }
    }
  }
}

}  // namespace
}  // namespace clairfs
