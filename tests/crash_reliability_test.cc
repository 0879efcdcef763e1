// Reliability matrix, row "Crashes: kill -9 of the daemon" (docs/RELIABILITY.md). Each trial
// mounts a dataset larger than the cache, runs readers that verify every byte they get plus one
// activity in a loop (staging with `clairfs stage --wait`, eviction with `clairfs evict` under
// capacity pressure, plan changes with `clairfs plan set`/`plan clear`, or reads alone), kills
// the daemon with SIGKILL at a random instant of it, then remounts over the dead mount (timed),
// reads every byte of the dataset through the new mount, unmounts, and runs
// `clairfs fsck --verify`, which compares every staged copy with its backing file.
//
// Trials: CLAIRFS_RELIABILITY_TRIALS (unset: 12, the CI form; "full": 100; "least": 4, each
// activity once, the ASan stage's form); the seed
// (CLAIRFS_RELIABILITY_SEED to replay) picks the activity order, kill instants and mount options.
// The summary line (RELIABILITY row=crash ...) carries the figures.
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/mount_helpers.h"
#include "tests/reliability.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

namespace fsys = std::filesystem;

enum class Activity { kStaging, kEviction, kPlanChanges, kReads };
constexpr Activity kActivities[] = {Activity::kStaging, Activity::kEviction, Activity::kPlanChanges,
                                    Activity::kReads};

const char* NameOf(Activity a) {
  switch (a) {
    case Activity::kStaging:
      return "staging";
    case Activity::kEviction:
      return "eviction";
    case Activity::kPlanChanges:
      return "plan";
    case Activity::kReads:
      return "reads";
  }
  return "?";
}

size_t EntriesIn(const std::string& dir) {
  std::error_code ec;
  size_t n = 0;
  for (auto it = fsys::directory_iterator(dir, ec); !ec && it != fsys::directory_iterator();
       it.increment(ec)) {
    ++n;
  }
  return n;
}

