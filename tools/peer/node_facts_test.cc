// CheckJob: the start-up check of a peer job names the odd rank, whatever is odd about it.
#include "tools/peer/node_facts.h"

#include <gtest/gtest.h>

#include <vector>

namespace clairfs::peer {
namespace {

nlohmann::json Hello(uint32_t first, uint32_t last) {
  return {{"manifest_digest", std::string(64, 'a')},
          {"key_id", "0123456789abcdef"},
          {"global_spec", "torch-distributed:seed=1,world=4"},
          {"layout", "imagefolder"},
          {"layout_root", ""},
          {"world", 4},
          {"first_rank", first},
          {"last_rank", last},
          {"files", 100},
          {"capacity", 1 << 20}};
}

std::vector<NodeFacts> FourNodes() {
  std::vector<NodeFacts> facts;
  for (uint32_t n = 0; n < 4; ++n)
    facts.push_back(FactsFromHello(Hello(n, n), "h" + std::to_string(n)));
  return facts;
}

TEST(NodeFactsTest, AgreeingNodesGiveTheRankToNodeMap) {
  auto shape = CheckJob(FourNodes());
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  EXPECT_TRUE(shape->distributed);
  EXPECT_EQ(shape->node_of_rank, (std::vector<uint32_t>{0, 1, 2, 3}));
  // Two nodes of two ranks each.
  std::vector<NodeFacts> two = {FactsFromHello(Hello(0, 1), "a"), FactsFromHello(Hello(2, 3), "b")};
  shape = CheckJob(two);
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  EXPECT_EQ(shape->node_of_rank, (std::vector<uint32_t>{0, 0, 1, 1}));
}

TEST(NodeFactsTest, EachDisagreementNamesTheOddRank) {
  struct Case {
    const char* field;
    nlohmann::json value;
    const char* says;
  } cases[] = {
      {"manifest_digest", std::string(64, 'b'), "another dataset"},
      {"files", 99, "another dataset"},
      {"global_spec", "torch-distributed:seed=2,world=4", "another plan"},
      {"key_id", "fedcba9876543210", "another peer key"},
      {"layout", "sorted", "another layout"},
  };
  for (const Case& c : cases) {
    std::vector<NodeFacts> facts = FourNodes();
    nlohmann::json odd = Hello(2, 2);
    odd[c.field] = c.value;
    facts[2] = FactsFromHello(odd, "h2");
    auto shape = CheckJob(facts);
    ASSERT_FALSE(shape.ok()) << c.field;
    EXPECT_NE(shape.status().message().find("rank 2 (h2) has " + std::string(c.says)),
              std::string::npos)
        << shape.status().message();
  }
}

TEST(NodeFactsTest, RanksMustCoverTheWorldOnce) {
  std::vector<NodeFacts> facts = FourNodes();
  facts[3] = FactsFromHello(Hello(2, 2), "h3");  // rank 2 twice, rank 3 never
  auto shape = CheckJob(facts);
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("serves rank 2"), std::string::npos)
      << shape.status().message();
  facts = FourNodes();
  facts.pop_back();
  shape = CheckJob(facts);
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("no node serves rank 3"), std::string::npos)
      << shape.status().message();
}

TEST(NodeFactsTest, ANodeThatCouldNotAttachStopsTheJob) {
  std::vector<NodeFacts> facts = FourNodes();
  facts[1] = FactsFromError("/mnt/x: this mount has no peer key", "h1");
  auto shape = CheckJob(facts);
  ASSERT_FALSE(shape.ok());
  EXPECT_NE(shape.status().message().find("rank 1 (h1) cannot take part: /mnt/x: this mount has "
                                          "no peer key"),
            std::string::npos)
      << shape.status().message();
}

TEST(NodeFactsTest, PlansWhereEveryNodeReadsEverythingNeedNoRankSplit) {
  std::vector<NodeFacts> facts;
  for (int n = 0; n < 3; ++n) {
    nlohmann::json h = Hello(0, 0);
    h["global_spec"] = "torch-random:seed=3";
    h["world"] = 1;
    facts.push_back(FactsFromHello(h, "h"));
  }
  auto shape = CheckJob(facts);
  ASSERT_TRUE(shape.ok()) << shape.status().message();
  EXPECT_FALSE(shape->distributed);
}

}  // namespace
}  // namespace clairfs::peer
