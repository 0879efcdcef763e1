// ControlServer: the boundary (throwing handlers, replies and messages that are not UTF-8), and
// over a real socket the connection limits, timeouts and peer groups, with clients of other uids
// run in forked children.
#include "fs/control/control_server.h"

#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "planner/base/name_escape.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using nlohmann::json;

const PeerCredentials kRootPeer{1, 0, 0};

json Parse(const std::string& line) {
  EXPECT_FALSE(line.empty());
  EXPECT_EQ(line.back(), '\n');
  EXPECT_EQ(line.find('\n'), line.size() - 1) << line;  // one line
  EXPECT_TRUE(IsValidUtf8(line)) << line;
  return json::parse(line, nullptr, false);
}

void AddPing(ControlServer* server) {
  server->AddHandler("ping", ControlAccess::kAnyone, {},
                     [](const json&, const PeerCredentials&, json* reply) {
                       (*reply)["pong"] = true;
                       return Status::Ok();
                     });
}

TEST(ControlServerTest, OpsListsEveryOpWithItsFields) {
  ControlServer server("", 1000);
  AddPing(&server);
  server.AddHandler("take", ControlAccess::kOwner, {"paths", "force"},
                    [](const json&, const PeerCredentials&, json*) { return Status::Ok(); });
  const std::map<std::string, std::vector<std::string>> expected = {{"ping", {}},
                                                                    {"take", {"paths", "force"}}};
  EXPECT_EQ(server.Ops(), expected);
}

TEST(ControlServerTest, AHandlerThatThrowsGetsAnErrorReplyAndTheServerGoesOn) {
  ControlServer server("", 1000);
  AddPing(&server);
  server.AddHandler("runtime", ControlAccess::kAnyone, {},
                    [](const json&, const PeerCredentials&, json*) -> Status {
                      throw std::runtime_error("boom");
                    });
  server.AddHandler("int", ControlAccess::kAnyone, {},
                    [](const json&, const PeerCredentials&, json*) -> Status { throw 42; });
  server.AddHandler(
      "alloc", ControlAccess::kAnyone, {},
      [](const json&, const PeerCredentials&, json*) -> Status { throw std::bad_alloc(); });
  server.AddHandler("type", ControlAccess::kAnyone, {"x"},
                    [](const json& request, const PeerCredentials&, json* reply) {
                      (*reply)["x"] = request.at("x").get<int>();  // throws for a string
                      return Status::Ok();
                    });
  struct Case {
    std::string line;
    int errno_value;
  };
  for (const Case& c : std::vector<Case>{{R"({"op":"runtime"})", EIO},
                                         {R"({"op":"int"})", EIO},
                                         {R"({"op":"alloc"})", ENOMEM},
                                         {R"({"op":"type","x":"seven"})", EINVAL}}) {
    json reply = Parse(server.HandleLine(c.line, kRootPeer));
    EXPECT_EQ(reply.value("ok", true), false) << c.line;
    EXPECT_EQ(reply.value("errno", 0), c.errno_value) << c.line;
    EXPECT_FALSE(reply.value("error", "").empty()) << c.line;
    EXPECT_EQ(Parse(server.HandleLine(R"({"op":"ping"})", kRootPeer)).value("pong", false), true);
  }
}

TEST(ControlServerTest, RepliesAndMessagesThatAreNotUtf8NeverThrow) {
  ControlServer server("", 1000);
  server.AddHandler("raw", ControlAccess::kAnyone, {},
                    [](const json&, const PeerCredentials&, json* reply) {
                      (*reply)["name"] = std::string("bad_\xff\xfe.bin");
                      (*reply)["list"] = json::array({std::string("\xc3"), "fine"});
                      return Status::Ok();
                    });
  server.AddHandler("rawerror", ControlAccess::kAnyone, {},
                    [](const json&, const PeerCredentials&, json*) {
                      return Status::Error(ENOENT, "new\nline and bad_\xff: no such file");
                    });
  json reply = Parse(server.HandleLine(R"({"op":"raw"})", kRootPeer));
  EXPECT_EQ(reply.value("ok", false), true);
  EXPECT_TRUE(reply.contains("name"));
  reply = Parse(server.HandleLine(R"({"op":"rawerror"})", kRootPeer));
  EXPECT_EQ(reply.value("errno", 0), ENOENT);
  EXPECT_EQ(reply.value("error", ""), "new\\x0aline and bad_\\xff: no such file");
  // Requests that are not UTF-8 are refused as such, and so is an unknown op or field quoting
  // control characters.
  reply = Parse(server.HandleLine("{\"op\":\"raw\",\"p\":\"\xff\"}", kRootPeer));
  EXPECT_EQ(reply.value("errno", 0), EINVAL);
  EXPECT_NE(reply.value("error", "").find("not UTF-8"), std::string::npos) << reply.dump();
  reply = Parse(server.HandleLine(R"({"op":"x\u000ay"})", kRootPeer));
  EXPECT_EQ(reply.value("error", ""), "unknown op \"x\\x0ay\"");
}

