// Reliability matrix, row "Backing store faults" (docs/RELIABILITY.md). Real mounts over a
// backing store that fails while readers verify every byte and `clairfs stage --wait` keeps
// staging:
//   errors   the PFS emulator (`clairfs pfs-emu --fail`) fails opens of some files with EIO,
//            ENOENT or EACCES and every read of others with EIO: those files give the reader an
//            error, never a byte, and every other file reads byte-exact without an error
//   hangs    the emulator (`--slow`) makes opens of some files hang for seconds and reads of
//            others crawl, while 160 readers wait on them, more than the daemon's request
//            threads (128 by default): readers of the other files never wait past their bound
//            (the hung calls wait on backing-call threads, docs/RELIABILITY.md finding 3), and
//            the waiting readers get their bytes once the backing store answers, not later.
//   changes  files modified in place, replaced, removed and grown in the backing store during
//            the mount, under --revalidate never and open: no read returns a byte that is in
//            neither the listed version nor the new one (under open, a read that overlapped the
//            change may return zeros between the two versions' ends, counted apart as
//            zeros_between_sizes: README, --revalidate); under never a read after the change
//            returns the listed version or an error; a remount serves the new versions. Under
//            open, a read begun after the change returns the new version (a removed file: an
//            error); one that returns the listed version is a stale read (stale_reads,
//            docs/RELIABILITY.md finding 2), which fails the row since that finding's fix, and
//            each is printed after the summary as a line `STALE_READ changes_open trial=T FILE
//            change=KIND listed_size=... new_size=... offset=... asked=... returned=...
//            open_after_change_ms=...`. A copy
//            staged while an in-place write ran used to be published torn; the mount's default
//            --stage-settle (2 s), which every mount of this row keeps, prevents it
// and the daemon must survive, unmount cleanly and leave a cache that fsck --verify finds equal to
// the backing store.
//
// Trials: CLAIRFS_RELIABILITY_TRIALS rounds over the scenarios (unset: 1, the CI form; "full":
// 10); CLAIRFS_RELIABILITY_SCENARIOS=hangs,... runs only those named. Summary line: RELIABILITY
// row=backing_store ... A round whose readers hang prints a STUCK_REPORT (tests/reliability.h).
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
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

using Clock = std::chrono::steady_clock;
using Seconds = std::chrono::duration<double>;

// Figures of one scenario, summed over trials.
struct Figures {
  uint64_t reads = 0, wrong_bytes = 0, errors = 0, unexpected_errors = 0, fsck_findings = 0;
  uint64_t stale_reads = 0;
  // Under open, zeros a read overlapping a change returned between the ends of the two versions
  // (README, --revalidate: the kernel keeps one size per file); not wrong bytes.
  uint64_t zeros_between_sizes = 0;
  // One line per stale read (file, change, sizes, bytes, offset, time from the change's
  // completion to the open), printed after the summary line.
  std::vector<std::string> stale_detail;
  // One line per read of a changed file that returned wrong bytes (StaleDetail's, and where its
  // bytes came from), printed after the summary line.
  std::vector<std::string> wrong_detail;
  uint64_t deferred_unsettled = 0;  // copies the settle rule put off (staging.deferred_unsettled)
  int hung = 0, daemon_deaths = 0, failed_umounts = 0;
  double max_call = 0, max_wait_on_hang = 0;
  std::string errors_text, problem;
};

class BackingFaultReliabilityTest : public ::testing::Test {
 protected:
  void SetUp() override {
    seed_ = ReliabilitySeed();
    data_ = dir_ / "data";
    pfs_ = dir_ / "pfs";
    mnt_ = dir_ / "mnt";
    MakeDirs(pfs_);
    MakeDirs(mnt_);
    // About 10 MB in 120 files d0..d2/fN.bin.
    files_ = MakeFiles(data_, 120, 160 * 1024, seed_);
    for (const auto& [rel, content] : files_) names_.push_back(rel);
  }

