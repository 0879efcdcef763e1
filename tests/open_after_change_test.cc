// Open after change: what `--revalidate open` promises (README, "Mount options"), hammered one kind
// of change at a time. docs/RELIABILITY.md, backing store faults, finding 2: the reliability row
// counted one stale read in 781,596 in six minutes; here a few files are changed over and over
// while reader threads open and read them without a pause, so that many opens begin within
// microseconds of each change's completion and a race between the change's discovery and the
// kernel's caches shows in seconds.
//
// Contract checked: a read whose open began after a change of its file completed returns that
// version's bytes (a removed file: an error), never an older version's (a stale read) nor bytes
// of no version (wrong bytes). A read that overlapped a change may return any byte of a version
// live during it, and zeros between the ends of two live versions of different sizes (counted
// apart; see Judge). Every stale read and every read with wrong bytes (the first 20 of each) is
// printed with its detail (file, change, versions, sizes, bytes, offset, time from the change's
// completion to the open).
//
// Each test mounts with --revalidate open, the daemon's log at debug level in the cache
// directory and read-through on, so that versions left alone for a while are staged and served
// from copies (in passthrough when the daemon may) while others are read from the backing store.
// The kinds that write in place (in_place, grown) keep --stage-settle 100ms: a file being
// written already has its final identity, and the settle rule is what keeps its half-written
// pages out of the page cache (the test writes in well under 100 ms). Replacements by rename
// (renamed, removed and re-created) are never seen half-written; they mount with
// --stage-settle 0, so that their opens right after a change may keep the page cache (with the
// settle rule on, an open of a file changed so recently keeps no pages from before it).
// CLAIRFS_STALE_SECONDS sets how long each kind is hammered (default 6); CLAIRFS_KEEP_LOGS=DIR
// keeps each mount's daemon log there.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdlib>
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

enum class Kind { kInPlace, kRenamed, kRemoved, kGrown };

const char* KindName(Kind kind) {
  switch (kind) {
    case Kind::kInPlace:
      return "in_place";
    case Kind::kRenamed:
      return "renamed";
    case Kind::kRemoved:
      return "removed";
    case Kind::kGrown:
      return "grown";
  }
  return "?";
}

// One version of a file: the change that made it (the listing's version has none), when that
// change began and ended, and the content (nullopt: removed).
struct Version {
  std::string change = "listed";
  Clock::time_point began{}, ended{};
  std::optional<std::string> content;
};

double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Whether the read's bytes are all `content`'s at their offsets (the read may stop at its end).
bool BytesOf(const ReadOutcome& o, const std::optional<std::string>& content) {
  if (!content || o.offset + o.data.size() > content->size()) return false;
  return content->compare(o.offset, o.data.size(), o.data) == 0;
}

double StressSeconds() {
  const char* v = std::getenv("CLAIRFS_STALE_SECONDS");
  return v != nullptr && std::atof(v) > 0 ? std::atof(v) : 6.0;
}

class OpenAfterChangeTest : public MountDirsTest, public ::testing::WithParamInterface<Kind> {
 protected:
  static constexpr int kFiles = 4;
  // Files up to kMaxSize (CLAIRFS_STALE_MAX_KIB overrides it: larger files make an in-place
  // write last longer).
  static constexpr size_t kDefaultMaxSize = 160 * 1024;
  const size_t kMaxSize = [] {
    const char* v = std::getenv("CLAIRFS_STALE_MAX_KIB");
    return v != nullptr && std::atoi(v) >= 32 ? size_t{1024} * std::atoi(v) : kDefaultMaxSize;
  }();

  std::string Rel(int i) const { return "f" + std::to_string(i) + ".bin"; }

  // Versions of every file; guarded by mu_.
  std::mutex mu_;
  std::vector<std::vector<Version>> history_;
  std::atomic<uint64_t> stale_reads_{0}, stale_old_size_{0}, unexpected_errors_{0}, busy_{0},
      zeros_between_sizes_{0};
  std::vector<std::string> stale_detail_;  // guarded by mu_, the first kMaxDetail
  std::vector<std::string> wrong_detail_;  // reads begun after a change with wrong bytes, too
  static constexpr size_t kMaxDetail = 20;

