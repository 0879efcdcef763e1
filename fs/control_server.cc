// ControlServer: socket setup, per-client threads, request validation and dispatch (see
// control_server.h).
#include "fs/control_server.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "planner/fnv1a.h"
#include "planner/log.h"

namespace clairfs {
namespace {

std::string ErrorReply(int code, const std::string& message) {
  nlohmann::json reply = {{"ok", false}, {"errno", code}, {"error", message}};
  return reply.dump() + "\n";
}

bool SendAll(int fd, const std::string& data) {
  size_t sent = 0;
  while (sent < data.size()) {
    ssize_t n = send(fd, data.data() + sent, data.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    sent += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

std::string ControlSocketPathFor(const std::string& mountpoint, uid_t uid) {
  char name[40];
  snprintf(name, sizeof(name), "%016llx.sock",
           static_cast<unsigned long long>(Fnv1a64(mountpoint)));
  if (uid == 0) return std::string("/run/clairfs/") + name;
  const char* xdg = getenv("XDG_RUNTIME_DIR");
  if (xdg != nullptr && *xdg != '\0') return std::string(xdg) + "/clairfs/" + name;
  return "/tmp/clairfs-" + std::to_string(uid) + "/" + name;
}

ControlServer::ControlServer(std::string socket_path, uid_t owner_uid, int idle_timeout_ms)
    : socket_path_(std::move(socket_path)),
      owner_uid_(owner_uid),
      idle_timeout_ms_(idle_timeout_ms) {}

ControlServer::~ControlServer() { Stop(); }

void ControlServer::AddHandler(const std::string& op, ControlAccess access,
                               std::vector<std::string> fields, ControlHandler handler) {
  routes_[op] = Route{access, std::move(fields), std::move(handler)};
}

Status ControlServer::Start() {
  std::string dir = socket_path_.substr(0, socket_path_.rfind('/'));
  if (mkdir(dir.c_str(), 0755) != 0 && errno != EEXIST) {
    return Status::FromErrno(errno, "control socket directory " + dir);
  }
  struct sockaddr_un addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (socket_path_.size() >= sizeof(addr.sun_path)) {
    return Status::Error(ENAMETOOLONG, "control socket path too long: " + socket_path_);
  }
  std::strcpy(addr.sun_path, socket_path_.c_str());
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::FromErrno(errno, "control socket");
  unlink(socket_path_.c_str());  // a stale socket left by a dead daemon
  if (bind(listen_fd_, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    return Status::FromErrno(errno, "bind " + socket_path_);
  }
  // Anyone may connect; each request is authorised by the caller's credentials.
  chmod(socket_path_.c_str(), 0666);
  if (listen(listen_fd_, 64) != 0) return Status::FromErrno(errno, "listen " + socket_path_);
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
    for (int fd : clients_) shutdown(fd, SHUT_RDWR);
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

void ControlServer::AcceptLoop() {
  while (!stopping_.load()) {
    struct pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}};
    int rc = poll(fds, 2, 1000);
    if (rc < 0 && errno != EINTR) break;
    if (stopping_.load()) break;
    if (rc <= 0 || !(fds[0].revents & POLLIN)) continue;
    int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) continue;
    if (active_clients_.load() >= kMaxClients) {
      SendAll(fd, ErrorReply(EBUSY, "too many control clients; try again"));
      close(fd);
      Log(LogLevel::kWarn, "control: refused a client (%d already connected)", kMaxClients);
      continue;
    }
    std::lock_guard<std::mutex> lock(clients_mu_);
    active_clients_.fetch_add(1);
    clients_.push_back(fd);
    // Detached: Stop() shuts every client socket down and waits for active_clients_ to reach 0.
    std::thread([this, fd] { ServeClient(fd); }).detach();
  }
}

void ControlServer::ServeClient(int fd) {
  PeerCredentials peer;
  struct ucred cred;
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
    peer = PeerCredentials{cred.pid, cred.uid, cred.gid};
  }
  std::string pending;
  char buf[65536];
  for (;;) {
    struct pollfd pfd = {fd, POLLIN, 0};
    int rc = poll(&pfd, 1, idle_timeout_ms_);
    if (rc == 0) {
      if (!pending.empty()) {
        Log(LogLevel::kWarn, "control: dropped client pid %d: incomplete request after %d ms",
            peer.pid, idle_timeout_ms_);
        SendAll(fd, ErrorReply(ETIMEDOUT, "request incomplete: timed out"));
      }
      break;
    }
    if (rc < 0) {
      if (errno == EINTR) continue;
      break;
    }
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    if (n <= 0) {
      if (n == 0 && !pending.empty()) {
        SendAll(fd, ErrorReply(EPROTO, "truncated request (no newline before end of stream)"));
      }
      break;
    }
    pending.append(buf, static_cast<size_t>(n));
    size_t nl;
    bool drop = false;
    while ((nl = pending.find('\n')) != std::string::npos) {
      std::string line = pending.substr(0, nl);
      pending.erase(0, nl + 1);
      if (!SendAll(fd, HandleLine(line, peer))) {
        drop = true;
        break;
      }
    }
    if (pending.size() > kMaxRequestBytes) {
      Log(LogLevel::kWarn, "control: dropped client pid %d: request over %zu bytes", peer.pid,
          kMaxRequestBytes);
      SendAll(fd, ErrorReply(EMSGSIZE, "request too large"));
      drop = true;
    }
    if (drop || stopping_.load()) break;
  }
  {
    std::lock_guard<std::mutex> lock(clients_mu_);
    for (auto it = clients_.begin(); it != clients_.end(); ++it) {
      if (*it == fd) {
        clients_.erase(it);
        break;
      }
    }
  }
  close(fd);
  active_clients_.fetch_sub(1);
}

std::string ControlServer::HandleLine(const std::string& line, const PeerCredentials& peer) {
  if (line.size() > kMaxRequestBytes) return ErrorReply(EMSGSIZE, "request too large");
  nlohmann::json request = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
  if (request.is_discarded()) return ErrorReply(EINVAL, "request is not valid JSON");
  if (!request.is_object()) return ErrorReply(EINVAL, "request must be a JSON object");
  auto op = request.find("op");
  if (op == request.end() || !op->is_string()) {
    return ErrorReply(EINVAL, "request needs a string field \"op\"");
  }
  auto route = routes_.find(op->get<std::string>());
  if (route == routes_.end()) {
    return ErrorReply(EINVAL, "unknown op \"" + op->get<std::string>() + "\"");
  }
  for (auto it = request.begin(); it != request.end(); ++it) {
    if (it.key() == "op") continue;
    bool known = false;
    for (const auto& f : route->second.fields) known = known || f == it.key();
    if (!known) {
      return ErrorReply(
          EINVAL, "unknown field \"" + it.key() + "\" for op \"" + op->get<std::string>() + "\"");
    }
  }
  if (route->second.access == ControlAccess::kOwner && peer.uid != 0 && peer.uid != owner_uid_) {
    Log(LogLevel::kWarn, "control: denied \"%s\" to uid %u (pid %d)",
        op->get<std::string>().c_str(), peer.uid, peer.pid);
    return ErrorReply(EPERM, "permission denied: only root or the user who mounted (uid " +
                                 std::to_string(owner_uid_) + ") may " + op->get<std::string>());
  }
  nlohmann::json reply = nlohmann::json::object();
  Status st;
  try {
    st = route->second.handler(request, peer, &reply);
  } catch (const std::exception& e) {
    // nlohmann throws on type mismatches inside handlers; never let it leave this thread.
    st = Status::Invalid(std::string("bad request: ") + e.what());
  }
  if (!st.ok()) return ErrorReply(st.code(), st.message());
  reply["ok"] = true;
  return reply.dump() + "\n";
}

}  // namespace clairfs
