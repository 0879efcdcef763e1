// PeerTransport: the messages between the peer agents of a job, over MPI, with deadlines where
// MPI gives no errors (docs/PEERS.md, "Failure").
//
// Open MPI 4.1 (Debian 12) has no ULFM: with --enable-recovery the survivors of a dead rank run
// on, but no call reports it; a send to it may never complete (or, over shared memory, "complete"
// with the data lost), a receive from it never completes. So this transport:
//   - uses non-blocking calls only, each with a deadline, and is driven by Poll() from one
//     thread (MPI_Testsome; Open MPI has no progress thread);
//   - counts any message from a peer as a sign of life and sends a heartbeat to each live peer
//     that heard nothing from us for heartbeat_interval; a peer silent for suspect_after is
//     suspected: its fetches fail at once, its queued requests are dropped, and it is probed
//     with back-off (1, 2, 4, 8 s) until it answers, when it is live again;
//   - bounds what one peer can hold: at most max_fetches_per_peer fetches from it, at most
//     max_serving_per_peer of its requests being sent and max_queued_per_peer waiting (beyond
//     that a request is refused with EBUSY), so a dead requester cannot stall a server;
//   - never reuses a buffer MPI may still touch: a send that misses its deadline is released
//     with MPI_Request_free and its buffer is never handed back; a receive that cannot be
//     cancelled keeps its buffer for good. Both are counted (retained_buffers);
//   - uses no collective after construction.
// A fetch: the requester posts the receive of the data (tag from the fetch id), then sends the
// request; the server answers with a Serve (the seal, then the data on that tag) or a Refuse.
//
// Thread-safety: not thread-safe; one thread calls everything (MPI_THREAD_FUNNELED suffices).
#pragma once

#include <mpi.h>

#include <array>
#include <chrono>
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "cache/copy_seal.h"
#include "planner/base/status.h"

namespace clairfs::peer {

using Clock = std::chrono::steady_clock;

struct TransportOptions {
  std::chrono::milliseconds heartbeat_interval{1000};
  std::chrono::milliseconds suspect_after{5000};
  std::chrono::milliseconds send_deadline{30000};
  int max_fetches_per_peer = 8;
  int max_serving_per_peer = 4;
  int max_queued_per_peer = 64;
  int ctrl_receives = 32;  // control messages received at once
};

enum class PeerState { kLive, kSuspected, kDeparted };
const char* PeerStateName(PeerState state);

struct TransportStats {
  uint64_t fetches_ok = 0;
  uint64_t fetches_failed = 0;
  uint64_t bytes_fetched = 0;
  uint64_t served = 0;
  uint64_t bytes_served = 0;
  uint64_t refused = 0;
  uint64_t heartbeats_sent = 0;
  uint64_t retained_buffers = 0;  // buffers MPI may still touch, never reused
  uint64_t fetches_in_flight = 0;
  uint64_t serves_in_flight = 0;
};

class PeerTransport {
 public:
  struct Handlers {
    // `node` asks for `file` of `size` bytes: answer with Serve or Refuse, now or later.
    std::function<void(uint32_t node, uint64_t request, uint64_t file, uint64_t size)> on_request;
    // A fetch ended: ok (its buffer holds the bytes, sealed by `seal`) or why not.
    std::function<void(uint64_t fetch, const Status& status, const CopySeal& seal)> on_fetched;
    std::function<void(uint32_t node, PeerState state)> on_peer_state;
    // `node` says its readers are done (it still serves until it departs).
    std::function<void(uint32_t node)> on_done;
  };

  PeerTransport(MPI_Comm comm, TransportOptions options, Handlers handlers);
  // Cancels what can be cancelled; buffers MPI may still touch are left alone.
  ~PeerTransport();
  PeerTransport(const PeerTransport&) = delete;
  PeerTransport& operator=(const PeerTransport&) = delete;

  uint32_t self() const { return self_; }
  uint32_t nodes() const { return nodes_; }
  PeerState state(uint32_t node) const { return peers_[node].state; }
  bool CanFetchFrom(uint32_t node) const;