  // Wrong bytes of one outcome (see the top of the file); counts and describes stale reads.
  uint64_t Judge(const ReadOutcome& o) {
    const int file = std::stoi(o.rel.substr(1));
    std::vector<Version> versions;
    {
      std::lock_guard<std::mutex> lock(mu_);
      versions = history_[static_cast<size_t>(file)];
    }
    // The newest version complete before the open began, and those begun before the close.
    size_t due = 0;
    while (due + 1 < versions.size() && versions[due + 1].ended < o.opened &&
           versions[due + 1].ended != Clock::time_point{}) {
      ++due;
    }
    std::vector<size_t> live = {due};
    for (size_t j = due + 1; j < versions.size(); ++j) {
      if (versions[j].began < o.closed) live.push_back(j);
    }
    for (size_t j : live) {
      const auto& c = versions[j].content;
      if (o.error != 0 ? !c : c && WrongBytesAgainst(o, *c) == 0) return 0;
    }
    if (o.error != 0) {
      // An error for a file that exists in every live version: unexpected unless a change was
      // under way (a rename between the daemon's stat and its open is refused, never served),
      // or EBUSY: a new version while passthrough opens of the old one are live
      // (docs/PASSTHROUGH.md), an error rather than old bytes.
      if (o.error == EBUSY) {
        ++busy_;
      } else if (live.size() == 1) {
        ++unexpected_errors_;
      }
      return 0;
    }
    if (live.size() > 1) {
      // Overlapped a change: each byte of some live version at its offset, or a zero between the
      // ends of two live versions of different sizes. The kernel's page cache holds one size per
      // file: a READ of the smaller version answered while the kernel holds the larger size
      // leaves its pages zero-filled up to it (docs/RELIABILITY.md, backing store faults, finding
      // 2; README, --revalidate). Such zeros are counted apart (zeros_between_sizes).
      size_t smallest = SIZE_MAX, largest = 0;
      for (size_t j : live) {
        if (const auto& c = versions[j].content) {
          smallest = std::min(smallest, c->size());
          largest = std::max(largest, c->size());
        }
      }
      uint64_t wrong = 0, between = 0;
      size_t first_wrong = o.data.size();
      for (size_t i = 0; i < o.data.size(); ++i) {
        bool ok = false;
        const size_t at = o.offset + i;
        for (size_t j : live) {
          const auto& c = versions[j].content;
          ok = ok || (c && at < c->size() && (*c)[at] == o.data[i]);
        }
        if (!ok && o.data[i] == '\0' && at >= smallest && at < largest) {
          ++between;
          continue;
        }
        if (!ok) {
          ++wrong;
          first_wrong = std::min(first_wrong, i);
        }
      }
      zeros_between_sizes_ += between;
      if (wrong > 0) {
        // The versions live during it (number:change:size) and where its bytes stop being any
        // of theirs; zeros from there on are pages the kernel zero-filled past a short READ.
        std::string sizes;
        for (size_t j : live) {
          const auto& c = versions[j].content;
          sizes += (sizes.empty() ? "" : ",") + std::to_string(j) + ":" + versions[j].change + ":" +
                   (c ? std::to_string(c->size()) : std::string("removed"));
        }
        const bool zeros_after = o.data.find_first_not_of('\0', first_wrong) == std::string::npos;
        std::lock_guard<std::mutex> lock(mu_);
        if (wrong_detail_.size() < kMaxDetail) {
          wrong_detail_.push_back(
              o.rel + " overlapped versions=" + sizes + " offset=" + std::to_string(o.offset) +
              " returned=" + std::to_string(o.data.size()) + " wrong=" + std::to_string(wrong) +
              " first_wrong_at=" + std::to_string(o.offset + first_wrong) +
              (zeros_after ? " then_zeros" : "") +
              " read_ms=" + std::to_string(Ms(o.closed - o.opened)));
        }
      }
      return wrong;
    }
    // Begun after the change to version `due` completed: any other bytes are wrong, unless they
    // are an older version's (stale).
    for (size_t k = due; k-- > 0;) {
      if (!BytesOf(o, versions[k].content)) continue;
      ++stale_reads_;
      const auto& old = *versions[k].content;
      const auto& now = versions[due].content;
      const bool at_old_size =
          o.offset + o.data.size() == old.size() || (o.offset >= old.size() && o.data.empty());
      if (at_old_size) ++stale_old_size_;
      std::lock_guard<std::mutex> lock(mu_);
      if (stale_detail_.size() < kMaxDetail) {
        stale_detail_.push_back(
            o.rel + " change=" + versions[due].change + " version=" + std::to_string(due) +
            " returned_version=" + std::to_string(k) +
            " listed_size=" + std::to_string(old.size()) +
            " new_size=" + (now ? std::to_string(now->size()) : std::string("removed")) +
            " offset=" + std::to_string(o.offset) +
            " asked=" + (o.length == SIZE_MAX ? std::string("to_eof") : std::to_string(o.length)) +
            " returned=" + std::to_string(o.data.size()) +
            (at_old_size ? " (ends at the old size)" : "") +
            " open_after_change_ms=" + std::to_string(Ms(o.opened - versions[due].ended)) +
            " read_ms=" + std::to_string(Ms(o.closed - o.opened)));
      }
      return 0;
    }
    const uint64_t wrong = WrongBytesAgainst(o, versions[due].content.value_or(std::string()));
    // Describe it: new bytes cut at an older version's size are the same race as a stale read.
    std::string cut_at;
    for (size_t k = due; k-- > 0;) {
      const auto& c = versions[k].content;
      if (c && o.offset + o.data.size() == c->size()) cut_at = std::to_string(k);
    }
    // How much of it is the new version's, and whether the rest is zeros (pages the kernel
    // zero-filled past a short read at a size it kept).
    const auto& now = versions[due].content;
    size_t same = 0;
    while (now && same < o.data.size() && o.offset + same < now->size() &&
           o.data[same] == (*now)[o.offset + same]) {
      ++same;
    }
    const bool zeros_after = o.data.find_first_not_of('\0', same) == std::string::npos;
    std::lock_guard<std::mutex> lock(mu_);
    if (wrong_detail_.size() < kMaxDetail) {
      wrong_detail_.push_back(
          o.rel + " change=" + versions[due].change + " version=" + std::to_string(due) +
          " new_size=" + (now ? std::to_string(now->size()) : std::string("removed")) +
          " offset=" + std::to_string(o.offset) + " returned=" + std::to_string(o.data.size()) +
          " new_bytes=" + (BytesOf(o, now) ? "yes" : "no") + " new_prefix=" + std::to_string(same) +
          (zeros_after ? " then_zeros" : "") +
          (cut_at.empty() ? "" : " ends_at_size_of_version=" + cut_at) +
          " open_after_change_ms=" + std::to_string(Ms(o.opened - versions[due].ended)));
    }
    return wrong;
  }
};

