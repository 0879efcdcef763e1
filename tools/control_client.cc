// ControlClient: socket discovery, one request line out, one reply line back (see
// control_client.h).
#include "tools/control_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "fs/control_server.h"

namespace clairfs::cli {

Result<std::string> CanonicalMountpoint(const std::string& mountpoint) {
  char* real = realpath(mountpoint.c_str(), nullptr);
  if (real == nullptr) {
    if (errno == ENOTCONN) {
      return Status::Error(ENOTCONN, mountpoint +
                                         ": the clairfs daemon of this mount is gone (stale "
                                         "mount; `clairfs umount` or a new mount clears it)");
    }
    return Status::FromErrno(errno, mountpoint);
  }
  std::string out(real);
  free(real);
  return out;
}

Result<ControlClient> ControlClient::Connect(const std::string& mountpoint, int timeout_ms) {
  auto canonical = CanonicalMountpoint(mountpoint);
  if (!canonical.ok()) return canonical.status();
  std::vector<std::string> candidates;
  char value[512];
  ssize_t n = getxattr(canonical->c_str(), "user.clairfs.control", value, sizeof(value) - 1);
  if (n > 0) candidates.emplace_back(value, static_cast<size_t>(n));
  candidates.push_back(ControlSocketPathFor(*canonical, 0));
  candidates.push_back(ControlSocketPathFor(*canonical, getuid()));
  Status last = Status::Error(ENOENT, *canonical + " is not a clairfs mount (no control socket)");
  for (const auto& path : candidates) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return Status::FromErrno(errno, "socket");
    struct sockaddr_un addr;
    std::memset(&addr, 0, sizeof(addr));
    addr.sun_family = AF_UNIX;
    if (path.size() >= sizeof(addr.sun_path)) {
      close(fd);
      continue;
    }
    std::strcpy(addr.sun_path, path.c_str());
    if (connect(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) == 0) {
      return ControlClient(fd, path, *canonical, timeout_ms);
    }
    int err = errno;
    close(fd);
    if (err != ENOENT) last = Status::FromErrno(err, "connect to the daemon of " + *canonical);
  }
  return last;
}

ControlClient::ControlClient(ControlClient&& other) noexcept
    : fd_(other.fd_),
      socket_path_(std::move(other.socket_path_)),
      mountpoint_(std::move(other.mountpoint_)),
      timeout_ms_(other.timeout_ms_),
      buffered_(std::move(other.buffered_)) {
  other.fd_ = -1;
}

ControlClient::~ControlClient() {
  if (fd_ >= 0) close(fd_);
}

Result<nlohmann::json> ControlClient::Call(const nlohmann::json& request) {
  std::string line = request.dump() + "\n";
  size_t sent = 0;
  while (sent < line.size()) {
    ssize_t n = send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "send to the daemon of " + mountpoint_);
    }
    sent += static_cast<size_t>(n);
  }
  size_t nl;
  while ((nl = buffered_.find('\n')) == std::string::npos) {
    struct pollfd pfd = {fd_, POLLIN, 0};
    int rc = poll(&pfd, 1, timeout_ms_);
    if (rc == 0)
      return Status::Error(ETIMEDOUT, "the daemon of " + mountpoint_ + " did not answer");
    if (rc < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "poll");
    }
    char buf[65536];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n == 0) return Status::Error(ECONNRESET, "the daemon of " + mountpoint_ + " hung up");
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "receive from the daemon of " + mountpoint_);
    }
    buffered_.append(buf, static_cast<size_t>(n));
  }
  std::string reply_line = buffered_.substr(0, nl);
  buffered_.erase(0, nl + 1);
  nlohmann::json reply = nlohmann::json::parse(reply_line, nullptr, false);
  if (reply.is_discarded() || !reply.is_object()) {
    return Status::Error(EPROTO, "malformed reply from the daemon of " + mountpoint_);
  }
  if (reply.value("ok", false)) return reply;
  int code = reply.value("errno", EIO);
  return Status::Error(code > 0 ? code : EIO, reply.value("error", std::string("unknown error")));
}

}  // namespace clairfs::cli
