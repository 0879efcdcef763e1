// ControlServer: the daemon's admin endpoint, JSON lines over a Unix stream socket.
//
// Each line a client sends is one request object {"op": "...", ...}; each gets one reply line:
// {"ok": true, ...} or {"ok": false, "errno": N, "error": "message"}. Anyone may connect; each
// request is authorised by the caller's credentials (SO_PEERCRED) against the handler's rule:
// read-only ops for everyone, mutating ops for root or the mounting user only. Requests are
// validated before any handler runs: a line over kMaxRequestBytes, invalid JSON, a non-object, or
// a missing/unknown "op" gets an error reply; a client silent for longer than the idle timeout, or
// one that sends a partial line and stalls, is dropped with a log line. At most kMaxClients are
// served at once (more are refused), each on its own detached thread, so a stuck client cannot hold
// up others or any FUSE request.
//
// Handlers run on client threads and must be thread-safe. Start() binds (replacing a stale socket
// file), Stop() closes the listener, drops clients and joins every thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/status.h"

namespace clairfs {

struct PeerCredentials {
  pid_t pid = -1;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
};

enum class ControlAccess { kAnyone, kOwner };

// A handler fills `reply` (the server adds "ok": true) or returns an error Status.
using ControlHandler = std::function<Status(const nlohmann::json& request,
                                            const PeerCredentials& peer, nlohmann::json* reply)>;

class ControlServer {
 public:
  static constexpr size_t kMaxRequestBytes = 1 << 20;
  static constexpr int kMaxClients = 32;

  ControlServer(std::string socket_path, uid_t owner_uid, int idle_timeout_ms = 30000);
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // `fields` lists the keys a request may carry besides "op" (others are rejected).
  void AddHandler(const std::string& op, ControlAccess access, std::vector<std::string> fields,
                  ControlHandler handler);
  Status Start();
  void Stop();
  const std::string& socket_path() const { return socket_path_; }

  // Handles one request line (validation, authorisation, dispatch); used by the client threads
  // and directly by tests.
  std::string HandleLine(const std::string& line, const PeerCredentials& peer);

 private:
  struct Route {
    ControlAccess access;
    std::vector<std::string> fields;
    ControlHandler handler;
  };
  void AcceptLoop();
  void ServeClient(int fd);

  std::string socket_path_;
  uid_t owner_uid_;
  int idle_timeout_ms_;
  std::map<std::string, Route> routes_;  // filled before Start, read-only after
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::thread accept_thread_;
  std::mutex clients_mu_;  // guards clients_ (sockets of connected clients)
  std::vector<int> clients_;
  std::atomic<int> active_clients_{0};
  std::atomic<bool> stopping_{false};
};

// The socket path for a mountpoint: /run/clairfs/<hash>.sock for root, else
// $XDG_RUNTIME_DIR/clairfs/<hash>.sock (or /tmp/clairfs-<uid>/<hash>.sock).
std::string ControlSocketPathFor(const std::string& canonical_mountpoint, uid_t uid);

}  // namespace clairfs
