// Plan spec parsing: every accepted form, the libraries' seed ranges, and one clear EINVAL
// message per kind of bad spec.
#include "planner/plan_spec.h"

#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace clairfs {
namespace {

TEST(PlanSpec, ParsesTorchDistributedWithEveryKey) {
  auto spec = ParsePlanSpec(
      "torch-distributed:seed=42,world=8,ranks=2-5,drop_last=1,shuffle=0,epochs=90,"
      "start_epoch=10");
  ASSERT_TRUE(spec.ok()) << spec.status().message();
  EXPECT_EQ(spec->kind, SamplerKind::kTorchDistributed);
  EXPECT_EQ(*spec->seed.ToInt128(), 42);
  EXPECT_EQ(spec->world, 8u);
  EXPECT_EQ(spec->first_rank, 2u);
  EXPECT_EQ(spec->last_rank, 5u);
  EXPECT_TRUE(spec->drop_last);
  EXPECT_FALSE(spec->shuffle);
  EXPECT_EQ(spec->start_epoch, 10u);
  EXPECT_EQ(*spec->end_epoch, 90u);
  EXPECT_TRUE(spec->CoversEpoch(10));
  EXPECT_TRUE(spec->CoversEpoch(89));
  EXPECT_FALSE(spec->CoversEpoch(9));
  EXPECT_FALSE(spec->CoversEpoch(90));
}

TEST(PlanSpec, DefaultsAndOtherKinds) {
  auto dist = ParsePlanSpec("torch-distributed:world=4,seed=0");
  ASSERT_TRUE(dist.ok());
  EXPECT_EQ(dist->first_rank, 0u);
  EXPECT_EQ(dist->last_rank, 3u);
  EXPECT_TRUE(dist->shuffle);
  EXPECT_FALSE(dist->drop_last);
  EXPECT_FALSE(dist->end_epoch.has_value());
  EXPECT_TRUE(dist->CoversEpoch(1000000));
  EXPECT_TRUE(dist->set_epoch);
  auto repeating = ParsePlanSpec("torch-distributed:seed=3,world=2,set_epoch=0");
  ASSERT_TRUE(repeating.ok());
  EXPECT_FALSE(repeating->set_epoch);
  EXPECT_EQ(FormatPlanSpec(*repeating), "torch-distributed:seed=3,world=2,set_epoch=0");
  EXPECT_FALSE(ParsePlanSpec("torch-random:seed=3,set_epoch=0").ok());

  auto random = ParsePlanSpec("torch-random:seed=-1,persistent_workers=1,epochs=3");
  ASSERT_TRUE(random.ok());
  EXPECT_EQ(*random->seed.ToInt128(), -1);
  EXPECT_TRUE(random->persistent_workers);

  auto numpy = ParsePlanSpec("numpy:seed=4294967295,reseed=epoch");
  ASSERT_TRUE(numpy.ok());
  EXPECT_EQ(numpy->reseed, NumpyReseed::kEpoch);

  auto rng = ParsePlanSpec("numpy-rng:seed=340282366920938463463374607431768211456");  // 2^128
  ASSERT_TRUE(rng.ok());
  EXPECT_EQ(rng->seed.magnitude, (std::vector<uint32_t>{0, 0, 0, 0, 1}));

  auto seq = ParsePlanSpec("sequential");
  ASSERT_TRUE(seq.ok());
  EXPECT_EQ(seq->kind, SamplerKind::kSequential);
  auto seq_epochs = ParsePlanSpec("sequential:epochs=2");
  ASSERT_TRUE(seq_epochs.ok());
  EXPECT_EQ(*seq_epochs->end_epoch, 2u);

  auto list = ParsePlanSpec("list:/tmp/a,b:c.txt");
  ASSERT_TRUE(list.ok());
  EXPECT_EQ(list->kind, SamplerKind::kList);
  EXPECT_EQ(list->list_file, "/tmp/a,b:c.txt");
}

TEST(PlanSpec, TorchSeedRangeIsManualSeeds) {
  EXPECT_TRUE(ParsePlanSpec("torch-random:seed=18446744073709551615").ok());
  EXPECT_TRUE(ParsePlanSpec("torch-random:seed=-9223372036854775808").ok());
  for (const char* bad :
       {"torch-random:seed=18446744073709551616", "torch-random:seed=-9223372036854775809",
        "torch-distributed:seed=99999999999999999999999999999999999999999999,world=1"}) {
    auto spec = ParsePlanSpec(bad);
    ASSERT_FALSE(spec.ok()) << bad;
    EXPECT_EQ(spec.status().code(), EINVAL);
    EXPECT_NE(spec.status().message().find("out of range"), std::string::npos)
        << spec.status().message();
  }
}

TEST(PlanSpec, NumpySeedRanges) {
  EXPECT_TRUE(ParsePlanSpec("numpy:seed=0").ok());
  auto too_big = ParsePlanSpec("numpy:seed=4294967296");
  ASSERT_FALSE(too_big.ok());
  EXPECT_NE(too_big.status().message().find("Seed must be between 0 and 2**32 - 1"),
            std::string::npos);
  EXPECT_FALSE(ParsePlanSpec("numpy:seed=-1").ok());
  auto negative = ParsePlanSpec("numpy-rng:seed=-5");
  ASSERT_FALSE(negative.ok());
  EXPECT_NE(negative.status().message().find("expected non-negative integer"), std::string::npos);
  EXPECT_TRUE(ParsePlanSpec("numpy-rng:seed=-0").ok());
}

TEST(PlanSpec, BadSpecsGetOneClearError) {
  struct Bad {
    const char* spec;
    const char* names;  // part of the message
  };
  const Bad cases[] = {
      {"", "unknown sampler ''"},
      {"torch", "unknown sampler 'torch'"},
      {"torch-distributed", "needs seed"},
      {"torch-distributed:world=2", "needs seed"},
      {"torch-distributed:seed=1", "needs world"},
      {"torch-distributed:seed=1,world=0", "world=0"},
      {"torch-distributed:seed=1,world=4,ranks=2-4", "outside the world"},
      {"torch-distributed:seed=1,world=4,ranks=3-1", "A > B"},
      {"torch-distributed:seed=1,world=4,ranks=3", "must be A-B"},
      {"torch-distributed:seed=1,world=4,ranks=a-b", "ranks='a'"},
      {"torch-distributed:seed=1,world=4,seed=2", "duplicate key 'seed'"},
      {"torch-distributed:seed=1,world=4,color=red", "unknown key 'color'"},
      {"torch-distributed:seed=1,world=4,drop_last=yes", "must be 0 or 1"},
      {"torch-distributed:seed=1,world=4,shuffle=2", "must be 0 or 1"},
      {"torch-distributed:seed=1,world=4,epochs=0", "epochs=0"},
      {"torch-distributed:seed=1,world=4,epochs=5,start_epoch=5", "not before epochs"},
      {"torch-distributed:seed=1,world=4,", "stray ','"},
      {"torch-distributed:seed=1,,world=4", "stray ','"},
      {"torch-distributed:seed=1,world", "not key=value"},
      {"torch-distributed:seed=0x10,world=4", "not a decimal integer"},
      {"torch-distributed:seed=,world=4", "not a decimal integer"},
      {"torch-distributed:seed= 1,world=4", "not a decimal integer"},
      {"torch-distributed:seed=+1,world=4", "not a decimal integer"},
      {"torch-distributed:seed=1,world=4294967296", "too large"},
      {"torch-distributed:seed=1,world=-4", "not a non-negative decimal integer"},
      {"torch-distributed:seed=1,world=4,epochs=1e3", "not a non-negative"},
      {"torch-random:seed=1,world=4", "unknown key 'world'"},
      {"torch-random:seed=1,persistent_workers=true", "must be 0 or 1"},
      {"torch-random:seed=1,start_epoch=2", "unknown key 'start_epoch'"},
      {"numpy:seed=1,reseed=always", "must be none or epoch"},
      {"numpy-rng:seed=1,reseed=epoch", "unknown key 'reseed'"},
      {"numpy-rng:", "needs seed"},
      {"sequential:", "nothing after"},
      {"sequential:seed=1", "unknown key 'seed'"},
      {"list:", "needs a file"},
  };
  for (const Bad& bad : cases) {
    auto spec = ParsePlanSpec(bad.spec);
    ASSERT_FALSE(spec.ok()) << bad.spec;
    EXPECT_EQ(spec.status().code(), EINVAL) << bad.spec;
    EXPECT_NE(spec.status().message().find(bad.names), std::string::npos)
        << bad.spec << " -> " << spec.status().message();
    EXPECT_NE(spec.status().message().find("plan spec '"), std::string::npos);
  }
}

TEST(ParseSeedInteger, ArbitrarySizeDecimal) {
  auto v = ParseSeedInteger("18446744073709551621", "seed");  // 2^64 + 5
  ASSERT_TRUE(v.ok());
  EXPECT_EQ(v->magnitude, (std::vector<uint32_t>{5, 0, 1}));
  EXPECT_EQ(*v->ToInt128(), (static_cast<__int128>(1) << 64) + 5);
  auto zero = ParseSeedInteger("000", "seed");
  ASSERT_TRUE(zero.ok());
  EXPECT_TRUE(zero->magnitude.empty());
  EXPECT_FALSE(ParseSeedInteger("-", "seed").ok());
  EXPECT_FALSE(ParseSeedInteger("1.5", "seed").ok());
  EXPECT_TRUE(ParseSeedInteger(std::string(kMaxSeedDigits, '9'), "seed").ok());
  auto too_long = ParseSeedInteger(std::string(kMaxSeedDigits + 1, '9'), "seed");
  ASSERT_FALSE(too_long.ok());
  EXPECT_NE(too_long.status().message().find("at most 10000"), std::string::npos);
}

}  // namespace
}  // namespace clairfs

