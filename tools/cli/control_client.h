// ControlClient: how the CLI talks to a running mount's daemon, and why it trusts the answer.
//
// The CLI addresses a mount by its mountpoint. The mount must be a clairfs mount in the mount
// table; its owner is the superblock's user_id= (the uid whose daemon serves it). The socket path
// is read from the mount root's "user.clairfs.control" attribute, then the owner's candidate
// directories are tried (fs/control_socket_dir.h), each only if the directory passes the same
// checks the daemon applies. A socket is trusted only if the process serving it (SO_PEERCRED) runs
// as the mount's owner; otherwise the connection is refused with "the control socket X is served
// by uid N, not by the mount's owner uid M; not trusting it", so a socket someone else put in the
// way can neither forge replies nor see requests. Each Call() sends one JSON request line and
// waits (with a timeout) for one reply line. Errors name the mountpoint.
#pragma once

#include <sys/types.h>

#include <string>

#include <nlohmann/json.hpp>

#include "planner/base/status.h"

namespace clairfs::cli {

class ControlClient {
 public:
  static Result<ControlClient> Connect(const std::string& mountpoint, int timeout_ms = 30000);
  ControlClient(ControlClient&& other) noexcept;
  ControlClient& operator=(ControlClient&&) = delete;
  ~ControlClient();

  // Sends `request`; returns the reply object if "ok" is true, else its error as a Status.
  Result<nlohmann::json> Call(const nlohmann::json& request);
  const std::string& socket_path() const { return socket_path_; }

 private:
  ControlClient(int fd, std::string socket_path, std::string mountpoint, int timeout_ms)
      : fd_(fd),
        socket_path_(std::move(socket_path)),
        mountpoint_(std::move(mountpoint)),
        timeout_ms_(timeout_ms) {}
  int fd_;
  std::string socket_path_;
  std::string mountpoint_;
  int timeout_ms_;
  std::string buffered_;
};

// realpath() of a mountpoint, or the error naming it (ENOTCONN: the daemon is gone).
Result<std::string> CanonicalMountpoint(const std::string& mountpoint);

// The uid that owns the clairfs mount at `canonical` (user_id= in the mount table), or an error
// saying it is not a clairfs mount.
Result<uid_t> ClairfsMountOwner(const std::string& canonical);

// Connects to the socket at `path` and returns the fd if its server runs as `owner`; else the
// error above (or the connect error).
Result<int> ConnectTrusted(const std::string& path, uid_t owner);

}  // namespace clairfs::cli
