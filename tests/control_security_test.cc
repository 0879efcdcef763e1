// Integration tests of the control socket and the CLI against hostile names and hostile users
// (issue 17, items 1, 3, 4, 5 and part of 10), through real mounts, with other users' commands run
// as other uids (setpriv) and user mounts made in a private mount namespace
// (user_fuse_namespace.h).
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "fs/control/control_server.h"
#include "fs/control/control_socket_dir.h"
#include "tests/mount_helpers.h"
#include "tests/test_util.h"
#include "tests/user_fuse_namespace.h"
#include "tools/cli/subprocess.h"

namespace clairfs::testing {
namespace {

namespace fsys = std::filesystem;
using nlohmann::json;

constexpr uid_t kNobody = 65534;
constexpr uid_t kHostile = 4242;

// `clairfs ARGS` as uid `uid` (gid = uid, or `groups` as supplementary groups).
CommandResult CliAs(uid_t uid, const std::vector<std::string>& args,
                    const std::string& groups = "") {
  std::vector<std::string> argv = {
      "setpriv", "--reuid=" + std::to_string(uid), "--regid=" + std::to_string(uid),
      groups.empty() ? "--clear-groups" : "--groups=" + groups, ClairfsBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv, 60);
}

std::set<std::string> EntryPaths(const std::string& ls_json) {
  std::set<std::string> out;
  for (const auto& e : ParseJson(ls_json).value("entries", json::array())) {
    out.insert(e.value("path", ""));
  }
  return out;
}

// `text` cut at each `sep` (a last piece without one counts too).
std::vector<std::string> SplitOn(const std::string& text, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(sep, start);
    if (end == std::string::npos) end = text.size();
    out.push_back(text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

// A mount root whose name is not UTF-8 over files whose names are not UTF-8, hold a newline or a
// backslash: every command takes and shows them, and the daemon serves reads after each.
class HostileNamesTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backing_ = dir_ / "back_\xe9";
    mnt_ = dir_ / "mnt";
    cache_ = dir_ / "cache";
    MakeDirs(mnt_);
    files_ = {{"bad_\xff\xfe.bin", RandomBytes(3000, 1)},
              {"new\nline", RandomBytes(2000, 2)},
              {"back\\slash", RandomBytes(1000, 3)},
              {"d_\xc3/inner #1.bin", RandomBytes(500, 4)},
              {"plain.bin", RandomBytes(100, 5)}};
    for (const auto& [rel, data] : files_) WriteFile(backing_ + "/" + rel, data);
  }
  // Every file reads back as written through the mount: the daemon is alive and serving.
  void ExpectServing(const std::string& after) {
    for (const auto& [rel, data] : files_) {
      ASSERT_EQ(ReadFile(mnt_ + "/" + rel), data) << "after " << after << ": " << rel;
    }
  }
  size_t Staged() {
    CommandResult r = Cli({"ls", mnt_, "--staged", "-0"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return SplitOn(r.out, '\0').size();
  }
  TempDir dir_;
  std::string backing_, mnt_, cache_;
  std::map<std::string, std::string> files_;
};

TEST_F(HostileNamesTest, EveryCommandTakesAndShowsNamesOfAnyBytes) {
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--no-read-through", "-o", "metrics_file=" + (dir_ / "m.prom")}).exit_code, 0);
  ExpectServing("mount");

  // ls: escaped in text and JSON, raw with -0.
  CommandResult r = Cli({"ls", mnt_, "-r", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(EntryPaths(r.out),
            (std::set<std::string>{"bad_\\xff\\xfe.bin", "new\\x0aline", "back\\\\slash",
                                   "d_\\xc3/inner #1.bin", "plain.bin"}))
      << r.out;
  r = Cli({"ls", mnt_, "-r", "-0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::vector<std::string> raw = SplitOn(r.out, '\0');
  EXPECT_EQ(std::set<std::string>(raw.begin(), raw.end()),
            (std::set<std::string>{"bad_\xff\xfe.bin", "new\nline", "back\\slash",
                                   "d_\xc3/inner #1.bin", "plain.bin"}));
  r = Cli({"ls", mnt_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("new\\x0aline\n"), std::string::npos) << r.out;  // one line per entry
  EXPECT_NE(r.out.find("d_\\xc3/\n"), std::string::npos) << r.out;
  ExpectServing("ls");

  // status: the backing root is shown escaped.
  json status = m.Status();
  EXPECT_EQ(status.value("backing", ""), backing_.substr(0, backing_.size() - 1) + "\\xe9");
  r = Cli({"status", mnt_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("back_\\xe9"), std::string::npos) << r.out;
  ExpectServing("status");

  // stage: an escaped argument, a raw one, a list of escaped names, a NUL list of raw names.
  r = Cli({"stage", mnt_, "bad_\\xff\\xfe.bin", "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"stage", mnt_, "back\\slash", "--wait"});  // a bare backslash: how to write it
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("\\\\ (a backslash)"), std::string::npos) << r.err;
  r = Cli({"stage", mnt_, "back\\\\slash", "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string list = dir_ / "list.txt";
  WriteFile(list, "# escaped names\nnew\\x0aline\n");
  r = Cli({"stage", mnt_, "--from-file", list, "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string nul_list = dir_ / "list.0";
  WriteFile(nul_list, std::string("d_\xc3/inner #1.bin\0", 17));  // the name and its NUL
  r = Cli({"stage", mnt_, "--from-file", nul_list, "-0", "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"stage", mnt_, mnt_ + "/plain.bin", "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Staged(), files_.size());
  ExpectServing("stage");

  // pin, unpin, evict by escaped names and NUL lists.
  r = Cli({"pin", mnt_, "bad_\\xff\\xfe.bin", "new\\x0aline", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out).value("pinned", 0u), 2u);
  r = Cli({"unpin", mnt_, "--from-file", list});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"evict", mnt_, "--from-file", nul_list, "-0", "back\\\\slash", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out).value("evicted", 0u), 2u);
  r = Cli({"evict", mnt_, "nope\\xff"});
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("nope\\xff: no such file"), std::string::npos) << r.err;
  ExpectServing("pin/evict");

  // stats after reads: per-file rows by escaped name; a Darshan log of them, imported as heat.
  r = Cli({"stats", mnt_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  std::set<std::string> read_paths;
  for (const auto& row : ParseJson(r.out).value("files", json::array())) {
    read_paths.insert(row.value("path", ""));
  }
  EXPECT_TRUE(read_paths.count("bad_\\xff\\xfe.bin")) << r.out;
  EXPECT_TRUE(read_paths.count("new\\x0aline")) << r.out;
  r = Cli({"stats", mnt_});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("new\\x0aline"), std::string::npos);
  const std::string log = dir_ / "own.darshan";
  r = Cli({"stats", mnt_, "--darshan", log});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  r = Cli({"darshan", "import", mnt_, log, "--strip-prefix", mnt_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err << r.out;
  EXPECT_EQ(ParseJson(r.out).value("files_matched", 0u), files_.size()) << r.out;
  r = Cli({"ls", mnt_, "new\\x0aline", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(ParseJson(r.out)["entries"][0]["heat_per_byte"].is_number()) << r.out;
  ExpectServing("stats/darshan");

  // plan show: escaped lines that stage --from-file takes back, and raw NUL output.
  const std::string plan_list = dir_ / "plan.txt";
  r = Cli({"plan", "show", "--backing", backing_, "--layout", "sorted", "--plan", "sequential",
           "--epoch", "0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("new\\x0aline\n"), std::string::npos) << r.out;
  WriteFile(plan_list, r.out);
  r = Cli({"plan", "show", "--backing", backing_, "--layout", "sorted", "--plan", "sequential",
           "--epoch", "0", "-0"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  raw = SplitOn(r.out, '\0');
  EXPECT_EQ(std::set<std::string>(raw.begin(), raw.end()).count("new\nline"), 1u);
  ASSERT_EQ(Cli({"evict", mnt_, "--all"}).exit_code, 0);
  r = Cli({"stage", mnt_, "--from-file", plan_list, "--wait"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(Staged(), files_.size());

  // The metrics file still renders.
  EXPECT_TRUE(PathExists(dir_ / "m.prom"));
  ExpectServing("plan");
  ASSERT_EQ(m.Umount().exit_code, 0);
}

// The control socket of the mount at `mnt`, as the mount root's "user.clairfs.control" names it.
std::string ControlSocketOf(const std::string& mnt) {
  char path[512];
  ssize_t n = getxattr(mnt.c_str(), "user.clairfs.control", path, sizeof(path) - 1);
  return n > 0 ? std::string(path, static_cast<size_t>(n)) : "";
}

// The address of the Unix socket at `socket_path` (cut to fit; connect then fails).
struct sockaddr_un UnixAddress(const std::string& socket_path) {
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  memcpy(addr.sun_path, socket_path.data(),
         std::min(socket_path.size(), sizeof(addr.sun_path) - 1));
  return addr;
}

// In a forked child: becomes uid `uid` for good (gid the same, no supplementary groups).
bool DropTo(uid_t uid) {
  return setgroups(0, nullptr) == 0 && setresgid(uid, uid, uid) == 0 &&
         setresuid(uid, uid, uid) == 0;
}

// A raw connection to a mount's control socket, for requests the CLI never sends.
int RawConnect(const std::string& mnt) {
  const std::string path = ControlSocketOf(mnt);
  if (path.empty()) return -1;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un addr = UnixAddress(path);
  if (connect(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

std::string RawAsk(int fd, const std::string& bytes) {
  if (send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL) != static_cast<ssize_t>(bytes.size())) {
    return "";
  }
  std::string line;
  char c;
  while (true) {
    struct pollfd pfd = {fd, POLLIN, 0};
    if (poll(&pfd, 1, 10000) <= 0 || recv(fd, &c, 1, 0) <= 0 || c == '\n') return line;
    line.push_back(c);
  }
}

TEST_F(HostileNamesTest, RequestsWithRawBytesAreRefusedAndTheDaemonGoesOn) {
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  int fd = RawConnect(mnt_);
  ASSERT_GE(fd, 0);
  for (const std::string& line : {std::string("{\"op\":\"ls\",\"path\":\"bad_\xff\xfe.bin\"}\n"),
                                  std::string("{\"op\":\"stage\",\"paths\":[\"\xff\"]}\n"),
                                  std::string("{\"op\":\"ls\",\"path\":\"bad\\\\q\"}\n"),
                                  std::string("{\"op\":\"stage\",\"paths\":[\"\"]}\n"),
                                  std::string("{\"op\":\"stage_progress\",\"id\":1}\n")}) {
    json reply = ParseJson(RawAsk(fd, line));
    EXPECT_EQ(reply.value("ok", true), false) << line << reply.dump();
    EXPECT_GT(reply.value("errno", 0), 0) << line;
    ExpectServing(line);
  }
  json reply = ParseJson(RawAsk(fd, "{\"op\":\"ls\",\"path\":\"bad_\\\\xff\\\\xfe.bin\"}\n"));
  EXPECT_EQ(reply.value("ok", false), true) << reply.dump();
  close(fd);
  ASSERT_EQ(m.Umount().exit_code, 0);
}

// Sends each of `lines` (a '\n' is added) on one connection of uid `uid` to `socket_path` and
// returns the reply lines, "NO REPLY" for a request that got none within 10 s. The child process
// that does it only makes system calls on buffers prepared before the fork.
std::vector<std::string> AskAs(uid_t uid, const std::string& socket_path,
                               const std::vector<std::string>& lines) {
  struct sockaddr_un addr = UnixAddress(socket_path);
  std::vector<std::string> requests;
  for (const std::string& line : lines) requests.push_back(line + "\n");
  static const char kNoReply[] = "NO REPLY\n";
  int out[2];
  if (pipe(out) != 0) return {};
  pid_t pid = fork();
  if (pid == 0) {
    close(out[0]);
    if (!DropTo(uid)) _exit(99);
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (connect(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) _exit(98);
    for (const std::string& request : requests) {
      (void)!send(fd, request.data(), request.size(), MSG_NOSIGNAL);
      bool replied = false;
      char c = 0;
      while (c != '\n') {
        struct pollfd pfd = {fd, POLLIN, 0};
        if (poll(&pfd, 1, 10000) <= 0 || recv(fd, &c, 1, 0) <= 0) break;
        (void)!write(out[1], &c, 1);
        replied = true;
      }
      if (!replied) (void)!write(out[1], kNoReply, sizeof(kNoReply) - 1);
      if (replied && c != '\n') (void)!write(out[1], "\n", 1);  // cut off: end the line here
    }
    _exit(0);
  }
  close(out[1]);
  std::string all;
  char buf[4096];
  ssize_t n;
  while ((n = read(out[0], buf, sizeof(buf))) > 0) all.append(buf, static_cast<size_t>(n));
  close(out[0]);
  waitpid(pid, nullptr, 0);
  return SplitOn(all, '\n');
}

// Item 1 as another user would try it: nobody, on root's allow_other mount of a backing path that
// is not UTF-8 over names of any bytes, runs every command open to them (status, ls, stats) after
// root read the files, and sends on a connection of its own what the CLI never sends (bytes that
// are not UTF-8, bad escapes, ops only the owner may run, a deeply nested array, a line over the
// bound). Each request gets one reply line, and the daemon serves everyone after each.
TEST_F(HostileNamesTest, AnotherUidEndsNothingWithNamesOrRequests) {
  if (!CanRunAsOtherUsers()) GTEST_SKIP() << "needs root and setpriv";
  ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"-o", "allow_other"}).exit_code, 0);
  ExpectServing("mount");  // root's reads: stats now holds rows of these names
  const std::string escaped_backing = backing_.substr(0, backing_.size() - 1) + "\\xe9";

  CommandResult r = CliAs(kNobody, {"status", mnt_});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("back_\\xe9"), std::string::npos) << r.out;
  r = CliAs(kNobody, {"status", mnt_, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out).value("backing", ""), escaped_backing) << r.out;
  r = CliAs(kNobody, {"ls", mnt_, "-r", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(EntryPaths(r.out),
            (std::set<std::string>{"bad_\\xff\\xfe.bin", "new\\x0aline", "back\\\\slash",
                                   "d_\\xc3/inner #1.bin", "plain.bin"}))
      << r.out;
  r = CliAs(kNobody, {"ls", mnt_, "-r", "-0"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(SplitOn(r.out, '\0').size(), files_.size()) << r.out;
  r = CliAs(kNobody, {"ls", mnt_, "new\\x0aline"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  for (const auto& args : std::vector<std::vector<std::string>>{{"stats", mnt_, "--json"},
                                                                {"stats", mnt_, "--top", "3"}}) {
    r = CliAs(kNobody, args);
    EXPECT_EQ(r.exit_code, 0) << args[0] << ": " << r.err;
    EXPECT_EQ(r.out.find("bad_"), std::string::npos) << "per-file rows went to another uid";
  }
  ExpectServing("another user's commands");

  const std::string socket = ControlSocketOf(mnt_);
  ASSERT_FALSE(socket.empty());
  const std::string nested = std::string(200000, '[') + std::string(200000, ']');
  const std::vector<std::string> lines = {
      "{\"op\":\"ls\",\"path\":\"bad_\xff\xfe.bin\"}",
      "{\"op\":\"status\",\"x\":\"\xe9\"}",
      "{\"op\":\"ls\",\"path\":\"bad\\\\q\"}",
      "{\"op\":\"ls\",\"path\":\"new\\\\x0aline\",\"limit\":" + nested + "}",
      nested,
      "{\"op\":\"stage\",\"paths\":[\"plain.bin\"]}",
      "{\"op\":\"evict\",\"all\":true,\"force\":true}",
      "{\"op\":\"plan_set\",\"spec\":\"list:/dev/zero\"}",
      "{\"op\":\"heat_import_begin\",\"replace\":true}",
      "{\"op\":\"ls\",\"path\":\"bad_\\\\xff\\\\xfe.bin\"}",
      std::string(ControlServer::kMaxRequestBytes + 10, 'x')};
  std::vector<std::string> replies = AskAs(kNobody, socket, lines);
  ASSERT_EQ(replies.size(), lines.size());
  for (size_t i = 0; i < lines.size(); ++i) {
    SCOPED_TRACE(lines[i].substr(0, 60));
    json reply = ParseJson(replies[i]);
    ASSERT_TRUE(reply.contains("ok")) << replies[i].substr(0, 200);
    if (i == 9) {
      EXPECT_EQ(reply.value("ok", false), true) << replies[i];
      continue;
    }
    EXPECT_EQ(reply.value("ok", true), false) << replies[i];
    const int code = reply.value("errno", 0);
    if (i >= 5 && i <= 8) {
      EXPECT_EQ(code, EPERM) << replies[i];
    } else if (i == 10) {
      EXPECT_EQ(code, EMSGSIZE) << replies[i];
    } else {
      EXPECT_EQ(code, EINVAL) << replies[i];
    }
  }
  EXPECT_EQ(kill(m.pid(), 0), 0);
  ExpectServing("another user's requests");
  ASSERT_EQ(m.Umount().exit_code, 0);
}

// Another user tries to take root's mount down with the commands a user has: unmount it (plain,
// lazy, or fusermount3 itself) or stop it through the socket. Each fails, and the mount serves on.
TEST_F(HostileNamesTest, AnotherUidCannotUnmountRootsMount) {
  if (!CanRunAsOtherUsers()) GTEST_SKIP() << "needs root and setpriv";
  ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"-o", "allow_other"}).exit_code, 0);
  for (const auto& argv :
       std::vector<std::vector<std::string>>{{ClairfsBin(), "umount", mnt_},
                                             {ClairfsBin(), "umount", mnt_, "--lazy"},
                                             {ClairfsBin(), "umount", mnt_, "--timeout", "1"},
                                             {"fusermount3", "-u", mnt_},
                                             {"fusermount3", "-uz", mnt_},
                                             {"umount", mnt_}}) {
    CommandResult r = RunAs(kNobody, argv, 60);
    EXPECT_NE(r.exit_code, 0) << argv[0] << " " << argv[1];
    EXPECT_TRUE(IsFuseMounted(mnt_)) << argv[0] << " " << argv[1] << " unmounted it";
    ExpectServing(argv[0] + " " + argv[1] + " of another user");
  }
  std::vector<std::string> replies =
      AskAs(kNobody, ControlSocketOf(mnt_), {"{\"op\":\"stop\"}", "{\"op\":\"umount\"}"});
  ASSERT_EQ(replies.size(), 2u);
  for (const std::string& reply : replies) EXPECT_EQ(ParseJson(reply).value("ok", true), false);
  EXPECT_EQ(kill(m.pid(), 0), 0);
  ASSERT_EQ(m.Umount().exit_code, 0);
}

// Other users see of a mount what the mount would show them, or aggregates only.
class VisibilityTest : public MountDirsTest {
 protected:
  void SetUp() override {
    MountDirsTest::SetUp();
    if (!CanRunAsOtherUsers()) GTEST_SKIP() << "needs root and setpriv";
    ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
    Make("open/a.bin", 0755, 0644);
    Make("secret/s.bin", 0700, 0644);
    Make("xonly/x.bin", 0711, 0644);
    Make("group/g.bin", 0750, 0644);
    ASSERT_EQ(chown((backing_ + "/group").c_str(), 0, 4100), 0);
    WriteFile(backing_ + "/unreadable.bin", "u");
    ASSERT_EQ(chmod((backing_ + "/unreadable.bin").c_str(), 0600), 0);
  }
  void Make(const std::string& rel, mode_t dir_mode, mode_t file_mode) {
    WriteFile(backing_ + "/" + rel, "data of " + rel);
    ASSERT_EQ(chmod((backing_ + "/" + rel).c_str(), file_mode), 0);
    const std::string dir = backing_ + "/" + rel.substr(0, rel.find('/'));
    ASSERT_EQ(chmod(dir.c_str(), dir_mode), 0);
  }
};

TEST_F(VisibilityTest, OthersOfAPrivateMountGetAggregatesOnly) {
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount().exit_code, 0);
  EXPECT_EQ(ReadFile(mnt_ + "/secret/s.bin"), "data of secret/s.bin");
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"ls", mnt_, "-r"}, {"ls", mnt_, "open"}, {"stats", mnt_, "--json"}}) {
    CommandResult r = CliAs(kNobody, args);
    EXPECT_EQ(r.exit_code, 1) << args[0];
    EXPECT_NE(r.err.find("private to uid 0: it was mounted without allow_other"), std::string::npos)
        << r.err;
    EXPECT_TRUE(r.out.find("secret") == std::string::npos) << r.out;
  }
  CommandResult r = CliAs(kNobody, {"status", mnt_, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_GT(ParseJson(r.out).value("opens", 0u), 0u);
  ASSERT_EQ(m.Umount().exit_code, 0);
}

TEST_F(VisibilityTest, OthersOfAnAllowOtherMountSeeWhatTheKernelWouldShowThem) {
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"-o", "allow_other"}).exit_code, 0);
  ASSERT_EQ(Cli({"stage", mnt_, "--wait"}).exit_code, 0);
  EXPECT_EQ(ReadFile(mnt_ + "/secret/s.bin"), "data of secret/s.bin");

  // Root sees everything.
  CommandResult r = Cli({"ls", mnt_, "-r", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(EntryPaths(r.out).size(), 5u) << r.out;

  // nobody: a recursive listing enters only directories it may read and search.
  r = CliAs(kNobody, {"ls", mnt_, "-r", "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(EntryPaths(r.out), (std::set<std::string>{"open/a.bin", "unreadable.bin"})) << r.out;
  const json listed = ParseJson(r.out);
  for (const auto& e : listed["entries"]) {
    if (e.value("path", "") == "unreadable.bin") {
      EXPECT_TRUE(e["staged"].is_null()) << e.dump();  // its state is not nobody's to know
    } else {
      EXPECT_EQ(e.value("staged", false), true) << e.dump();
    }
  }
  r = CliAs(kNobody, {"ls", mnt_, "--staged", "--json"});
  EXPECT_EQ(EntryPaths(r.out), (std::set<std::string>{"open/a.bin"})) << r.out;
  r = CliAs(kNobody, {"ls", mnt_});
  EXPECT_NE(r.out.find("?"), std::string::npos) << r.out;  // unreadable.bin: state unknown
  // The root directory's entries are all names nobody may list.
  EXPECT_NE(r.out.find("secret/"), std::string::npos) << r.out;
  for (const std::string denied :
       {"secret", "secret/s.bin", "xonly", "group", "group/g.bin", "secret/no-such-file"}) {
    r = CliAs(kNobody, {"ls", mnt_, denied});
    EXPECT_EQ(r.exit_code, 1) << denied << ": " << r.out;
    EXPECT_NE(r.err.find("permission denied"), std::string::npos) << denied << ": " << r.err;
  }
  r = CliAs(kNobody, {"ls", mnt_, "xonly/x.bin", "--json"});  // search is enough for one file
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(EntryPaths(r.out), (std::set<std::string>{"xonly/x.bin"}));
  // A member of the directory's group (a supplementary group, from SO_PEERGROUPS) may list it.
  r = CliAs(kNobody, {"ls", mnt_, "group", "--json"}, "4100");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(EntryPaths(r.out), (std::set<std::string>{"group/g.bin"}));

  // stats: totals for nobody, never which files were read.
  r = CliAs(kNobody, {"stats", mnt_, "--json"});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  json stats = ParseJson(r.out);
  EXPECT_TRUE(stats.value("files", json::array()).empty()) << r.out;
  EXPECT_EQ(stats.value("per_file", true), false);
  EXPECT_GT(stats["totals"]["cache"].value("opens", 0u), 0u) << r.out;
  r = CliAs(kNobody, {"stats", mnt_});
  EXPECT_EQ(r.out.find("secret"), std::string::npos) << r.out;
  r = Cli({"stats", mnt_, "--json"});
  EXPECT_FALSE(ParseJson(r.out).value("files", json::array()).empty()) << r.out;
  ASSERT_EQ(m.Umount().exit_code, 0);
}

// umount waits for the daemon even while it cannot answer: `daemon` is stopped for 2 s while
// `run_umount` runs, then let go; umount must succeed, and only once the daemon is done.
void ExpectUmountWaitsForTheDaemon(pid_t daemon, const std::function<CommandResult()>& run_umount) {
  ASSERT_EQ(kill(daemon, SIGSTOP), 0);
  const auto started = std::chrono::steady_clock::now();
  CommandResult umount;
  std::thread unmounting([&] { umount = run_umount(); });
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const bool daemon_alive_while_stopped = kill(daemon, 0) == 0;
  kill(daemon, SIGCONT);
  unmounting.join();
  const double waited =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(umount.exit_code, 0) << umount.err;
  EXPECT_TRUE(daemon_alive_while_stopped);
  EXPECT_GE(waited, 2.0);
  // The daemon lets go of its lock as the last of its state is destroyed, a moment before the
  // process itself has ended: allow it that moment, not a flush.
  const auto returned = std::chrono::steady_clock::now();
  while (ProcessRunning(daemon) &&
         std::chrono::steady_clock::now() - returned < std::chrono::seconds(2)) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(ProcessRunning(daemon)) << "the daemon still ran 2 s after umount returned";
}

// Holds as many connections to `socket` as it is let have, as uid `uid`, reconnecting whenever
// the daemon drops one, until killed. Returns the child's pid.
pid_t HoldConnections(const std::string& socket_path, uid_t uid, int count) {
  struct sockaddr_un addr = UnixAddress(socket_path);
  pid_t pid = fork();
  if (pid != 0) return pid;
  if (!DropTo(uid)) _exit(99);
  int fds[64];
  for (int i = 0; i < count; ++i) fds[i] = -1;
  for (;;) {
    for (int i = 0; i < count; ++i) {
      if (fds[i] >= 0) {
        struct pollfd pfd = {fds[i], POLLIN, 0};
        if (poll(&pfd, 1, 0) == 0) continue;  // still held
        close(fds[i]);                        // dropped or refused: try again
      }
      fds[i] = socket(AF_UNIX, SOCK_STREAM, 0);
      if (connect(fds[i], reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
        close(fds[i]);
        fds[i] = -1;
      }
    }
    usleep(20000);
  }
}

// A mount of nobody's, another uid holding every connection it can get: root and the owner still
// run status, evict and stage, and umount still waits for the daemon to exit.
TEST(ConnectionLimitsTest, AnotherUidCannotLockOutRootOrTheOwner) {
  UserFuseNamespace ns;
  if (!ns.ok()) GTEST_SKIP() << ns.error();
  TempDir dir;
  ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
  const std::string backing = dir / "back", mnt = dir / "mnt", cache = dir / "cache";
  auto files = MakeFiles(backing, 12, 20000, 9);
  MakeDirs(mnt);
  MakeDirs(cache);
  ASSERT_EQ(clairfs::testing::Run({"chown", "-R", "65534:65534", backing, mnt, cache}).exit_code,
            0);
  ns.Track(mnt);
  CommandResult r = ns.Clairfs(kNobody, {"mount", backing, mnt, "--cache", cache});
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string socket = "/tmp/clairfs-65534/" + ControlFileStem(mnt) + ".sock";
  ASSERT_TRUE(PathExists(socket)) << socket;

  pid_t holder = HoldConnections(socket, kHostile, 40);
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  for (int round = 0; round < 3; ++round) {
    for (uid_t who : {uid_t{0}, kNobody}) {
      r = ns.Clairfs(who, {"status", mnt, "--json"});
      EXPECT_EQ(r.exit_code, 0) << who << ": " << r.err;
      r = ns.Clairfs(who, {"stage", mnt, "--wait"});
      EXPECT_EQ(r.exit_code, 0) << who << ": " << r.err;
      r = ns.Clairfs(who, {"evict", mnt, "--all", "--json"});
      EXPECT_EQ(r.exit_code, 0) << who << ": " << r.err;
      EXPECT_EQ(ParseJson(r.out).value("evicted", 0u), files.size()) << r.out;
    }
  }
  // The hostile uid itself is held to a few connections: one more is refused, with the reason
  // (it may slip in while the holder reconnects one the daemon dropped as idle: try a few times).
  bool refused = false;
  for (int attempt = 0; attempt < 5 && !refused; ++attempt) {
    r = ns.Clairfs(kHostile, {"status", mnt});
    refused = r.exit_code == 1 &&
              r.err.find("too many control connections of uid 4242") != std::string::npos;
  }
  EXPECT_TRUE(refused) << r.err;

  const pid_t daemon = DaemonPid(mnt);
  ASSERT_GT(daemon, 0);
  ExpectUmountWaitsForTheDaemon(daemon, [&] { return ns.Clairfs(kNobody, {"umount", mnt}, 60); });
  kill(holder, SIGKILL);
  waitpid(holder, nullptr, 0);
}

// Clients of uid `uid` against `socket_path`, each a process of its own, until killed: `slow`
// connections that send a request one byte a second and never end it, `silent` ones that send
// request after request and never read a reply (so the daemon's replies back up), and `storm`
// processes that connect and hang up as fast as they can. A connection the daemon drops is made
// again. Returns the pids.
std::vector<pid_t> Flood(const std::string& socket_path, uid_t uid, int slow, int silent,
                         int storm) {
  struct sockaddr_un addr = UnixAddress(socket_path);
  static const char kRequest[] = "{\"op\":\"status\"}\n";
  std::vector<pid_t> pids;
  for (int i = 0; i < slow + silent + storm; ++i) {
    const int kind = i < slow ? 0 : i < slow + silent ? 1 : 2;
    pid_t pid = fork();
    if (pid != 0) {
      pids.push_back(pid);
      continue;
    }
    if (!DropTo(uid)) _exit(99);
    for (;;) {
      int fd = socket(AF_UNIX, SOCK_STREAM | (kind == 1 ? SOCK_NONBLOCK : 0), 0);
      if (connect(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0 &&
          errno != EINPROGRESS && errno != EAGAIN) {
        close(fd);
        usleep(10000);
        continue;
      }
      if (kind == 0) {
        while (send(fd, kRequest, 1, MSG_NOSIGNAL) == 1) sleep(1);
      } else if (kind == 1) {
        for (;;) {
          ssize_t n = send(fd, kRequest, sizeof(kRequest) - 1, MSG_NOSIGNAL | MSG_DONTWAIT);
          if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) break;
          if (n < 0) usleep(50000);
        }
      }
      close(fd);
    }
  }
  return pids;
}

// Kills and reaps its processes when it goes, whatever the test asserted before.
struct ChildProcesses {
  std::vector<pid_t> pids;
  ~ChildProcesses() { KillAll(); }
  void KillAll() {
    for (pid_t pid : pids) kill(pid, SIGKILL);
    for (pid_t pid : pids) waitpid(pid, nullptr, 0);
    pids.clear();
  }
};

// Root's mount, another uid flooding its socket with slow, silent and storming clients: root
// still runs status, stage and evict, and root's umount still waits for the daemon to exit.
TEST(ConnectionLimitsTest, SlowSilentAndStormingClientsOfAnotherUidHoldUpNeitherRootNorUmount) {
  if (!CanRunAsOtherUsers()) GTEST_SKIP() << "needs root and setpriv";
  TempDir dir;
  const std::string backing = dir / "back", mnt = dir / "mnt", cache = dir / "cache";
  auto files = MakeFiles(backing, 12, 20000, 13);
  MakeDirs(mnt);
  ClairfsMount m(backing, mnt, cache);
  ASSERT_EQ(m.Mount({"--no-read-through"}).exit_code, 0);
  const std::string socket = ControlSocketOf(mnt);
  ASSERT_FALSE(socket.empty());
  ChildProcesses flood{Flood(socket, kHostile, 2, 2, 2)};
  std::this_thread::sleep_for(std::chrono::seconds(1));
  for (int round = 0; round < 3; ++round) {
    const auto started = std::chrono::steady_clock::now();
    CommandResult r = Cli({"status", mnt, "--json"}, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = Cli({"stage", mnt, "--wait"}, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    r = Cli({"evict", mnt, "--all", "--json"}, 60);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(ParseJson(r.out).value("evicted", 0u), files.size()) << r.out;
    const double took =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_LT(took, 30.0) << "round " << round;
  }

  const pid_t daemon = m.pid();
  ASSERT_GT(daemon, 0);
  ExpectUmountWaitsForTheDaemon(daemon, [&] { return Cli({"umount", mnt}, 90); });
  flood.KillAll();
  EXPECT_FALSE(IsFuseMounted(mnt));
}

// nobody mounts without XDG_RUNTIME_DIR, so the predictable place is /tmp/clairfs-65534. Another
// uid prepares it (a 0777 directory with a forged socket, a symlink, a file): the mount still comes
// up, the daemon never uses that path, and the CLI never believes the forged socket.
TEST(SocketPlaceTest, APreparedPathNeitherHijacksNorBlocksAMount) {
  UserFuseNamespace ns;
  if (!ns.ok()) GTEST_SKIP() << ns.error();
  const std::string predictable = "/tmp/clairfs-65534";
  for (const std::string kind : {"open directory", "symlink", "file"}) {
    SCOPED_TRACE(kind);
    fsys::remove_all(predictable);
    TempDir dir;
    ASSERT_EQ(chmod(dir.path().c_str(), 0755), 0);
    const std::string backing = dir / "back", mnt = dir / "mnt", cache = dir / "cache";
    auto files = MakeFiles(backing, 4, 1000, 10);
    MakeDirs(mnt);
    MakeDirs(cache);
    ASSERT_EQ(clairfs::testing::Run({"chown", "-R", "65534:65534", backing, mnt, cache}).exit_code,
              0);
    const std::string hostile_dir = dir / "hostile";
    MakeDirs(hostile_dir);
    ASSERT_EQ(clairfs::testing::Run({"chown", "4242:4242", hostile_dir}).exit_code, 0);
    auto as_hostile = [&](const std::string& command) {
      return clairfs::testing::Run(
          {"setpriv", "--reuid=4242", "--regid=4242", "--clear-groups", "sh", "-c", command});
    };
    const std::string forged = predictable + "/" + ControlFileStem(mnt) + ".sock";
    pid_t forger = -1;
    if (kind == "open directory") {
      ASSERT_EQ(as_hostile("mkdir -m 0777 " + predictable).exit_code, 0);
      // A server that answers every request with a forged eviction count.
      int ready[2];
      ASSERT_EQ(pipe(ready), 0);
      forger = fork();
      if (forger == 0) {
        close(ready[0]);
        if (setresgid(4242, 4242, 4242) != 0 || setresuid(4242, 4242, 4242) != 0) _exit(99);
        int fd = socket(AF_UNIX, SOCK_STREAM, 0);
        struct sockaddr_un addr {};
        addr.sun_family = AF_UNIX;
        memcpy(addr.sun_path, forged.data(), forged.size());
        if (bind(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0 ||
            listen(fd, 8) != 0 || chmod(forged.c_str(), 0666) != 0) {
          _exit(98);
        }
        if (write(ready[1], "r", 1) != 1) _exit(97);
        const char reply[] = "{\"ok\":true,\"evicted\":12345,\"evicted_bytes\":1}\n";
        for (;;) {
          int c = accept(fd, nullptr, nullptr);
          if (c >= 0 && write(c, reply, sizeof(reply) - 1) < 0) _exit(96);
        }
      }
      close(ready[1]);
      char c;
      ASSERT_EQ(read(ready[0], &c, 1), 1);
      close(ready[0]);
    } else if (kind == "symlink") {
      ASSERT_EQ(as_hostile("ln -s " + hostile_dir + " " + predictable).exit_code, 0);
    } else {
      ASSERT_EQ(as_hostile("echo x > " + predictable).exit_code, 0);
    }
    {
      ns.Track(mnt);
      CommandResult r = ns.Clairfs(kNobody, {"mount", backing, mnt, "--cache", cache});
      ASSERT_EQ(r.exit_code, 0) << r.err;
      EXPECT_NE(r.err.find("control socket directory skipped: " + predictable), std::string::npos)
          << r.err;
      EXPECT_NE(r.err.find("uid 4242"), std::string::npos) << r.err;
      for (uid_t who : {kNobody, uid_t{0}}) {
        r = ns.Clairfs(who, {"status", mnt, "--json"});
        EXPECT_EQ(r.exit_code, 0) << who << ": " << r.err;
        r = ns.Clairfs(who, {"evict", mnt, "--all"});
        EXPECT_EQ(r.exit_code, 0) << who << ": " << r.err;
        EXPECT_EQ(r.out.find("12345"), std::string::npos) << r.out;
      }
      // Nothing of the daemon's is in the prepared place.
      EXPECT_FALSE(PathExists(predictable + "/" + ControlFileStem(mnt) + ".lock"));
      EXPECT_FALSE(PathExists(hostile_dir + "/" + ControlFileStem(mnt) + ".sock"));
      r = ns.Clairfs(kNobody, {"umount", mnt});
      EXPECT_EQ(r.exit_code, 0) << r.err;
    }
    if (forger > 0) {
      kill(forger, SIGKILL);
      waitpid(forger, nullptr, 0);
    }
    fsys::remove_all(predictable);
    for (const std::string& fallback : FallbackControlDirs(kNobody)) fsys::remove_all(fallback);
  }
}

// Item 10 of the issue: what stage and umount answer at their edges.
class EdgeTest : public MountDirsTest {};

TEST_F(EdgeTest, StageWaitOfMoreThanTheCapacitySaysWhatWasEvictedAndFails) {
  auto files = MakeFiles(backing_, 12, 1, 11);
  for (int i = 0; i < 10; ++i) {
    WriteFile(backing_ + "/big/f" + std::to_string(i) + ".bin", RandomBytes(200000, 20 + i));
  }
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--capacity", "1M", "--no-read-through"}).exit_code, 0);
  CommandResult r = Cli({"stage", mnt_, "big", "--wait"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("to make room the cache evicted"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("were evicted again to make room for later ones"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("does not fit the cache (capacity 1.0 MiB)"), std::string::npos) << r.err;
  ASSERT_EQ(Cli({"evict", mnt_, "--all"}).exit_code, 0);
  r = Cli({"stage", mnt_, "big", "--wait", "--json"});
  EXPECT_EQ(r.exit_code, 1);
  json progress = ParseJson(r.out);
  EXPECT_EQ(progress.value("files_done", 0u), 10u) << r.out;
  EXPECT_GT(progress.value("files_evicted_again", 0u), 0u) << r.out;
  EXPECT_EQ(progress.value("files_resident", 0u) + progress.value("files_evicted_again", 0u), 10u)
      << r.out;
  // What fits stays, and succeeds.
  r = Cli({"stage", mnt_, "big/f0.bin", "big/f1.bin", "--wait", "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(ParseJson(r.out).value("files_resident", 0u), 2u) << r.out;
}

TEST_F(EdgeTest, EmptyPathsDirectoryListsAndBadTimeoutsAreUsageErrors) {
  MakeFiles(backing_, 6, 1000, 12);
  ClairfsMount m(backing_, mnt_, cache_);
  ASSERT_EQ(m.Mount({"--no-read-through"}).exit_code, 0);
  for (const auto& args : std::vector<std::vector<std::string>>{{"stage", mnt_, ""},
                                                                {"stage", mnt_, "d0", ""},
                                                                {"evict", mnt_, ""},
                                                                {"pin", mnt_, ""},
                                                                {"ls", mnt_, ""}}) {
    CommandResult r = Cli(args);
    EXPECT_EQ(r.exit_code, 2) << args[0] << ": " << r.err;
    EXPECT_NE(r.err.find("empty PATH"), std::string::npos) << r.err;
  }
  CommandResult r = Cli({"ls", mnt_, "--staged", "-0"});
  EXPECT_TRUE(r.out.empty()) << "nothing was staged";
  r = Cli({"stage", mnt_, "--from-file", dir_.path()});
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("is a directory"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("Input/output error"), std::string::npos) << r.err;
  for (const char* timeout : {"-1", "0", "abc"}) {
    r = Cli({"umount", mnt_, "--timeout", timeout});
    EXPECT_EQ(r.exit_code, 2) << timeout << ": " << r.err;
    EXPECT_TRUE(IsFuseMounted(mnt_)) << "umount --timeout " << timeout << " unmounted";
  }
  r = Cli({"umount", mnt_, "--timeout", "30"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_FALSE(IsFuseMounted(mnt_));
}

}  // namespace
}  // namespace clairfs::testing
