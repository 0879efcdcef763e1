// ControlServer: socket setup, admission, per-client threads, request validation and dispatch,
// and the boundary that keeps every failure of a request inside its reply (see control_server.h).
#include "fs/control/control_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <new>

#ifdef __GLIBC__
#include <malloc.h>
#endif

#include "planner/base/log.h"
#include "planner/base/name_escape.h"

namespace clairfs {
namespace {

using Clock = std::chrono::steady_clock;

std::string ErrorReply(int code, const std::string& message) {
  nlohmann::json reply = {
      {"ok", false}, {"errno", code > 0 ? code : EIO}, {"error", SanitizeText(message)}};
  return DumpReply(reply) + "\n";
}

int MillisLeft(Clock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return left <= 0 ? 0 : static_cast<int>(std::min<int64_t>(left, 1 << 30));
}

// Sends all of `data` within `timeout_ms`; false if the client did not take it in time or hung up.
bool SendAll(int fd, const std::string& data, int timeout_ms) {
  const auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n >= 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (errno == EINTR) continue;
    if (errno != EAGAIN && errno != EWOULDBLOCK) return false;
    struct pollfd pfd = {fd, POLLOUT, 0};
    const int left = MillisLeft(deadline);
    if (left == 0) return false;
    int rc = poll(&pfd, 1, left);
    if (rc < 0 && errno != EINTR) return false;
  }
  return true;
}

std::vector<gid_t> PeerGroups(int fd) {
  std::vector<gid_t> groups(64);
  for (int attempt = 0; attempt < 2; ++attempt) {
    socklen_t len = static_cast<socklen_t>(groups.size() * sizeof(gid_t));
    if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups.data(), &len) == 0) {
      groups.resize(len / sizeof(gid_t));
      return groups;
    }
    if (errno != ERANGE) break;
    groups.resize(len / sizeof(gid_t) + 1);  // len now says how much is needed
  }
  return {};
}

// Gives the pages malloc holds free in every arena back to the system (glibc's malloc_trim).
// A large reply was built, sent and freed on this client thread; the allocator keeps what it
// took in the thread's arena, and as client threads (and so arenas) change from one connection
// to the next, each arena kept the largest reply it had seen: with `stats` of 5,000 files asked
// every 0.25 s during 300,000 opens the daemon grew to 222 MiB resident with 27 MB in use (44 MiB
// with this trim). Takes each arena's lock in turn while it walks its free chunks.
void ReturnFreeMemory() {
#ifdef __GLIBC__
  malloc_trim(0);
#endif
}

}  // namespace

std::string DumpReply(const nlohmann::json& reply) {
  return reply.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

PeerCredentials ControlServer::PeerOf(int fd) {
  PeerCredentials peer;
  struct ucred cred;
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    peer.pid = cred.pid;
    peer.uid = cred.uid;
    peer.gid = cred.gid;
    peer.groups = PeerGroups(fd);
  }
  return peer;
}

ControlServer::ControlServer(std::string socket_path, uid_t owner_uid, ControlLimits limits)
    : socket_path_(std::move(socket_path)), owner_uid_(owner_uid), limits_(limits) {}

ControlServer::~ControlServer() { Stop(); }

void ControlServer::AddHandler(const std::string& op, ControlAccess access,
                               std::vector<std::string> fields, ControlHandler handler) {
  routes_[op] = Route{access, std::move(fields), std::move(handler), nullptr};
}

void ControlServer::AddTextHandler(const std::string& op, ControlAccess access,
                                   std::vector<std::string> fields, ControlTextHandler handler) {
  routes_[op] = Route{access, std::move(fields), nullptr, std::move(handler)};
}

std::map<std::string, std::vector<std::string>> ControlServer::Ops() const {
  std::map<std::string, std::vector<std::string>> ops;
  for (const auto& [op, route] : routes_) ops[op] = route.fields;
  return ops;
}