  // Stages the whole dataset over and over (each `stage --wait` may fail: some files cannot be
  // staged) until stopped.
  class StageLoop {
   public:
    explicit StageLoop(const std::string& mnt)
        : thread_([this, mnt] {
            while (!stop_) testing::Run({ClairfsBin(), "stage", mnt, "--wait"}, 120);
          }) {}
    ~StageLoop() {
      stop_ = true;
      thread_.join();
    }

   private:
    std::atomic<bool> stop_{false};
    std::thread thread_;
  };

  // Mounts the emulator over data_ at pfs_ with `flags`; false (and a failure) if it did not.
  bool MountEmulator(MountGuard* guard, const std::vector<std::string>& flags) {
    std::vector<std::string> argv = {ClairfsBin(), "pfs-emu", data_, pfs_};
    argv.insert(argv.end(), flags.begin(), flags.end());
    CommandResult r = testing::Run(argv, 60);
    if (r.exit_code != 0) {
      ADD_FAILURE() << "pfs-emu: " << r.err;
      return false;
    }
    emulator_pid_ = DaemonPid(pfs_);
    guard->set_pid(emulator_pid_);
    return true;
  }

  // After a scenario: the daemon still serves, unmounts cleanly, and fsck --verify finds every
  // copy equal to `backing` (the real directory; empty: no fsck).
  void Finish(ClairfsMount& m, Figures* f, const std::string& backing) {
    if (unstuck_) {  // the test killed the daemon to free hung readers (counted as hung)
      unstuck_ = false;
      return;
    }
    const nlohmann::json status = m.Status();
    if (kill(m.pid(), 0) != 0 || !status.contains("pid")) {
      ++f->daemon_deaths;
      return;
    }
    f->deferred_unsettled +=
        status.value("staging", nlohmann::json::object()).value("deferred_unsettled", uint64_t{0});
    CommandResult unmounted = m.Umount();
    if (unmounted.exit_code != 0) {
      ++f->failed_umounts;
      f->problem += " umount: " + unmounted.err;
      return;
    }
    if (backing.empty()) return;
    const FsckVerdict fsck = FsckVerify(cache_, backing);
    f->fsck_findings += fsck.ran ? fsck.findings : 1;
    if (!fsck.ran || fsck.findings > 0) f->problem += " fsck: " + fsck.output;
  }

  // Kills the daemon so that readers stuck in it return, after printing what every thread of
  // the daemon, the emulator and the test was waiting on, and the daemon's backing calls.
  void Unstick(ClairfsMount& m) {
    std::string report = StuckReport({{"daemon", m.pid()}, {"emulator", emulator_pid_}});
    CommandResult status = testing::Run({ClairfsBin(), "status", mnt_, "--json"}, 5);
    report += "status: " + status.out + status.err;
    std::printf("STUCK_REPORT begin\n%sSTUCK_REPORT end\n", report.c_str());
    std::fflush(stdout);
    unstuck_ = true;
    kill(m.pid(), SIGKILL);
  }

  static void Collect(const VerifyingReaders& readers, Figures* f) {
    f->reads += readers.reads();
    f->wrong_bytes += readers.wrong_bytes();
    f->errors += readers.errors();
    f->hung += readers.hung();
    f->max_call = std::max(f->max_call, readers.max_call_seconds());
    if (readers.errors() > 0) f->errors_text = readers.ErrorsText();
    if (f->problem.empty()) f->problem = readers.first_wrong();
  }

  void Errors(int trial, Figures* f);
  void Hangs(int trial, Figures* f);
  // `in_place`: files are also modified in place (not only replaced, removed).
  void Changes(int trial, const std::string& revalidate, bool in_place, Figures* f);

  TempDir dir_;
  uint64_t seed_ = 0;
  std::string data_, pfs_, mnt_, cache_;
  std::map<std::string, std::string> files_;
  std::vector<std::string> names_;
  bool unstuck_ = false;
  pid_t emulator_pid_ = -1;  // of the emulator mounted last
};

// Files whose number ends in 1, 2, 3 fail to open with EIO, ENOENT, EACCES; ending in 4, every
// read fails with EIO.
constexpr const char* kFailRules[] = {"*1.bin:EIO", "*2.bin:ENOENT", "*3.bin:EACCES",
                                      "read:*4.bin:EIO"};

