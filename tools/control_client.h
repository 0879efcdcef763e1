// ControlClient: how the CLI talks to a running mount's daemon.
//
// The CLI addresses a mount by its mountpoint: the socket path is read from the mount root's
// "user.clairfs.control" attribute, falling back to the predictable path the daemon binds
// (ControlSocketPathFor) for root's and the caller's own mounts. Each Call() sends one JSON
// request line and waits (with a timeout) for one reply line. Errors name the mountpoint.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "planner/status.h"

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

}  // namespace clairfs::cli
