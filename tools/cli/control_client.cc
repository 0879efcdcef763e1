// ControlClient: socket discovery, the server's credentials, one request line out, one reply
// line back (see control_client.h).
#include "tools/cli/control_client.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "fs/control/control_socket_dir.h"
#include "fs/fuse/mount_table.h"
#include "planner/base/name_escape.h"

namespace clairfs::cli {

Result<std::string> CanonicalMountpoint(const std::string& mountpoint) {
  char* real = realpath(mountpoint.c_str(), nullptr);
  if (real == nullptr) {
    if (errno == ENOTCONN) {
      return Status::Error(ENOTCONN, SanitizeText(mountpoint) +
                                         ": the clairfs daemon of this mount is gone (stale "
                                         "mount; `clairfs umount` or a new mount clears it)");
    }
    return Status::FromErrno(errno, SanitizeText(mountpoint));
  }
  std::string out(real);
  free(real);
  return out;
}

Result<uid_t> ClairfsMountOwner(const std::string& canonical) {
  const std::string shown = SanitizeText(canonical);
  std::optional<MountTableEntry> mount = FindMount(canonical);
  if (!mount || mount->fstype != "fuse.clairfs") {
    return Status::Error(ENOENT, shown + " is not a clairfs mount (no control socket)");
  }
  std::optional<uid_t> owner = mount->FuseOwner();
  if (!owner) {
    return Status::Error(EPROTO, shown + ": the mount table names no owner (user_id=) for it");
  }
  return *owner;
}

Result<int> ConnectTrusted(const std::string& path, uid_t owner) {
  struct sockaddr_un addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  if (path.size() >= sizeof(addr.sun_path)) {
    return Status::Error(ENAMETOOLONG, "control socket path too long: " + SanitizeText(path));
  }
  std::memcpy(addr.sun_path, path.data(), path.size());
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return Status::FromErrno(errno, "socket");
  if (connect(fd, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    const int err = errno;
    close(fd);
    return Status::FromErrno(err, "connect to " + SanitizeText(path));
  }
  struct ucred cred;
  socklen_t len = sizeof(cred);
  if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) != 0) {
    const int err = errno;
    close(fd);
    return Status::FromErrno(err, "credentials of " + SanitizeText(path));
  }
  if (cred.uid != owner) {
    close(fd);
    return Status::Error(EPERM, "the control socket " + SanitizeText(path) + " is served by uid " +
                                    std::to_string(cred.uid) + ", not by the mount's owner uid " +
                                    std::to_string(owner) + "; not trusting it");
  }
  return fd;
}

