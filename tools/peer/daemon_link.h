// DaemonLink: the peer agent's connection to its node's daemon (the mount's peer socket,
// protocol fs/peer/peer_protocol.h).
//
// Connect finds the mount's control socket as the CLI does (tools/cli/control_client.h: the mount
// must be a clairfs mount, and the socket must be served by the mount's owner) and attaches to the
// peer socket beside it. Call sends one request line and waits for its reply line, taking the
// file descriptor that comes with a reply marked "fd": true. A closed socket or a timeout is an
// error (ENOTCONN, ETIMEDOUT): the daemon or its mount is gone.
//
// Thread-safety: one thread at a time.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "planner/base/status.h"

namespace clairfs::peer {

struct LinkReply {
  nlohmann::json body;
  int fd = -1;  // owned by the caller when >= 0
};

class DaemonLink {
 public:
  static Result<DaemonLink> Connect(const std::string& mountpoint, int timeout_ms = 60000);
  DaemonLink(DaemonLink&& other) noexcept;
  DaemonLink& operator=(DaemonLink&&) = delete;
  ~DaemonLink();

  // The reply if "ok" is true, else its error (errno and message).
  Result<LinkReply> Call(const nlohmann::json& request);
  const std::string& socket_path() const { return socket_path_; }

 private:
  DaemonLink(int fd, std::string socket_path, int timeout_ms)
      : fd_(fd), socket_path_(std::move(socket_path)), timeout_ms_(timeout_ms) {}
  // Reads until a whole line is buffered, collecting descriptors that arrive.
  Status ReadLine(std::string* line);

  int fd_;
  std::string socket_path_;
  int timeout_ms_;
  std::string buffered_;
  std::vector<int> fds_;  // received, not yet handed out (in arrival order)
};

// The peer socket of the mount whose control socket is `control_socket` ("X.sock" -> "X.peer").
std::string PeerSocketPath(const std::string& control_socket);

}  // namespace clairfs::peer
