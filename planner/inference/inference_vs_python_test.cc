// InferPlan on orders the real libraries produce (torch 1.13 DistributedSampler with set_epoch
// and a DataLoader with a seeded generator, numpy RandomState and default_rng), run in one
// /usr/bin/python3 process. Without python3, torch or numpy the test is skipped, except under
// CI=true where that is a failure.
#include <cstdlib>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "planner/inference/plan_inference.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

constexpr const char* kScript = R"PY(
import json, sys
import numpy as np
import torch
from torch.utils.data import DataLoader, DistributedSampler
n = int(sys.argv[1])
data = list(range(n))
out = {}
ranks = []
for rank in range(4):
    s = DistributedSampler(data, num_replicas=4, rank=rank, shuffle=True, seed=7)
    s.set_epoch(3)
    ranks.append(list(s)[:60])
out["distributed"] = ranks
g = torch.Generator().manual_seed(42)
out["torch_random"] = [int(i) for i in DataLoader(data, batch_size=None, shuffle=True, generator=g)][:80]
out["numpy"] = np.random.RandomState(3407).permutation(n)[:80].tolist()
out["numpy_rng"] = np.random.default_rng(2024).permutation(n)[:80].tolist()
print(json.dumps(out))
)PY";

TEST(InferenceVsPython, RecognisesOrdersOfTheRealLibraries) {
  const char* override_path = getenv("CLAIRFS_TEST_PYTHON");
  const std::string python =
      override_path != nullptr && *override_path ? override_path : "/usr/bin/python3";
  testing::TempDir dir;
  testing::WriteFile(dir / "oracle.py", kScript);
  const uint64_t n = 30000;
  testing::CommandResult run = testing::Run({python, dir / "oracle.py", std::to_string(n)}, 300);
  if (run.exit_code != 0) {
    if (testing::InCi()) FAIL() << "CI=true but " << python << " failed: " << run.err;
    GTEST_SKIP() << python << " cannot run the torch/numpy oracle: " << run.err;
  }
  auto orders = nlohmann::json::parse(run.out);

  InferenceOptions search;
  search.max_seed_plus_epoch = 4096;
  search.max_world = 64;
  search.window = 16;

  // Four ranks, each its own pid, opens interleaved rank by rank.
  std::vector<Observation> trace;
  for (size_t i = 0; i < 60; ++i) {
    for (uint64_t rank = 0; rank < 4; ++rank) {
      trace.push_back({orders["distributed"][rank][i].get<uint64_t>(), 100 + rank});
    }
  }
  InferenceResult r = InferPlan(trace, n, search);
  ASSERT_EQ(r.outcome, InferenceOutcome::kAdopted) << r.reason;
  EXPECT_EQ(r.spec, "torch-distributed:seed=10,world=4");  // seed 7 + epoch 3
  for (const ReaderRank& reader : r.readers) EXPECT_EQ(reader.rank, reader.reader - 100);

  struct Case {
    const char* key;
    const char* spec;
  };
  for (const Case& c :
       {Case{"torch_random", "torch-random:seed=42"}, Case{"numpy", "numpy:seed=3407"},
        Case{"numpy_rng", "numpy-rng:seed=2024"}}) {
    std::vector<Observation> opens;
    for (const auto& i : orders[c.key]) opens.push_back({i.get<uint64_t>(), 0});
    InferenceResult one = InferPlan(opens, n, search);
    ASSERT_EQ(one.outcome, InferenceOutcome::kAdopted) << c.key << ": " << one.reason;
    EXPECT_EQ(one.spec, c.spec);
  }
}

}  // namespace
}  // namespace clairfs
