// Tests of the synthetic dataset plan: names, determinism, size models and spec errors.
#include "planner/synthetic_dataset.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace clairfs {
namespace {

SyntheticSpec ImageFolder(uint64_t files, uint64_t classes, uint64_t seed = 0) {
  SyntheticSpec spec;
  spec.layout = SyntheticLayout::kImageFolder;
  spec.files = files;
  spec.classes = classes;
  spec.seed = seed;
  return spec;
}

TEST(SyntheticDataset, SameSpecSameFiles) {
  auto a = PlanSyntheticDataset(ImageFolder(5000, 10, 7));
  auto b = PlanSyntheticDataset(ImageFolder(5000, 10, 7));
  auto other_seed = PlanSyntheticDataset(ImageFolder(5000, 10, 8));
  ASSERT_TRUE(a.ok() && b.ok() && other_seed.ok());
  ASSERT_EQ(a->size(), 5000u);
  size_t same_sizes = 0;
  for (size_t i = 0; i < a->size(); ++i) {
    EXPECT_EQ((*a)[i].relpath, (*b)[i].relpath);
    EXPECT_EQ((*a)[i].size, (*b)[i].size);
    EXPECT_EQ((*a)[i].relpath, (*other_seed)[i].relpath);
    same_sizes += (*a)[i].size == (*other_seed)[i].size;
  }
  EXPECT_LT(same_sizes, 50u);  // the seed changes sizes, not names
}

// Values from an independent Python model of the size generator (math.exp instead of our exp):
// a change here changes every generated dataset.
TEST(SyntheticDataset, ImageNetSizesArePinned) {
  const uint64_t seed0[] = {391727, 308654, 187785, 88314, 105001, 146136};
  for (uint64_t i = 0; i < 6; ++i) EXPECT_EQ(ImageNetLikeSize(0, i), seed0[i]) << i;
  EXPECT_EQ(ImageNetLikeSize(42, 0), 171728u);
  EXPECT_EQ(ImageNetLikeSize(42, 1), 101962u);
  EXPECT_EQ(ImageNetLikeSize(42, 2), 88528u);
}

TEST(SyntheticDataset, ImageNetDistributionLooksLikeImageNet) {
  auto files = PlanSyntheticDataset(ImageFolder(100000, 1000, 1));
  ASSERT_TRUE(files.ok());
  uint64_t median = MedianSize(*files);
  EXPECT_GT(median, 100u * 1024);
  EXPECT_LT(median, 120u * 1024);
  uint64_t max = 0, min = UINT64_MAX, over_1mib = 0;
  for (const auto& f : *files) {
    max = std::max(max, f.size);
    min = std::min(min, f.size);
    over_1mib += f.size > (1u << 20);
  }
  EXPECT_GE(min, kImageNetMinBytes);
  EXPECT_LT(max, 8u << 20);   // capped at +6 sigma (~7.3 MiB)
  EXPECT_GT(max, 1u << 20);   // but a long tail exists
  EXPECT_GT(over_1mib, 10u);  // lognormal sigma 0.7: ~0.07% above 1 MiB
  EXPECT_LT(over_1mib, 1000u);
  double mean = static_cast<double>(TotalSize(*files)) / files->size();
  EXPECT_GT(mean, 125.0 * 1024);  // exp(sigma^2/2) = 1.28 times the median
  EXPECT_LT(mean, 160.0 * 1024);
}

TEST(SyntheticDataset, ImageFolderNamesAndEvenSpread) {
  auto files = PlanSyntheticDataset(ImageFolder(10, 3));
  ASSERT_TRUE(files.ok());
  EXPECT_EQ((*files)[0].relpath, "class_0000/img_00000000.jpg");
  EXPECT_EQ((*files)[9].relpath, "class_0002/img_00000009.jpg");
  std::map<std::string, int> per_class;
  for (const auto& f : *files) ++per_class[f.relpath.substr(0, f.relpath.find('/'))];
  ASSERT_EQ(per_class.size(), 3u);
  for (const auto& [cls, n] : per_class) EXPECT_TRUE(n == 3 || n == 4) << cls << " " << n;
  EXPECT_TRUE(std::is_sorted(files->begin(), files->end(),
                             [](const auto& a, const auto& b) { return a.relpath < b.relpath; }));
}

TEST(SyntheticDataset, WidthsGrowWithCounts) {
  auto files = PlanSyntheticDataset(ImageFolder(12345, 12345));
  ASSERT_TRUE(files.ok());
  EXPECT_EQ(files->back().relpath, "class_12344/img_00012344.jpg");
  EXPECT_EQ(files->front().relpath, "class_00000/img_00000000.jpg");
}

TEST(SyntheticDataset, FlatAndShards) {
  SyntheticSpec flat;
  flat.layout = SyntheticLayout::kFlat;
  flat.files = 3;
  flat.sizes = ParseSyntheticSizes("fixed:110K").value();
  auto f = PlanSyntheticDataset(flat);
  ASSERT_TRUE(f.ok());
  ASSERT_EQ(f->size(), 3u);
  EXPECT_EQ((*f)[2].relpath, "file_00000002.bin");
  EXPECT_EQ((*f)[2].size, 110u * 1024);

  SyntheticSpec shards;
  shards.layout = SyntheticLayout::kShards;
  shards.files = 1000;  // ignored: the shard count decides
  shards.sizes = ParseSyntheticSizes("shards:4x256M").value();
  auto s = PlanSyntheticDataset(shards);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->size(), 4u);
  EXPECT_EQ((*s)[3].relpath, "shard_0003.tar");
  EXPECT_EQ((*s)[3].size, 256u << 20);
  EXPECT_EQ(TotalSize(*s), 1ULL << 30);
}