TEST_P(OpenAfterChangeTest, AnOpenBegunAfterAChangeNeverReturnsAnOlderVersion) {
  const Kind kind = GetParam();
  const uint64_t seed = ReliabilitySeed();
  std::mt19937_64 rng(seed);
  history_.resize(kFiles);
  for (int i = 0; i < kFiles; ++i) {
    Version listed;
    listed.content = RandomBytes(16 * 1024 + rng() % (kMaxSize - 16 * 1024), rng());
    WriteFile(backing_ + "/" + Rel(i), *listed.content);
    history_[static_cast<size_t>(i)].push_back(listed);
  }
  ClairfsMount m(backing_, mnt_, cache_);
  const bool in_place = kind == Kind::kInPlace || kind == Kind::kGrown;
  ASSERT_EQ(m.Mount({"--revalidate", "open", "--log-level", "debug", "--stage-settle",
                     in_place ? "100ms" : "0"})
                .exit_code,
            0);
  VerifyingReaders::Options options;
  options.threads = 4;
  options.bound_seconds = 5;
  options.seed = seed;
  for (int i = 0; i < kFiles; ++i) options.files.push_back(Rel(i));
  VerifyingReaders readers(mnt_, options, [this](const ReadOutcome& o) { return Judge(o); });
  readers.Start();
  const auto start = Clock::now();
  const double seconds = StressSeconds();
  uint64_t changes = 0;
  while (SecondsSince(start) < seconds) {
    const int i = static_cast<int>(rng() % kFiles);
    const std::string path = backing_ + "/" + Rel(i);
    std::optional<std::string> current;
    {
      std::lock_guard<std::mutex> lock(mu_);
      current = history_[static_cast<size_t>(i)].back().content;
    }
    Version v;
    Kind applied = kind;
    if (!current) applied = Kind::kRenamed;  // a removed file comes back by rename
    if (applied == Kind::kGrown && current->size() > 4 * kMaxSize) applied = Kind::kRenamed;
    switch (applied) {
      case Kind::kInPlace:
        v.content = RandomBytes(current->size(), rng());
        break;
      case Kind::kRenamed:
        v.content = RandomBytes(1 + rng() % kMaxSize, rng());
        break;
      case Kind::kGrown:
        v.content = *current + RandomBytes(1 + rng() % 4096, rng());
        break;
      case Kind::kRemoved:
        break;
    }
    v.change = current ? KindName(applied) : "recreated";
    {
      std::lock_guard<std::mutex> lock(mu_);
      v.began = Clock::now();
      history_[static_cast<size_t>(i)].push_back(v);
    }
    if (applied == Kind::kInPlace || applied == Kind::kGrown) {
      const int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
      ASSERT_GE(fd, 0) << path;
      EXPECT_EQ(pwrite(fd, v.content->data(), v.content->size(), 0),
                static_cast<ssize_t>(v.content->size()));
      close(fd);
    } else if (applied == Kind::kRenamed) {
      WriteFile(path + ".new", *v.content);
      EXPECT_EQ(rename((path + ".new").c_str(), path.c_str()), 0);
    } else {
      EXPECT_EQ(unlink(path.c_str()), 0);
    }
    {
      std::lock_guard<std::mutex> lock(mu_);
      history_[static_cast<size_t>(i)].back().ended = Clock::now();
    }
    ++changes;
    // Mostly quick successions; now and then long enough for the settle time and a copy.
    const int pause_ms =
        rng() % 8 == 0 ? 150 + static_cast<int>(rng() % 200) : 2 + static_cast<int>(rng() % 20);
    std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(200));
  readers.Stop([&] { kill(m.pid(), SIGKILL); });
  const nlohmann::json status = m.Status();
  ReliabilitySummary summary(std::string("open_after_change_") + KindName(kind), seed);
  summary.Set("seconds", static_cast<int>(seconds));
  summary.Set("changes", changes);
  summary.Set("reads", readers.reads());
  summary.Set("stale_reads", stale_reads_.load());
  summary.Set("stale_at_old_size", stale_old_size_.load());
  summary.Set("wrong_bytes", readers.wrong_bytes());
  summary.Set("zeros_between_sizes", zeros_between_sizes_.load());
  summary.Set("unexpected_errors", unexpected_errors_.load());
  summary.Set("ebusy", busy_.load());
  summary.Set("errors", readers.ErrorsText());
  summary.Set("stale_detected", status.value("stale_detected", uint64_t{0}));
  summary.Set("hits", status.value("hits", uint64_t{0}));
  summary.Print();
  for (const std::string& d : stale_detail_) std::printf("STALE %s\n", d.c_str());
  for (const std::string& d : wrong_detail_) std::printf("WRONG %s\n", d.c_str());
  std::fflush(stdout);
  EXPECT_EQ(stale_reads_.load(), 0u) << "reads begun after a change returned an older version";
  EXPECT_EQ(readers.wrong_bytes(), 0u) << readers.first_wrong();
  EXPECT_EQ(readers.hung(), 0);
  EXPECT_EQ(unexpected_errors_.load(), 0u) << readers.ErrorsText();
  EXPECT_EQ(m.Umount().exit_code, 0);
  // CLAIRFS_KEEP_LOGS=DIR keeps the daemon's log (its decisions at debug level) for a look.
  if (const char* keep = std::getenv("CLAIRFS_KEEP_LOGS"); keep != nullptr && *keep != '\0') {
    WriteFile(std::string(keep) + "/open_after_change_" + KindName(kind) + ".log",
              ReadFile(cache_ + "/daemon.log"));
  }
}

