// Integration tests of kernel FUSE passthrough (fs/passthrough.h) on real mounts: byte-exact
// reads (read and mmap) of staged files with no READ reaching the daemon, the per-inode mode
// rules (staged while open, evicted and re-staged while open, changed while open), kill -9 and
// remount, concurrent opens, copies held ahead at mount and as they are staged, and the fallback
// when the daemon lacks CAP_SYS_ADMIN. Every mount is unmounted by ClairfsMount's guard.
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fs/fuse/passthrough.h"
#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

std::string ReadFd(int fd, size_t size) {
  std::string out(size, '\0');
  ssize_t n = pread(fd, out.data(), size, 0);
  out.resize(n < 0 ? 0 : static_cast<size_t>(n));
  return out;
}

std::string StateOf(const std::string& path) {
  char buf[64];
  ssize_t n = getxattr(path.c_str(), "user.clairfs.state", buf, sizeof(buf));
  return n < 0 ? "" : std::string(buf, static_cast<size_t>(n));
}

class PassthroughTest : public MountDirsTest {
 protected:
  // Reads every file once (staging them by read-through) and waits for staging to finish.
  void StageAll(ClairfsMount& m, const std::map<std::string, std::string>& files) {
    for (const auto& [rel, content] : files) ASSERT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
    ASSERT_TRUE(m.WaitStagingIdle());
    for (const auto& [rel, content] : files) ASSERT_EQ(StateOf(mnt_ + "/" + rel), "staged") << rel;
  }
};

