// Integration tests of the admin control ops and CLI (stage, ls, evict, pin, unpin, metrics file)
// through real mounts, always unmounted by ClairfsMount's guard.
#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <map>
#include <random>
#include <thread>

#include <gtest/gtest.h>

#include "tests/mount_helpers.h"
#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

namespace fsys = std::filesystem;
using nlohmann::json;

std::map<std::string, std::string> MakeTree(const std::string& root, int count, size_t max_size,
                                            uint64_t seed) {
  std::map<std::string, std::string> files;
  std::mt19937_64 rng(seed);
  for (int i = 0; i < count; ++i) {
    std::string rel = "part_" + std::to_string(i % 3) + "/sub/f_" + std::to_string(i) + ".bin";
    files[rel] = RandomBytes(1 + rng() % max_size, seed * 7919 + static_cast<uint64_t>(i));
    WriteFile(root + "/" + rel, files[rel]);
  }
  return files;
}

int CountMismatches(const std::string& mnt, const std::map<std::string, std::string>& files) {
  int bad = 0;
  for (const auto& [rel, want] : files) {
    if (ReadFile(mnt + "/" + rel) != want) ++bad;
  }
  return bad;
}

size_t CountEntries(const std::string& mnt, const std::string& filter) {
  CommandResult r = Cli({"ls", mnt, filter, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return ParseJson(r.out).value("entries", json::array()).size();
}

// A raw connection to a mount's control socket, for requests the CLI would never send.
class RawClient {
 public:
  explicit RawClient(const std::string& mnt) {
    char path[512];
    ssize_t n = getxattr(mnt.c_str(), "user.clairfs.control", path, sizeof(path) - 1);
    if (n <= 0) return;
    path[n] = '\0';
    fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un addr {};
    addr.sun_family = AF_UNIX;
    memcpy(addr.sun_path, path, std::min(static_cast<size_t>(n), sizeof(addr.sun_path) - 1));
    if (connect(fd_, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
      close(fd_);
      fd_ = -1;
    }
  }
  ~RawClient() {
    if (fd_ >= 0) close(fd_);
  }
  bool ok() const { return fd_ >= 0; }
  bool Send(const std::string& bytes) {
    size_t off = 0;
    while (off < bytes.size()) {
      ssize_t n = send(fd_, bytes.data() + off, bytes.size() - off, MSG_NOSIGNAL);
      if (n <= 0) return false;
      off += static_cast<size_t>(n);
    }
    return true;
  }
  // One reply line, or "" if the daemon closed the connection or stayed silent for 10 s.
  std::string ReadLine() {
    std::string line;
    char c;
    while (true) {
      struct pollfd pfd = {fd_, POLLIN, 0};
      if (poll(&pfd, 1, 10000) <= 0) return "";
      ssize_t n = recv(fd_, &c, 1, 0);
      if (n <= 0) return "";
      if (c == '\n') return line;
      line.push_back(c);
    }
  }

 private:
  int fd_ = -1;
};

class AdminTest : public MountDirsTest {};

TEST_F(AdminTest, StageWaitThenReuseManifestWithoutBackingFiles) {
  auto files = MakeTree(backing_, 30, 200000, 1);
  {
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount({"--no-read-through"}).exit_code, 0);
    EXPECT_EQ(CountEntries(mnt_, "--unstaged"), files.size());
    CommandResult r = Cli({"stage", mnt_, "--wait", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    json progress = ParseJson(r.out);
    EXPECT_EQ(progress.value("files_done", 0u), files.size());
    EXPECT_EQ(progress.value("files_failed", 1u), 0u);
    EXPECT_EQ(progress.value("done", false), true);
    EXPECT_EQ(CountEntries(mnt_, "--staged"), files.size());
    EXPECT_EQ(CountEntries(mnt_, "--unstaged"), 0u);
    ASSERT_EQ(m.Umount().exit_code, 0);
  }
  for (const auto& [rel, data] : files) fsys::remove(backing_ + "/" + rel);
  ClairfsMount m(backing_, mnt_, cache_);
  CommandResult r = m.Mount({"--manifest", "reuse"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(CountMismatches(mnt_, files), 0);
  EXPECT_EQ(m.Status().value("bytes_from_backing", 1u), 0u);
}

TEST_F(AdminTest, StagesSubtreesAndReportsBadPaths) {
  auto files = MakeTree(backing_, 12, 5000, 2);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--no-read-through"}).exit_code, 0);
  // Relative directory, then an absolute path under the mount.
  CommandResult r = Cli({"stage", mnt_, "part_0", mnt_ + "/part_1/sub/f_1.bin", "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(CountEntries(mnt_, "--staged"), 5u);  // 4 files of part_0 and one of part_1
  r = Cli({"stage", mnt_, "no/such/file", "--wait"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("no/such/file"), std::string::npos) << r.err;
  r = Cli({"stage", mnt_, "../etc"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  r = Cli({"stage", mnt_, "/etc/passwd"});
  EXPECT_EQ(r.exit_code, 2) << r.err;
  EXPECT_NE(r.err.find("outside the mount"), std::string::npos) << r.err;
  std::string list = dir_ / "list.txt";
  WriteFile(list, "# two files\npart_2/sub/f_2.bin\n\npart_2/sub/f_5.bin\n");
  r = Cli({"stage", mnt_, "--from-file", list, "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(CountEntries(mnt_, "--staged"), 7u);
  // evict one directory; ls of it shows it unstaged.
  r = Cli({"evict", mnt_, "part_0", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out).value("evicted", 0u), 4u);
  EXPECT_EQ(CountEntries(mnt_, "--staged"), 3u);
  EXPECT_EQ(CountMismatches(mnt_, files), 0);
}

TEST_F(AdminTest, OfflineStagingThenMountServesStaged) {
  auto files = MakeTree(backing_, 20, 100000, 3);
  {
    // Refused while a daemon holds the cache.
    ClairfsMount m(backing_, mnt_, cache_);
    ASSERT_EQ(m.Mount().exit_code, 0);
    CommandResult r = Cli({"stage", "--offline", "--backing", backing_, "--cache", cache_});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_FALSE(r.err.empty());
    ASSERT_EQ(m.Umount().exit_code, 0);
  }
  fsys::remove_all(cache_);
  CommandResult r = Cli({"stage", "--offline", "--backing", backing_, "--cache", cache_, "part_0",
                         "part_1", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json progress = ParseJson(r.out);
  size_t expected = 0;
  for (const auto& [rel, data] : files) expected += rel.rfind("part_2", 0) != 0;
  EXPECT_EQ(progress.value("files_done", 0u), expected);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--no-read-through"}).exit_code, 0);
  EXPECT_EQ(CountEntries(mnt_, "--staged"), expected);
  EXPECT_EQ(CountMismatches(mnt_, files), 0);
  json s = m.Status();
  EXPECT_EQ(s.value("hits", 0u), expected);
}

TEST_F(AdminTest, ConcurrentStageEvictAndReadStayByteExact) {
  auto files = MakeTree(backing_, 16, 1 << 20, 4);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  std::atomic<bool> stop{false};
  std::atomic<int> bad{0}, rounds{0};
  std::vector<std::thread> readers;
  for (int t = 0; t < 3; ++t) {
    readers.emplace_back([&] {
      while (!stop) {
        bad += CountMismatches(mnt_, files);
        ++rounds;
      }
    });
  }
  // Readers holding a file open while it is evicted keep reading the same bytes.
  std::thread held([&] {
    const auto& [rel, want] = *files.begin();
    int fd = open((mnt_ + "/" + rel).c_str(), O_RDONLY);
    if (fd < 0) {
      ++bad;
      return;
    }
    while (!stop) {
      std::string got(want.size(), '\0');
      ssize_t n = pread(fd, got.data(), got.size(), 0);
      if (n != static_cast<ssize_t>(want.size()) || got != want) ++bad;
    }
    close(fd);
  });
  auto end = std::chrono::steady_clock::now() + std::chrono::seconds(6);
  int cycles = 0;
  while (std::chrono::steady_clock::now() < end) {
    CommandResult s = Cli({"stage", mnt_, "--wait"});
    EXPECT_NE(s.exit_code, 2) << s.err;  // cancelled by a concurrent evict is fine; usage is not
    CommandResult e = Cli({"evict", mnt_, "--all"});
    EXPECT_EQ(e.exit_code, 0) << e.err;
    ++cycles;
  }
  stop = true;
  for (auto& t : readers) t.join();
  held.join();
  EXPECT_EQ(bad.load(), 0);
  EXPECT_GT(rounds.load(), 0);
  EXPECT_GT(cycles, 1);
  EXPECT_EQ(Cli({"stage", mnt_, "--wait"}).exit_code, 0);
  EXPECT_EQ(CountMismatches(mnt_, files), 0);
}

TEST_F(AdminTest, MalformedRequestsGetErrorsAndReadsContinue) {
  auto files = MakeTree(backing_, 6, 50000, 5);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  // A slow client: half a line, then nothing (held open through the whole test).
  RawClient slow(mnt_);
  ASSERT_TRUE(slow.ok());
  ASSERT_TRUE(slow.Send("{\"op\": \"sta"));

  const std::vector<std::string> bad_lines = {
      "not json at all",
      "[1, 2, 3]",
      "42",
      "{}",
      "{\"op\": \"no_such_op\"}",
      "{\"op\": 7}",
      "{\"op\": \"ls\", \"bogus\": 1}",
      "{\"op\": \"ls\", \"path\": 5}",
      "{\"op\": \"ls\", \"recursive\": \"yes\"}",
      "{\"op\": \"ls\", \"filter\": \"some\"}",
      "{\"op\": \"ls\", \"limit\": -1}",
      "{\"op\": \"ls\", \"path\": \"../..\"}",
      "{\"op\": \"ls\", \"path\": \"/etc\"}",
      "{\"op\": \"stage\"}",
      "{\"op\": \"stage\", \"paths\": \"part_0\"}",
      "{\"op\": \"stage\", \"paths\": []}",
      "{\"op\": \"stage\", \"paths\": [1]}",
      "{\"op\": \"stage\", \"paths\": [\"part_0/../../x\"]}",
      "{\"op\": \"stage\", \"paths\": [\"/\"]}",
      "{\"op\": \"stage\", \"paths\": [\"part_0\"], \"priority\": \"urgent\"}",
      "{\"op\": \"stage_progress\", \"id\": \"one\"}",
      "{\"op\": \"stage_progress\", \"id\": 999999}",
      "{\"op\": \"evict\"}",
      "{\"op\": \"evict\", \"all\": true, \"paths\": [\"part_0\"]}",
      "{\"op\": \"evict\", \"all\": 1}",
      "{\"op\": \"pin\", \"paths\": [\"nope\"]}",
      "{\"op\": \"unpin\", \"paths\": {}}",
  };
  RawClient client(mnt_);
  ASSERT_TRUE(client.ok());
  for (const std::string& line : bad_lines) {
    ASSERT_TRUE(client.Send(line + "\n")) << line;
    json reply = ParseJson(client.ReadLine());
    EXPECT_EQ(reply.value("ok", true), false) << line << " -> " << reply.dump();
    EXPECT_GT(reply.value("errno", 0), 0) << line;
    EXPECT_FALSE(reply.value("error", "").empty()) << line;
    EXPECT_EQ(ReadFile(mnt_ + "/" + files.begin()->first), files.begin()->second);
  }
  // Too many paths in one request.
  json many = {{"op", "stage"}, {"paths", json::array()}};
  for (int i = 0; i < 70000; ++i) many["paths"].push_back("a");
  ASSERT_TRUE(client.Send(many.dump() + "\n"));
  json reply = ParseJson(client.ReadLine());
  EXPECT_EQ(reply.value("ok", true), false);
  EXPECT_NE(reply.value("error", "").find("too many paths"), std::string::npos) << reply.dump();

  // Oversized line (> 1 MiB): an error reply or a dropped connection, never a hang.
  {
    RawClient big(mnt_);
    ASSERT_TRUE(big.ok());
    std::string huge = "{\"op\": \"ls\", \"path\": \"" + std::string(1100000, 'a') + "\"}\n";
    big.Send(huge);  // may fail midway if the daemon drops us
    std::string line = big.ReadLine();
    if (!line.empty()) {
      EXPECT_EQ(ParseJson(line).value("ok", true), false) << line;
    }
  }
  // A truncated line, then close.
  {
    RawClient cut(mnt_);
    ASSERT_TRUE(cut.ok());
    cut.Send("{\"op\": \"status\", \"pa");
  }
  // The daemon still serves reads, status and good requests on a fresh connection.
  EXPECT_EQ(CountMismatches(mnt_, files), 0);
  ASSERT_TRUE(client.Send("{\"op\": \"ls\", \"path\": \".\", \"recursive\": true}\n"));
  reply = ParseJson(client.ReadLine());
  EXPECT_EQ(reply.value("ok", false), true) << reply.dump();
  EXPECT_EQ(reply["entries"].size(), files.size());
  EXPECT_FALSE(m.Status().empty());
}

TEST_F(AdminTest, NonOwnerMayReadStatusAndLsButNotChangeTheCache) {
  if (geteuid() != 0) GTEST_SKIP() << "needs root to run commands as nobody";
  if (clairfs::testing::Run({"sh", "-c", "command -v setpriv"}).exit_code != 0)
    GTEST_SKIP() << "no setpriv";
  auto files = MakeTree(backing_, 5, 10000, 6);
  chmod(dir_.path().c_str(), 0755);
  for (const auto& p : ListFilesRecursive(backing_)) {
    (void)p;
  }
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"-o", "allow_other"}).exit_code, 0);
  ASSERT_EQ(Cli({"stage", mnt_, "part_0", "--wait"}).exit_code, 0);
  auto as_nobody = [&](const std::vector<std::string>& args) {
    std::vector<std::string> argv = {"setpriv", "--reuid=nobody", "--regid=nogroup",
                                     "--clear-groups", ClairfsBin()};
    argv.insert(argv.end(), args.begin(), args.end());
    return clairfs::testing::Run(argv, 60);
  };
  CommandResult r = as_nobody({"status", mnt_, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  r = as_nobody({"ls", mnt_, "--staged", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out).value("entries", json::array()).size(), 2u);
  for (const auto& args : std::vector<std::vector<std::string>>{{"stage", mnt_, "--wait"},
                                                                {"evict", mnt_, "--all"},
                                                                {"pin", mnt_, "part_0"},
                                                                {"unpin", mnt_, "part_0"}}) {
    r = as_nobody(args);
    EXPECT_EQ(r.exit_code, 1) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("permission denied"), std::string::npos) << args[0] << ": " << r.err;
  }
  EXPECT_EQ(CountEntries(mnt_, "--staged"), 2u);
}

TEST_F(AdminTest, PinLimitsAndEvictSkipsPinned) {
  MakeTree(backing_, 8, 1, 7);  // tiny files: 4 KiB blocks each at most
  WriteFile(backing_ + "/big/a.bin", RandomBytes(1500000, 70));
  WriteFile(backing_ + "/big/b.bin", RandomBytes(1500000, 71));
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--capacity", "2M", "--no-read-through"}).exit_code, 0);
  // The two big files together exceed the capacity: refused as such, nothing pinned.
  CommandResult r = Cli({"pin", mnt_, "big"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("exceed the cache capacity"), std::string::npos) << r.err;
  // Unstaged files are refused (stage first).
  r = Cli({"pin", mnt_, "part_0"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("not staged"), std::string::npos) << r.err;
  ASSERT_EQ(Cli({"stage", mnt_, "part_0", "part_1", "--wait"}).exit_code, 0);
  r = Cli({"pin", mnt_, "part_0", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out).value("pinned", 0u), 3u);
  r = Cli({"ls", mnt_, "part_0", "-r", "--json"});
  const json listed = ParseJson(r.out);
  for (const auto& e : listed["entries"]) EXPECT_TRUE(e.value("pinned", false));
  r = Cli({"evict", mnt_, "--all", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out).value("skipped_pinned", 0u), 3u);
  EXPECT_EQ(CountEntries(mnt_, "--staged"), 3u);
  // Staging a big file evicts others but never the pinned ones.
  ASSERT_EQ(Cli({"stage", mnt_, "big/a.bin", "--wait"}).exit_code, 0);
  EXPECT_EQ(CountEntries(mnt_, "--staged"), 4u);
  ASSERT_EQ(Cli({"unpin", mnt_, "part_0"}).exit_code, 0);
  r = Cli({"evict", mnt_, "--all", "--json"});
  EXPECT_EQ(ParseJson(r.out).value("evicted", 0u), 4u);
}

TEST_F(AdminTest, MetricsFileHasCountersAndIsRemovedAtUnmount) {
  auto files = MakeTree(backing_, 4, 1000, 8);
  std::string metrics = dir_ / "clairfs.prom";
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"-o", "metrics_file=" + metrics}).exit_code, 0);
  ASSERT_TRUE(PathExists(metrics));
  EXPECT_EQ(CountMismatches(mnt_, files), 0);
  std::string text;
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (std::chrono::steady_clock::now() < deadline) {
    text = ReadFile(metrics);
    if (text.find("clairfs_opens_total{") != std::string::npos &&
        text.find("clairfs_opens_total{mountpoint=\"" + mnt_ + "\"} 0") == std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  EXPECT_NE(text.find("# TYPE clairfs_hits_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("clairfs_capacity_bytes{mountpoint=\"" + mnt_ + "\"}"), std::string::npos)
      << text;
  EXPECT_NE(text.find("clairfs_staging_queued{"), std::string::npos) << text;
  EXPECT_NE(text.find("clairfs_opens_total{mountpoint=\"" + mnt_ + "\"} 4"), std::string::npos)
      << text;
  EXPECT_FALSE(PathExists(metrics + ".tmp"));
  ASSERT_EQ(m.Umount().exit_code, 0);
  // The daemon removes the file as it exits (shortly after umount returns).
  deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (PathExists(metrics) && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_FALSE(PathExists(metrics));
}

TEST_F(AdminTest, CommandsHaveHelpAndUsageErrors) {
  for (const char* cmd : {"stage", "ls", "evict", "pin", "unpin"}) {
    CommandResult r = Cli({cmd, "--help"});
    EXPECT_EQ(r.exit_code, 0) << cmd;
    EXPECT_NE(r.out.find("--json"), std::string::npos) << cmd;
  }
  EXPECT_EQ(Cli({"stage"}).exit_code, 2);
  EXPECT_EQ(Cli({"evict", mnt_}).exit_code, 2);
  EXPECT_EQ(Cli({"stage", mnt_, "--priority", "urgent"}).exit_code, 2);
  EXPECT_EQ(Cli({"stage", "--offline", "--backing", backing_}).exit_code, 2);
  CommandResult r = Cli({"ls", mnt_});  // not a mount
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find(mnt_), std::string::npos) << r.err;
}

}  // namespace
}  // namespace clairfs::testing
