// PeerPort: the mount's peer socket, where a job's peer agent attaches (protocol:
// fs/peer/peer_protocol.h; design: docs/PEERS.md).
//
// One agent at a time: a second connection gets one EBUSY line. Who may attach: root, the mount's
// owner, and on an allow_other mount anyone (the job's user); the agent is handed only copies of
// files its user could read through the mount (ResolveAs, R_OK), and receives only memory files
// whose bytes the daemon checks before publishing them, so it needs no access to the cache and
// cannot poison it. Without a peer key (mount option peer_key, default /etc/clairfs/peer.key)
// every hello is refused with the reason; without a plan too.
//
// While attached, the port's queue turns the prefetcher's requests for other nodes' files into
// wants, the store holds this node's home files (up to the agent's budget), and peers' bytes are
// published through a PeerDeliverer. When the agent says bye, closes its socket or dies, all of
// that is undone at once: wants go to the stager, holds are cleared, open transfers dropped.
//
// Threading: one thread serves the listener and the attached agent (poll, 100 ms ticks that
// expire wants and sweep transfers); requests are answered in order. Stop() (and the destructor)
// closes the socket and joins the thread. StatusJson() is thread-safe.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "cache/content_store.h"
#include "cache/copy_seal.h"
#include "cache/manifest.h"
#include "fs/control/control_server.h"
#include "fs/peer/peer_deliverer.h"
#include "fs/peer/peer_queue.h"
#include "fs/prefetch/plan_runtime.h"

namespace clairfs {

struct PeerPortSources {
  std::string socket_path;
  uid_t owner_uid = 0;
  bool allow_other = false;
  Manifest* manifest = nullptr;
  ContentStore* store = nullptr;
  PlanRuntime* plan = nullptr;
  PeerStagingQueue* queue = nullptr;
  std::shared_ptr<const PeerKey> key;  // null: agents are refused with key_problem
  std::string key_problem;             // why there is no key ("peer key /etc/...: ...")
};

class PeerPort {
 public:
  explicit PeerPort(PeerPortSources sources);
  ~PeerPort();
  PeerPort(const PeerPort&) = delete;
  PeerPort& operator=(const PeerPort&) = delete;

  Status Start();
  void Stop();
  const std::string& socket_path() const { return s_.socket_path; }
  // The "peers" object of `clairfs status`.
  nlohmann::json StatusJson();

  // One request line of an attached agent with credentials `peer`; the reply line and, when the
  // reply says "fd": true, the descriptor to send with it (the caller closes it after sending).
  // `bye`: set when the request ended the session. Exposed for tests; the serving thread calls it.
  std::string Handle(const std::string& line, const PeerCredentials& peer, int* fd_out,
                     bool* bye = nullptr);

 private:
  struct Session;
  void Loop();
  void Serve(int fd);
  void Detach(const char* why);
  Result<nlohmann::json> Dispatch(const nlohmann::json& request, const PeerCredentials& peer,
                                  int* fd_out);
  Result<nlohmann::json> Hello(const nlohmann::json& request, const PeerCredentials& peer);
  Result<nlohmann::json> Attach(const nlohmann::json& request);
  Result<nlohmann::json> Serve(const nlohmann::json& request, const PeerCredentials& peer,
                               int* fd_out);
  // The path of file number `file` of the plan the request names (ESTALE if the plan changed).
  Result<std::string> PathOf(const nlohmann::json& request);
  Result<std::string> ManifestDigest();
  void OnDelivery(const std::string& path, const Status& status, uint64_t bytes);

  PeerPortSources s_;
  std::unique_ptr<PeerDeliverer> deliverer_;
  int listen_fd_ = -1;
  int wake_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::atomic<bool> listening_{false};  // Start succeeded and Stop has not run
  std::thread thread_;

  std::mutex mu_;  // guards the session state below (read by StatusJson)
  bool attached_ = false;
  std::shared_ptr<PlanTracker> tracker_;  // the plan the agent numbered files by
  PeerCredentials agent_;
  std::chrono::system_clock::time_point attached_at_{};
  nlohmann::json report_ = nullptr;
  uint64_t held_files_ = 0;
  uint64_t held_bytes_ = 0;
  uint64_t copies_served_ = 0;
  uint64_t bytes_served_ = 0;
  uint64_t agents_attached_ = 0;
  std::string last_detach_;
};

}  // namespace clairfs
