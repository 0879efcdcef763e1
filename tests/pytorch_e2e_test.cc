// End to end with real PyTorch: a DataLoader over torchvision ImageFolder (raw-bytes loader),
// DistributedSampler(seed, world, rank) + set_epoch, num_workers=2, 3 epochs, reads through a
// mount given the matching plan at half the dataset's capacity, with a per-batch pause standing in
// for the GPU step. Every sample's bytes are checked against the backing file, and after the first
// 5% of the first epoch at least 95% of opens must be hits (from status snapshots taken by the
// Python loop). Skipped when /usr/bin/python3 lacks torch or torchvision, except under CI=true.
#include <cstdlib>
#include <sstream>

#include <gtest/gtest.h>

#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

constexpr const char* kPython = "/usr/bin/python3";

constexpr const char* kLoop = R"PY(
import json, os, subprocess, sys, time
import torch, torchvision
from torch.utils.data import DataLoader, Dataset, DistributedSampler

clairfs, mnt, backing, seed, world, rank, epochs = sys.argv[1:8]
seed, world, rank, epochs = int(seed), int(world), int(rank), int(epochs)
images = torchvision.datasets.ImageFolder(mnt, loader=lambda p: open(p, 'rb').read())

class Indexed(Dataset):
    def __len__(self):
        return len(images)
    def __getitem__(self, i):
        return i, images[i][0]

def status():
    out = subprocess.run([clairfs, 'status', mnt, '--json'], check=True, capture_output=True)
    return json.loads(out.stdout)

sampler = DistributedSampler(Indexed(), num_replicas=world, rank=rank, shuffle=True, seed=seed)
loader = DataLoader(Indexed(), batch_size=8, sampler=sampler, num_workers=2,
                    collate_fn=lambda batch: batch)
per_epoch = len(sampler)
warm = None
checked = 0
for epoch in range(epochs):
    sampler.set_epoch(epoch)
    seen = 0
    for batch in loader:
        for i, data in batch:
            rel = os.path.relpath(images.samples[i][0], mnt)
            with open(os.path.join(backing, rel), 'rb') as f:
                if f.read() != data:
                    print(json.dumps({'error': 'bytes differ: ' + rel}))
                    sys.exit(1)
            checked += 1
        seen += len(batch)
        if warm is None and epoch == 0 and seen >= per_epoch * 0.05:
            warm = status()
        time.sleep(0.010)
end = status()
print(json.dumps({'checked': checked, 'per_epoch': per_epoch,
                  'opens': end['opens'] - warm['opens'], 'hits': end['hits'] - warm['hits'],
                  'misses': end['misses'] - warm['misses'], 'plan': end['plan']}))
)PY";

TEST(PytorchE2eTest, DistributedSamplerThroughAPlannedMountIsByteExactAndHitsAfterWarmup) {
  CommandResult probe = testing::Run({kPython, "-c", "import torch, torchvision"}, 120);
  if (probe.exit_code != 0) {
    if (InCi()) {
      FAIL() << "CI=true but " << kPython << " cannot import torch/torchvision: " << probe.err;
    }
    GTEST_SKIP() << kPython << " has no torch/torchvision (apt-get install python3-torch "
                 << "python3-torchvision)";
  }
  TempDir dir;
  const std::string backing = dir / "backing";
  const int files = 600;
  const uint64_t bytes = 16384;
  CommandResult made =
      testing::Run({ClairfsBin(), "bench", "make-dataset", backing, "--files",
                    std::to_string(files), "--classes", "5", "--sizes", "fixed:16K", "--json"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string mnt = dir / "mnt";
  MakeDirs(mnt);
  ClairfsMount m(backing, mnt, dir / "cache");
  const int seed = 1234, world = 2, rank = 1, epochs = 3;
  const std::string spec = "torch-distributed:seed=" + std::to_string(seed) +
                           ",world=" + std::to_string(world) + ",ranks=" + std::to_string(rank) +
                           "-" + std::to_string(rank);
  CommandResult mounted =
      m.Mount({"--capacity", std::to_string(files * bytes / 2), "--plan", spec});
  ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
  WriteFile(dir / "loop.py", kLoop);
  CommandResult r =
      testing::Run({kPython, dir / "loop.py", ClairfsBin(), mnt, backing, std::to_string(seed),
                    std::to_string(world), std::to_string(rank), std::to_string(epochs)},
                   300);
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string last_line;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) last_line = line;
  }
  nlohmann::json result = nlohmann::json::parse(last_line, nullptr, false);
  ASSERT_TRUE(result.is_object()) << r.out;
  printf("pytorch e2e: %s\n", result.dump().c_str());
  EXPECT_EQ(result["checked"], static_cast<uint64_t>(epochs * files / world));
  const uint64_t opens = result["opens"], hits = result["hits"];
  ASSERT_GT(opens, 0u);
  EXPECT_GE(static_cast<double>(hits), 0.95 * static_cast<double>(opens))
      << hits << " hits of " << opens << " opens";
  EXPECT_FALSE(result["plan"]["dropped"].get<bool>()) << result["plan"].dump();
  EXPECT_EQ(result["plan"]["mismatches"], 0u);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

}  // namespace
}  // namespace clairfs::testing