namespace clairfs {
namespace {

// Garbage specs (random bytes around the real keys) must give an error or a spec, never crash.
TEST(PlanSpec, GarbageNeverCrashes) {
  const std::string alphabet = "torch-distributed:random,numpy-rng=seed0123456789-_,world";
  uint64_t state = 1;
  int rejected = 0;
  for (int i = 0; i < 20000; ++i) {
    std::string text;
    state = state * 6364136223846793005ull + 1442695040888963407ull;
    size_t length = (state >> 40) % 48;
    for (size_t k = 0; k < length; ++k) {
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      uint64_t pick = state >> 33;
      text.push_back(pick % 16 == 0 ? static_cast<char>(pick >> 8)
                                    : alphabet[pick % alphabet.size()]);
    }
    auto spec = ParsePlanSpec(text);
    if (!spec.ok()) {
      ++rejected;
      EXPECT_EQ(spec.status().code(), EINVAL) << text;
      EXPECT_FALSE(spec.status().message().empty());
    }
  }
  EXPECT_GT(rejected, 19000);
}

}  // namespace
}  // namespace clairfs

namespace clairfs {
namespace {

TEST(PlanSpec, TheJobsPlanLeavesOutTheRanks) {
  auto a = ParsePlanSpec("torch-distributed:world=8,seed=042,ranks=2-3,shuffle=1,epochs=90");
  auto b = ParsePlanSpec("torch-distributed:seed=42,epochs=90,world=8,ranks=5-5");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(FormatPlanSpec(*a), "torch-distributed:seed=42,world=8,ranks=2-3,epochs=90");
  EXPECT_NE(FormatPlanSpec(*a), FormatPlanSpec(*b));
  EXPECT_EQ(FormatJobPlanSpec(*a), "torch-distributed:seed=42,world=8,epochs=90");
  EXPECT_EQ(FormatJobPlanSpec(*a), FormatJobPlanSpec(*b));
  auto other = ParsePlanSpec("torch-distributed:seed=43,world=8,ranks=2-3,epochs=90");
  ASSERT_TRUE(other.ok());
  EXPECT_NE(FormatJobPlanSpec(*a), FormatJobPlanSpec(*other));
  auto random = ParsePlanSpec("torch-random:seed=7");
  ASSERT_TRUE(random.ok());
  EXPECT_EQ(FormatJobPlanSpec(*random), FormatPlanSpec(*random));
}

// FormatPlanSpec: the canonical text, which parses back to the same spec.
TEST(PlanSpec, FormatsCanonicallyAndParsesBack) {
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"torch-distributed:world=8,seed=042", "torch-distributed:seed=42,world=8"},
      {"torch-distributed:seed=-0,world=4,ranks=0-3,shuffle=1,drop_last=0",
       "torch-distributed:seed=0,world=4"},
      {"torch-distributed:start_epoch=2,epochs=5,ranks=1-2,shuffle=0,drop_last=1,world=4,"
       "seed=-9223372036854775808",
       "torch-distributed:seed=-9223372036854775808,world=4,ranks=1-2,drop_last=1,shuffle=0,"
       "epochs=5,start_epoch=2"},
      {"torch-random:persistent_workers=1,seed=18446744073709551615",
       "torch-random:seed=18446744073709551615,persistent_workers=1"},
      {"numpy:reseed=none,seed=7,epochs=3", "numpy:seed=7,epochs=3"},
      {"numpy:reseed=epoch,seed=7", "numpy:seed=7,reseed=epoch"},
      {"numpy-rng:seed=000340282366920938463463374607431768211456000",
       "numpy-rng:seed=340282366920938463463374607431768211456000"},
      {"sequential", "sequential"},
      {"sequential:epochs=2", "sequential:epochs=2"},
      {"list:a,b:c", "list:a,b:c"}};
  for (const auto& [given, canonical] : cases) {
    auto spec = ParsePlanSpec(given);
    ASSERT_TRUE(spec.ok()) << given << ": " << spec.status().message();
    EXPECT_EQ(FormatPlanSpec(*spec), canonical) << given;
    auto again = ParsePlanSpec(canonical);
    ASSERT_TRUE(again.ok()) << canonical;
    EXPECT_EQ(FormatPlanSpec(*again), canonical);
  }
  // Seeds of any size: 1000 nines, and 10^999.
  const std::string nines(1000, '9');
  auto big = ParsePlanSpec("numpy-rng:seed=" + nines);
  ASSERT_TRUE(big.ok());
  EXPECT_EQ(FormatSeedInteger(big->seed), nines);
  auto power = ParseSeedInteger("1" + std::string(999, '0'), "seed");
  ASSERT_TRUE(power.ok());
  EXPECT_EQ(FormatSeedInteger(*power), "1" + std::string(999, '0'));
}

}  // namespace
}  // namespace clairfs
