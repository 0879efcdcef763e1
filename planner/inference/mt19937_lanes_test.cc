// Mt19937Lanes against Mt19937: every lane's outputs equal the scalar generator's, across twists
// and in uneven pieces.
#include "planner/inference/mt19937_lanes.h"

#include <vector>

#include <gtest/gtest.h>

#include "planner/mt19937.h"

namespace clairfs {
namespace {

TEST(Mt19937Lanes, EveryLaneIsTheScalarGenerator) {
  constexpr int kL = Mt19937Lanes::kLanes;
  uint32_t seeds[kL];
  for (int l = 0; l < kL; ++l) seeds[l] = l == 0 ? 0u : 0x9e3779b9u * static_cast<uint32_t>(l);
  seeds[kL - 1] = 4294967295u;
  Mt19937Lanes lanes;
  lanes.Seed(seeds);
  std::vector<Mt19937> scalar;
  for (int l = 0; l < kL; ++l) scalar.emplace_back(seeds[l]);
  // Pieces that cross block boundaries at odd places, 3000 outputs in all.
  for (size_t piece : {1u, 622u, 2u, 1000u, 623u, 752u}) {
    std::vector<uint32_t> out(piece * kL);
    lanes.Generate(piece, out.data());
    for (size_t i = 0; i < piece; ++i) {
      for (int l = 0; l < kL; ++l) {
        ASSERT_EQ(out[i * kL + l], scalar[l].Next32()) << "lane " << l << " piece " << piece;
      }
    }
  }
  // Reseeding starts over.
  lanes.Seed(seeds);
  std::vector<uint32_t> out(kL);
  lanes.Generate(1, out.data());
  EXPECT_EQ(out[0], Mt19937(seeds[0]).Next32());
}

}  // namespace
}  // namespace clairfs