TEST(ControlServerTest, TextHandlersReplyWhatTheyWroteOrAnErrorAndNothingElse) {
  ControlServer server("", 1000);
  server.AddTextHandler("rows", ControlAccess::kAnyone, {"n", "fail_at"},
                        [](const json& request, const PeerCredentials&, ReplyWriter* reply) {
                          const int n = request.at("n").get<int>();
                          reply->Add("n", n);
                          reply->BeginArray("rows");
                          for (int i = 0; i < n; ++i) {
                            if (request.contains("fail_at") && request["fail_at"] == i) {
                              return Status::Error(ENOENT, "row " + std::to_string(i));
                            }
                            reply->Append({{"i", i}, {"name", std::string("bad_\xff")}});
                          }
                          reply->EndArray();
                          reply->Add("done", true);
                          return Status::Ok();
                        });
  server.AddTextHandler("throws", ControlAccess::kOwner, {},
                        [](const json&, const PeerCredentials&, ReplyWriter* reply) -> Status {
                          reply->BeginArray("partial");
                          reply->Append(1);
                          throw std::runtime_error("boom");
                        });
  json reply = Parse(server.HandleLine(R"({"op":"rows","n":3})", kRootPeer));
  EXPECT_EQ(reply.value("ok", false), true) << reply.dump();
  EXPECT_EQ(reply.value("n", 0), 3);
  EXPECT_EQ(reply.value("done", false), true);
  ASSERT_EQ(reply["rows"].size(), 3u);
  EXPECT_EQ(reply["rows"][2]["i"], 2);
  EXPECT_EQ(reply["rows"][2]["name"], "bad_\xef\xbf\xbd");  // invalid UTF-8 replaced
  reply = Parse(server.HandleLine(R"({"op":"rows","n":0})", kRootPeer));
  EXPECT_EQ(reply["rows"], json::array());
  // An error midway replies the error alone; so do an exception, a bad field and a non-owner.
  reply = Parse(server.HandleLine(R"({"op":"rows","n":3,"fail_at":1})", kRootPeer));
  EXPECT_EQ(reply, json({{"ok", false}, {"errno", ENOENT}, {"error", "row 1"}}));
  reply = Parse(server.HandleLine(R"({"op":"throws"})", kRootPeer));
  EXPECT_EQ(reply.value("errno", 0), EIO);
  EXPECT_FALSE(reply.contains("partial"));
  EXPECT_EQ(Parse(server.HandleLine(R"({"op":"rows","n":"x"})", kRootPeer)).value("errno", 0),
            EINVAL);
  EXPECT_EQ(Parse(server.HandleLine(R"({"op":"throws"})", PeerCredentials{1, 1001, 1001}))
                .value("errno", 0),
            EPERM);
}

TEST(ReplyWriterTest, MembersArraysAndAnArrayLeftOpen) {
  ReplyWriter empty;
  EXPECT_EQ(empty.Finish(), "{\"ok\":true}\n");
  ReplyWriter writer;
  writer.BeginArray("a");
  writer.Append(json::array({1, 2}));
  writer.Append(json::object());
  EXPECT_EQ(writer.elements(), 2u);
  writer.Add("k", "v");  // closes the array
  writer.BeginArray("open");
  writer.Append(nullptr);
  EXPECT_EQ(writer.Finish(), "{\"a\":[[1,2],{}],\"k\":\"v\",\"open\":[null],\"ok\":true}\n");
}

TEST(ControlServerTest, OwnerOpsAreForRootAndTheOwnerOnly) {
  ControlServer server("", 1000);
  server.AddHandler("change", ControlAccess::kOwner, {},
                    [](const json&, const PeerCredentials&, json*) { return Status::Ok(); });
  EXPECT_EQ(Parse(server.HandleLine(R"({"op":"change"})", kRootPeer)).value("ok", false), true);
  EXPECT_EQ(Parse(server.HandleLine(R"({"op":"change"})", PeerCredentials{1, 1000, 1000}))
                .value("ok", false),
            true);
  json reply = Parse(server.HandleLine(R"({"op":"change"})", PeerCredentials{1, 1001, 1001}));
  EXPECT_EQ(reply.value("errno", 0), EPERM);
}