// The stress test's failure of 2026-12-03 (docs/RELIABILITY.md, backing store faults, finding 2),
// made determinate: a file shrinks; an open records the change; two reads of that open, each one
// slow READ (the emulator's --slow read), R past the new end and A from 0 just after it. Without
// the kernel asking for the stale attributes before a read, A read within the old size, R's short
// READ set the size to its own offset (40,960) and A's, crossed by that update, was refused its
// own: A returned the 2,048 new bytes, then 38,912 zeros.
class ShrunkFileTest : public MountDirsTest {
 protected:
  void SetUp() override {
    MountDirsTest::SetUp();
    pfs_ = dir_ / "pfs";
    MakeDirs(pfs_);
  }
  std::string pfs_;
  MountGuard pfs_guard_{dir_ / "pfs"};  // declared before the clairfs mount: unmounted last
};

TEST_F(ShrunkFileTest, ReadsOfAFileThatShrankStopAtItsNewEnd) {
  WriteFile(backing_ + "/f.bin", std::string(100000, 'o'));
  CommandResult emu =
      testing::Run({ClairfsBin(), "pfs-emu", backing_, pfs_, "--slow", "read:f.bin:1000"}, 60);
  ASSERT_EQ(emu.exit_code, 0) << emu.err;
  pfs_guard_.set_pid(DaemonPid(pfs_));
  ClairfsMount m(pfs_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--revalidate", "open", "--stage-settle", "0", "--no-read-through",
                     "--fuse-uring", "off"})
                .exit_code,
            0);
  struct stat st;
  ASSERT_EQ(stat((mnt_ + "/f.bin").c_str(), &st), 0);
  ASSERT_EQ(st.st_size, 100000);  // the kernel holds the old size
  WriteFile(backing_ + "/f.new", std::string(2048, 'n'));
  ASSERT_EQ(rename((backing_ + "/f.new").c_str(), (backing_ + "/f.bin").c_str()), 0);
  const int a = open((mnt_ + "/f.bin").c_str(), O_RDONLY);  // records the change
  ASSERT_GE(a, 0);
  const int r = dup(a);  // no second path walk, whose GETATTR would fetch the new size
  ASSERT_GE(r, 0);
  auto pread_string = [](int fd, size_t count, off_t offset) {
    std::string buf(count, '\0');
    const ssize_t n = pread(fd, buf.data(), count, offset);
    buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
    return buf;
  };
  std::string past_end, from_start;
  std::thread reader_r([&] { past_end = pread_string(r, 4096, 40960); });
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // A's READ after R's
  std::thread reader_a([&] { from_start = pread_string(a, 65536, 0); });
  reader_r.join();
  reader_a.join();
  close(r);
  close(a);
  EXPECT_EQ(past_end, "");
  EXPECT_EQ(from_start.size(), 2048u);
  EXPECT_EQ(from_start.find_first_not_of('n'), std::string::npos)
      << std::count(from_start.begin(), from_start.end(), '\0') << " zeros";
  EXPECT_EQ(ReadFile(mnt_ + "/f.bin"), std::string(2048, 'n'));
  EXPECT_EQ(m.Umount().exit_code, 0);
}

INSTANTIATE_TEST_SUITE_P(Kinds, OpenAfterChangeTest,
                         ::testing::Values(Kind::kInPlace, Kind::kRenamed, Kind::kRemoved,
                                           Kind::kGrown),
                         [](const ::testing::TestParamInfo<Kind>& info) {
                           return std::string(KindName(info.param));
                         });

}  // namespace
}  // namespace clairfs::testing