// Waits until `pid` is gone: no such process, or a zombie left for init to reap (the daemon is
// not our child).
bool WaitGone(pid_t pid, double seconds) {
  const auto start = std::chrono::steady_clock::now();
  for (;;) {
    if (kill(pid, 0) != 0) return true;
    const std::string stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
    const size_t paren = stat.rfind(')');
    if (paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] == 'Z') {
      return true;
    }
    if (SecondsSince(start) > seconds) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

// The activity's commands, run in a loop by one thread until stopped; `in_command` is true while
// one runs, so the kill can say whether it landed inside one.
class ActivityLoop {
 public:
  ActivityLoop(Activity activity, std::string mnt, std::vector<std::string> names, uint64_t seed)
      : activity_(activity), mnt_(std::move(mnt)), names_(std::move(names)), rng_(seed) {}
  ~ActivityLoop() { Stop(); }
  void Start() {
    if (activity_ != Activity::kReads) thread_ = std::thread([this] { Loop(); });
  }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  bool in_command() const { return in_command_.load(); }
  int commands() const { return commands_.load(); }

 private:
  void Cli(std::vector<std::string> args) {
    args.insert(args.begin(), ClairfsBin());
    in_command_ = true;
    testing::Run(args, 60);
    in_command_ = false;
    ++commands_;
  }
  void Loop() {
    while (!stop_) {
      switch (activity_) {
        case Activity::kStaging:
          Cli({"stage", mnt_, "--wait"});  // the whole dataset: more than the capacity
          if (rng_() % 2 == 0) Cli({"evict", mnt_, "--all"});
          break;
        case Activity::kEviction: {
          std::vector<std::string> args = {"evict", mnt_};
          for (int i = 0; i < 30; ++i) args.push_back(names_[rng_() % names_.size()]);
          Cli(args);
          if (rng_() % 3 == 0) Cli({"evict", mnt_, "--all"});
          break;
        }
        case Activity::kPlanChanges:
          if (rng_() % 4 == 0) {
            Cli({"plan", "clear", mnt_});
          } else {
            Cli({"plan", "set", mnt_, "--plan",
                 "torch-random:seed=" + std::to_string(rng_() % 1000) + ",epochs=3", "--layout",
                 "sorted"});
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(rng_() % 200));
          break;
        case Activity::kReads:
          return;
      }
    }
  }

  Activity activity_;
  std::string mnt_;
  std::vector<std::string> names_;
  std::mt19937_64 rng_;
  std::thread thread_;
  std::atomic<bool> stop_{false}, in_command_{false};
  std::atomic<int> commands_{0};
};

class CrashReliabilityTest : public MountDirsTest {};

TEST_F(CrashReliabilityTest, KillNineAtRandomInstantsThenRemountAndVerifyEveryByte) {
  const int trials = ReliabilityTrials(12, 100, 4);
  const uint64_t seed = ReliabilitySeed();
  std::mt19937_64 rng(seed);
  // About 19 MB in 240 files, 2.4x the cache: staging, reads and plans all evict.
  const auto files = MakeFiles(backing_, 240, 160 * 1024, seed + 1);
  std::vector<std::string> names;
  for (const auto& [rel, content] : files) names.push_back(rel);

  const auto test_start = std::chrono::steady_clock::now();
  uint64_t wrong_bytes = 0, reads = 0, read_errors = 0, fsck_findings = 0, fsck_repairs = 0;
  int failed_remounts = 0, failed_umounts = 0, hung = 0, kills_in_command = 0;
  size_t copies_in_flight_at_kill = 0;
  double max_call = 0;
  std::vector<double> remount_seconds;
  std::map<std::string, int> kills_by_activity;
  std::string first_problem;

  for (int trial = 0; trial < trials; ++trial) {
    const Activity activity = kActivities[(trial + seed) % 4];
    const double kill_after = 0.05 + std::uniform_real_distribution<double>(0, 1.45)(rng);
    std::vector<std::string> options = {"--capacity",      "8M", "--stage-bandwidth", "40",
                                        "--stage-threads", "4"};
    if (rng() % 2 == 0) options.insert(options.end(), {"--passthrough", "off"});
    if (rng() % 2 == 0) options.insert(options.end(), {"--read-mode", "splice"});
    SCOPED_TRACE("trial " + std::to_string(trial) + " (" + NameOf(activity) + ", kill after " +
                 std::to_string(kill_after) + " s, seed " + std::to_string(seed) + ")");

    ClairfsMount m(backing_, mnt_, cache_);
    CommandResult mounted = m.Mount(options);
    ASSERT_EQ(mounted.exit_code, 0) << mounted.err;
    const pid_t daemon = m.pid();
    ASSERT_GT(daemon, 0);
    {
      VerifyingReaders::Options reader_options;
      reader_options.threads = 3;
      reader_options.bound_seconds = 10;
      reader_options.seed = rng();
      reader_options.files = names;
      VerifyingReaders readers(mnt_, reader_options, VerifyingReaders::Exact(&files));
      ActivityLoop loop(activity, mnt_, names, rng());
      readers.Start();
      loop.Start();
      std::this_thread::sleep_for(std::chrono::duration<double>(kill_after));
      copies_in_flight_at_kill += EntriesIn(cache_ + "/tmp");
      if (loop.in_command()) ++kills_in_command;
      ASSERT_EQ(kill(daemon, SIGKILL), 0);
      ++kills_by_activity[NameOf(activity)];
      EXPECT_TRUE(WaitGone(daemon, 10)) << "the killed daemon " << daemon << " did not exit";
      readers.Stop();
      loop.Stop();
      wrong_bytes += readers.wrong_bytes();
      reads += readers.reads();
      read_errors += readers.errors();
      hung += readers.hung();
      max_call = std::max(max_call, readers.max_call_seconds());
      if (first_problem.empty() && !readers.first_wrong().empty()) {
        first_problem = readers.first_wrong();
      }
    }

    // Remount over the dead mount: the mount command clears it and the daemon recovers the cache.
    const auto remount_start = std::chrono::steady_clock::now();
    CommandResult remounted = m.Mount(options);
    remount_seconds.push_back(SecondsSince(remount_start));
    if (remounted.exit_code != 0) {
      ++failed_remounts;
      ADD_FAILURE() << "remount failed: " << remounted.err;
      continue;
    }
    std::string problem;
    const uint64_t wrong = VerifyEveryByte(mnt_, files, &problem);
    wrong_bytes += wrong;
    EXPECT_EQ(wrong, 0u) << problem;
    if (first_problem.empty()) first_problem = problem;
    CommandResult unmounted = m.Umount();
    if (unmounted.exit_code != 0) {
      ++failed_umounts;
      ADD_FAILURE() << "umount failed: " << unmounted.err;
      continue;
    }

    const FsckVerdict fsck = FsckVerify(cache_, backing_);
    if (!fsck.ran) {
      ++fsck_findings;
      ADD_FAILURE() << "fsck printed no report: " << fsck.output;
      continue;
    }
    fsck_findings += fsck.findings;
    EXPECT_EQ(fsck.findings, 0u) << fsck.output;
    // The remount recovered the crash and unmounted cleanly: nothing is left to repair.
    fsck_repairs += fsck.repairs;
  }

  ReliabilitySummary summary("crash", seed);
  summary.Set("trials", trials);
  for (Activity a : kActivities)
    summary.Set(std::string("kills_") + NameOf(a), kills_by_activity[NameOf(a)]);
  summary.Set("kills_in_command", kills_in_command);
  summary.Set("copies_in_flight_at_kill", static_cast<uint64_t>(copies_in_flight_at_kill));
  summary.Set("reads", reads);
  summary.Set("read_errors", read_errors);
  summary.Set("wrong_bytes", wrong_bytes);
  summary.Set("failed_remounts", failed_remounts);
  summary.Set("failed_umounts", failed_umounts);
  summary.Set("fsck_findings", fsck_findings);
  summary.Set("fsck_repairs_after_clean_umount", fsck_repairs);
  summary.SetMs("remount_ms_median", Median(remount_seconds));
  summary.SetMs("remount_ms_max", Max(remount_seconds));
  summary.Set("hung_readers", hung);
  summary.SetMs("max_read_call_ms", max_call);
  summary.SetMs("wall_ms", SecondsSince(test_start));
  summary.Print();

  EXPECT_EQ(wrong_bytes, 0u) << first_problem;
  EXPECT_EQ(failed_remounts, 0);
  EXPECT_EQ(failed_umounts, 0);
  EXPECT_EQ(fsck_findings, 0u);
  EXPECT_EQ(fsck_repairs, 0u);
  EXPECT_EQ(hung, 0);
}

}  // namespace
}  // namespace clairfs::testing
