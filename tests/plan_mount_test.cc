// Integration tests of plan-driven prefetch and eviction: real mounts over a synthetic
// ImageFolder dataset (`clairfs bench make-dataset`), read in the plan's order as given by
// `clairfs plan show`, always unmounted by ClairfsMount's guard.
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>
#include <sstream>
#include <thread>

#include <gtest/gtest.h>

#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

constexpr int kFiles = 400;
constexpr uint64_t kFileBytes = 16384;

class PlanMountTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backing_ = dir_ / "backing";
    MakeDirs(dir_ / "mnt");
    CommandResult r =
        testing::Run({ClairfsBin(), "bench", "make-dataset", backing_, "--files",
                      std::to_string(kFiles), "--classes", "4", "--sizes", "fixed:16K", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
  }

  // The files rank 0 reads in `epoch` under `spec`, from `clairfs plan show` (over `backing`,
  // by default the fixture's dataset of kFiles files).
  std::vector<std::string> PlanOrder(const std::string& spec, int epoch,
                                     const std::string& backing = "", size_t files = 0) {
    if (files == 0) files = files_;
    CommandResult r = testing::Run({ClairfsBin(), "plan", "show", "--backing",
                                    backing.empty() ? backing_ : backing, "--plan", spec, "--epoch",
                                    std::to_string(epoch)});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> paths;
    std::istringstream in(r.out);
    for (std::string line; std::getline(in, line);) paths.push_back(line);
    EXPECT_EQ(paths.size(), files);
    return paths;
  }

  // Reads every file of `order` through the mount, checking its bytes against the backing file.
  void ReadEpoch(const std::string& mnt, const std::vector<std::string>& order, int pause_us,
                 const std::string& backing = "") {
    for (const std::string& rel : order) {
      // On a no-open mount, pages kept between epochs would hide the reads from the daemon.
      ASSERT_EQ(drop_pages_ ? ReadFileAndDropPages(mnt + "/" + rel) : ReadFile(mnt + "/" + rel),
                ReadFile((backing.empty() ? backing_ : backing) + "/" + rel))
          << rel;
      if (pause_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(pause_us));
    }
  }

  // Runs `epochs` epochs of the plan `read_spec` through a mount with `mount_extra`; returns
  // per-epoch (hits, misses) deltas and the final status.
  std::vector<std::pair<uint64_t, uint64_t>> RunEpochs(const std::string& name,
                                                       const std::vector<std::string>& mount_extra,
                                                       const std::string& read_spec, int epochs,
                                                       bool wait_first, nlohmann::json* final) {
    const std::string mnt = dir_ / ("mnt_" + name);
    MakeDirs(mnt);
    ClairfsMount m(backing_, mnt, dir_ / ("cache_" + name));
    WriteBackDirtyPages();
    CommandResult mounted = m.Mount(mount_extra);
    EXPECT_EQ(mounted.exit_code, 0) << mounted.err;
    if (mounted.exit_code != 0) return {};
    if (wait_first) {
      // Let the prefetcher stage the first window before the reader starts.
      for (int i = 0; i < 200; ++i) {
        nlohmann::json s = m.Status();
        if (s.value("staged_files", size_t{0}) >= files_) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    std::vector<std::pair<uint64_t, uint64_t>> out;
    nlohmann::json before = m.Status();
    for (int e = 0; e < epochs; ++e) {
      ReadEpoch(mnt, PlanOrder(read_spec, e), 1000);
      nlohmann::json after = m.Status();
      out.emplace_back(after["hits"].get<uint64_t>() - before["hits"].get<uint64_t>(),
                       after["misses"].get<uint64_t>() - before["misses"].get<uint64_t>());
      before = after;
      if (after_epoch_) after_epoch_(e, after);
    }
    *final = before;
    EXPECT_EQ(m.Umount().exit_code, 0);
    return out;
  }

  TempDir dir_;
  std::string backing_;
  bool drop_pages_ = false;  // ReadEpoch drops each file's pages after reading it
  size_t files_ = kFiles;    // files in backing_
  // Told after each epoch of RunEpochs with the status then (may be empty).
  std::function<void(int epoch, const nlohmann::json& status)> after_epoch_;
};

// On a no-open mount the plan follows READs: a file's first READ moves the reader's cursor and
// counts the hit, and the plan's hits at half capacity come close to an open mount's (a dataset
// larger than memory: each file's pages are dropped after it is read).
TEST_F(PlanMountTest, NoOpenMountFollowsThePlanOnReads) {
  const std::string spec = "torch-distributed:seed=11,world=1";
  const std::string half = std::to_string(kFiles * kFileBytes / 2);
  drop_pages_ = true;
  nlohmann::json open_status, no_open_status;
  auto open = RunEpochs("open", {"--capacity", half, "--plan", spec}, spec, 3, false, &open_status);
  auto no_open =
      RunEpochs("no_open", {"--capacity", half, "--plan", spec, "--open-mode", "no-open"}, spec, 3,
                false, &no_open_status);
  ASSERT_EQ(open.size(), 3u);
  ASSERT_EQ(no_open.size(), 3u);
  uint64_t open_hits = 0, no_open_hits = 0;
  for (int e = 0; e < 3; ++e) {
    printf("epoch %d: open %llu hits %llu misses; no-open %llu hits %llu misses\n", e,
           static_cast<unsigned long long>(open[e].first),
           static_cast<unsigned long long>(open[e].second),
           static_cast<unsigned long long>(no_open[e].first),
           static_cast<unsigned long long>(no_open[e].second));
    EXPECT_EQ(no_open[e].first + no_open[e].second, static_cast<uint64_t>(kFiles)) << e;
    open_hits += open[e].first;
    no_open_hits += no_open[e].first;
  }
  ASSERT_TRUE(no_open_status["plan"].is_object()) << no_open_status.dump();
  EXPECT_FALSE(no_open_status["plan"]["dropped"].get<bool>());
  EXPECT_EQ(no_open_status["plan"]["mismatches"], 0u);
  EXPECT_EQ(no_open_status["plan"]["epoch"], 3u);
  // Close to the open mount's hits over three epochs (timing moves both by a few percent).
  EXPECT_GE(no_open_hits * 10, open_hits * 8);
}

TEST_F(PlanMountTest, HalfCapacityPlanGetsAtLeastLruHits) {
  const std::string spec = "torch-distributed:seed=11,world=1";
  const std::string half = std::to_string(kFiles * kFileBytes / 2);
  nlohmann::json lru_status, plan_status;
  auto lru = RunEpochs("lru", {"--capacity", half}, spec, 3, false, &lru_status);
  auto plan = RunEpochs("plan", {"--capacity", half, "--plan", spec}, spec, 3, false, &plan_status);
  ASSERT_EQ(lru.size(), 3u);
  ASSERT_EQ(plan.size(), 3u);
  uint64_t lru_hits = 0, plan_hits = 0;
  for (int e = 0; e < 3; ++e) {
    printf("epoch %d: lru %llu hits %llu misses; plan %llu hits %llu misses\n", e,
           static_cast<unsigned long long>(lru[e].first),
           static_cast<unsigned long long>(lru[e].second),
           static_cast<unsigned long long>(plan[e].first),
           static_cast<unsigned long long>(plan[e].second));
    lru_hits += lru[e].first;
    plan_hits += plan[e].first;
  }
  EXPECT_GE(plan_hits, lru_hits);
  // Epochs after the first: the plan keeps staging ahead of the reader.
  EXPECT_GT(plan[1].first + plan[2].first, lru[1].first + lru[2].first);
  ASSERT_TRUE(plan_status["plan"].is_object()) << plan_status.dump();
  EXPECT_FALSE(plan_status["plan"]["dropped"].get<bool>());
  EXPECT_EQ(plan_status["plan"]["mismatches"], 0u);
  EXPECT_EQ(plan_status["plan"]["epoch"], 3u);
  EXPECT_GT(plan_status["plan"]["prefetched_files"].get<uint64_t>(), 0u);
  EXPECT_LE(plan_status["used_bytes"].get<uint64_t>(), kFiles * kFileBytes / 2);
  EXPECT_TRUE(lru_status["plan"].is_null());
  // Every miss has one cause; without a plan none is a plan's, and with one every file is planned.
  for (const nlohmann::json* status : {&lru_status, &plan_status}) {
    uint64_t sum = 0;
    for (const auto& [cause, count] : (*status)["miss_causes"].items())
      sum += count.get<uint64_t>();
    EXPECT_EQ(sum, (*status)["misses"].get<uint64_t>()) << (*status)["miss_causes"];
  }
  EXPECT_EQ(lru_status["miss_causes"]["left_to_reader"], 0u);
  EXPECT_EQ(lru_status["miss_causes"]["not_staged_ahead"], 0u);
  EXPECT_GT(lru_status["miss_causes"]["unplanned"].get<uint64_t>(), 0u);
  EXPECT_EQ(plan_status["miss_causes"]["unplanned"], 0u);
}

TEST_F(PlanMountTest, CapacityOfTheDatasetServesEveryEpochFromTheCacheAfterPrefetch) {
  const std::string spec = "torch-distributed:seed=3,world=1";
  nlohmann::json status;
  auto plan = RunEpochs("full", {"--capacity", "64M", "--plan", spec}, spec, 3, true, &status);
  ASSERT_EQ(plan.size(), 3u);
  for (int e = 0; e < 3; ++e) {
    EXPECT_EQ(plan[e].first, static_cast<uint64_t>(kFiles)) << "epoch " << e;
    EXPECT_EQ(plan[e].second, 0u) << "epoch " << e;
  }
  EXPECT_EQ(status["bytes_from_backing"], 0u);
}

// A cache of exactly the dataset's blocks (sizes rounded up to 4 KiB, as the cache counts them)
// holds the whole dataset: after the first epoch nothing is read from the backing store. Sizes
// include empty files and exact multiples of 4 KiB.
TEST_F(PlanMountTest, ACacheOfExactlyTheDatasetsBlocksReadsNothingFromTheBackingStoreAfterEpoch1) {
  const std::string backing = dir_ / "sized";
  constexpr size_t kSized = 240;
  uint64_t capacity = 0;
  for (size_t i = 0; i < kSized; ++i) {
    const size_t size = i % 10 == 0 ? 0 : i % 10 == 1 ? 4096 * (1 + i % 4) : 1 + (i * 7919) % 40000;
    capacity += (size + 4095) / 4096 * 4096;
    WriteFile(backing + "/c" + std::to_string(i % 4) + "/s" + std::to_string(i) + ".jpg",
              RandomBytes(size, i));
  }
  const std::string spec = "torch-distributed:seed=21,world=1";
  const std::string mnt = dir_ / "mnt_exact";
  MakeDirs(mnt);
  ClairfsMount m(backing, mnt, dir_ / "cache_exact");
  CommandResult mounted = m.Mount({"--capacity", std::to_string(capacity), "--plan", spec});
  ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
  ReadEpoch(mnt, PlanOrder(spec, 0, backing, kSized), 200, backing);
  // As the bench does between epochs: let staging finish (the prefetcher stages epoch 2's order).
  bool all_staged = false;
  for (int i = 0; i < 600 && !all_staged; ++i) {
    all_staged = m.Status().value("staged_files", 0) == static_cast<int>(kSized);
    if (!all_staged) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(all_staged) << m.Status().dump();
  EXPECT_TRUE(m.WaitStagingIdle());
  for (int e = 1; e <= 2; ++e) {
    nlohmann::json before = m.Status();
    ReadEpoch(mnt, PlanOrder(spec, e, backing, kSized), 0, backing);
    nlohmann::json after = m.Status();
    EXPECT_EQ(after["bytes_from_backing"].get<uint64_t>(),
              before["bytes_from_backing"].get<uint64_t>())
        << "epoch " << e + 1;
    EXPECT_EQ(after["misses"].get<uint64_t>(), before["misses"].get<uint64_t>())
        << "epoch " << e + 1;
    EXPECT_EQ(after["hits"].get<uint64_t>() - before["hits"].get<uint64_t>(), kSized)
        << "epoch " << e + 1;
    // Nor by staging: nothing was copied again.
    EXPECT_EQ(after["staging"]["bytes_staged"].get<uint64_t>(),
              before["staging"]["bytes_staged"].get<uint64_t>())
        << "epoch " << e + 1;
  }
  nlohmann::json last = m.Status();
  EXPECT_LE(last["used_bytes"].get<uint64_t>(), capacity);
  EXPECT_EQ(last["evictions"].get<uint64_t>(), 0u) << last.dump();
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST_F(PlanMountTest, AReaderWithTheWrongSeedGetsThePlanDroppedAndReadsByteExact) {
  const std::string half = std::to_string(kFiles * kFileBytes / 2);
  nlohmann::json status;
  auto epochs =
      RunEpochs("wrong", {"--capacity", half, "--plan", "torch-distributed:seed=1,world=1"},
                "torch-distributed:seed=2,world=1", 2, false, &status);
  ASSERT_EQ(epochs.size(), 2u);
  ASSERT_TRUE(status["plan"].is_object());
  EXPECT_TRUE(status["plan"]["dropped"].get<bool>());
  EXPECT_FALSE(status["plan"]["active"].get<bool>());
  EXPECT_NE(status["plan"]["dropped_reason"].get<std::string>().find("does not follow"),
            std::string::npos);
  // Read-through took over: the second epoch hits what LRU kept.
  EXPECT_GT(epochs[1].first, 0u);
}

TEST_F(PlanMountTest, PlanSetAndClearOnARunningMount) {
  const std::string mnt = dir_ / "mnt";
  ClairfsMount m(backing_, mnt, dir_ / "cache");
  ASSERT_EQ(m.Mount({"--capacity", "64M"}).exit_code, 0);
  EXPECT_TRUE(m.Status()["plan"].is_null());
  CommandResult bad =
      testing::Run({ClairfsBin(), "plan", "set", mnt, "--plan", "torch-distributed:world=2"});
  EXPECT_EQ(bad.exit_code, 2) << bad.err;
  CommandResult set = testing::Run(
      {ClairfsBin(), "plan", "set", mnt, "--plan", "torch-distributed:seed=5,world=2,ranks=0-1"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  nlohmann::json s = m.Status();
  ASSERT_TRUE(s["plan"].is_object()) << s.dump();
  EXPECT_EQ(s["plan"]["ranks"].size(), 2u);
  // A mount started without a plan evicts by the plan set later, and by heat (LRU) after it.
  EXPECT_EQ(s["eviction"], "plan");
  EXPECT_EQ(s["plan"]["files"], static_cast<uint64_t>(kFiles));
  CommandResult human = testing::Run({ClairfsBin(), "status", mnt});
  EXPECT_NE(human.out.find("plan        torch-distributed:seed=5"), std::string::npos) << human.out;
  // The prefetcher stages the planned files (the whole dataset fits).
  bool staged = false;
  for (int i = 0; i < 200 && !staged; ++i) {
    staged = m.Status().value("staged_files", 0) >= kFiles;
    if (!staged) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_TRUE(staged);
  ASSERT_EQ(testing::Run({ClairfsBin(), "plan", "clear", mnt}).exit_code, 0);
  EXPECT_TRUE(m.Status()["plan"].is_null());
  EXPECT_EQ(m.Status()["eviction"], "lru");
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// --plan auto: a reader of torch-distributed seed 4242 (set_epoch each epoch) through a mount given
// no plan (half the dataset's capacity). The plan is inferred during the first epoch, and from
// the next epoch on at least 90% of opens hit (the PyTorch test holds an inferred plan to a given
// plan's 95%; here the reader is faster, and hits depend on the prefetcher keeping pace, which a
// loaded machine slows).
TEST_F(PlanMountTest, AutoInfersThePlanInTheFirstEpochAndHitsFromTheNext) {
  files_ = 6000;  // the threshold needs a dataset well beyond the 256-position window
  backing_ = dir_ / "big";
  CommandResult made =
      testing::Run({ClairfsBin(), "bench", "make-dataset", backing_, "--files",
                    std::to_string(files_), "--classes", "6", "--sizes", "fixed:4K", "--json"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string spec = "torch-distributed:seed=4242,world=1";
  const std::string half = std::to_string(files_ * 4096 / 2);
  int adopted_in = -1;
  after_epoch_ = [&](int epoch, const nlohmann::json& status) {
    if (adopted_in < 0 && status["plan"].is_object() &&
        status["plan"]["inference"].value("state", "") == "adopted") {
      adopted_in = epoch;
    }
  };
  nlohmann::json auto_status;
  auto automatic =
      RunEpochs("auto", {"--capacity", half, "--plan", "auto"}, spec, 3, false, &auto_status);
  ASSERT_EQ(automatic.size(), 3u);
  for (int e = 0; e < 3; ++e) {
    printf("epoch %d: auto %llu hits %llu misses\n", e,
           static_cast<unsigned long long>(automatic[e].first),
           static_cast<unsigned long long>(automatic[e].second));
  }
  printf("auto: %s\n", auto_status["plan"].dump().c_str());
  ASSERT_EQ(adopted_in, 0) << auto_status.dump();
  ASSERT_TRUE(auto_status["plan"].is_object());
  EXPECT_EQ(auto_status["plan"]["spec"], spec);
  EXPECT_FALSE(auto_status["plan"]["dropped"].get<bool>());
  EXPECT_EQ(auto_status["plan"]["mismatches"], 0u);
  EXPECT_EQ(auto_status["plan"]["eviction"], "plan");
  const nlohmann::json& inference = auto_status["plan"]["inference"];
  EXPECT_EQ(inference["adopted"], spec);
  EXPECT_NE(inference["summary"].get<std::string>().find("set_epoch continues it"),
            std::string::npos);
  for (int e = 1; e < 3; ++e) {
    EXPECT_GE(static_cast<double>(automatic[e].first),
              HitShareFloor(0.9) * static_cast<double>(files_))
        << "epoch " << e;
  }
}

// --plan-uid: root's allow_other mount infers and follows only root's (the job's) opens. Another
// user reads, as one process and faster than the job, the first 600 files of another plan's
// order during the job's first epoch: that plan is never adopted, the job's is, in the first
// epoch, with no mismatch, and it hits from the next; every byte the job reads is exact.
TEST_F(PlanMountTest, AnotherUsersReadsNeitherSteerNorDropAPlanBoundToTheJobsUser) {
  if (!testing::CanRunAsOtherUsers()) GTEST_SKIP() << "needs root and setpriv";
  constexpr uid_t kNobody = 65534;
  ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
  files_ = 6000;
  backing_ = dir_ / "big";
  CommandResult made =
      testing::Run({ClairfsBin(), "bench", "make-dataset", backing_, "--files",
                    std::to_string(files_), "--classes", "6", "--sizes", "fixed:4K", "--json"});
  ASSERT_EQ(made.exit_code, 0) << made.err;
  const std::string mnt = dir_ / "mnt";
  ClairfsMount m(backing_, mnt, dir_ / "cache");
  ASSERT_EQ(m.Mount({"--capacity", std::to_string(files_ * 4096 / 2), "--plan", "auto",
                     "--plan-uid", "root", "-o", "allow_other"})
                .exit_code,
            0);
  // The other user's list: the first 600 files of their plan, read by one `cat`.
  const std::string list = dir_ / "other.txt";
  {
    std::vector<std::string> theirs = PlanOrder("torch-distributed:seed=777,world=1", 0);
    std::string text;
    for (size_t i = 0; i < 600; ++i) text += mnt + "/" + theirs[i] + "\n";
    WriteFile(list, text);
    ASSERT_EQ(chmod(list.c_str(), 0644), 0);
  }
  CommandResult other;
  std::thread intruder([&] {
    other = testing::RunAs(kNobody, {"xargs", "-d", "\\n", "-a", list, "cat"}, 120);
  });
  const std::string spec = "torch-distributed:seed=4242,world=1";
  std::vector<uint64_t> hits;
  nlohmann::json status = m.Status();
  for (int e = 0; e < 3; ++e) {
    const uint64_t before = status["hits"].get<uint64_t>();
    ReadEpoch(mnt, PlanOrder(spec, e), 1000);  // byte-exact, or the test fails here
    if (e == 0) intruder.join();
    status = m.Status();
    hits.push_back(status["hits"].get<uint64_t>() - before);
    printf("epoch %d: %llu hits\n", e, static_cast<unsigned long long>(hits.back()));
    if (e == 0) {
      // Adopted in the first epoch, from root's opens only.
      ASSERT_TRUE(status["plan"].is_object()) << status.dump();
      EXPECT_EQ(status["plan"]["inference"]["state"], "adopted") << status["plan"].dump();
    }
  }
  printf("plan: %s\n", status["plan"].dump().c_str());
  EXPECT_EQ(other.exit_code, 0) << other.err;
  EXPECT_EQ(other.out.size(), 600u * 4096) << "the other user read what they may";
  const nlohmann::json& plan = status["plan"];
  EXPECT_EQ(plan["spec"], spec);
  EXPECT_EQ(plan["uid"], 0u);
  EXPECT_EQ(plan["inference"]["adopted"], spec);
  EXPECT_EQ(plan["inference"]["adoptions"], 1u);
  EXPECT_EQ(plan["mismatches"], 0u);
  EXPECT_FALSE(plan["dropped"].get<bool>());
  for (int e = 1; e < 3; ++e) {
    EXPECT_GE(static_cast<double>(hits[e]), HitShareFloor(0.9) * static_cast<double>(files_))
        << "epoch " << e;
  }
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST_F(PlanMountTest, PlanSetAutoOnARunningMountSearchesAndReportsIt) {
  const std::string mnt = dir_ / "mnt";
  ClairfsMount m(backing_, mnt, dir_ / "cache");
  ASSERT_EQ(m.Mount({"--capacity", "64M"}).exit_code, 0);
  CommandResult set = testing::Run({ClairfsBin(), "plan", "set", mnt, "--plan", "auto"});
  ASSERT_EQ(set.exit_code, 0) << set.err;
  EXPECT_NE(set.out.find("inferred from the next opens"), std::string::npos) << set.out;
  nlohmann::json s = m.Status();
  ASSERT_TRUE(s["plan"].is_object()) << s.dump();
  EXPECT_EQ(s["plan"]["spec"], "auto");
  EXPECT_EQ(s["plan"]["inference"]["state"], "waiting");
  // A few hundred opens of a 400-file dataset: too small to tell 2^30 candidates apart, which
  // status says rather than adopting anything.
  ReadEpoch(mnt, PlanOrder("torch-distributed:seed=5,world=1", 0), 0);
  nlohmann::json inference;
  for (int i = 0; i < 100; ++i) {
    inference = m.Status()["plan"]["inference"];
    if (inference.value("state", "") == "gave_up") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_EQ(inference["state"], "gave_up") << inference.dump();
  EXPECT_EQ(inference["last_outcome"], "dataset_too_small") << inference.dump();
  CommandResult human = testing::Run({ClairfsBin(), "status", mnt});
  EXPECT_NE(human.out.find("plan        auto: gave_up"), std::string::npos) << human.out;
  ASSERT_EQ(testing::Run({ClairfsBin(), "plan", "clear", mnt}).exit_code, 0);
  EXPECT_TRUE(m.Status()["plan"].is_null());
  EXPECT_EQ(m.Umount().exit_code, 0);
}

}  // namespace
}  // namespace clairfs::testing