  // Asks `node` for `file` (`size` bytes) into `buffer`, which stays MPI's until `release` runs
  // (after on_fetched, once nothing can write into it; never, if a receive cannot be cancelled).
  // Fails at `deadline`. Returns the fetch's id.
  uint64_t Fetch(uint32_t node, uint64_t file, void* buffer, uint64_t size,
                 Clock::time_point deadline, std::function<void()> release);
  // Answers request `request` of `node` with `size` bytes at `data` and their seal; `release`
  // runs when the send completed (never, if it missed its deadline).
  void Serve(uint32_t node, uint64_t request, const void* data, uint64_t size, const CopySeal& seal,
             std::function<void()> release);
  void Refuse(uint32_t node, uint64_t request, int error);
  // Tells every peer this node's readers are done / that this node leaves now.
  void SendDone();
  void SendBye();

  // Drives MPI and the timers; returns true if anything happened. Handlers run from here.
  bool Poll(Clock::time_point now = Clock::now());

  TransportStats stats() const;
  // Per peer: state, seconds since heard, fetches and serves in flight.
  std::string DescribePeer(uint32_t node, Clock::time_point now = Clock::now()) const;

 private:
  enum Kind : uint32_t {
    kHeartbeat = 1,
    kRequest = 2,
    kServe = 3,
    kRefuse = 4,
    kDone = 5,
    kBye = 6
  };
  struct Wire {
    uint32_t kind = 0;
    uint32_t sender = 0;
    uint64_t id = 0;
    uint64_t file = 0;
    uint64_t size = 0;
    int32_t error = 0;
    uint32_t pad = 0;
    std::array<uint8_t, 32> digest{};
    std::array<uint8_t, 32> auth{};
  };
  enum class OpKind { kCtrlRecv, kCtrlSend, kDataRecv, kDataSend, kCancelledRecv };
  struct Op {
    OpKind kind = OpKind::kCtrlRecv;
    uint64_t id = 0;  // fetch id (data recv), serve id (data send), ctrl buffer index (ctrl recv)
    Wire* wire = nullptr;  // ctrl send
    Clock::time_point deadline{};
    std::function<void()> release;  // data send, cancelled recv
  };
  struct FetchState {
    uint32_t node = 0;
    uint64_t file = 0;
    uint64_t size = 0;
    Clock::time_point deadline{};
    size_t data_slot = SIZE_MAX;  // SIZE_MAX: no data receive (size 0) or it completed
    bool answered = false;
    bool data_done = false;
    CopySeal seal;
    std::function<void()> release;
  };
  struct Queued {
    uint64_t request;
    uint64_t file;
    uint64_t size;
  };
  struct Peer {
    PeerState state = PeerState::kLive;
    Clock::time_point heard{};
    Clock::time_point sent{};
    Clock::time_point next_probe{};
    std::chrono::milliseconds probe_interval{1000};
    int fetching = 0;
    int serving = 0;
    std::deque<Queued> queued;
  };

  size_t AddOp(MPI_Request request, Op op);
  void PostCtrlRecv(size_t buffer);
  void SendCtrl(uint32_t node, const Wire& wire);
  // Keeps a control message MPI may still touch (its send missed its deadline, or was pending at
  // shutdown) for the rest of the process: never reused, and still reachable, so a leak checker
  // does not report it at exit.
  static void RetainForProcessLife(Wire* wire);
  int DataTag(uint64_t id) const;
  void OnCtrl(const Wire& wire, uint32_t source, Clock::time_point now);
  void OnOpDone(size_t slot, const MPI_Status& status);
  void FinishFetch(uint64_t id, const Status& status);
  void FailFetchesFrom(uint32_t node, const Status& why);
  void CancelRecv(size_t slot, std::function<void()> release);
  void Heard(uint32_t node, Clock::time_point now);
  void Timers(Clock::time_point now);
  void DispatchQueued(uint32_t node);

  MPI_Comm comm_;
  TransportOptions options_;
  Handlers handlers_;
  uint32_t self_ = 0;
  uint32_t nodes_ = 0;
  int tag_ub_ = 32767;
  std::vector<Peer> peers_;
  std::vector<MPI_Request> requests_;
  std::vector<Op> ops_;
  std::vector<size_t> free_slots_;
  std::vector<Wire> ctrl_buffers_;
  std::map<uint64_t, FetchState> fetches_;
  uint64_t next_fetch_ = 1;
  uint64_t next_serve_ = 1;
  Clock::time_point last_timers_{};
  TransportStats stats_;
};

}  // namespace clairfs::peer
