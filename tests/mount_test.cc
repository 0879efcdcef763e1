// Integration tests of the staging mount: real FUSE mounts under a temporary directory, always
// unmounted by ClairfsMount's guard (even when an assertion fails).
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <map>
#include <random>
#include <sstream>
#include <thread>
#include <tuple>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

namespace fsys = std::filesystem;

// A backing tree of `count` files with deterministic content; returns path -> content.
std::map<std::string, std::string> MakeDataset(const std::string& root, int count, size_t max_size,
                                               uint64_t seed) {
  std::map<std::string, std::string> files;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < count; ++i) {
    std::string rel = "class_" + std::to_string(i % 4) + "/img_" + std::to_string(i) + ".jpg";
    size_t size = 1 + rng() % max_size;
    files[rel] = RandomBytes(size, seed * 1000 + static_cast<uint64_t>(i));
    WriteFile(root + "/" + rel, files[rel]);
  }
  return files;
}

std::string ReadAll(const std::string& path) { return ReadFile(path); }

class MountTest : public MountDirsTest {};

TEST_F(MountTest, ConcurrentRandomReadsAreByteExactFromBackingAndCache) {
  auto files = MakeDataset(backing_, 40, 300000, 1);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  auto check = [&](int round) {
    std::atomic<int> bad{0};
    std::vector<std::thread> readers;
    for (int t = 0; t < 8; ++t) {
      readers.emplace_back([&, t] {
        std::mt19937_64 rng(static_cast<uint64_t>(round * 100 + t));
        std::vector<std::string> names;
        for (auto& [k, v] : files) names.push_back(k);
        std::vector<char> buf(200000);
        for (int i = 0; i < 300; ++i) {
          const std::string& rel = names[rng() % names.size()];
          const std::string& want = files.at(rel);
          int fd = open((mnt_ + "/" + rel).c_str(), O_RDONLY);
          if (fd < 0) {
            ++bad;
            continue;
          }
          size_t off = rng() % (want.size() + 10);
          size_t len = 1 + rng() % buf.size();
          ssize_t n = pread(fd, buf.data(), len, static_cast<off_t>(off));
          size_t expect = off >= want.size() ? 0 : std::min(len, want.size() - off);
          if (n != static_cast<ssize_t>(expect) ||
              (expect > 0 && std::memcmp(buf.data(), want.data() + off, expect) != 0)) {
            ++bad;
          }
          close(fd);
        }
      });
    }
    for (auto& r : readers) r.join();
    return bad.load();
  };
  EXPECT_EQ(check(1), 0);
  ASSERT_TRUE(m.WaitStagingIdle());
  auto status = m.Status();
  EXPECT_EQ(status.value("staged_files", 0), 40);
  EXPECT_EQ(check(2), 0);
  EXPECT_GT(m.Status().value("hits", 0), 0);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

struct TreeEntry {
  std::string type;
  uint64_t size = 0;
  unsigned mode = 0;
  std::string target;
  bool operator==(const TreeEntry&) const = default;
};

std::map<std::string, TreeEntry> Snapshot(const std::string& root) {
  std::map<std::string, TreeEntry> out;
  std::error_code ec;
  for (auto it = fsys::recursive_directory_iterator(root, ec);
       it != fsys::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    struct stat st;
    std::string path = it->path().string();
    if (lstat(path.c_str(), &st) != 0) continue;
    TreeEntry e;
    e.mode = st.st_mode & 07777;
    if (S_ISDIR(st.st_mode))
      e.type = "dir";
    else if (S_ISLNK(st.st_mode))
      e.type = "link", e.target = fsys::read_symlink(path).string();
    else if (S_ISREG(st.st_mode))
      e.type = "file", e.size = static_cast<uint64_t>(st.st_size);
    else
      e.type = "special";
    out[it->path().lexically_relative(root).string()] = e;
  }
  return out;
}

TEST_F(MountTest, ReaddirEqualsTheBackingTree) {
  WriteFile(backing_ + "/with space/a b.jpg", "x");
  WriteFile(backing_ + "/ünïcødé/日本語.png", "yy");
  WriteFile(backing_ + "/.hidden/.dot", "z");
  MakeDirs(backing_ + "/empty/inner_empty");
  std::string deep = backing_;
  for (int i = 0; i < 25; ++i) deep += "/d" + std::to_string(i);
  WriteFile(deep + "/leaf.txt", "leaf");
  MakeDirs(backing_ + "/big");
  for (int i = 0; i < 10000; ++i) {
    int fd = open((backing_ + "/big/f" + std::to_string(i)).c_str(), O_CREAT | O_WRONLY, 0644);
    close(fd);
  }
  ASSERT_EQ(symlink("../with space/a b.jpg", (backing_ + "/big/link").c_str()), 0);
  ASSERT_EQ(symlink("/etc/hostname", (backing_ + "/outside").c_str()), 0);
  ASSERT_EQ(symlink("dangling-target", (backing_ + "/dangling").c_str()), 0);
  chmod((backing_ + "/ünïcødé/日本語.png").c_str(), 0600);

  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  auto want = Snapshot(backing_);
  auto got = Snapshot(mnt_);
  EXPECT_EQ(got.size(), want.size());
  for (const auto& [path, entry] : want) {
    auto it = got.find(path);
    ASSERT_NE(it, got.end()) << "missing through the mount: " << path;
    EXPECT_TRUE(it->second == entry)
        << path << ": " << it->second.type << " " << it->second.size << " " << it->second.mode
        << " " << it->second.target << " vs " << entry.type << " " << entry.size << " "
        << entry.mode << " " << entry.target;
  }
  // Byte order of names within a directory is what readdir returns.
  std::vector<std::string> names;
  for (auto& e : fsys::directory_iterator(mnt_ + "/big")) names.push_back(e.path().filename());
  EXPECT_EQ(names.size(), 10001u);
  EXPECT_EQ(ReadAll(mnt_ + "/big/link"), "x");
  EXPECT_EQ(ReadAll(deep.replace(0, backing_.size(), mnt_) + "/leaf.txt"), "leaf");
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST_F(MountTest, EveryMutationIsErofsAndSpecialFilesAreNotServed) {
  WriteFile(backing_ + "/dir/file", "data");
  ASSERT_EQ(mkfifo((backing_ + "/fifo").c_str(), 0644), 0);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  std::string f = mnt_ + "/dir/file";
  auto expect_erofs = [](int rc, const char* what) {
    EXPECT_EQ(rc, -1) << what;
    EXPECT_EQ(errno, EROFS) << what;
  };
  expect_erofs(open(f.c_str(), O_WRONLY), "open for write");
  expect_erofs(open(f.c_str(), O_RDWR), "open read-write");
  expect_erofs(open((mnt_ + "/new").c_str(), O_CREAT | O_WRONLY, 0644), "create");
  expect_erofs(mkdir((mnt_ + "/newdir").c_str(), 0755), "mkdir");
  expect_erofs(unlink(f.c_str()), "unlink");
  expect_erofs(rmdir((mnt_ + "/dir").c_str()), "rmdir");
  expect_erofs(rename(f.c_str(), (mnt_ + "/dir/other").c_str()), "rename");
  expect_erofs(link(f.c_str(), (mnt_ + "/dir/hard").c_str()), "link");
  expect_erofs(symlink("x", (mnt_ + "/dir/sym").c_str()), "symlink");
  expect_erofs(chmod(f.c_str(), 0600), "chmod");
  expect_erofs(truncate(f.c_str(), 0), "truncate");
  expect_erofs(mknod((mnt_ + "/node").c_str(), S_IFIFO | 0644, 0), "mknod");
  expect_erofs(setxattr(f.c_str(), "user.x", "1", 1, 0), "setxattr");
  expect_erofs(removexattr(f.c_str(), "user.x"), "removexattr");
  struct timespec times[2] = {{0, 0}, {0, 0}};
  expect_erofs(utimensat(AT_FDCWD, f.c_str(), times, 0), "utimensat");
  // Still readable.
  EXPECT_EQ(ReadAll(f), "data");
  // The FIFO is listed with its attributes; the kernel never forwards its open to the daemon,
  // so no backing-store byte can flow through it.
  struct stat st;
  ASSERT_EQ(lstat((mnt_ + "/fifo").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(m.Status().value("opens", -1), 1);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST_F(MountTest, StagedFilesServeWithoutBackingStoreAfterRemountWithReuse) {
  auto files = MakeDataset(backing_, 30, 200000, 2);
  {
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount().exit_code, 0);
    for (auto& [rel, content] : files) ASSERT_EQ(ReadAll(mnt_ + "/" + rel), content);
    ASSERT_TRUE(m.WaitStagingIdle());
    EXPECT_EQ(m.Status().value("staged_files", 0), 30);
    ASSERT_EQ(m.Umount().exit_code, 0);
  }
  // The dataset disappears from the backing store.
  for (auto& [rel, content] : files) ASSERT_EQ(unlink((backing_ + "/" + rel).c_str()), 0);
  ClairfsMount m(backing_, mnt_, cache_);
  auto r = m.Mount({"--revalidate", "never", "--manifest", "reuse"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (auto& [rel, content] : files) EXPECT_EQ(ReadAll(mnt_ + "/" + rel), content) << rel;
  auto status = m.Status();
  EXPECT_EQ(status.value("bytes_from_backing", -1), 0);
  EXPECT_EQ(status.value("hits", 0), 30);
  EXPECT_EQ(status.value("misses", -1), 0);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// Without passthrough a staged copy is opened at the first READ, not at open: an eviction in
// between must not lose the reader's bytes (they then come from the backing file), in both
// read modes, and concurrent first READs of one open must agree.
TEST_F(MountTest, DeferredCopyOpenSurvivesEvictionBeforeTheFirstRead) {
  const std::string content = RandomBytes(700000, 11);
  WriteFile(backing_ + "/a.bin", content);
  for (const char* mode : {"pread", "splice"}) {
    SCOPED_TRACE(mode);
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount({"--passthrough", "off", "--read-mode", mode}).exit_code, 0);
    ASSERT_EQ(ReadAll(mnt_ + "/a.bin"), content);
    ASSERT_TRUE(m.WaitStagingIdle());
    // Remount: the mount's page cache is gone, so READs reach the daemon.
    ASSERT_EQ(m.Umount().exit_code, 0);
    ASSERT_EQ(m.Mount({"--passthrough", "off", "--read-mode", mode}).exit_code, 0);
    int fd = open((mnt_ + "/a.bin").c_str(), O_RDONLY);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(m.Status().value("hits", 0), 1);
    CommandResult r = testing::Run({ClairfsBin(), "evict", mnt_, "a.bin"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::vector<std::string> parts(4);
    std::vector<std::thread> readers;
    for (size_t i = 0; i < parts.size(); ++i) {
      readers.emplace_back([&, i] {
        const size_t chunk = content.size() / parts.size();
        std::string buf(chunk, '\0');
        ssize_t n = pread(fd, buf.data(), chunk, static_cast<off_t>(i * chunk));
        buf.resize(n < 0 ? 0 : static_cast<size_t>(n));
        parts[i] = buf;
      });
    }
    for (auto& t : readers) t.join();
    close(fd);
    const size_t chunk = content.size() / parts.size();
    for (size_t i = 0; i < parts.size(); ++i) {
      EXPECT_EQ(parts[i], content.substr(i * chunk, chunk)) << "part " << i;
    }
    EXPECT_EQ(ReadAll(mnt_ + "/a.bin"), content);
    ASSERT_TRUE(m.WaitStagingIdle());
    EXPECT_EQ(m.Umount().exit_code, 0);
  }
}

TEST_F(MountTest, ChangedBackingFileIsNeverServedStale) {
  WriteFile(backing_ + "/a.bin", std::string(100000, 'a'));
  WriteFile(backing_ + "/b.bin", std::string(50000, 'b'));
  {
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount({"--revalidate", "open"}).exit_code, 0);
    EXPECT_EQ(ReadAll(mnt_ + "/a.bin"), std::string(100000, 'a'));
    EXPECT_EQ(ReadAll(mnt_ + "/b.bin"), std::string(50000, 'b'));
    ASSERT_TRUE(m.WaitStagingIdle());
    EXPECT_EQ(ReadAll(mnt_ + "/a.bin"), std::string(100000, 'a'));  // from the staged copy
    // Same size, new bytes; and a new size.
    WriteFile(backing_ + "/a.bin", std::string(100000, 'A'));
    WriteFile(backing_ + "/b.bin", std::string(70000, 'B'));
    EXPECT_EQ(ReadAll(mnt_ + "/a.bin"), std::string(100000, 'A'));
    EXPECT_EQ(ReadAll(mnt_ + "/b.bin"), std::string(70000, 'B'));
    struct stat st;
    ASSERT_EQ(stat((mnt_ + "/b.bin").c_str(), &st), 0);
    EXPECT_EQ(st.st_size, 70000);
    EXPECT_GE(m.Status().value("stale_detected", 0), 2);
    ASSERT_TRUE(m.WaitStagingIdle());
    ASSERT_EQ(m.Umount().exit_code, 0);
  }
  // Changed again while unmounted: the remount's listing invalidates the staged copy, and says
  // so in its count.
  WriteFile(backing_ + "/a.bin", std::string(100000, 'Z'));
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  EXPECT_EQ(m.Status().value("stale_at_mount", -1), 1);
  EXPECT_EQ(ReadAll(mnt_ + "/a.bin"), std::string(100000, 'Z'));
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// docs/RELIABILITY.md, backing store faults, finding 2: the kernel's page cache is shared by every
// open of an inode. An open of the old version, still live after the file changed, refills it
// with old bytes after the new version's open dropped it: the new open must not read them (it is
// answered with direct I/O), nor the open after the old one is closed (its pages go then).
TEST_F(MountTest, PagesAnOldOpenReadNeverServeAnOpenOfTheNewVersion) {
  const size_t size = 256 * 1024;
  WriteFile(backing_ + "/a.bin", std::string(size, 'a'));
  ClairfsMount m(backing_, mnt_, cache_);
  // Nothing staged: both versions are read from the backing store, each open from its own file.
  ASSERT_EQ(
      m.Mount({"--revalidate", "open", "--no-read-through", "--passthrough", "off"}).exit_code, 0);
  const auto pread_all = [size](int fd) {
    std::string out(size, '\0');
    size_t got = 0;
    while (got < size) {
      const ssize_t n = pread(fd, out.data() + got, size - got, static_cast<off_t>(got));
      if (n <= 0) break;
      got += static_cast<size_t>(n);
    }
    out.resize(got);
    return out;
  };
  const std::string path = mnt_ + "/a.bin";
  const int old_fd = open(path.c_str(), O_RDONLY);
  ASSERT_GE(old_fd, 0);
  EXPECT_EQ(pread_all(old_fd), std::string(size, 'a'));
  // Replaced by rename with the same size: the old open keeps reading the old file.
  WriteFile(backing_ + "/a.bin.new", std::string(size, 'B'));
  ASSERT_EQ(rename((backing_ + "/a.bin.new").c_str(), (backing_ + "/a.bin").c_str()), 0);
  const int new_fd = open(path.c_str(), O_RDONLY);  // finds the change: the pages are dropped
  ASSERT_GE(new_fd, 0);
  // The old open reads again: old bytes, into the page cache the new open shares.
  EXPECT_EQ(pread_all(old_fd), std::string(size, 'a'));
  EXPECT_EQ(pread_all(new_fd), std::string(size, 'B'));
  close(old_fd);
  close(new_fd);
  // Both closed: the next open reads the new version, not the pages the old open left.
  EXPECT_EQ(ReadAll(path), std::string(size, 'B'));
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// --revalidate never, what the README promises: the dataset is the one listed at mount. A
// staged file keeps its listed version; an unstaged file that changed is refused (ESTALE, counted)
// rather than served as another version than the one listed.
TEST_F(MountTest, WithoutRevalidationAChangedFileIsServedAsListedOrRefused) {
  WriteFile(backing_ + "/staged.bin", std::string(30000, 's'));
  WriteFile(backing_ + "/unstaged.bin", std::string(30000, 'u'));
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--no-read-through", "--passthrough", "off"}).exit_code, 0);
  CommandResult staged = testing::Run({ClairfsBin(), "stage", mnt_, "staged.bin", "--wait"});
  ASSERT_EQ(staged.exit_code, 0) << staged.err;
  WriteFile(backing_ + "/staged.bin", std::string(40000, 'S'));
  WriteFile(backing_ + "/unstaged.bin", std::string(40000, 'U'));
  EXPECT_EQ(ReadAll(mnt_ + "/staged.bin"), std::string(30000, 's'));
  int fd = open((mnt_ + "/unstaged.bin").c_str(), O_RDONLY);
  EXPECT_LT(fd, 0);
  EXPECT_EQ(errno, ESTALE);
  if (fd >= 0) close(fd);
  auto status = m.Status();
  // The kernel retries an open that failed with ESTALE once (LOOKUP_REVAL): one or two refusals.
  EXPECT_GE(status.value("not_as_listed", -1), 1);
  EXPECT_LE(status.value("not_as_listed", -1), 2);
  EXPECT_EQ(status.value("stale_detected", -1), 0);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

TEST_F(MountTest, KillNineWithCopiesInFlightRecoversByteExact) {
  auto files = MakeDataset(backing_, 8, 2000000, 3);
  for (auto& [rel, content] : files) {
    if (content.size() < 1000000) {
      content = RandomBytes(1500000, rel.size());
      WriteFile(backing_ + "/" + rel, content);
    }
  }
  {
    ClairfsMount m(backing_, mnt_, cache_);
    // 1 MB/s: copies stay in CACHE/tmp long enough to kill the daemon under them.
    ASSERT_EQ(m.Mount({"--stage-bandwidth", "1", "--stage-threads", "4"}).exit_code, 0);
    for (auto& [rel, content] : files) ASSERT_EQ(ReadAll(mnt_ + "/" + rel), content);
    size_t in_tmp = 0;
    for (int i = 0; i < 100 && in_tmp < 2; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      in_tmp = static_cast<size_t>(
          std::distance(fsys::directory_iterator(cache_ + "/tmp"), fsys::directory_iterator()));
    }
    ASSERT_GE(in_tmp, 2u) << "expected copies in flight in CACHE/tmp";
    ASSERT_GT(m.pid(), 0);
    ASSERT_EQ(kill(m.pid(), SIGKILL), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  // The guard unmounted the dead mount. fsck finds the copies in flight, discards them, and
  // verifies every published copy byte for byte against the backing store.
  CommandResult fsck = testing::Run(
      {ClairfsBin(), "fsck", "--cache", cache_, "--verify", "--backing", backing_, "--json"});
  ASSERT_EQ(fsck.exit_code, 0) << fsck.out << fsck.err;
  auto report = nlohmann::json::parse(fsck.out, nullptr, false);
  ASSERT_FALSE(report.is_discarded()) << fsck.out;
  EXPECT_GE(report["recovery"]["temp_removed"].get<uint64_t>(), 2u) << fsck.out;
  EXPECT_EQ(report["verify"]["mismatched"].get<uint64_t>(), 0u) << fsck.out;
  EXPECT_EQ(report["verify"]["checked"], report["verify"]["equal"]) << fsck.out;
  EXPECT_EQ(std::distance(fsys::directory_iterator(cache_ + "/tmp"), fsys::directory_iterator()),
            0);
  ClairfsMount m(backing_, mnt_, cache_);
  auto r = m.Mount();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(std::distance(fsys::directory_iterator(cache_ + "/tmp"), fsys::directory_iterator()),
            0);
  for (auto& [rel, content] : files) EXPECT_EQ(ReadAll(mnt_ + "/" + rel), content) << rel;
  ASSERT_TRUE(m.WaitStagingIdle(120));
  for (auto& [rel, content] : files) EXPECT_EQ(ReadAll(mnt_ + "/" + rel), content) << rel;
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// Allocated bytes of the files under `dir` that all existed at one instant: the end of the walk.
// A walk is not atomic: a file counted early may be evicted before a later one is published, so
// only files still present (same inode; copies get fresh names) when the walk ends are summed.
uint64_t AllocatedBytesUnder(const std::string& dir) {
  std::vector<std::pair<std::string, struct stat>> seen;
  std::error_code ec;
  for (auto it = fsys::recursive_directory_iterator(dir, ec);
       it != fsys::recursive_directory_iterator(); it.increment(ec)) {
    struct stat st;
    if (lstat(it->path().c_str(), &st) == 0 && S_ISREG(st.st_mode)) {
      seen.emplace_back(it->path().string(), st);
    }
  }
  uint64_t total = 0;
  for (const auto& [path, st] : seen) {
    struct stat now;
    if (lstat(path.c_str(), &now) == 0 && now.st_ino == st.st_ino) {
      total += static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  return total;
}

TEST_F(MountTest, StagedBytesNeverExceedCapacity) {
  const uint64_t capacity = 2 << 20;
  auto files = MakeDataset(backing_, 60, 200000, 4);  // about 6 MB: 3x the capacity
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--capacity", "2M"}).exit_code, 0);
  std::atomic<bool> done{false};
  std::atomic<uint64_t> max_seen{0}, max_status{0};
  std::thread sampler([&] {
    while (!done) {
      max_seen = std::max<uint64_t>(max_seen, AllocatedBytesUnder(cache_ + "/data"));
      auto s = m.Status();
      max_status = std::max<uint64_t>(
          max_status, s.value("used_bytes", uint64_t{0}) + s.value("reserved_bytes", uint64_t{0}));
    }
  });
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (auto& [rel, content] : files) EXPECT_EQ(ReadAll(mnt_ + "/" + rel), content);
  }
  EXPECT_TRUE(m.WaitStagingIdle());
  done = true;
  sampler.join();
  EXPECT_LE(max_seen.load(), capacity);
  EXPECT_LE(max_status.load(), capacity);
  EXPECT_GT(m.Status().value("evictions", 0), 0);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// A tmpfs mounted for the test's lifetime, always unmounted.
struct TmpfsGuard {
  std::string path;
  bool mounted = false;
  TmpfsGuard(const std::string& p, const std::string& size) : path(p) {
    MakeDirs(p);
    mounted = mount("tmpfs", p.c_str(), "tmpfs", 0, ("size=" + size).c_str()) == 0;
  }
  ~TmpfsGuard() {
    if (mounted) umount2(path.c_str(), MNT_DETACH);
  }
};

TEST_F(MountTest, FullCacheDeviceKeepsReadsCorrect) {
  TmpfsGuard tmpfs(dir_ / "tiny", "1m");
  if (!tmpfs.mounted) GTEST_SKIP() << "cannot mount tmpfs here (needs root)";
  auto files = MakeDataset(backing_, 20, 400000, 5);  // about 4 MB into a 1 MiB device
  ClairfsMount m(backing_, mnt_, tmpfs.path + "/cache");
  auto r = m.Mount();
  ASSERT_EQ(r.exit_code, 0) << r.err;
  for (int epoch = 0; epoch < 2; ++epoch) {
    for (auto& [rel, content] : files) EXPECT_EQ(ReadAll(mnt_ + "/" + rel), content) << rel;
    EXPECT_TRUE(m.WaitStagingIdle());
  }
  auto s = m.Status();
  EXPECT_LT(s.value("staged_files", 0), 20);
  EXPECT_EQ(m.Umount().exit_code, 0);
}

void ExpectMountFails(ClairfsMount& m, const std::vector<std::string>& extra,
                      const std::string& phrase) {
  CommandResult r = m.Mount(extra);
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_NE(r.err.find(phrase), std::string::npos) << r.err;
  EXPECT_FALSE(IsFuseMounted(m.mountpoint()));
}

TEST_F(MountTest, MountFailuresPrintOneLineAndLeaveNothingMounted) {
  WriteFile(backing_ + "/f", "x");
  {
    ClairfsMount m(dir_ / "missing", mnt_, cache_);
    ExpectMountFails(m, {}, "backing directory");
  }
  {
    WriteFile(dir_ / "notempty/file", "x");
    ClairfsMount m(backing_, dir_ / "notempty", cache_);
    ExpectMountFails(m, {}, "is not empty");
  }
  {
    MakeDirs(backing_ + "/inner");
    ClairfsMount m(backing_, backing_ + "/inner", cache_);
    ExpectMountFails(m, {}, "inside one another");
  }
  {
    WriteFile(dir_ / "afile", "x");
    ClairfsMount m(backing_, mnt_, dir_ / "afile");
    ExpectMountFails(m, {}, "cache");
  }
  {
    ClairfsMount first(backing_, mnt_, cache_);
    ASSERT_EQ(first.Mount().exit_code, 0);
    MakeDirs(dir_ / "mnt2");
    ClairfsMount second(backing_, dir_ / "mnt2", cache_);
    ExpectMountFails(second, {}, "in use by another clairfs");
    ClairfsMount third(backing_, mnt_, dir_ / "cache3");
    CommandResult r = third.Mount();
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_NE(r.err.find("busy"), std::string::npos) << r.err;
    EXPECT_TRUE(IsFuseMounted(mnt_));  // the first mount is untouched
    EXPECT_EQ(first.Umount().exit_code, 0);
  }
  {
    ClairfsMount m(backing_, mnt_, cache_);
    CommandResult r = m.Mount({"--capacity", "lots"});
    EXPECT_EQ(r.exit_code, 2);
    EXPECT_NE(r.err.find("invalid size"), std::string::npos) << r.err;
  }
}

TEST_F(MountTest, DeadDaemonsStaleMountIsRecoveredByTheNextMount) {
  WriteFile(backing_ + "/f", "content");
  {
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount().exit_code, 0);
    ASSERT_EQ(kill(m.pid(), SIGKILL), 0);
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    struct statvfs vfs;
    EXPECT_NE(statvfs(mnt_.c_str(), &vfs), 0);
    EXPECT_EQ(errno, ENOTCONN);
    ClairfsMount again(backing_, mnt_, cache_);
    CommandResult r = again.Mount();
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.err.find("stale mount"), std::string::npos) << r.err;
    EXPECT_EQ(ReadAll(mnt_ + "/f"), "content");
    EXPECT_EQ(again.Umount().exit_code, 0);
  }
  EXPECT_FALSE(IsFuseMounted(mnt_));
}

TEST_F(MountTest, UmountOfABusyMountNamesTheProblemAndLazyDetaches) {
  WriteFile(backing_ + "/f", "content");
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  int fd = open((mnt_ + "/f").c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  CommandResult r = testing::Run({ClairfsBin(), "umount", mnt_});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("busy"), std::string::npos) << r.err;
  r = testing::Run({ClairfsBin(), "umount", "--lazy", mnt_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(IsFuseMounted(mnt_));
  char buf[16];
  EXPECT_EQ(read(fd, buf, sizeof(buf)), 7);  // the open file keeps working until closed
  close(fd);
}

// A mount that fails after the daemon started (here: its metrics file cannot be written)
// returns only once the daemon has exited and released the cache, so an immediate retry works.
TEST_F(MountTest, AFailedMountReleasesTheCacheBeforeReturning) {
  // Enough files that the daemon's cleanup (flushing the listing into the index) takes a while.
  for (int i = 0; i < 2000; ++i) WriteFile(backing_ + "/f" + std::to_string(i), "x");
  WriteFile(backing_ + "/a", "alpha");
  ClairfsMount guard(backing_, mnt_, cache_);  // unmounts whatever is left
  for (int attempt = 0; attempt < 3; ++attempt) {
    // The daemon keeps the command's stderr until it detaches: send it to a file, so that only
    // the mount command itself is waited for (as a shell script waits for it).
    const std::string err = dir_ / "mount.err";
    CommandResult r =
        testing::Run({"/bin/sh", "-c",
                      ClairfsBin() + " mount " + backing_ + " " + mnt_ + " --cache " + cache_ +
                          " --metrics-file " + (dir_ / "no-such-dir/m.prom") + " 2>" + err});
    const std::string log = ReadFile(err);
    ASSERT_EQ(r.exit_code, 1) << log;
    EXPECT_FALSE(IsFuseMounted(mnt_));
    // The daemon's log lines are tagged clairfs[PID]: that process must be gone.
    const size_t tag = log.find("clairfs[");
    ASSERT_NE(tag, std::string::npos) << log;
    const pid_t daemon = static_cast<pid_t>(std::stol(log.substr(tag + 8)));
    EXPECT_EQ(kill(daemon, 0), -1) << "the failed mount's daemon " << daemon << " still runs";
    EXPECT_EQ(errno, ESRCH);
    int fd = open((cache_ + "/lock").c_str(), O_RDWR);
    ASSERT_GE(fd, 0);
    EXPECT_EQ(flock(fd, LOCK_EX | LOCK_NB), 0) << "the failed mount's daemon still holds the cache";
    close(fd);
  }
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  EXPECT_EQ(ReadAll(mnt_ + "/a"), "alpha");
  EXPECT_EQ(m.Umount().exit_code, 0);
}

// Name (comm) and policy (field 41 of stat: 0 SCHED_OTHER, 3 SCHED_BATCH) of every thread of
// the daemon, by thread id.
std::map<int, std::pair<std::string, int>> DaemonThreads(pid_t pid) {
  std::map<int, std::pair<std::string, int>> threads;
  const std::string task_dir = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& entry : fsys::directory_iterator(task_dir)) {
    std::string stat = ReadFile(entry.path().string() + "/stat");
    std::string comm = ReadFile(entry.path().string() + "/comm");
    while (!comm.empty() && comm.back() == '\n') comm.pop_back();
    size_t paren = stat.rfind(')');
    if (paren == std::string::npos) continue;
    std::istringstream fields(stat.substr(paren + 2));
    std::string field;
    for (int i = 3; i <= 41 && (fields >> field); ++i) {
      if (i == 41) threads[std::stoi(entry.path().filename().string())] = {comm, std::stoi(field)};
    }
  }
  return threads;
}

// The threads that serve requests (created by the main thread after the staging threads, like
// the main thread itself from then on) run SCHED_OTHER by default and SCHED_BATCH with --sched
// batch; the staging threads ("clairfs-stage") run SCHED_OTHER either way; status says which
// policy the request threads have; reads work either way.
TEST_F(MountTest, RequestThreadsRunTheChosenPolicyAndStagingThreadsStayNormal) {
  WriteFile(backing_ + "/a", "alpha");
  for (const auto& [flag, policy, name] :
       {std::tuple<const char*, int, const char*>{nullptr, 0, "normal"}, {"batch", 3, "batch"}}) {
    SCOPED_TRACE(name);
    ClairfsMount m(backing_, mnt_, cache_);
    std::vector<std::string> args;
    if (flag != nullptr) args = {"--sched", flag};
    ASSERT_EQ(m.Mount(args).exit_code, 0);
    EXPECT_EQ(ReadAll(mnt_ + "/a"), "alpha");
    auto threads = DaemonThreads(m.pid());
    ASSERT_TRUE(threads.count(m.pid()));
    EXPECT_EQ(threads[m.pid()].second, policy) << "main thread";
    int staging = 0, serving = 0;
    for (const auto& [tid, thread] : threads) {
      if (thread.first == "clairfs-stage") {
        ++staging;
        EXPECT_EQ(thread.second, 0) << "staging thread " << tid;
      } else if (thread.second == policy) {
        ++serving;
      }
    }
    EXPECT_GT(staging, 0);
    EXPECT_GT(serving, 1);  // the main thread and libfuse's workers at least
    EXPECT_EQ(m.Status().value("sched_policy", ""), name);
    EXPECT_EQ(m.Umount().exit_code, 0);
  }
  ClairfsMount bad(backing_, mnt_, cache_);
  CommandResult r = bad.Mount({"--sched", "fifo"});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("batch or normal"), std::string::npos) << r.err;
  EXPECT_FALSE(IsFuseMounted(mnt_));
}

// Waits until the mount's listing for the kernel (--list-ahead) has ended; returns its status
// object (null if it never ran or did not end in 30 s).
nlohmann::json WaitListAhead(ClairfsMount& m) {
  for (int i = 0; i < 3000; ++i) {
    nlohmann::json listed = m.Status().value("list_ahead", nlohmann::json());
    if (!listed.is_object()) return nullptr;
    if (listed.value("done", false)) return listed;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return nullptr;
}

// Reads every file through the mount, byte-exact; returns how many LOOKUPs the daemon got for it.
uint64_t LookupsToReadAll(ClairfsMount& m, const std::map<std::string, std::string>& files) {
  const uint64_t before = m.Status().value("lookups", uint64_t{0});
  for (const auto& [rel, content] : files) EXPECT_EQ(ReadAll(m.mountpoint() + "/" + rel), content);
  return m.Status().value("lookups", uint64_t{0}) - before;
}

TEST_F(MountTest, NamesListedAheadNeedNoLookupAtTheirFirstOpen) {
  const auto files = MakeFiles(backing_, 60, 3000, 11);
  {
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount().exit_code, 0);
    const nlohmann::json listed = WaitListAhead(m);
    ASSERT_TRUE(listed.is_object()) << m.Status().dump();
    EXPECT_EQ(listed.value("names", 0), 63);  // 60 files in d0..d2
    EXPECT_EQ(listed.value("directories", 0), 4);
    EXPECT_EQ(listed.value("failed_directories", -1), 0);
    EXPECT_FALSE(listed.value("stopped", true));
    EXPECT_EQ(LookupsToReadAll(m, files), 0u);
    EXPECT_EQ(m.Umount().exit_code, 0);
  }
  {
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount({"--list-ahead", "off"}).exit_code, 0);
    EXPECT_TRUE(m.Status()["list_ahead"].is_null());
    EXPECT_GE(LookupsToReadAll(m, files), 60u);  // each file's name, its directory's once
    EXPECT_EQ(m.Umount().exit_code, 0);
  }
  {
    // A bound smaller than the tree: the root's names and some of d0's, nothing more.
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount({"-o", "list_ahead=10"}).exit_code, 0);
    const nlohmann::json listed = WaitListAhead(m);
    ASSERT_TRUE(listed.is_object()) << m.Status().dump();
    EXPECT_EQ(listed.value("names", 0), 10);
    EXPECT_EQ(listed.value("directories", 0), 2);
    EXPECT_EQ(m.Umount().exit_code, 0);
  }
}

// The listing holds a directory of the mount open while it runs, which makes an unmount busy:
// `clairfs umount` right after the mount waits for it instead of failing.
TEST_F(MountTest, UmountRightAfterMountWaitsOutTheListing) {
  for (int d = 0; d < 20; ++d) {
    for (int f = 0; f < 150; ++f) {
      WriteFile(backing_ + "/c" + std::to_string(d) + "/f" + std::to_string(f), "x");
    }
  }
  for (int round = 0; round < 3; ++round) {
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount().exit_code, 0);
    CommandResult r = m.Umount();
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_FALSE(IsFuseMounted(mnt_));
  }
}

}  // namespace
}  // namespace clairfs::testing