bool Failing(const std::string& rel) {
  const char last = rel[rel.size() - 5];  // the digit before ".bin"
  return last >= '1' && last <= '4';
}

void BackingFaultReliabilityTest::Errors(int trial, Figures* f) {
  cache_ = dir_ / ("cache-errors" + std::to_string(trial));
  MountGuard emulator(pfs_);
  std::vector<std::string> flags;
  for (const char* rule : kFailRules) flags.insert(flags.end(), {"--fail", rule});
  if (!MountEmulator(&emulator, flags)) return;
  ClairfsMount m(pfs_, mnt_, cache_);
  m.KeepDefaultSettle();  // the row runs on the mount's default --stage-settle
  CommandResult mounted = m.Mount();
  if (mounted.exit_code != 0) {
    ADD_FAILURE() << mounted.err;
    return;
  }
  std::atomic<uint64_t> unexpected_errors{0};
  // A failing file: an error and no byte (a read past its end may succeed with none). Any other:
  // every byte, and no error.
  auto judge = [&](const ReadOutcome& o) -> uint64_t {
    const std::string& want = files_.at(o.rel);
    if (Failing(o.rel))
      return o.error == 0 && o.offset < want.size() ? o.data.size() + 1 : o.data.size();
    if (o.error != 0) ++unexpected_errors;
    return WrongBytesAgainst(o, want);
  };
  VerifyingReaders::Options options;
  options.threads = 4;
  options.bound_seconds = 5;
  options.seed = seed_ + static_cast<uint64_t>(trial);
  options.files = names_;
  VerifyingReaders readers(mnt_, options, judge);
  {
    StageLoop stager(mnt_);
    readers.Start();
    std::this_thread::sleep_for(Seconds(3));
    readers.Stop([&] { Unstick(m); });
  }
  Collect(readers, f);
  f->unexpected_errors += unexpected_errors.load();
  Finish(m, f, data_);
}

void BackingFaultReliabilityTest::Hangs(int trial, Figures* f) {
  // Opens of files ending in 7 take kHang; every read of files ending in 8 takes 300 ms more.
  constexpr double kHang = 4.0;
  cache_ = dir_ / ("cache-hangs" + std::to_string(trial));
  MountGuard emulator(pfs_);
  if (!MountEmulator(&emulator, {"--slow", "*7.bin:" + std::to_string(int(kHang * 1000)), "--slow",
                                 "read:*8.bin:300"})) {
    return;
  }
  ClairfsMount m(pfs_, mnt_, cache_);
  m.KeepDefaultSettle();  // the row runs on the mount's default --stage-settle
  // /dev/fuse: over io_uring hung calls hold ring threads, not backing-call threads (README,
  // --backing-threads), and readers of other files would wait on them.
  CommandResult mounted = m.Mount({"--fuse-uring", "off"});
  if (mounted.exit_code != 0) {
    ADD_FAILURE() << mounted.err;
    return;
  }
  std::vector<std::string> hung_files, crawling_files, other_files;
  for (const auto& rel : names_) {
    const char last = rel[rel.size() - 5];
    (last == '7' ? hung_files : last == '8' ? crawling_files : other_files).push_back(rel);
  }
  // More readers wait on hung opens and crawling reads than the daemon has request threads
  // (128): their calls wait on backing-call threads (256), not on request threads.
  VerifyingReaders::Options waiting;
  waiting.threads = 160;
  waiting.bound_seconds = kHang + 3;
  waiting.seed = seed_ + 100 + static_cast<uint64_t>(trial);
  waiting.files = hung_files;
  waiting.files.insert(waiting.files.end(), crawling_files.begin(), crawling_files.end());
  VerifyingReaders waiters(mnt_, waiting, VerifyingReaders::Exact(&files_));
  VerifyingReaders::Options healthy;
  healthy.threads = 3;
  healthy.bound_seconds = 2;
  healthy.seed = seed_ + 200 + static_cast<uint64_t>(trial);
  healthy.files = other_files;
  VerifyingReaders others(mnt_, healthy, VerifyingReaders::Exact(&files_));
  {
    StageLoop stager(mnt_);
    waiters.Start();
    std::this_thread::sleep_for(Seconds(0.3));
    others.Start();
    std::this_thread::sleep_for(Seconds(kHang + 2));
    others.Stop([&] { Unstick(m); });
    waiters.Stop([&] { Unstick(m); });
  }
  Collect(others, f);
  Collect(waiters, f);
  f->unexpected_errors += others.errors() + waiters.errors();
  f->max_wait_on_hang = std::max(f->max_wait_on_hang, waiters.max_call_seconds());
  Finish(m, f, data_);
}

