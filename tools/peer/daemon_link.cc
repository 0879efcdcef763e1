// DaemonLink (see daemon_link.h).
#include "tools/peer/daemon_link.h"

#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>

#include "tools/cli/control_client.h"

namespace clairfs::peer {

std::string PeerSocketPath(const std::string& control_socket) {
  const std::string suffix = ".sock";
  if (control_socket.size() > suffix.size() &&
      control_socket.compare(control_socket.size() - suffix.size(), suffix.size(), suffix) == 0) {
    return control_socket.substr(0, control_socket.size() - suffix.size()) + ".peer";
  }
  return control_socket + ".peer";
}

Result<DaemonLink> DaemonLink::Connect(const std::string& mountpoint, int timeout_ms) {
  auto control = cli::ControlClient::Connect(mountpoint, timeout_ms);
  if (!control.ok()) return control.status();
  auto canonical = cli::CanonicalMountpoint(mountpoint);
  if (!canonical.ok()) return canonical.status();
  auto owner = cli::ClairfsMountOwner(*canonical);
  if (!owner.ok()) return owner.status();
  const std::string path = PeerSocketPath(control->socket_path());
  auto fd = cli::ConnectTrusted(path, *owner);
  if (!fd.ok()) {
    if (fd.status().code() == ENOENT) {
      return Status::Error(ENOENT, mountpoint + ": its daemon has no peer socket (" + path +
                                       "); is it a clairfs older than the peer tier?");
    }
    return fd.status();
  }
  return DaemonLink(*fd, path, timeout_ms);
}

DaemonLink::DaemonLink(DaemonLink&& other) noexcept
    : fd_(other.fd_),
      socket_path_(std::move(other.socket_path_)),
      timeout_ms_(other.timeout_ms_),
      buffered_(std::move(other.buffered_)),
      fds_(std::move(other.fds_)) {
  other.fd_ = -1;
  other.fds_.clear();
}

DaemonLink::~DaemonLink() {
  if (fd_ >= 0) close(fd_);
  for (int fd : fds_) close(fd);
}

Status DaemonLink::ReadLine(std::string* line) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms_);
  for (;;) {
    const size_t newline = buffered_.find('\n');
    if (newline != std::string::npos) {
      *line = buffered_.substr(0, newline);
      buffered_.erase(0, newline + 1);
      return Status::Ok();
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return Status::Error(ETIMEDOUT, "the daemon did not answer");
    struct pollfd pfd = {fd_, POLLIN, 0};
    int rc = poll(&pfd, 1, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0) continue;
    char data[1 << 16];
    struct iovec iov = {data, sizeof(data)};
    alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int) * 4)];
    struct msghdr msg {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = sizeof(control);
    ssize_t n = recvmsg(fd_, &msg, MSG_CMSG_CLOEXEC);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "reading from the daemon");
    for (struct cmsghdr* c = CMSG_FIRSTHDR(&msg); c != nullptr; c = CMSG_NXTHDR(&msg, c)) {
      if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; ++i) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
        fds_.push_back(fd);
      }
    }
    if (n == 0) return Status::Error(ENOTCONN, "the daemon closed the peer socket");
    buffered_.append(data, static_cast<size_t>(n));
  }
}

Result<LinkReply> DaemonLink::Call(const nlohmann::json& request) {
  if (fd_ < 0) return Status::Error(ENOTCONN, "not connected to the daemon");
  const std::string line = request.dump() + "\n";
  size_t sent = 0;
  while (sent < line.size()) {
    ssize_t n = send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return Status::Error(ENOTCONN, "the daemon closed the peer socket");
    sent += static_cast<size_t>(n);
  }
  std::string reply_line;
  CLAIRFS_RETURN_IF_ERROR(ReadLine(&reply_line));
  nlohmann::json reply = nlohmann::json::parse(reply_line, nullptr, /*allow_exceptions=*/false);
  if (!reply.is_object()) return Status::Error(EPROTO, "the daemon sent a malformed reply");
  LinkReply out;
  if (reply.value("fd", false)) {
    if (fds_.empty()) return Status::Error(EPROTO, "the daemon's reply lacks its descriptor");
    out.fd = fds_.front();
    fds_.erase(fds_.begin());
  }
  if (!reply.value("ok", false)) {
    if (out.fd >= 0) close(out.fd);
    return Status::Error(reply.value("errno", EIO), reply.value("error", std::string("error")));
  }
  out.body = std::move(reply);
  return out;
}

}  // namespace clairfs::peer
