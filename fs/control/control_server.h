// ControlServer: the daemon's admin endpoint, JSON lines over a Unix stream socket.
//
// Each line a client sends is one request object {"op": "...", ...}; each gets one reply line:
// {"ok": true, ...} or {"ok": false, "errno": N, "error": "message"}. Anyone may connect; each
// request is authorised by the caller's credentials (SO_PEERCRED, and SO_PEERGROUPS for the
// supplementary groups) against the handler's rule: read-only ops for everyone (each handler
// limits what others see: fs/caller_scope.h), mutating ops for root or the mounting user only.
// Requests are validated before any handler runs: a line over kMaxRequestBytes, invalid JSON, a
// non-object, or a missing/unknown "op" gets an error reply.
//
// Names in the protocol: every name or path a reply carries is escaped (planner/name_escape.h
// EscapeName) and every path a request carries is unescaped by its handler, so names of any
// bytes round-trip. The boundary: HandleLine (and the client thread around it) catches every
// exception a handler or the serialisation may throw, logs one line and replies an error; every
// reply is serialised with invalid UTF-8 replaced and every error message is passed through
// SanitizeText, so no request, reply or name can end the daemon.
//
// Connections (ControlLimits; the defaults are the numbers in docs/ADMIN.md):
//   - at most max_clients (64) at once; the last reserved_for_owner (16) of them are kept for
//     root and the mount's owner, so they always get in;
//   - any other uid holds at most max_per_other_uid (4) at once;
//   - a client is dropped after idle_ms_owner (30 s; root and the owner) or idle_ms_other (5 s;
//     everyone else) without completing a request, counted from its connection or its last reply
//     (a line sent byte by byte does not keep it alive);
//   - a client that does not take a reply within send_timeout_ms (10 s) is dropped.
// A refused client gets one error line (EBUSY) and is closed; refusals are logged at most once a
// minute. Each client has its own detached thread, so a stuck client holds up neither others nor
// any FUSE request.
//
// Memory: a reply that lists a whole dataset (ls -r, stats of every file) is written as text
// (AddTextHandler, reply_writer.h), not as a tree of every value; after a reply of
// kReturnMemoryAfterReplyBytes or more the client thread gives free memory back to the system.
//
// Handlers run on client threads and must be thread-safe. Start() binds (replacing a stale socket
// file; the directory must exist: fs/control_socket_dir.h), Stop() closes the listener, drops
// clients and waits for every client thread.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "fs/control/reply_writer.h"
#include "planner/base/status.h"

namespace clairfs {

struct PeerCredentials {
  pid_t pid = -1;
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  std::vector<gid_t> groups = {};  // supplementary groups
};

enum class ControlAccess { kAnyone, kOwner };

// A handler fills `reply` (the server adds "ok": true) or returns an error Status.
using ControlHandler = std::function<Status(const nlohmann::json& request,
                                            const PeerCredentials& peer, nlohmann::json* reply)>;
// The same for replies that list a whole dataset: written as text (reply_writer.h), so that
// their memory is their text, not a tree of every value. On an error what was written is dropped.
using ControlTextHandler = std::function<Status(const nlohmann::json& request,
                                                const PeerCredentials& peer, ReplyWriter* reply)>;

struct ControlLimits {
  int max_clients = 64;
  int reserved_for_owner = 16;
  int max_per_other_uid = 4;
  int idle_ms_owner = 30000;
  int idle_ms_other = 5000;
  int send_timeout_ms = 10000;
};

class ControlServer {
 public:
  static constexpr size_t kMaxRequestBytes = 1 << 20;
  // After sending a reply at least this large, free memory goes back to the system.
  static constexpr size_t kReturnMemoryAfterReplyBytes = 256 << 10;

  ControlServer(std::string socket_path, uid_t owner_uid, ControlLimits limits = {});
  ~ControlServer();
  ControlServer(const ControlServer&) = delete;
  ControlServer& operator=(const ControlServer&) = delete;

  // `fields` lists the keys a request may carry besides "op" (others are rejected).
  void AddHandler(const std::string& op, ControlAccess access, std::vector<std::string> fields,
                  ControlHandler handler);
  void AddTextHandler(const std::string& op, ControlAccess access, std::vector<std::string> fields,
                      ControlTextHandler handler);
  // The ops registered, each with the fields it takes besides "op" (for fuzzers and tests that
  // build requests of every kind).
  std::map<std::string, std::vector<std::string>> Ops() const;
  Status Start();
  void Stop();
  const std::string& socket_path() const { return socket_path_; }
  uid_t owner_uid() const { return owner_uid_; }

  // Handles one request line (validation, authorisation, dispatch) and returns the reply line;
  // never throws. Used by the client threads and directly by in-process callers and tests.
  std::string HandleLine(const std::string& line, const PeerCredentials& peer) noexcept;

  // The credentials of the peer of a connected Unix socket (uid -1 if they cannot be read).
  static PeerCredentials PeerOf(int fd);

 private:
  struct Route {
    ControlAccess access;
    std::vector<std::string> fields;
    ControlHandler handler;  // one of the two is set
    ControlTextHandler text_handler;
  };
  std::string Dispatch(const std::string& line, const PeerCredentials& peer);
  void AcceptLoop();
  // Admits or refuses a new connection (the limits above); true if admitted.
  bool Admit(int fd, const PeerCredentials& peer);
  void ServeClient(int fd, const PeerCredentials& peer);
  void ServeRequests(int fd, const PeerCredentials& peer);
  void Forget(int fd, uid_t uid);
  bool Privileged(uid_t uid) const { return uid == 0 || uid == owner_uid_; }

  std::string socket_path_;
  uid_t owner_uid_;
  ControlLimits limits_;
  std::map<std::string, Route> routes_;  // filled before Start, read-only after
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::thread accept_thread_;
  std::mutex clients_mu_;         // guards clients_, per_uid_, refused_, last_refusal_log_
  std::map<int, uid_t> clients_;  // socket -> uid of every connected client
  std::map<uid_t, int> per_uid_;  // connections per uid
  uint64_t refused_ = 0;          // refusals not logged yet
  std::chrono::steady_clock::time_point last_refusal_log_{};
  std::atomic<int> active_clients_{0};
  std::atomic<bool> stopping_{false};
};

// Serialises a reply (or any JSON the daemon sends): invalid UTF-8 is replaced, never thrown.
std::string DumpReply(const nlohmann::json& reply);

}  // namespace clairfs
