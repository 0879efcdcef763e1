// Integration tests of the no-open mode (--open-mode no-open, docs/NO-OPEN.md) on real mounts:
// byte-exact reads (read and mmap) of staged, unstaged and being-staged files; after the first
// OPEN and FLUSH (answered ENOSYS) no OPEN, FLUSH or RELEASE reaches the daemon; hits counted on
// a file's first READ; eviction and re-staging while the kernel holds pages; kill -9 and
// remount; the refused combinations; many readers at once through a small set of kept files.
// Every mount is unmounted by ClairfsMount's guard, also when an assertion fails.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <map>
#include <random>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

class NoOpenTest : public MountDirsTest {
 protected:
  // The request counters that must not move once the kernel went no-open.
  struct Requests {
    uint64_t open = 0, flush = 0, release = 0;
  };
  static Requests RequestsOf(const nlohmann::json& s) {
    return Requests{s.value("open_requests", uint64_t{0}), s.value("flush_requests", uint64_t{0}),
                    s.value("release_requests", uint64_t{0})};
  }
};

TEST_F(NoOpenTest, ReadsAreByteExactAndOnlyTheFirstOpenAndFlushReachTheDaemon) {
  auto files = MakeFiles(backing_, 30, 300000, 21);
  // Large enough to still be staging at 4 MB/s while it is read.
  files["big.bin"] = RandomBytes(12 << 20, 22);
  WriteFile(backing_ + "/big.bin", files["big.bin"]);
  ClairfsMount m(backing_, mnt_, cache_);
  auto r = m.Mount({"--open-mode", "no-open", "--stage-bandwidth", "4"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  auto status = m.Status();
  ASSERT_EQ(status["open_mode"].value("mode", ""), "no-open") << status.dump();
  EXPECT_EQ(status["passthrough"].value("state", ""), "off");
  // Half the files staged before they are read; big.bin is read while it is being staged.
  std::vector<std::string> staged;
  int i = 0;
  for (const auto& [rel, content] : files) {
    if (rel != "big.bin" && i++ % 2 == 0) staged.push_back(rel);
  }
  std::vector<std::string> stage_argv = {ClairfsBin(), "stage", mnt_, "--wait"};
  stage_argv.insert(stage_argv.end(), staged.begin(), staged.end());
  ASSERT_EQ(testing::Run(stage_argv, 120).exit_code, 0);
  EXPECT_EQ(ReadFile(mnt_ + "/big.bin"), files["big.bin"]);
  EXPECT_GT(m.Status()["staging"].value("in_flight", uint64_t{0}) +
                m.Status()["staging"].value("queued", uint64_t{0}),
            0u);  // big.bin was read while its copy was being made
  for (const auto& [rel, content] : files) {
    EXPECT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
    EXPECT_EQ(ReadByMmap(mnt_ + "/" + rel, /*drop_pages=*/true), content) << rel;
  }
  // The first open got ENOSYS and so did the first FLUSH; since then the kernel opens and closes
  // files without the daemon (RELEASE too: it is skipped connection-wide).
  const Requests after_first = RequestsOf(m.Status());
  EXPECT_EQ(after_first.open, 1u);
  EXPECT_LE(after_first.flush, 1u);
  EXPECT_LE(after_first.release, 1u);
  for (int round = 0; round < 3; ++round) {
    for (const auto& [rel, content] : files) {
      ASSERT_EQ(ReadFileAndDropPages(mnt_ + "/" + rel), content) << rel;
    }
  }
  ASSERT_TRUE(m.WaitStagingIdle(120));
  const uint64_t hits = m.Counter("hits");
  for (const auto& [rel, content] : files) {
    ASSERT_EQ(ReadFileAndDropPages(mnt_ + "/" + rel), content) << rel;
  }
  status = m.Status();
  const Requests end = RequestsOf(status);
  EXPECT_EQ(end.open, after_first.open);
  EXPECT_EQ(end.flush, after_first.flush);
  EXPECT_EQ(end.release, after_first.release);
  // Every file staged by now: each first READ that reached the daemon was a hit.
  EXPECT_EQ(status.value("hits", uint64_t{0}) - hits, files.size()) << status.dump();
  EXPECT_GT(status["open_mode"].value("kept_files", uint64_t{0}), 0u);
  // Warm reads (pages kept) reach the daemon not at all, unless the kernel reclaimed pages
  // meanwhile (this VM drops clean pages with memory free, see EachByteReadIsCachedOnce... below;
  // a CI ASan run saw 29 READs in one pass over 30 files): a file whose pages are gone costs a
  // READ. A regression that drops the pages at each open costs at least one READ per file in
  // every pass, so the best of up to three passes must cost fewer than half the files' worth.
  for (const auto& [rel, content] : files) ASSERT_EQ(ReadFile(mnt_ + "/" + rel), content);
  uint64_t fewest_reads = UINT64_MAX;
  for (int pass = 0; pass < 3 && fewest_reads >= files.size() / 2; ++pass) {
    const uint64_t reads = m.Counter("read_requests");
    for (const auto& [rel, content] : files) ASSERT_EQ(ReadFile(mnt_ + "/" + rel), content);
    fewest_reads = std::min(fewest_reads, m.Counter("read_requests") - reads);
  }
  EXPECT_LT(fewest_reads, files.size() / 2);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// A copy evicted while the kernel holds the file's pages: the pages stay right (the bytes did not
// change), the daemon lets go of the copy's file at once, and the next READ of the file reads the
// backing store and stages it again.
TEST_F(NoOpenTest, EvictionAndRestagingWhileTheKernelHoldsPages) {
  auto files = MakeFiles(backing_, 20, 200000, 23);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--open-mode", "no-open"}).exit_code, 0);
  ASSERT_EQ(testing::Run({ClairfsBin(), "stage", mnt_, "--wait"}, 120).exit_code, 0);
  for (const auto& [rel, content] : files) ASSERT_EQ(ReadFile(mnt_ + "/" + rel), content);
  EXPECT_EQ(m.Status()["open_mode"].value("kept_files", uint64_t{0}), files.size());
  ASSERT_EQ(testing::Run({ClairfsBin(), "evict", mnt_, "--all"}, 60).exit_code, 0);
  EXPECT_EQ(m.Status()["open_mode"].value("kept_files", uint64_t{0}), 0u);
  EXPECT_EQ(m.Status().value("staged_files", uint64_t{1}), 0u);
  const uint64_t reads = m.Counter("read_requests");
  for (const auto& [rel, content] : files) ASSERT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
  // The kernel's pages served them. It may reclaim some under another test's memory pressure, which
  // is its right: CI's whole-suite runs saw 1 READ (2026-12-02) and 3 (2026-12-03) reach the
  // daemon, and alone it passes every time. A regression that drops the pages at eviction costs at
  // least one READ per file, so fewer than half the files' worth keeps the check meaningful.
  EXPECT_LT(m.Counter("read_requests") - reads, files.size() / 2);
  const uint64_t misses = m.Counter("misses");
  for (const auto& [rel, content] : files) {
    ASSERT_EQ(ReadFileAndDropPages(mnt_ + "/" + rel), content) << rel;  // from the pages
    ASSERT_EQ(ReadFileAndDropPages(mnt_ + "/" + rel), content) << rel;  // from the daemon
  }
  // Each file's second read missed: its copy was evicted. A first read whose page the kernel
  // reclaimed meanwhile misses too (the whole-suite ASan run of 2026-12-04 saw 21 misses of 20
  // files), so up to the bound above.
  const uint64_t missed = m.Counter("misses") - misses;
  EXPECT_GE(missed, files.size());
  EXPECT_LT(missed, files.size() + files.size() / 2);
  ASSERT_TRUE(m.WaitStagingIdle(60));
  EXPECT_EQ(m.Status().value("staged_files", uint64_t{0}), files.size());
  const uint64_t hits = m.Counter("hits");
  for (const auto& [rel, content] : files) {
    ASSERT_EQ(ReadByMmap(mnt_ + "/" + rel, /*drop_pages=*/true), content) << rel;
  }
  EXPECT_EQ(m.Counter("hits") - hits, files.size());
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// A byte is cached once: staging drops the pages of the backing file and of the copy it made,
// and the daemon those of the copy it read for a READ; the FUSE files' pages hold the bytes.
TEST_F(NoOpenTest, EachByteReadIsCachedOnceAsTheFuseFilesPages) {
  auto files = MakeFiles(backing_, 24, 300000, 27);
  sync();  // dirty pages cannot be dropped; a PFS's files are not dirty on a compute node
  size_t backing_resident = 0;
  for (const auto& [rel, content] : files) backing_resident += ResidentPages(backing_ + "/" + rel);
  ASSERT_GT(backing_resident, 0u);  // just written
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--open-mode", "no-open"}).exit_code, 0);
  ASSERT_EQ(testing::Run({ClairfsBin(), "stage", mnt_, "--wait"}, 120).exit_code, 0);
  auto copies = ListFilesRecursive(cache_ + "/data");
  ASSERT_EQ(copies.size(), files.size());
  auto resident_in = [](const std::string& root, const std::vector<std::string>& rels) {
    size_t n = 0;
    for (const std::string& rel : rels) n += ResidentPages(root + "/" + rel);
    return n;
  };
  std::vector<std::string> rels;
  for (const auto& [rel, content] : files) rels.push_back(rel);
  EXPECT_EQ(resident_in(backing_, rels), 0u);
  EXPECT_EQ(resident_in(cache_ + "/data", copies), 0u);
  size_t pages = 0;
  for (const auto& [rel, content] : files) {
    ASSERT_EQ(ReadFile(mnt_ + "/" + rel), content) << rel;
    pages += (content.size() + 4095) / 4096;
  }
  // READs of one file run on several daemon threads at once: one that finishes after the read
  // that dropped the whole file can leave a folio behind. A few pages in all.
  EXPECT_LE(resident_in(cache_ + "/data", copies) * 50, pages);
  // The FUSE files hold the bytes: every page, but for what the machine reclaims meanwhile. This
  // VM drops clean pages with most of its memory free (fincore of 200 MiB read once: 98.4%
  // resident after 8 s, 75.9% after 64 s), and a CI run once found 840 of 869 here.
  const size_t in_fuse_files = resident_in(mnt_, rels);
  EXPECT_LE(in_fuse_files, pages);
  EXPECT_GE(in_fuse_files * 10, pages * 9) << in_fuse_files << " of " << pages << " pages";
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST_F(NoOpenTest, KillNineThenRemountServesEveryByte) {
  auto files = MakeFiles(backing_, 40, 250000, 24);
  {
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount({"--open-mode", "no-open", "--stage-bandwidth", "2"}).exit_code, 0);
    // Reads stage by read-through, slowly: the kill lands while copies are being made.
    for (const auto& [rel, content] : files) ASSERT_EQ(ReadFile(mnt_ + "/" + rel), content);
    ASSERT_GT(m.pid(), 0);
    ASSERT_EQ(kill(m.pid(), SIGKILL), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  ClairfsMount m(backing_, mnt_, cache_);
  auto r = m.Mount({"--open-mode", "no-open"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (const auto& [rel, content] : files) {
    EXPECT_EQ(ReadFileAndDropPages(mnt_ + "/" + rel), content) << rel;
    EXPECT_EQ(ReadByMmap(mnt_ + "/" + rel, /*drop_pages=*/true), content) << rel;
  }
  ASSERT_TRUE(m.WaitStagingIdle(60));
  for (const auto& [rel, content] : files) {
    EXPECT_EQ(ReadFileAndDropPages(mnt_ + "/" + rel), content) << rel;
  }
  EXPECT_EQ(m.Umount().exit_code, 0);
  auto fsck =
      testing::Run({ClairfsBin(), "fsck", "--cache", cache_, "--backing", backing_, "--verify"});
  EXPECT_EQ(fsck.exit_code, 0) << fsck.out << fsck.err;
}

TEST_F(NoOpenTest, WhatNoOpenExcludesIsRefusedWithTheReason) {
  MakeFiles(backing_, 3, 1000, 25);
  const std::vector<std::vector<std::string>> refused = {
      {"--open-mode", "no-open", "--revalidate", "open"},
      {"--open-mode", "no-open", "--passthrough", "on"},
      {"--open-mode", "no-open", "--held-copies", "0"},
      {"--kept-files", "8"}};
  for (const auto& extra : refused) {
    ClairfsMount m(backing_, mnt_, cache_);
    auto r = m.Mount(extra);
    EXPECT_EQ(r.exit_code, 2) << extra[1] << ": " << r.err;
    EXPECT_TRUE(r.err.find("--open-mode no-open") != std::string::npos) << r.err;
  }
}

// Readers of many files at once through 8 kept files: every read byte-exact, none fails.
TEST_F(NoOpenTest, ManyReadersAtOnceThroughASmallSetOfKeptFiles) {
  auto files = MakeFiles(backing_, 60, 150000, 26);
  std::vector<std::pair<std::string, std::string>> list(files.begin(), files.end());
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--open-mode", "no-open", "--kept-files", "8"}).exit_code, 0);
  std::atomic<int> wrong{0}, done{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 8; ++t) {
    readers.emplace_back([&, t] {
      std::mt19937 rng(static_cast<unsigned>(t));
      for (int k = 0; k < 150; ++k) {
        const auto& [rel, content] = list[rng() % list.size()];
        const std::string got = k % 3 == 0 ? ReadByMmap(mnt_ + "/" + rel, /*drop_pages=*/true)
                                           : ReadFileAndDropPages(mnt_ + "/" + rel);
        if (got != content) {
          if (wrong.fetch_add(1) < 5) ADD_FAILURE() << rel << ": " << got.substr(0, 40);
        }
        done.fetch_add(1);
      }
    });
  }
  for (auto& t : readers) t.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_EQ(done.load(), 8 * 150);
  auto status = m.Status();
  EXPECT_LE(status["open_mode"].value("kept_files", uint64_t{99}), 8u);
  EXPECT_EQ(status["open_mode"].value("kept_files_limit", uint64_t{0}), 8u);
  EXPECT_EQ(status.value("backing_errors", uint64_t{1}), 0u);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

}  // namespace
}  // namespace clairfs::testing