TEST(SyntheticDataset, SizesParseAndFormatRoundTrip) {
  for (const char* text :
       {"imagenet", "imagenet22k", "fixed:110K", "shards:4x256M", "shards:1X1"}) {
    auto sizes = ParseSyntheticSizes(text);
    ASSERT_TRUE(sizes.ok()) << text << ": " << sizes.status().message();
    auto again = ParseSyntheticSizes(FormatSyntheticSizes(*sizes));
    ASSERT_TRUE(again.ok()) << text;
    EXPECT_EQ(FormatSyntheticSizes(*again), FormatSyntheticSizes(*sizes));
  }
}

// ImageNet-22k: 14.2 M files, ~1.3 TB, so a mean near 92 KB (the imagenet model's is ~144 KB).
TEST(SyntheticDataset, ImageNet22kSizesHaveAMeanNear92KB) {
  auto sizes = ParseSyntheticSizes("imagenet22k");
  ASSERT_TRUE(sizes.ok());
  constexpr uint64_t kSample = 200'000;
  double total = 0;
  for (uint64_t i = 0; i < kSample; ++i) total += SyntheticSizeOf(*sizes, 7, i);
  const double mean = total / kSample;
  EXPECT_GT(mean, 92'000 * 0.98);
  EXPECT_LT(mean, 92'000 * 1.02);
  EXPECT_EQ(SyntheticSizeOf(*sizes, 7, 12), ImageNet22kLikeSize(7, 12));
}

// SyntheticSizeOf gives each file the size PlanSyntheticDataset lists for it.
TEST(SyntheticDataset, SizeOfMatchesTheListedSizes) {
  SyntheticSpec spec;
  spec.files = 500;
  spec.seed = 3;
  for (const char* model : {"imagenet", "imagenet22k", "fixed:3K"}) {
    auto sizes = ParseSyntheticSizes(model);
    ASSERT_TRUE(sizes.ok());
    spec.sizes = *sizes;
    auto files = PlanSyntheticDataset(spec);
    ASSERT_TRUE(files.ok());
    for (uint64_t i = 0; i < files->size(); ++i) {
      ASSERT_EQ(SyntheticSizeOf(*sizes, 3, i), (*files)[i].size) << model << " file " << i;
    }
  }
}

TEST(SyntheticDataset, SizesParseErrorsNameTheText) {
  for (const char* bad :
       {"", "ImageNet", "lognormal", "fixed:", "fixed:abc", "fixed:-1", "shards:", "shards:4",
        "shards:0x1M", "shards:x1M", "shards:4x", "shards:ax1M", "shards:4x1Q"}) {
    auto r = ParseSyntheticSizes(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), EINVAL);
    EXPECT_NE(r.status().message().find("invalid --sizes '" + std::string(bad) + "'"),
              std::string::npos)
        << r.status().message();
  }
  EXPECT_FALSE(ParseSyntheticLayout("shards").ok());
  EXPECT_FALSE(ParseSyntheticLayout("ImageFolder").ok());
  EXPECT_EQ(ParseSyntheticLayout("flat").value(), SyntheticLayout::kFlat);
}

TEST(SyntheticDataset, SpecErrors) {
  EXPECT_FALSE(PlanSyntheticDataset(ImageFolder(0, 1)).ok());
  EXPECT_FALSE(PlanSyntheticDataset(ImageFolder(5, 6)).ok());
  EXPECT_FALSE(PlanSyntheticDataset(ImageFolder(5, 0)).ok());
  SyntheticSpec mixed = ImageFolder(5, 1);
  mixed.sizes = ParseSyntheticSizes("shards:2x1M").value();
  auto r = PlanSyntheticDataset(mixed);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("shards"), std::string::npos);
  SyntheticSpec flat_as_shards;
  flat_as_shards.layout = SyntheticLayout::kShards;
  flat_as_shards.files = 3;
  EXPECT_FALSE(PlanSyntheticDataset(flat_as_shards).ok());
}

}  // namespace
}  // namespace clairfs
