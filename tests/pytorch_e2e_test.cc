// End to end with real PyTorch: a DataLoader over torchvision ImageFolder (raw-bytes loader),
// DistributedSampler(seed, world, rank) + set_epoch, num_workers=2, 3 epochs, reads through a
// mount given the matching plan at half the dataset's capacity, with a per-batch pause of 20 ms
// standing in for the GPU step (at 10 ms the daemon's fsynced copies fell behind the loader in two
// full-suite runs on a busy disk, 787 and 795 hits of 852; a GPU step is longer still). Every
// sample's bytes are checked against the backing file, and after the first 5% of the first epoch at
// least 95% of opens must be hits (from status snapshots taken by the Python loop); and the same
// job through a mount given `--plan auto` instead, which must infer the plan during the first epoch
// and hit as often from the next one on. Skipped when /usr/bin/python3 lacks torch or torchvision,
// except under CI=true.
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
epoch_stats = []
for epoch in range(epochs):
    sampler.set_epoch(epoch)
    start = status()
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
        time.sleep(0.020)
    after = status()
    epoch_stats.append({'opens': after['opens'] - start['opens'],
                        'hits': after['hits'] - start['hits'], 'plan': after['plan']})
end = status()
print(json.dumps({'checked': checked, 'per_epoch': per_epoch,
                  'opens': end['opens'] - warm['opens'], 'hits': end['hits'] - warm['hits'],
                  'misses': end['misses'] - warm['misses'], 'plan': end['plan'],
                  'epochs': epoch_stats}))
)PY";

// Skips (or fails under CI=true) without torch and torchvision under kPython.
bool HaveTorch() {
  CommandResult probe = testing::Run({kPython, "-c", "import torch, torchvision"}, 120);
  if (probe.exit_code == 0) return true;
  if (InCi()) {
    ADD_FAILURE() << "CI=true but " << kPython << " cannot import torch/torchvision: " << probe.err;
  }
  return false;
}

// Runs the loop over a fresh dataset of `files` files of 16 KiB through a mount at half the
// dataset's capacity with `plan_args`; returns the loop's last line (parsed), or null on a failure
// (reported).
nlohmann::json RunLoop(const TempDir& dir, int files, int seed, int world, int rank, int epochs,
                       std::vector<std::string> plan_args) {
  const std::string backing = dir / "backing";
  const uint64_t bytes = 16384;
  CommandResult made =
      testing::Run({ClairfsBin(), "bench", "make-dataset", backing, "--files",
                    std::to_string(files), "--classes", "5", "--sizes", "fixed:16K", "--json"});
  EXPECT_EQ(made.exit_code, 0) << made.err;
  if (made.exit_code != 0) return nullptr;
  const std::string mnt = dir / "mnt";
  MakeDirs(mnt);
  ClairfsMount m(backing, mnt, dir / "cache");
  std::vector<std::string> args = {"--capacity", std::to_string(files * bytes / 2)};
  WriteBackDirtyPages();
  args.insert(args.end(), plan_args.begin(), plan_args.end());
  CommandResult mounted = m.Mount(args);
  EXPECT_EQ(mounted.exit_code, 0) << mounted.err;
  if (mounted.exit_code != 0) return nullptr;
  WriteFile(dir / "loop.py", kLoop);
  CommandResult r =
      testing::Run({kPython, dir / "loop.py", ClairfsBin(), mnt, backing, std::to_string(seed),
                    std::to_string(world), std::to_string(rank), std::to_string(epochs)},
                   600);
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(m.Umount().exit_code, 0);
  if (r.exit_code != 0) return nullptr;
  std::string last_line;
  std::istringstream lines(r.out);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty()) last_line = line;
  }
  nlohmann::json result = nlohmann::json::parse(last_line, nullptr, false);
  EXPECT_TRUE(result.is_object()) << r.out;
  if (!result.is_object()) return nullptr;
  EXPECT_EQ(result["checked"], static_cast<uint64_t>(epochs * files / world));
  return result;
}

TEST(PytorchE2eTest, DistributedSamplerThroughAPlannedMountIsByteExactAndHitsAfterWarmup) {
  if (!HaveTorch()) {
    GTEST_SKIP() << kPython << " has no torch/torchvision (apt-get install python3-torch "
                 << "python3-torchvision)";
  }
  TempDir dir;
  const int seed = 1234, world = 2, rank = 1;
  const std::string spec = "torch-distributed:seed=" + std::to_string(seed) +
                           ",world=" + std::to_string(world) + ",ranks=" + std::to_string(rank) +
                           "-" + std::to_string(rank);
  nlohmann::json result = RunLoop(dir, 600, seed, world, rank, 3, {"--plan", spec});
  ASSERT_TRUE(result.is_object());
  printf("pytorch e2e: %s\n", result.dump().c_str());
  const uint64_t opens = result["opens"], hits = result["hits"];
  ASSERT_GT(opens, 0u);
  EXPECT_GE(static_cast<double>(hits), HitShareFloor(0.95) * static_cast<double>(opens))
      << hits << " hits of " << opens << " opens";
  EXPECT_FALSE(result["plan"]["dropped"].get<bool>()) << result["plan"].dump();
  EXPECT_EQ(result["plan"]["mismatches"], 0u);
}

// The same job through a mount given no plan (`--plan auto`): the plan is inferred in the first
// epoch from the opens of the rank's DataLoader workers, which count as one reader, and from the
// next epoch on the mount hits as the planned one above does (at least 95% of opens).
TEST(PytorchE2eTest, DistributedSamplerThroughAnAutoMountIsInferredAndHitsFromTheNextEpoch) {
  if (!HaveTorch()) {
    GTEST_SKIP() << kPython << " has no torch/torchvision (apt-get install python3-torch "
                 << "python3-torchvision)";
  }
  TempDir dir;
  // 6,000 samples: a dataset large enough for the threshold (the window is 256 positions).
  nlohmann::json result = RunLoop(dir, 6000, 3407, 2, 1, 3, {"--plan", "auto"});
  ASSERT_TRUE(result.is_object());
  const nlohmann::json& epochs = result["epochs"];
  ASSERT_EQ(epochs.size(), 3u);
  for (size_t e = 0; e < epochs.size(); ++e) {
    printf("pytorch e2e auto: epoch %zu: %llu hits of %llu opens\n", e,
           static_cast<unsigned long long>(epochs[e]["hits"].get<uint64_t>()),
           static_cast<unsigned long long>(epochs[e]["opens"].get<uint64_t>()));
  }
  const nlohmann::json& first = epochs[0]["plan"];
  ASSERT_TRUE(first.is_object()) << epochs[0].dump();
  ASSERT_EQ(first["inference"]["state"], "adopted") << first.dump();
  EXPECT_EQ(first["inference"]["adopted"], "torch-distributed:seed=3407,world=2,ranks=1-1");
  EXPECT_EQ(first["inference"]["readers"], 1u) << "the workers are not one reader";
  printf("pytorch e2e auto: %s\n", first["inference"]["summary"].get<std::string>().c_str());
  for (size_t e = 1; e < epochs.size(); ++e) {
    const double opens = epochs[e]["opens"].get<double>();
    EXPECT_GE(epochs[e]["hits"].get<double>(), HitShareFloor(0.95) * opens) << "epoch " << e;
  }
  EXPECT_FALSE(result["plan"]["dropped"].get<bool>()) << result["plan"].dump();
}

}  // namespace
}  // namespace clairfs::testing