// One change of one file: its kind, when it began and ended, and the content after (nullopt:
// removed).
struct Change {
  const char* kind = "";
  Clock::time_point began, ended;
  bool done = false;
  std::optional<std::string> after;
};

// The detail of a stale read `o` of a file listed as `listed` and changed by `c` before it began.
std::string StaleDetail(const ReadOutcome& o, const std::string& listed, const Change& c) {
  const auto ms = [](Clock::duration d) {
    return std::to_string(std::chrono::duration<double, std::milli>(d).count());
  };
  const bool at_old_size = o.offset + o.data.size() == listed.size();
  return o.rel + " change=" + c.kind + " listed_size=" + std::to_string(listed.size()) +
         " new_size=" + (c.after ? std::to_string(c.after->size()) : std::string("removed")) +
         " offset=" + std::to_string(o.offset) +
         " asked=" + (o.length == SIZE_MAX ? std::string("to_eof") : std::to_string(o.length)) +
         " returned=" + std::to_string(o.data.size()) +
         (at_old_size ? " (ends at the listed size)" : "") +
         " open_after_change_ms=" + ms(o.opened - c.ended) + " read_ms=" + ms(o.closed - o.opened);
}

// StaleDetail, and how many of the returned bytes are the listed version's, the new one's (at their
// offsets) or zeros, and the first and last offsets that are neither.
std::string WrongDetail(const ReadOutcome& o, const std::string& listed, const Change& c) {
  uint64_t as_listed = 0, as_new = 0, zeros = 0;
  size_t first = SIZE_MAX, last = 0;
  for (size_t i = 0; i < o.data.size(); ++i) {
    const size_t at = o.offset + i;
    const bool was = at < listed.size() && o.data[i] == listed[at];
    const bool now = c.after && at < c.after->size() && o.data[i] == (*c.after)[at];
    as_listed += was;
    as_new += now;
    zeros += o.data[i] == '\0';
    if (!was && !now) {
      first = std::min(first, at);
      last = at;
    }
  }
  return StaleDetail(o, listed, c) + " as_listed=" + std::to_string(as_listed) +
         " as_new=" + std::to_string(as_new) + " zeros=" + std::to_string(zeros) +
         " neither_from=" + std::to_string(first == SIZE_MAX ? 0 : first) +
         " neither_to=" + std::to_string(last) +
         " began_after_change_ended=" + (c.done && c.ended < o.opened ? "yes" : "no");
}

// Whether every byte the read returned is the listed version's at its offset (whatever the
// length: a stale read may stop at the old size or at the new one).
bool InListed(const ReadOutcome& o, const std::string& listed) {
  if (o.offset + o.data.size() > listed.size()) return false;
  return listed.compare(o.offset, o.data.size(), o.data) == 0;
}

constexpr const char* kKinds[] = {"in_place", "renamed", "removed", "grown"};