TEST_F(PassthroughTest, StagedFilesReadByteExactWithNoReadRequests) {
  auto files = MakeFiles(backing_, 24, 400000, 1);
  files["big.bin"] = RandomBytes(6 << 20, 77);
  WriteFile(backing_ + "/big.bin", files["big.bin"]);
  ClairfsMount m(backing_, mnt_, cache_);
  auto r = m.Mount({"--passthrough", "on"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto status = m.Status();
  ASSERT_EQ(status["passthrough"].value("state", ""), "on") << status.dump();
  StageAll(m, files);
  const uint64_t reads_before = m.Counter("read_requests");
  EXPECT_GT(reads_before, 0u);  // the first reads came from the backing store through the daemon
  const uint64_t pt_before = m.Counter("passthrough_opens");
  for (const auto& [rel, content] : files) {
    EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
    EXPECT_EQ(ReadByMmap(mnt_ + "/" + rel), content) << rel;
  }
  status = m.Status();
  EXPECT_EQ(status.value("read_requests", uint64_t{0}), reads_before);
  EXPECT_EQ(status.value("passthrough_opens", uint64_t{0}), pt_before + 2 * files.size());
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST_F(PassthroughTest, FileStagedWhileHeldOpenSwitchesAfterTheLastRelease) {
  const std::string content = RandomBytes(900000, 5);
  WriteFile(backing_ + "/a.bin", content);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--passthrough", "on"}).exit_code, 0);
  int held = open((mnt_ + "/a.bin").c_str(), O_RDONLY);  // a miss: normal mode, staging queued
  ASSERT_GE(held, 0);
  ASSERT_TRUE(m.WaitStagingIdle());
  ASSERT_EQ(StateOf(mnt_ + "/a.bin"), "staged");
  // Staged now, but the inode is open in normal mode: more opens stay normal (no EIO).
  const uint64_t pt0 = m.Counter("passthrough_opens");
  for (int i = 0; i < 5; ++i) EXPECT_EQ(ReadFile(mnt_ + "/a.bin"), content);
  EXPECT_EQ(ReadFd(held, content.size()), content);
  EXPECT_EQ(m.Counter("passthrough_opens"), pt0);
  close(held);
  // Every open released: the next one is passthrough and sends no READ.
  const uint64_t reads = m.Counter("read_requests");
  EXPECT_EQ(ReadByMmap(mnt_ + "/a.bin"), content);
  EXPECT_EQ(ReadFile(mnt_ + "/a.bin"), content);
  EXPECT_EQ(m.Counter("passthrough_opens"), pt0 + 2);
  EXPECT_EQ(m.Counter("read_requests"), reads);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST_F(PassthroughTest, EvictedAndRestagedWhileOpenKeepsServingTheSameBytes) {
  auto files = MakeFiles(backing_, 40, 200000, 2);  // about 4 MB, twice the capacity
  const std::string target_content = RandomBytes(300000, 9);
  WriteFile(backing_ + "/target.bin", target_content);
  const std::string target = mnt_ + "/target.bin";
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--passthrough", "on", "--capacity", "2M"}).exit_code, 0);
  EXPECT_EQ(ReadFile(target), target_content);
  ASSERT_TRUE(m.WaitStagingIdle());
  ASSERT_EQ(StateOf(target), "staged");
  const uint64_t pt0 = m.Counter("passthrough_opens");
  int held = open(target.c_str(), O_RDONLY);  // passthrough on the current copy
  ASSERT_GE(held, 0);
  EXPECT_EQ(m.Counter("passthrough_opens"), pt0 + 1);
  // Capacity pressure evicts the least recently used copy: the target's.
  for (const auto& [rel, content] : files) {
    ASSERT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
    ASSERT_TRUE(m.WaitStagingIdle());
  }
  ASSERT_EQ(StateOf(target), "unstaged");
  EXPECT_GT(m.Counter("evictions"), 0u);
  // The held open still reads the evicted copy (the kernel keeps it alive).
  EXPECT_EQ(ReadFd(held, target_content.size()), target_content);
  // A second open while the first is held: same version, so it shares the inode's backing id
  // (a miss for the daemon, which re-stages the file).
  const uint64_t reads = m.Counter("read_requests");
  EXPECT_EQ(ReadByMmap(target), target_content);
  EXPECT_EQ(m.Counter("read_requests"), reads);
  ASSERT_TRUE(m.WaitStagingIdle());
  EXPECT_EQ(StateOf(target), "staged");
  close(held);
  // All released: a fresh backing id on the re-staged copy.
  EXPECT_EQ(ReadFile(target), target_content);
  EXPECT_EQ(ReadByMmap(target), target_content);
  EXPECT_EQ(m.Counter("read_requests"), reads);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

uint64_t HeldCopies(ClairfsMount& m) {
  return m.Status()["passthrough"].value("held_copies", uint64_t{0});
}

// RELEASE is asynchronous: wait until the daemon holds `want` released copies.
bool WaitHeldCopies(ClairfsMount& m, uint64_t want) {
  for (int i = 0; i < 500; ++i) {
    if (HeldCopies(m) == want) return true;
    usleep(10000);
  }
  return false;
}

TEST_F(PassthroughTest, ReopenedCopyIsReusedUntilItIsEvicted) {
  auto files = MakeFiles(backing_, 12, 150000, 5);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--passthrough", "on"}).exit_code, 0);
  StageAll(m, files);
  for (const auto& [rel, content] : files) ASSERT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
  // Every released passthrough open leaves its copy held by the kernel...
  ASSERT_TRUE(WaitHeldCopies(m, files.size())) << HeldCopies(m);
  const uint64_t held0 = m.Counter("held_copy_opens");
  const uint64_t reads = m.Counter("read_requests");
  // ...so opening them again registers nothing: each open claims its held copy.
  for (const auto& [rel, content] : files) {
    EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
    EXPECT_EQ(ReadByMmap(mnt_ + "/" + rel), content) << rel;
  }
  EXPECT_EQ(m.Counter("held_copy_opens"), held0 + 2 * files.size());
  EXPECT_EQ(m.Counter("read_requests"), reads);
  ASSERT_TRUE(WaitHeldCopies(m, files.size()));

  // Evicting a copy drops its held id at once (no evicted bytes stay pinned), and the next open
  // is not served from it.
  const std::string victim = files.begin()->first;
  CommandResult r = testing::Run({ClairfsBin(), "evict", mnt_, victim});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(HeldCopies(m), files.size() - 1);
  EXPECT_EQ(StateOf(mnt_ + "/" + victim), "unstaged");
  const uint64_t held1 = m.Counter("held_copy_opens");
  EXPECT_EQ(ReadFile(mnt_ + "/" + victim), files.begin()->second);
  EXPECT_EQ(m.Counter("held_copy_opens"), held1);
  EXPECT_GT(m.Counter("read_requests"), reads);  // served from the backing store
  // Re-staged: a fresh registration of the new copy, then reused like the others.
  ASSERT_TRUE(m.WaitStagingIdle());
  ASSERT_EQ(StateOf(mnt_ + "/" + victim), "staged");
  EXPECT_EQ(ReadFile(mnt_ + "/" + victim), files.begin()->second);
  ASSERT_TRUE(WaitHeldCopies(m, files.size()));
  // The new copy was held as it was staged unless the read-through open was still live then.
  const uint64_t held2 = m.Counter("held_copy_opens");
  EXPECT_LE(held2, held1 + 1);
  EXPECT_EQ(ReadFile(mnt_ + "/" + victim), files.begin()->second);
  EXPECT_EQ(m.Counter("held_copy_opens"), held2 + 1);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// The held-ahead warm-up's result in status, once it is done (null if it never ran).
nlohmann::json WaitHeldAhead(ClairfsMount& m) {
  for (int i = 0; i < 500; ++i) {
    nlohmann::json ahead = m.Status()["passthrough"]["held_ahead"];
    if (ahead.is_null() || ahead.value("done", false)) return ahead;
    usleep(10000);
  }
  return m.Status()["passthrough"]["held_ahead"];
}

TEST_F(PassthroughTest, CopiesHeldAheadServeFirstOpensAndNeverAStaleCopy) {
  auto files = MakeFiles(backing_, 12, 150000, 7);
  {
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount({"--passthrough", "on"}).exit_code, 0);
    StageAll(m, files);
    ASSERT_EQ(m.Umount().exit_code, 0);
  }
  // Changed before the remount: its copy is of other bytes and must not be held.
  auto it = files.begin();
  const std::string changed_before = it->first;
  const std::string evicted = (++it)->first;
  const std::string changed_after = (++it)->first;
  files[changed_before] = std::string(1000, 'x');
  WriteFile(backing_ + "/" + changed_before, files[changed_before]);

  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--passthrough", "on", "--revalidate", "open"}).exit_code, 0);
  nlohmann::json ahead = WaitHeldAhead(m);
  ASSERT_FALSE(ahead.is_null());
  EXPECT_TRUE(ahead.value("done", false)) << ahead.dump();
  EXPECT_EQ(ahead.value("held", uint64_t{0}), files.size() - 1) << ahead.dump();
  EXPECT_EQ(HeldCopies(m), files.size() - 1);
  EXPECT_EQ(m.Counter("opens"), 0u);  // held with no open at all
  CommandResult shown = testing::Run({ClairfsBin(), "status", mnt_});
  EXPECT_NE(shown.out.find("(" + std::to_string(files.size() - 1) +
                           " held ahead at mount, 0 as they were staged)"),
            std::string::npos)
      << shown.out;

  // Evicted: its held copy is let go at once. Changed after the mount: revalidation drops it.
  CommandResult r = testing::Run({ClairfsBin(), "evict", mnt_, evicted});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(HeldCopies(m), files.size() - 2);
  files[changed_after] = std::string(2000, 'y');
  WriteFile(backing_ + "/" + changed_after, files[changed_after]);

  for (const auto& [rel, content] : files) EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
  EXPECT_EQ(m.Counter("held_copy_opens"), files.size() - 3);
  EXPECT_EQ(ReadByMmap(mnt_ + "/" + changed_after), files[changed_after]);
  EXPECT_EQ(m.Umount().exit_code, 0);

  // Off: no warm-up, and first opens register their copies themselves.
  ClairfsMount off(backing_, mnt_, cache_);
  ASSERT_EQ(off.Mount({"--passthrough", "on", "--hold-ahead", "off"}).exit_code, 0);
  EXPECT_TRUE(off.Status()["passthrough"]["held_ahead"].is_null());
  EXPECT_EQ(HeldCopies(off), 0u);
  for (const auto& [rel, content] : files) EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
  EXPECT_EQ(off.Counter("held_copy_opens"), 0u);
  EXPECT_EQ(off.Umount().exit_code, 0);
}

// Copies staged while the mount runs (here by `clairfs stage`) are held as they are published,
// so the first open of each claims its copy like a reopen; with --hold-ahead off they are not.
TEST_F(PassthroughTest, CopiesStagedWhileMountedAreHeldForTheirFirstOpen) {
  auto files = MakeFiles(backing_, 10, 150000, 11);
  {
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount({"--passthrough", "on"}).exit_code, 0);
    ASSERT_FALSE(WaitHeldAhead(m).is_null());  // the warm-up ran on an empty cache
    CommandResult r = testing::Run({ClairfsBin(), "stage", mnt_, "--wait"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(HeldCopies(m), files.size());
    EXPECT_EQ(WaitHeldAhead(m).value("held_when_staged", uint64_t{0}), files.size());
    EXPECT_EQ(m.Counter("opens"), 0u);
    const uint64_t reads = m.Counter("read_requests");
    for (const auto& [rel, content] : files) {
      EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
    }
    EXPECT_EQ(m.Counter("held_copy_opens"), files.size());
    EXPECT_EQ(m.Counter("passthrough_opens"), files.size());
    EXPECT_EQ(m.Counter("read_requests"), reads);
    CommandResult shown = testing::Run({ClairfsBin(), "status", mnt_});
    EXPECT_NE(shown.out.find(", " + std::to_string(files.size()) + " as they were staged)"),
              std::string::npos)
        << shown.out;
    ASSERT_EQ(m.Umount().exit_code, 0);
  }
  ClairfsMount off(backing_, mnt_, dir_ / "cache-off");
  ASSERT_EQ(off.Mount({"--passthrough", "on", "--hold-ahead", "off"}).exit_code, 0);
  CommandResult r = testing::Run({ClairfsBin(), "stage", mnt_, "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(HeldCopies(off), 0u);
  for (const auto& [rel, content] : files) EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
  EXPECT_EQ(off.Counter("held_copy_opens"), 0u);
  EXPECT_EQ(off.Counter("passthrough_opens"), files.size());
  EXPECT_EQ(off.Umount().exit_code, 0);
}

// --held-copies bounds the ids held between opens (rounded up to a multiple of 64: here one per
// shard, and a file's shard is its inode % 64). A copy published while its shard's place is taken
// displaces the copy held there (it was staged for a use ahead); 0 holds nothing at all.
TEST_F(PassthroughTest, HeldCopiesBoundHoldsTheCopyStagedLastAndZeroHoldsNone) {
  auto files = MakeFiles(backing_, 70, 3000, 13);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--passthrough", "on", "--held-copies", "64"}).exit_code, 0);
  EXPECT_EQ(m.Status()["passthrough"].value("held_copies_limit", uint64_t{0}), 64u);
  // 70 inodes over 64 shards: at least two files share one.
  std::map<uint64_t, std::vector<std::string>> by_shard;
  for (const auto& [rel, content] : files) {
    struct stat st;
    ASSERT_EQ(stat((mnt_ + "/" + rel).c_str(), &st), 0) << rel;
    by_shard[st.st_ino % KernelPassthrough::kShards].push_back(rel);
  }
  std::string first, second;
  for (const auto& [shard, names] : by_shard) {
    if (names.size() >= 2) {
      first = names[0];
      second = names[1];
      break;
    }
  }
  ASSERT_FALSE(second.empty());
  for (const std::string& rel : {first, second}) {
    CommandResult r = testing::Run({ClairfsBin(), "stage", mnt_, rel, "--wait"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(HeldCopies(m), 1u) << rel;  // the shard's one place goes to the copy staged last
  }
  EXPECT_EQ(ReadFile(mnt_ + "/" + second), files[second]);
  EXPECT_EQ(m.Counter("held_copy_opens"), 1u);
  EXPECT_EQ(ReadFile(mnt_ + "/" + first), files[first]);
  EXPECT_EQ(m.Counter("held_copy_opens"), 1u);  // registered by its open
  ASSERT_TRUE(WaitHeldCopies(m, 1));

  // Everything staged: one copy held per shard in use, never more.
  CommandResult r = testing::Run({ClairfsBin(), "stage", mnt_, "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(HeldCopies(m), by_shard.size());
  for (const auto& [rel, content] : files) EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
  ASSERT_TRUE(WaitHeldCopies(m, by_shard.size()));
  CommandResult shown = testing::Run({ClairfsBin(), "status", mnt_});
  EXPECT_NE(shown.out.find(" copies held of 64"), std::string::npos) << shown.out;
  ASSERT_EQ(m.Umount().exit_code, 0);

  // 0: every open registers its copy and the last release lets it go.
  ClairfsMount none(backing_, mnt_, cache_);
  ASSERT_EQ(none.Mount({"--passthrough", "on", "--held-copies", "0"}).exit_code, 0);
  nlohmann::json ahead = WaitHeldAhead(none);
  ASSERT_FALSE(ahead.is_null());
  EXPECT_EQ(ahead.value("held", uint64_t{1}), 0u) << ahead.dump();
  for (int pass = 0; pass < 2; ++pass) {
    for (const auto& [rel, content] : files) {
      EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
    }
  }
  EXPECT_EQ(none.Counter("passthrough_opens"), 2 * files.size());
  EXPECT_EQ(none.Counter("held_copy_opens"), 0u);
  EXPECT_EQ(HeldCopies(none), 0u);
  EXPECT_EQ(none.Umount().exit_code, 0);
}

TEST_F(PassthroughTest, ChangedBackingFileIsNeverServedFromTheOldCopy) {
  WriteFile(backing_ + "/a.bin", std::string(200000, 'a'));
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--passthrough", "on", "--revalidate", "open"}).exit_code, 0);
  EXPECT_EQ(ReadFile(mnt_ + "/a.bin"), std::string(200000, 'a'));
  ASSERT_TRUE(m.WaitStagingIdle());
  const uint64_t pt0 = m.Counter("passthrough_opens");
  EXPECT_EQ(ReadFile(mnt_ + "/a.bin"), std::string(200000, 'a'));  // passthrough on the copy
  EXPECT_EQ(m.Counter("passthrough_opens"), pt0 + 1);
  // Changed with nothing open: the next open reads the new bytes.
  WriteFile(backing_ + "/a.bin", std::string(200000, 'b'));
  EXPECT_EQ(ReadFile(mnt_ + "/a.bin"), std::string(200000, 'b'));
  EXPECT_EQ(ReadByMmap(mnt_ + "/a.bin"), std::string(200000, 'b'));
  ASSERT_TRUE(m.WaitStagingIdle());
  EXPECT_EQ(ReadFile(mnt_ + "/a.bin"), std::string(200000, 'b'));
  // Changed while a passthrough open of the old version is held: new opens fail (EBUSY) rather
  // than read the old copy, and succeed with the new bytes right after it is closed (its RELEASE
  // may reach the daemon after the next OPEN: the daemon waits for it). Several rounds, since
  // that order is a race.
  for (char version : {'c', 'd', 'e', 'f'}) {
    SCOPED_TRACE(std::string("version ") + version);
    int held = open((mnt_ + "/a.bin").c_str(), O_RDONLY);
    ASSERT_GE(held, 0);
    WriteFile(backing_ + "/a.bin", std::string(150000, version));
    int fd = open((mnt_ + "/a.bin").c_str(), O_RDONLY);
    int err = errno;
    EXPECT_LT(fd, 0);
    EXPECT_EQ(err, EBUSY);
    if (fd >= 0) close(fd);
    close(held);
    EXPECT_EQ(ReadFile(mnt_ + "/a.bin"), std::string(150000, version));
  }
  EXPECT_GE(m.Counter("stale_detected"), 5u);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST_F(PassthroughTest, KillNineWhileFilesAreOpenThenRemount) {
  auto files = MakeFiles(backing_, 12, 500000, 3);
  {
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount({"--passthrough", "on"}).exit_code, 0);
    StageAll(m, files);
    std::vector<int> held;
    for (const auto& [rel, content] : files) {
      int fd = open((mnt_ + "/" + rel).c_str(), O_RDONLY);
      ASSERT_GE(fd, 0);
      held.push_back(fd);
    }
    ASSERT_GT(m.pid(), 0);
    ASSERT_EQ(kill(m.pid(), SIGKILL), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    for (int fd : held) close(fd);
  }
  ClairfsMount m(backing_, mnt_, cache_);
  auto r = m.Mount({"--passthrough", "on"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const uint64_t reads = m.Counter("read_requests");
  for (const auto& [rel, content] : files) {
    EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
    EXPECT_EQ(ReadByMmap(mnt_ + "/" + rel), content) << rel;
  }
  EXPECT_EQ(m.Counter("read_requests"), reads);  // the copies survived: all passthrough
  EXPECT_EQ(m.Counter("passthrough_opens"), 2 * files.size());
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST_F(PassthroughTest, ManyConcurrentOpensOfTheSameAndOfDifferentFiles) {
  auto files = MakeFiles(backing_, 16, 300000, 4);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--passthrough", "on"}).exit_code, 0);
  // Half staged (passthrough), half not (normal reads that stage them while others open them).
  int i = 0;
  for (const auto& [rel, content] : files) {
    if (i++ % 2 == 0) {
      ASSERT_EQ(ReadFile(mnt_ + "/" + rel), content);
    }
  }
  ASSERT_TRUE(m.WaitStagingIdle());
  std::vector<std::string> names;
  for (const auto& [rel, content] : files) names.push_back(rel);
  std::atomic<int> failures{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937_64 rng(static_cast<uint64_t>(t));
      for (int k = 0; k < 150; ++k) {
        // Threads 0-3 hammer one file; the others pick at random.
        const std::string& rel = t < 4 ? names[0] : names[rng() % names.size()];
        const std::string& want = files.at(rel);
        int fd = open((mnt_ + "/" + rel).c_str(), O_RDONLY);
        if (fd < 0) {
          ++failures;
          continue;
        }
        if (ReadFd(fd, want.size() + 1) != want) ++failures;
        close(fd);
      }
    });
  }
  for (auto& th : threads) th.join();
  EXPECT_EQ(failures.load(), 0);
  EXPECT_GT(m.Counter("passthrough_opens"), 0u);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// A root daemon cannot lose CAP_SYS_ADMIN and still mount: mount(2) needs it, and a reduced
// bounding set (setpriv/capsh --drop) also strips it from the setuid fusermount3 ("mount failed:
// Operation not permitted"); an unprivileged user cannot open /dev/fuse here (mode 0600). So the
// scenario runs in a new user and mount namespace (unshare -Urm): the daemon has every capability
// in its namespace, enough to mount FUSE, but not CAP_SYS_ADMIN in the initial namespace, so the
// kernel refuses passthrough (BACKING_OPEN: EPERM) and the daemon must fall back. The mount is
// visible only inside that namespace, so the whole scenario runs there.
TEST_F(PassthroughTest, WithoutPrivilegeReadsWorkAndStatusSaysWhy) {
  auto files = MakeFiles(backing_, 10, 300000, 5);
  ClairfsMount guard(backing_, mnt_, cache_);  // unmounts whatever is left
  const std::string bin = ClairfsBin();
  std::string script = "cd /\n";
  script += "if " + bin + " mount " + backing_ + " " + mnt_ + " --cache " + cache_ +
            " --passthrough on 2>" + (dir_ / "on.err") + "; then echo mounted >" +
            (dir_ / "on.result") + "; " + bin + " umount " + mnt_ + "; else echo refused >" +
            (dir_ / "on.result") + "; fi\n";
  script += "set -e\n" + bin + " mount " + backing_ + " " + mnt_ + " --cache " + cache_ + "\n";
  script += "trap '" + bin + " umount " + mnt_ + "' EXIT\n";
  for (int round = 0; round < 2; ++round) {
    for (const auto& [rel, content] : files) {
      script += "cmp " + backing_ + "/" + rel + " " + mnt_ + "/" + rel + "\n";
      script +=
          "python3 -c 'import mmap,sys; f=open(sys.argv[1],\"rb\"); "
          "m=mmap.mmap(f.fileno(),0,prot=mmap.PROT_READ); "
          "sys.exit(m[:]!=open(sys.argv[2],\"rb\").read())' " +
          mnt_ + "/" + rel + " " + backing_ + "/" + rel + "\n";
    }
    if (round == 0) script += "sleep 2\n";  // let read-through staging finish
  }
  script += bin + " status " + mnt_ + " --json >" + (dir_ / "status.json") + "\n";
  script += bin + " status " + mnt_ + " >" + (dir_ / "status.txt") + "\n";
  script += "echo done >" + (dir_ / "done") + "\n";
  WriteFile((dir_ / "script.sh"), script);
  CommandResult r = testing::Run(
      {"unshare", "--user", "--map-root-user", "--mount", "/bin/sh", (dir_ / "script.sh")}, 300);
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(ReadFile((dir_ / "done")), "done\n");
  // `on` could not be had: the mount failed, naming the reason.
  EXPECT_EQ(ReadFile((dir_ / "on.result")), "refused\n");
  EXPECT_NE(ReadFile((dir_ / "on.err")).find("--passthrough on: the kernel refused"),
            std::string::npos)
      << ReadFile((dir_ / "on.err"));
  auto status = nlohmann::json::parse(ReadFile((dir_ / "status.json")), nullptr, false);
  ASSERT_TRUE(status.is_object());
  EXPECT_EQ(status["passthrough"].value("state", ""), "off");
  EXPECT_NE(status["passthrough"].value("reason", "").find("EPERM"), std::string::npos)
      << status.dump();
  EXPECT_EQ(status.value("passthrough_opens", uint64_t{1}), 0u);
  EXPECT_GT(status.value("read_requests", uint64_t{0}), 0u);  // served through the daemon
  EXPECT_GT(status.value("hits", uint64_t{0}), 0u);           // including from staged copies
  EXPECT_NE(ReadFile((dir_ / "status.txt")).find("passthrough off (the kernel refused"),
            std::string::npos);
}

}  // namespace
}  // namespace clairfs::testing