// A Unix socket connection to `path`, -1 on failure.
int Connect(const std::string& path) {
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, path.data(), std::min(path.size(), sizeof(addr.sun_path) - 1));
  if (connect(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

// One reply line, "" on EOF, "timeout" after `ms`.
std::string ReadLine(int fd, int ms = 5000) {
  std::string line;
  char c;
  while (true) {
    struct pollfd pfd = {fd, POLLIN, 0};
    if (poll(&pfd, 1, ms) <= 0) return "timeout";
    ssize_t n = recv(fd, &c, 1, 0);
    if (n <= 0) return line;
    if (c == '\n') return line;
    line.push_back(c);
  }
}

std::string Ask(int fd, const std::string& line) {
  if (send(fd, (line + "\n").data(), line.size() + 1, MSG_NOSIGNAL) !=
      static_cast<ssize_t>(line.size() + 1)) {
    return "send failed";
  }
  return ReadLine(fd);
}

// Whether the server closed `fd` within `ms` (EOF once any buffered reply is read).
bool ClosedWithin(int fd, int ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  char buf[65536];
  while (std::chrono::steady_clock::now() < deadline) {
    struct pollfd pfd = {fd, POLLIN, 0};
    if (poll(&pfd, 1, 50) > 0) {
      ssize_t n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
      if (n == 0) return true;
      if (n < 0 && errno != EAGAIN) return true;
    }
  }
  return false;
}

class ControlSocketTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (geteuid() != 0) GTEST_SKIP() << "needs root to run clients as other uids";
    ASSERT_EQ(chmod(dir_.path().c_str(), 0755), 0);
    path_ = dir_ / "c.sock";
  }
  void StartServer(ControlLimits limits) {
    server_ = std::make_unique<ControlServer>(path_, 1000, limits);
    AddPing(server_.get());
    server_->AddHandler("groups", ControlAccess::kAnyone, {},
                        [this](const json&, const PeerCredentials& peer, json* reply) {
                          std::lock_guard<std::mutex> lock(mu_);
                          seen_groups_ = peer.groups;
                          (*reply)["uid"] = peer.uid;
                          return Status::Ok();
                        });
    server_->AddHandler("big", ControlAccess::kAnyone, {},
                        [](const json&, const PeerCredentials&, json* reply) {
                          (*reply)["data"] = std::string(1 << 20, 'x');
                          return Status::Ok();
                        });
    ASSERT_TRUE(server_->Start().ok());
  }
  // Forks a child running as `uid` (gid = uid, supplementary `groups`) that runs `body` and exits
  // with its result; its stdout goes to the returned pipe.
  pid_t Child(uid_t uid, std::vector<gid_t> groups, const std::function<int(int out)>& body,
              int* out_fd) {
    int p[2];
    EXPECT_EQ(pipe(p), 0);
    pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      if (setgroups(groups.size(), groups.data()) != 0 || setresgid(uid, uid, uid) != 0 ||
          setresuid(uid, uid, uid) != 0) {
        _exit(99);
      }
      _exit(body(p[1]));
    }
    close(p[1]);
    *out_fd = p[0];
    children_.push_back(pid);
    return pid;
  }
  void TearDown() override {
    for (pid_t pid : children_) {
      kill(pid, SIGKILL);
      waitpid(pid, nullptr, 0);
    }
    if (server_) server_->Stop();
  }
  testing::TempDir dir_;
  std::string path_;
  std::unique_ptr<ControlServer> server_;
  std::vector<pid_t> children_;
  std::mutex mu_;
  std::vector<gid_t> seen_groups_;
};

// Reads one byte the child writes when it has done its part.
char WaitFor(int fd) {
  char c = 0;
  struct pollfd pfd = {fd, POLLIN, 0};
  if (poll(&pfd, 1, 10000) <= 0 || read(fd, &c, 1) != 1) return 0;
  return c;
}