Result<ControlClient> ControlClient::Connect(const std::string& mountpoint, int timeout_ms) {
  auto canonical = CanonicalMountpoint(mountpoint);
  if (!canonical.ok()) return canonical.status();
  auto owner = ClairfsMountOwner(*canonical);
  if (!owner.ok()) return owner.status();
  const std::string stem = ControlFileStem(*canonical);
  std::vector<std::string> candidates;
  char value[4096];
  ssize_t n = getxattr(canonical->c_str(), "user.clairfs.control", value, sizeof(value));
  if (n > 0) candidates.emplace_back(value, static_cast<size_t>(n));
  // The owner's own environment is known only when the caller is the owner.
  const char* xdg = getuid() == *owner ? getenv("XDG_RUNTIME_DIR") : nullptr;
  for (const std::string& dir : ControlDirCandidates(*owner, xdg)) {
    candidates.push_back(dir + "/" + stem + ".sock");
  }
  for (const std::string& dir : FallbackControlDirs(*owner)) {
    if (access((dir + "/" + stem + ".sock").c_str(), F_OK) == 0) {
      candidates.push_back(dir + "/" + stem + ".sock");
    }
  }
  const std::string shown = SanitizeText(*canonical);
  Status last = Status::Error(ENOENT, shown + ": its daemon's control socket was not found");
  bool have_reason = false;  // `last` says why a socket that exists was not used
  for (const std::string& path : candidates) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos || slash == 0) continue;
    Status dir_ok = CheckControlDir(path.substr(0, slash), *owner);
    if (!dir_ok.ok()) {
      if (dir_ok.code() != ENOENT && !have_reason) {
        last = Status::Error(dir_ok.code(), "not trusting the control socket " +
                                                SanitizeText(path) + ": " + dir_ok.message());
        have_reason = true;
      }
      continue;
    }
    auto fd = ConnectTrusted(path, *owner);
    if (fd.ok()) return ControlClient(*fd, path, *canonical, timeout_ms);
    const int err = fd.status().code();
    if (err == ENOENT) continue;
    if (!have_reason || err == EPERM) {
      last = err == EPERM
                 ? fd.status()
                 : Status::Error(err, fd.status().message() + " (the daemon of " + shown + ")");
      have_reason = true;
    }
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
  const std::string shown = SanitizeText(mountpoint_);
  std::string line;
  try {
    line = request.dump() + "\n";
  } catch (const nlohmann::json::exception& e) {
    // Names must be escaped before they enter a request; a raw byte here is a bug of the caller.
    return Status::Error(EINVAL, std::string("request not sent: ") + e.what());
  }
  size_t sent = 0;
  while (sent < line.size()) {
    ssize_t n = send(fd_, line.data() + sent, line.size() - sent, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      const Status failed = Status::FromErrno(errno, "send to the daemon of " + shown);
      // A daemon that refused the connection said why before closing it: show that instead.
      char buf[4096];
      ssize_t got = recv(fd_, buf, sizeof(buf), MSG_DONTWAIT);
      if (got > 0) buffered_.append(buf, static_cast<size_t>(got));
      const size_t end = buffered_.find('\n');
      if (end == std::string::npos) return failed;
      nlohmann::json refusal = nlohmann::json::parse(buffered_.substr(0, end), nullptr, false);
      buffered_.clear();
      if (!refusal.is_object() || !refusal.value("error", nlohmann::json()).is_string()) {
        return failed;
      }
      const nlohmann::json code = refusal.value("errno", nlohmann::json(EIO));
      return Status::Error(code.is_number_integer() && code.get<int>() > 0 ? code.get<int>() : EIO,
                           SanitizeText(refusal["error"].get<std::string>()));
    }
    sent += static_cast<size_t>(n);
  }
  size_t nl;
  while ((nl = buffered_.find('\n')) == std::string::npos) {
    struct pollfd pfd = {fd_, POLLIN, 0};
    int rc = poll(&pfd, 1, timeout_ms_);
    if (rc == 0) return Status::Error(ETIMEDOUT, "the daemon of " + shown + " did not answer");
    if (rc < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "poll");
    }
    char buf[65536];
    ssize_t n = recv(fd_, buf, sizeof(buf), 0);
    if (n == 0) return Status::Error(ECONNRESET, "the daemon of " + shown + " hung up");
    if (n < 0) {
      if (errno == EINTR) continue;
      return Status::FromErrno(errno, "receive from the daemon of " + shown);
    }
    buffered_.append(buf, static_cast<size_t>(n));
  }
  std::string reply_line = buffered_.substr(0, nl);
  buffered_.erase(0, nl + 1);
  nlohmann::json reply = nlohmann::json::parse(reply_line, nullptr, false);
  if (reply.is_discarded() || !reply.is_object()) {
    return Status::Error(EPROTO, "malformed reply from the daemon of " + shown);
  }
  const nlohmann::json ok = reply.value("ok", nlohmann::json(false));
  if (ok.is_boolean() && ok.get<bool>()) return reply;
  const nlohmann::json code = reply.value("errno", nlohmann::json(EIO));
  const nlohmann::json error = reply.value("error", nlohmann::json("unknown error"));
  const int err = code.is_number_integer() ? code.get<int>() : EIO;
  return Status::Error(err > 0 ? err : EIO, error.is_string()
                                                ? SanitizeText(error.get<std::string>())
                                                : "unknown error");
}

}  // namespace clairfs::cli