Status ControlServer::Start() {
  struct sockaddr_un addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof(addr.sun_path)) {
    return Status::Error(ENAMETOOLONG,
                         "control socket path too long: " + SanitizeText(socket_path_));
  }
  std::memcpy(addr.sun_path, socket_path_.data(), socket_path_.size());
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::FromErrno(errno, "control socket");
  unlink(socket_path_.c_str());  // a stale socket left by a dead daemon
  if (bind(listen_fd_, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Status::FromErrno(errno, "bind " + SanitizeText(socket_path_));
  }
  // Anyone may connect; each request is authorised by the caller's credentials.
  chmod(socket_path_.c_str(), 0666);
  if (listen(listen_fd_, 64) != 0) {
    return Status::FromErrno(errno, "listen " + SanitizeText(socket_path_));
  }
  if (pipe2(wake_pipe_, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe");
  accept_thread_ = std::thread([this] { AcceptLoop(); });
  return Status::Ok();
}

void ControlServer::Stop() {
  if (stopping_.exchange(true)) return;
  if (wake_pipe_[1] >= 0) {
    ssize_t ignored = write(wake_pipe_[1], "x", 1);
    (void)ignored;
  }
  if (accept_thread_.joinable()) accept_thread_.join();
  {
    std::lock_guard<std::mutex> lock(clients_mu_);
    for (const auto& [fd, uid] : clients_) shutdown(fd, SHUT_RDWR);
  }
  while (active_clients_.load() > 0) {
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(socket_path_.c_str());
    listen_fd_ = -1;
  }
  for (int& fd : wake_pipe_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

bool ControlServer::Admit(int fd, const PeerCredentials& peer) {
  std::string refusal;
  {
    std::lock_guard<std::mutex> lock(clients_mu_);
    const int total = static_cast<int>(clients_.size());
    const int room = Privileged(peer.uid) ? limits_.max_clients
                                          : limits_.max_clients - limits_.reserved_for_owner;
    if (total >= room) {
      refusal = "too many control clients (" + std::to_string(total) + " connected); try again";
    } else if (!Privileged(peer.uid) && per_uid_[peer.uid] >= limits_.max_per_other_uid) {
      refusal = "too many control connections of uid " + std::to_string(peer.uid) + " (at most " +
                std::to_string(limits_.max_per_other_uid) + " at once); close some first";
    }
    if (refusal.empty()) {
      clients_[fd] = peer.uid;
      per_uid_[peer.uid]++;
      active_clients_.fetch_add(1);
      return true;
    }
    ++refused_;
    const auto now = Clock::now();
    if (now - last_refusal_log_ >= std::chrono::minutes(1)) {
      Log(LogLevel::kWarn, "control: refused %llu clients in the last minute (latest uid %u: %s)",
          static_cast<unsigned long long>(refused_), peer.uid, refusal.c_str());
      refused_ = 0;
      last_refusal_log_ = now;
    }
  }
  // One line if the socket takes it at once, then close: a refused client gets no thread.
  const std::string reply = ErrorReply(EBUSY, refusal);
  ssize_t ignored = send(fd, reply.data(), reply.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
  (void)ignored;
  close(fd);
  return false;
}

void ControlServer::Forget(int fd, uid_t uid) {
  std::lock_guard<std::mutex> lock(clients_mu_);
  clients_.erase(fd);
  if (--per_uid_[uid] <= 0) per_uid_.erase(uid);
}

void ControlServer::AcceptLoop() {
  while (!stopping_.load()) {
    struct pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    int rc = poll(fds, 2, 1000);
    if (rc < 0 && errno != EINTR) break;
    if (stopping_.load()) break;
    if (rc <= 0 || !(fds[0].revents & POLLIN)) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    try {
      const PeerCredentials peer = PeerOf(fd);
      if (!Admit(fd, peer)) continue;
      try {
        // Detached: Stop() shuts every client socket down and waits for active_clients_ to
        // reach 0.
        std::thread([this, fd, peer] { ServeClient(fd, peer); }).detach();
      } catch (...) {
        Log(LogLevel::kError, "control: no thread for a client of uid %u; closed it", peer.uid);
        Forget(fd, peer.uid);
        close(fd);
        active_clients_.fetch_sub(1);
      }
    } catch (...) {
      // Out of memory while admitting: the daemon goes on without this client.
      Log(LogLevel::kError, "control: could not admit a client; closed it");
      close(fd);
    }
  }
}

void ControlServer::ServeClient(int fd, const PeerCredentials& peer) {
  try {
    ServeRequests(fd, peer);
  } catch (const std::exception& e) {
    Log(LogLevel::kError, "control: client of uid %u (pid %d) dropped: %s", peer.uid, peer.pid,
        e.what());
  } catch (...) {
    Log(LogLevel::kError, "control: client of uid %u (pid %d) dropped: unknown exception", peer.uid,
        peer.pid);
  }
  Forget(fd, peer.uid);
  close(fd);
  active_clients_.fetch_sub(1);
}

void ControlServer::ServeRequests(int fd, const PeerCredentials& peer) {
  const int idle_ms = Privileged(peer.uid) ? limits_.idle_ms_owner : limits_.idle_ms_other;
  auto deadline = Clock::now() + std::chrono::milliseconds(idle_ms);
  std::string pending;
  char buf[65536];
  for (;;) {
    struct pollfd pfd = {fd, POLLIN, 0};
    const int left = MillisLeft(deadline);
    int rc = left == 0 ? 0 : poll(&pfd, 1, left);
    if (rc == 0) {
      if (!pending.empty()) {
        Log(LogLevel::kWarn,
            "control: dropped client of uid %u (pid %d): request incomplete after %d ms", peer.uid,
            peer.pid, idle_ms);
        SendAll(fd, ErrorReply(ETIMEDOUT, "request incomplete: timed out"),
                limits_.send_timeout_ms);
      }
      return;
    }
    if (rc < 0) {
      if (errno == EINTR) continue;
      return;
    }
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0 && !pending.empty()) {
        SendAll(fd, ErrorReply(EPROTO, "truncated request (no newline before end of stream)"),
                limits_.send_timeout_ms);
      }
      return;
    }
    pending.append(buf, static_cast<size_t>(n));
    size_t nl;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      std::string reply = HandleLine(line, peer);
      const bool sent = SendAll(fd, reply, limits_.send_timeout_ms);
      if (reply.size() >= kReturnMemoryAfterReplyBytes) {
        std::string().swap(reply);
        ReturnFreeMemory();
      }
      if (!sent) {
        Log(LogLevel::kWarn, "control: dropped client of uid %u (pid %d): reply not taken in %d ms",
            peer.uid, peer.pid, limits_.send_timeout_ms);
        return;
      }
      deadline = Clock::now() + std::chrono::milliseconds(idle_ms);
    }
    if (pending.size() > kMaxRequestBytes) {
      Log(LogLevel::kWarn, "control: dropped client of uid %u (pid %d): request over %zu bytes",
          peer.uid, peer.pid, kMaxRequestBytes);
      SendAll(fd, ErrorReply(EMSGSIZE, "request too large"), limits_.send_timeout_ms);
      return;
    }
    if (stopping_.load()) return;
  }
}

std::string ControlServer::HandleLine(const std::string& line,
                                      const PeerCredentials& peer) noexcept {
  try {
    return Dispatch(line, peer);
  } catch (const std::bad_alloc&) {
    Log(LogLevel::kError, "control: out of memory serving a request of uid %u", peer.uid);
  } catch (const std::exception& e) {
    Log(LogLevel::kError, "control: request of uid %u failed: %s", peer.uid, e.what());
  } catch (...) {
    Log(LogLevel::kError, "control: request of uid %u failed: unknown exception", peer.uid);
  }
  // A constant reply: nothing that failed above is needed to build it.
  return "{\"errno\":5,\"error\":\"internal error in the daemon (logged); the mount goes on\","
         "\"ok\":false}\n";
}

std::string ControlServer::Dispatch(const std::string& line, const PeerCredentials& peer) {
  if (line.size() > kMaxRequestBytes) return ErrorReply(EMSGSIZE, "request too large");
  nlohmann::json request = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) {
    if (!IsValidUtf8(line)) {
      return ErrorReply(EINVAL,
                        "request is not valid JSON: it holds bytes that are not UTF-8 (names "
                        "travel escaped, \\xHH for such a byte)");
    }
    return ErrorReply(EINVAL, "request is not valid JSON");
  }
  if (!request.is_object()) return ErrorReply(EINVAL, "request must be a JSON object");
  auto op_field = request.find("op");
  if (op_field == request.end() || !op_field->is_string()) {
    return ErrorReply(EINVAL, "request needs a string field \"op\"");
  }
  const std::string op = op_field->get<std::string>();
  auto route = routes_.find(op);
  if (route == routes_.end()) return ErrorReply(EINVAL, "unknown op \"" + op + "\"");
  for (auto it = request.begin(); it != request.end(); ++it) {
    if (it.key() == "op") continue;
    bool known = false;
    for (const auto& f : route->second.fields) known = known || f == it.key();
    if (!known) {
      return ErrorReply(EINVAL, "unknown field \"" + it.key() + "\" for op \"" + op + "\"");
    }
  }
  if (route->second.access == ControlAccess::kOwner && !Privileged(peer.uid)) {
    Log(LogLevel::kWarn, "control: denied \"%s\" to uid %u (pid %d)", op.c_str(), peer.uid,
        peer.pid);
    return ErrorReply(EPERM, "permission denied: only root or the user who mounted (uid " +
                                 std::to_string(owner_uid_) + ") may " + op);
  }
  nlohmann::json reply = nlohmann::json::object();
  ReplyWriter text_reply;
  const Route& r = route->second;
  Status st;
  try {
    st = r.handler ? r.handler(request, peer, &reply) : r.text_handler(request, peer, &text_reply);
  } catch (const nlohmann::json::exception& e) {
    // A request field of an unexpected type that a handler did not check.
    st = Status::Invalid(std::string("bad request: ") + e.what());
  } catch (const std::bad_alloc&) {
    Log(LogLevel::kError, "control: \"%s\" of uid %u ran out of memory", op.c_str(), peer.uid);
    st = Status::Error(ENOMEM, op + ": out of memory in the daemon");
  } catch (const std::exception& e) {
    Log(LogLevel::kError, "control: \"%s\" of uid %u failed: %s", op.c_str(), peer.uid, e.what());
    st = Status::Error(EIO, op + ": internal error in the daemon: " + e.what());
  } catch (...) {
    Log(LogLevel::kError, "control: \"%s\" of uid %u failed: unknown exception", op.c_str(),
        peer.uid);
    st = Status::Error(EIO, op + ": internal error in the daemon");
  }
  if (!st.ok()) return ErrorReply(st.code(), st.message());
  if (!r.handler) return text_reply.Finish();
  if (!reply.is_object()) reply = nlohmann::json::object();
  reply["ok"] = true;
  return DumpReply(reply) + "\n";
}

}  // namespace clairfs