TEST_F(ControlSocketTest, OtherUidsGetFewConnectionsAndRootAlwaysGetsIn) {
  ControlLimits limits;
  limits.max_clients = 8;
  limits.reserved_for_owner = 3;
  limits.max_per_other_uid = 2;
  limits.idle_ms_other = 60000;  // holding them idle is the attack here
  StartServer(limits);
  // Two hostile uids try to take 10 connections each and report how many were let in.
  auto grab = [this](int out) {
    int admitted = 0;
    std::vector<int> fds;
    for (int i = 0; i < 10; ++i) {
      int fd = Connect(path_);
      if (fd < 0) continue;
      std::string reply = Ask(fd, R"({"op":"ping"})");
      if (reply.find("\"pong\":true") != std::string::npos) {
        ++admitted;
        fds.push_back(fd);
      } else {
        close(fd);
      }
    }
    char c = static_cast<char>('0' + admitted);
    if (write(out, &c, 1) != 1) return 1;
    pause();  // holds them until killed
    return 0;
  };
  int out1, out2, out3;
  Child(4242, {}, grab, &out1);
  EXPECT_EQ(WaitFor(out1), '2');
  Child(4243, {}, grab, &out2);
  EXPECT_EQ(WaitFor(out2), '2');
  Child(4244, {}, grab, &out3);
  EXPECT_EQ(WaitFor(out3), '1');  // 5 of 8 are taken: the last 3 are kept for root and the owner
  // Root still gets the reserved ones, then no more.
  std::vector<int> mine;
  for (int i = 0; i < 3; ++i) {
    int fd = Connect(path_);
    ASSERT_GE(fd, 0);
    EXPECT_NE(Ask(fd, R"({"op":"ping"})").find("\"pong\":true"), std::string::npos) << i;
    mine.push_back(fd);
  }
  int extra = Connect(path_);
  ASSERT_GE(extra, 0);
  std::string refused = ReadLine(extra);
  EXPECT_NE(refused.find("too many control clients"), std::string::npos) << refused;
  close(extra);
  for (int fd : mine) close(fd);
}

TEST_F(ControlSocketTest, IdleAndTricklingOthersAreDroppedRootIsNot) {
  ControlLimits limits;
  limits.idle_ms_other = 300;
  limits.idle_ms_owner = 60000;
  StartServer(limits);
  int out;
  Child(
      4242, {},
      [this](int out_fd) {
        int idle = Connect(path_);
        int trickle = Connect(path_);
        if (idle < 0 || trickle < 0) return 1;
        // A request sent a byte every 100 ms never completes: the line does not keep it alive.
        const char partial[] = "{\"op\":\"ping\"";
        for (size_t i = 0; i + 1 < sizeof(partial); ++i) {
          send(trickle, partial + i, 1, MSG_NOSIGNAL);
          std::this_thread::sleep_for(std::chrono::milliseconds(100));
          if (i == 8) break;
        }
        char verdict[2] = {ClosedWithin(idle, 2000) ? 'y' : 'n',
                           ClosedWithin(trickle, 2000) ? 'y' : 'n'};
        if (write(out_fd, verdict, 2) != 2) return 1;
        return 0;
      },
      &out);
  int root_fd = Connect(path_);
  ASSERT_GE(root_fd, 0);
  EXPECT_EQ(WaitFor(out), 'y');  // idle
  EXPECT_EQ(WaitFor(out), 'y');  // trickling
  // Root's connection, idle as long, is still served.
  EXPECT_NE(Ask(root_fd, R"({"op":"ping"})").find("\"pong\":true"), std::string::npos);
  close(root_fd);
}

TEST_F(ControlSocketTest, AClientThatDoesNotReadItsRepliesIsDropped) {
  ControlLimits limits;
  limits.send_timeout_ms = 300;
  StartServer(limits);
  int greedy = Connect(path_);
  ASSERT_GE(greedy, 0);
  // Asks for 1 MiB replies and never reads them; the socket buffers fill, the send times out.
  std::string requests;
  for (int i = 0; i < 20; ++i) requests += "{\"op\":\"big\"}\n";
  ASSERT_EQ(send(greedy, requests.data(), requests.size(), MSG_NOSIGNAL),
            static_cast<ssize_t>(requests.size()));
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  // Others are served meanwhile, and the greedy one was closed (EOF after its buffered bytes).
  int other = Connect(path_);
  ASSERT_GE(other, 0);
  EXPECT_NE(Ask(other, R"({"op":"ping"})").find("\"pong\":true"), std::string::npos);
  EXPECT_TRUE(ClosedWithin(greedy, 5000));
  close(other);
  close(greedy);
}

TEST_F(ControlSocketTest, HandlersSeeThePeersSupplementaryGroups) {
  StartServer(ControlLimits{});
  int out;
  Child(
      4242, {4100, 4200},
      [this](int out_fd) {
        int fd = Connect(path_);
        if (fd < 0) return 1;
        std::string reply = Ask(fd, R"({"op":"groups"})");
        char c = reply.find("\"uid\":4242") != std::string::npos ? 'y' : 'n';
        return write(out_fd, &c, 1) == 1 ? 0 : 1;
      },
      &out);
  EXPECT_EQ(WaitFor(out), 'y');
  std::lock_guard<std::mutex> lock(mu_);
  EXPECT_NE(std::find(seen_groups_.begin(), seen_groups_.end(), 4100u), seen_groups_.end());
  EXPECT_NE(std::find(seen_groups_.begin(), seen_groups_.end(), 4200u), seen_groups_.end());
}

}  // namespace
}  // namespace clairfs