void BackingFaultReliabilityTest::Changes(int trial, const std::string& revalidate, bool in_place,
                                          Figures* f) {
  cache_ = dir_ / ("cache-changes-" + revalidate + std::to_string(trial));
  // A fresh copy of the dataset: this scenario changes it.
  const std::string backing = dir_ / ("changing-" + revalidate + std::to_string(trial));
  for (const auto& [rel, content] : files_) WriteFile(backing + "/" + rel, content);
  ClairfsMount m(backing, mnt_, cache_);
  m.KeepDefaultSettle();  // the row runs on the mount's default --stage-settle
  CommandResult mounted = m.Mount({"--revalidate", revalidate});
  if (mounted.exit_code != 0) {
    ADD_FAILURE() << mounted.err;
    return;
  }
  std::mutex mu;  // guards changes
  std::map<std::string, Change> changes;
  std::atomic<uint64_t> unexpected_errors{0}, stale_reads{0}, zeros_between_sizes{0};
  std::vector<std::string> stale_detail;  // guarded by mu
  std::vector<std::string> wrong_detail;  // guarded by mu
  const bool open_mode = revalidate == "open";
  auto judge_bytes = [&](const ReadOutcome& o) -> uint64_t {
    const std::string& listed = files_.at(o.rel);
    Change c;
    bool changed = false;
    {
      std::lock_guard<std::mutex> lock(mu);
      auto it = changes.find(o.rel);
      if (it != changes.end() && it->second.began < o.closed) {
        c = it->second;
        changed = true;
      }
    }
    if (!changed) {  // untouched while read: the listed bytes, without an error
      if (o.error != 0) ++unexpected_errors;
      return WrongBytesAgainst(o, listed);
    }
    if (c.done && c.ended < o.opened) {
      // Changed before this read began. never: the listed version or a refusal; open: the new
      // version, or an error for a removed file.
      if (!open_mode) return o.error != 0 ? 0 : WrongBytesAgainst(o, listed);
      const uint64_t wrong =
          c.after ? WrongBytesAgainst(o, *c.after) : (o.error != 0 ? 0 : o.data.size() + 1);
      if (wrong > 0 && o.error == 0 && InListed(o, listed)) {
        ++stale_reads;  // bytes of the listed version, after the change: stale, not corrupt
        std::lock_guard<std::mutex> lock(mu);
        stale_detail.push_back(StaleDetail(o, listed, c));
        return 0;
      }
      return wrong;
    }
    // The read overlapped the change: each byte is the listed one or the new one at its offset;
    // under open, or a zero between the two versions' ends.
    const size_t new_size = c.after ? c.after->size() : listed.size();
    const size_t smaller = std::min(listed.size(), new_size);
    const size_t larger = std::max(listed.size(), new_size);
    uint64_t wrong = 0, between = 0;
    for (size_t i = 0; i < o.data.size(); ++i) {
      const size_t at = o.offset + i;
      const bool was = at < listed.size() && o.data[i] == listed[at];
      const bool now = c.after && at < c.after->size() && o.data[i] == (*c.after)[at];
      if (was || now) continue;
      if (open_mode && o.data[i] == '\0' && at >= smaller && at < larger) {
        ++between;
      } else {
        ++wrong;
      }
    }
    zeros_between_sizes += between;
    return wrong;
  };
  auto judge = [&](const ReadOutcome& o) -> uint64_t {
    const uint64_t wrong = judge_bytes(o);
    if (wrong == 0) return 0;
    std::lock_guard<std::mutex> lock(mu);
    auto it = changes.find(o.rel);
    wrong_detail.push_back(
        WrongDetail(o, files_.at(o.rel), it != changes.end() ? it->second : Change{}));
    return wrong;
  };
  VerifyingReaders::Options options;
  options.threads = 3;
  options.bound_seconds = 5;
  options.seed = seed_ + 300 + static_cast<uint64_t>(trial);
  options.files = names_;
  VerifyingReaders readers(mnt_, options, judge);
  std::mt19937_64 rng(seed_ + static_cast<uint64_t>(trial));
  std::vector<std::string> order = names_;
  std::shuffle(order.begin(), order.end(), rng);
  {
    StageLoop stager(mnt_);
    readers.Start();
    std::this_thread::sleep_for(Seconds(0.5));
    // 24 changes, one file each, 100 ms apart: in place (same size), replaced by rename (new
    // size), removed, grown.
    for (int i = 0; i < 24; ++i) {
      const std::string& rel = order[static_cast<size_t>(i)];
      const std::string path = backing + "/" + rel;
      int kind = static_cast<int>(rng() % 4);
      if (!in_place && (kind == 0 || kind == 3)) kind = static_cast<int>(1 + rng() % 2);
      std::optional<std::string> after;
      if (kind == 0) after = RandomBytes(files_.at(rel).size(), rng());
      if (kind == 1) after = RandomBytes(1 + rng() % (160 * 1024), rng());
      if (kind == 3) after = files_.at(rel) + RandomBytes(1 + rng() % 4096, rng());
      {
        // The new version is known before the change begins: a read that overlaps the change
        // and ends before it is recorded as done is judged against both versions.
        std::lock_guard<std::mutex> lock(mu);
        changes[rel].kind = kKinds[kind];
        changes[rel].after = after;
        changes[rel].began = Clock::now();
      }
      if (kind == 0 || kind == 3) {
        const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
        EXPECT_GE(fd, 0) << path;
        EXPECT_EQ(pwrite(fd, after->data(), after->size(), 0), static_cast<ssize_t>(after->size()));
        close(fd);
      } else if (kind == 1) {
        WriteFile(path + ".new", *after);
        EXPECT_EQ(rename((path + ".new").c_str(), path.c_str()), 0);
      } else {
        EXPECT_EQ(unlink(path.c_str()), 0);
      }
      {
        std::lock_guard<std::mutex> lock(mu);
        Change& c = changes[rel];
        c.ended = Clock::now();
        c.done = true;
      }
      std::this_thread::sleep_for(Seconds(0.1));
    }
    std::this_thread::sleep_for(Seconds(1));
    readers.Stop([&] { Unstick(m); });
  }
  Collect(readers, f);
  f->unexpected_errors += unexpected_errors.load();
  f->stale_reads += stale_reads.load();
  f->zeros_between_sizes += zeros_between_sizes.load();
  for (auto& d : stale_detail) {
    f->stale_detail.push_back("trial=" + std::to_string(trial) + " " + std::move(d));
  }
  for (auto& d : wrong_detail) {
    f->wrong_detail.push_back("trial=" + std::to_string(trial) + " " + std::move(d));
  }
  // No fsck yet: under never a staged copy keeps the listed version until the next mount.
  const int failures_before = f->daemon_deaths + f->failed_umounts;
  Finish(m, f, "");
  if (f->daemon_deaths + f->failed_umounts > failures_before) return;
  // A remount lists the tree again: every file reads as it is now, and removed files are gone.
  std::map<std::string, std::string> now;
  std::vector<std::string> removed;
  for (const auto& [rel, content] : files_) {
    auto it = changes.find(rel);
    if (it == changes.end()) {
      now[rel] = content;
    } else if (it->second.after) {
      now[rel] = *it->second.after;
    } else {
      removed.push_back(rel);
    }
  }
  CommandResult remounted = m.Mount({"--revalidate", revalidate});
  if (remounted.exit_code != 0) {
    ADD_FAILURE() << remounted.err;
    return;
  }
  std::string problem;
  const uint64_t wrong = VerifyEveryByte(mnt_, now, &problem);
  f->wrong_bytes += wrong;
  if (f->problem.empty()) f->problem = problem;
  for (const auto& rel : removed) {
    if (PathExists(mnt_ + "/" + rel)) {
      f->wrong_bytes += 1;
      f->problem += " removed file still listed: " + rel;
    }
  }
  // The remount dropped the stale copies: fsck finds the rest equal to the changed tree.
  Finish(m, f, backing);
}

TEST_F(BackingFaultReliabilityTest, ErrorsHangsAndChangesServeNoWrongByteAndHangNoReader) {
  const int trials = ReliabilityTrials(1, 10);
  const auto test_start = Clock::now();
  Figures errors, hangs, changes_never, changes_open;
  for (int trial = 0; trial < trials; ++trial) {
    if (ReliabilityScenarioRuns("errors")) Errors(trial, &errors);
    if (ReliabilityScenarioRuns("hangs")) Hangs(trial, &hangs);
    if (ReliabilityScenarioRuns("changes_never")) {
      Changes(trial, "never", /*in_place=*/true, &changes_never);
    }
    // In-place changes under open used to publish a torn copy (docs/RELIABILITY.md, finding 1):
    // the settle rule (--stage-settle) fixed it, and both forms keep them.
    if (ReliabilityScenarioRuns("changes_open")) {
      Changes(trial, "open", /*in_place=*/true, &changes_open);
    }
  }
  ReliabilitySummary summary("backing_store", seed_);
  summary.Set("trials", trials);
  uint64_t wrong = 0;
  int hung = 0, deaths = 0, failed_umounts = 0;
  uint64_t findings = 0;
  double max_call = 0;
  for (const auto& [name, f] : {std::pair<const char*, Figures*>{"errors", &errors},
                                {"hangs", &hangs},
                                {"changes_never", &changes_never},
                                {"changes_open", &changes_open}}) {
    summary.Set(name, "reads:" + std::to_string(f->reads) +
                          "/wrong:" + std::to_string(f->wrong_bytes) + "/errors:" + f->errors_text +
                          "/hung:" + std::to_string(f->hung) +
                          "/fsck:" + std::to_string(f->fsck_findings) +
                          "/stale_reads:" + std::to_string(f->stale_reads) +
                          "/zeros_between_sizes:" + std::to_string(f->zeros_between_sizes) +
                          "/deferred_unsettled:" + std::to_string(f->deferred_unsettled));
    wrong += f->wrong_bytes;
    hung += f->hung;
    deaths += f->daemon_deaths;
    failed_umounts += f->failed_umounts;
    findings += f->fsck_findings;
    max_call = std::max(max_call, f->max_call);
    EXPECT_EQ(f->wrong_bytes, 0u) << name << ": " << f->problem;
    EXPECT_EQ(f->hung, 0) << name;
    EXPECT_EQ(f->daemon_deaths, 0) << name;
    EXPECT_EQ(f->failed_umounts, 0) << name << ": " << f->problem;
    EXPECT_EQ(f->fsck_findings, 0u) << name << ": " << f->problem;
  }
  EXPECT_EQ(errors.unexpected_errors, 0u) << "errors on files the backing store serves";
  EXPECT_EQ(hangs.unexpected_errors, 0u) << hangs.errors_text;
  EXPECT_EQ(changes_never.unexpected_errors, 0u) << "errors on unchanged files";
  EXPECT_EQ(changes_open.unexpected_errors, 0u) << "errors on unchanged files";
  // What --revalidate open promises (README): an open begun after a change never returns the old
  // bytes (docs/RELIABILITY.md, finding 2; the STALE_READ lines give each one's detail).
  EXPECT_EQ(changes_open.stale_reads, 0u)
      << (changes_open.stale_detail.empty() ? "" : changes_open.stale_detail.front());
  summary.Set("errors_on_healthy_files", errors.unexpected_errors + hangs.unexpected_errors +
                                             changes_never.unexpected_errors +
                                             changes_open.unexpected_errors);
  summary.Set("stale_reads_revalidate_open", changes_open.stale_reads);
  summary.Set("wrong_bytes", wrong);
  summary.Set("hung_readers", hung);
  summary.Set("daemon_deaths", deaths);
  summary.Set("failed_umounts", failed_umounts);
  summary.Set("fsck_findings", findings);
  summary.SetMs("max_read_call_ms", max_call);
  summary.SetMs("max_wait_on_hung_file_ms", hangs.max_wait_on_hang);
  summary.SetMs("wall_ms", SecondsSince(test_start));
  summary.Print();
  for (const auto& [name, f] : {std::pair<const char*, Figures*>{"changes_never", &changes_never},
                                {"changes_open", &changes_open}}) {
    for (const std::string& d : f->stale_detail) std::printf("STALE_READ %s %s\n", name, d.c_str());
    for (const std::string& d : f->wrong_detail) std::printf("WRONG_READ %s %s\n", name, d.c_str());
  }
  std::fflush(stdout);
}

}  // namespace
}  // namespace clairfs::testing
