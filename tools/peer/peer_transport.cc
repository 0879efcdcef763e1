// PeerTransport (see peer_transport.h).
#include "tools/peer/peer_transport.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>

namespace clairfs::peer {
namespace {

constexpr int kCtrlTag = 1;
constexpr int kFirstDataTag = 2;
constexpr auto kTimerPeriod = std::chrono::milliseconds(20);
constexpr auto kMaxProbeInterval = std::chrono::milliseconds(8000);

double SecondsBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

}  // namespace

const char* PeerStateName(PeerState state) {
  switch (state) {
    case PeerState::kLive:
      return "live";
    case PeerState::kSuspected:
      return "suspected";
    case PeerState::kDeparted:
      return "departed";
  }
  return "?";
}

PeerTransport::PeerTransport(MPI_Comm comm, TransportOptions options, Handlers handlers)
    : comm_(comm), options_(options), handlers_(std::move(handlers)) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm_, &rank);
  MPI_Comm_size(comm_, &size);
  self_ = static_cast<uint32_t>(rank);
  nodes_ = static_cast<uint32_t>(size);
  int* ub = nullptr;
  int found = 0;
  MPI_Comm_get_attr(comm_, MPI_TAG_UB, &ub, &found);
  if (found && ub != nullptr && *ub > kFirstDataTag + 1) tag_ub_ = *ub;
  const Clock::time_point now = Clock::now();
  peers_.resize(nodes_);
  for (Peer& p : peers_) {
    p.heard = now;
    p.sent = now;
    p.next_probe = now;
  }
  ctrl_buffers_.resize(static_cast<size_t>(options_.ctrl_receives));
  for (size_t i = 0; i < ctrl_buffers_.size(); ++i) PostCtrlRecv(i);
  last_timers_ = now;
}

PeerTransport::~PeerTransport() {
  for (size_t slot = 0; slot < ops_.size(); ++slot) {
    if (requests_[slot] == MPI_REQUEST_NULL) continue;
    Op& op = ops_[slot];
    if (op.kind == OpKind::kCtrlRecv || op.kind == OpKind::kDataRecv ||
        op.kind == OpKind::kCancelledRecv) {
      MPI_Cancel(&requests_[slot]);
    }
    // Whatever is left may still be touched by MPI: freed, never waited for, and a pending
    // control send's buffer is kept (see the header). Only live slots: a finished op's slot may
    // still hold the pointer its completion deleted.
    MPI_Request_free(&requests_[slot]);
    if (op.kind == OpKind::kCtrlSend && op.wire != nullptr) RetainForProcessLife(op.wire);
  }
}

void PeerTransport::RetainForProcessLife(Wire* wire) {
  static std::mutex mutex;
  static auto* retained = new std::vector<std::unique_ptr<Wire>>();  // never destroyed
  std::lock_guard<std::mutex> lock(mutex);
  retained->emplace_back(wire);
}

bool PeerTransport::CanFetchFrom(uint32_t node) const {
  return node < nodes_ && node != self_ && peers_[node].state == PeerState::kLive &&
         peers_[node].fetching < options_.max_fetches_per_peer;
}

size_t PeerTransport::AddOp(MPI_Request request, Op op) {
  size_t slot;
  if (!free_slots_.empty()) {
    slot = free_slots_.back();
    free_slots_.pop_back();
    requests_[slot] = request;
    ops_[slot] = std::move(op);
  } else {
    slot = requests_.size();
    requests_.push_back(request);
    ops_.push_back(std::move(op));
  }
  return slot;
}

void PeerTransport::PostCtrlRecv(size_t buffer) {
  MPI_Request request;
  MPI_Irecv(&ctrl_buffers_[buffer], sizeof(Wire), MPI_BYTE, MPI_ANY_SOURCE, kCtrlTag, comm_,
            &request);
  Op op;
  op.kind = OpKind::kCtrlRecv;
  op.id = buffer;
  AddOp(request, std::move(op));
}

void PeerTransport::SendCtrl(uint32_t node, const Wire& wire) {
  // Each send has its own buffer: one that never completes (a dead peer) is never reused.
  Wire* copy = new Wire(wire);
  copy->sender = self_;
  MPI_Request request;
  MPI_Isend(copy, sizeof(Wire), MPI_BYTE, static_cast<int>(node), kCtrlTag, comm_, &request);
  Op op;
  op.kind = OpKind::kCtrlSend;
  op.wire = copy;
  op.deadline = Clock::now() + options_.send_deadline;
  AddOp(request, std::move(op));
  peers_[node].sent = Clock::now();
}

int PeerTransport::DataTag(uint64_t id) const {
  const uint64_t span = static_cast<uint64_t>(tag_ub_ - kFirstDataTag);
  return kFirstDataTag + static_cast<int>(id % span);
}

uint64_t PeerTransport::Fetch(uint32_t node, uint64_t file, void* buffer, uint64_t size,
                              Clock::time_point deadline, std::function<void()> release) {
  const uint64_t id = next_fetch_++;
  FetchState f;
  f.node = node;
  f.file = file;
  f.size = size;
  f.deadline = deadline;
  f.release = std::move(release);
  if (size > 0) {
    // Posted before the request goes out, so the data never arrives unexpected.
    MPI_Request request;
    MPI_Irecv(buffer, static_cast<int>(size), MPI_BYTE, static_cast<int>(node), DataTag(id), comm_,
              &request);
    Op op;
    op.kind = OpKind::kDataRecv;
    op.id = id;
    f.data_slot = AddOp(request, std::move(op));
  } else {
    f.data_done = true;
  }
  fetches_.emplace(id, std::move(f));
  ++peers_[node].fetching;
  Wire wire;
  wire.kind = kRequest;
  wire.id = id;
  wire.file = file;
  wire.size = size;
  SendCtrl(node, wire);
  return id;
}

void PeerTransport::Serve(uint32_t node, uint64_t request, const void* data, uint64_t size,
                          const CopySeal& seal, std::function<void()> release) {
  Peer& peer = peers_[node];
  if (peer.state != PeerState::kLive) {
    // Nobody to send to: nothing was handed to MPI.
    peer.serving = std::max(0, peer.serving - 1);
    if (release) release();
    return;
  }
  Wire wire;
  wire.kind = kServe;
  wire.id = request;
  wire.size = size;
  std::memcpy(wire.digest.data(), seal.digest.data(), 32);
  std::memcpy(wire.auth.data(), seal.auth.data(), 32);
  SendCtrl(node, wire);
  ++stats_.served;
  stats_.bytes_served += size;
  if (size == 0) {
    peer.serving = std::max(0, peer.serving - 1);
    if (release) release();
    DispatchQueued(node);
    return;
  }
  MPI_Request mpi_request;
  MPI_Isend(data, static_cast<int>(size), MPI_BYTE, static_cast<int>(node), DataTag(request), comm_,
            &mpi_request);
  Op op;
  op.kind = OpKind::kDataSend;
  op.id = node;
  op.deadline = Clock::now() + options_.send_deadline;
  op.release = std::move(release);
  AddOp(mpi_request, std::move(op));
  ++next_serve_;
}

void PeerTransport::Refuse(uint32_t node, uint64_t request, int error) {
  Peer& peer = peers_[node];
  peer.serving = std::max(0, peer.serving - 1);
  ++stats_.refused;
  if (peer.state == PeerState::kLive) {
    Wire wire;
    wire.kind = kRefuse;
    wire.id = request;
    wire.error = error;
    SendCtrl(node, wire);
  }
  DispatchQueued(node);
}

void PeerTransport::SendDone() {
  Wire wire;
  wire.kind = kDone;
  for (uint32_t n = 0; n < nodes_; ++n) {
    if (n != self_ && peers_[n].state != PeerState::kDeparted) SendCtrl(n, wire);
  }
}

void PeerTransport::SendBye() {
  Wire wire;
  wire.kind = kBye;
  for (uint32_t n = 0; n < nodes_; ++n) {
    if (n != self_ && peers_[n].state != PeerState::kDeparted) SendCtrl(n, wire);
  }
}

void PeerTransport::Heard(uint32_t node, Clock::time_point now) {
  Peer& peer = peers_[node];
  peer.heard = now;
  if (peer.state == PeerState::kSuspected) {
    peer.state = PeerState::kLive;
    peer.probe_interval = options_.heartbeat_interval;
    if (handlers_.on_peer_state) handlers_.on_peer_state(node, PeerState::kLive);
  }
}

void PeerTransport::OnCtrl(const Wire& wire, uint32_t source, Clock::time_point now) {
  if (source >= nodes_ || source == self_) return;
  Peer& peer = peers_[source];
  if (peer.state == PeerState::kDeparted) return;
  Heard(source, now);
  switch (wire.kind) {
    case kHeartbeat:
      return;
    case kRequest:
      if (peer.serving < options_.max_serving_per_peer) {
        ++peer.serving;
        if (handlers_.on_request) handlers_.on_request(source, wire.id, wire.file, wire.size);
      } else if (static_cast<int>(peer.queued.size()) < options_.max_queued_per_peer) {
        peer.queued.push_back(Queued{wire.id, wire.file, wire.size});
      } else {
        ++peer.serving;  // Refuse counts it back down
        Refuse(source, wire.id, EBUSY);
      }
      return;
    case kServe:
    case kRefuse: {
      auto it = fetches_.find(wire.id);
      if (it == fetches_.end() || it->second.node != source) return;  // failed already
      FetchState& f = it->second;
      if (wire.kind == kRefuse) {
        FinishFetch(wire.id, Status::Error(wire.error != 0 ? wire.error : ENOENT,
                                           "node " + std::to_string(source) + " has no copy"));
        return;
      }
      if (wire.size != f.size) {
        FinishFetch(wire.id, Status::Error(EBADMSG, "node " + std::to_string(source) +
                                                        " answered with another size"));
        return;
      }
      f.answered = true;
      std::memcpy(f.seal.digest.data(), wire.digest.data(), 32);
      std::memcpy(f.seal.auth.data(), wire.auth.data(), 32);
      if (f.data_done) FinishFetch(wire.id, Status::Ok());
      return;
    }
    case kDone:
      if (handlers_.on_done) handlers_.on_done(source);
      return;
    case kBye:
      peer.state = PeerState::kDeparted;
      peer.queued.clear();
      FailFetchesFrom(source, Status::Error(ESHUTDOWN, "node " + std::to_string(source) + " left"));
      if (handlers_.on_peer_state) handlers_.on_peer_state(source, PeerState::kDeparted);
      return;
    default:
      return;
  }
}

void PeerTransport::FinishFetch(uint64_t id, const Status& status) {
  auto it = fetches_.find(id);
  if (it == fetches_.end()) return;
  FetchState f = std::move(it->second);
  fetches_.erase(it);
  Peer& peer = peers_[f.node];
  peer.fetching = std::max(0, peer.fetching - 1);
  if (status.ok()) {
    ++stats_.fetches_ok;
    stats_.bytes_fetched += f.size;
  } else {
    ++stats_.fetches_failed;
  }
  if (f.data_slot != SIZE_MAX) {
    // The data receive is still posted: cancel it; the buffer is released once MPI lets go.
    CancelRecv(f.data_slot, std::move(f.release));
  } else if (f.release) {
    f.release();
  }
  if (handlers_.on_fetched) handlers_.on_fetched(id, status, f.seal);
}

void PeerTransport::CancelRecv(size_t slot, std::function<void()> release) {
  // A receive that completed in the MPI_Testsome batch being handled is already
  // MPI_REQUEST_NULL (its OnOpDone comes later in the batch, and releases the buffer as a
  // cancelled one): MPI_Cancel on it is an error that aborts the rank. Seen when a peer's answer
  // (another size, a refusal) and its data completed in one batch, answer first.
  if (requests_[slot] != MPI_REQUEST_NULL) MPI_Cancel(&requests_[slot]);
  ops_[slot].kind = OpKind::kCancelledRecv;
  ops_[slot].release = std::move(release);
}

void PeerTransport::FailFetchesFrom(uint32_t node, const Status& why) {
  std::vector<uint64_t> ids;
  for (const auto& [id, f] : fetches_) {
    if (f.node == node) ids.push_back(id);
  }
  for (uint64_t id : ids) FinishFetch(id, why);
}

void PeerTransport::DispatchQueued(uint32_t node) {
  Peer& peer = peers_[node];
  while (peer.state == PeerState::kLive && peer.serving < options_.max_serving_per_peer &&
         !peer.queued.empty()) {
    Queued q = peer.queued.front();
    peer.queued.pop_front();
    ++peer.serving;
    if (handlers_.on_request) handlers_.on_request(node, q.request, q.file, q.size);
  }
}

void PeerTransport::OnOpDone(size_t slot, const MPI_Status& status) {
  Op op = std::move(ops_[slot]);
  requests_[slot] = MPI_REQUEST_NULL;
  free_slots_.push_back(slot);
  switch (op.kind) {
    case OpKind::kCtrlRecv: {
      const Wire wire = ctrl_buffers_[op.id];
      const int source = status.MPI_SOURCE;
      PostCtrlRecv(op.id);
      OnCtrl(wire, static_cast<uint32_t>(source), Clock::now());
      return;
    }
    case OpKind::kCtrlSend:
      delete op.wire;
      return;
    case OpKind::kDataSend: {
      const uint32_t node = static_cast<uint32_t>(op.id);
      peers_[node].serving = std::max(0, peers_[node].serving - 1);
      if (op.release) op.release();
      DispatchQueued(node);
      return;
    }
    case OpKind::kCancelledRecv:
      if (op.release) op.release();
      return;
    case OpKind::kDataRecv: {
      auto it = fetches_.find(op.id);
      if (it == fetches_.end()) return;
      FetchState& f = it->second;
      f.data_slot = SIZE_MAX;
      int count = 0;
      MPI_Get_count(&status, MPI_BYTE, &count);
      if (static_cast<uint64_t>(count) != f.size) {
        FinishFetch(op.id,
                    Status::Error(EBADMSG, "a short transfer from node " + std::to_string(f.node)));
        return;
      }
      f.data_done = true;
      if (f.answered) FinishFetch(op.id, Status::Ok());
      return;
    }
  }
}

void PeerTransport::Timers(Clock::time_point now) {
  // Sends and fetches past their deadlines.
  for (size_t slot = 0; slot < ops_.size(); ++slot) {
    if (requests_[slot] == MPI_REQUEST_NULL) continue;
    Op& op = ops_[slot];
    if ((op.kind != OpKind::kCtrlSend && op.kind != OpKind::kDataSend) || op.deadline > now) {
      continue;
    }
    // Never completed: released to MPI, its buffer never reused (retained).
    MPI_Request_free(&requests_[slot]);
    requests_[slot] = MPI_REQUEST_NULL;
    ++stats_.retained_buffers;
    if (op.kind == OpKind::kDataSend) {
      const uint32_t node = static_cast<uint32_t>(op.id);
      peers_[node].serving = std::max(0, peers_[node].serving - 1);
    }
    if (op.kind == OpKind::kCtrlSend) RetainForProcessLife(op.wire);
    ops_[slot] = Op{};
    free_slots_.push_back(slot);
  }
  std::vector<uint64_t> late;
  for (const auto& [id, f] : fetches_) {
    if (f.deadline <= now) late.push_back(id);
  }
  for (uint64_t id : late) FinishFetch(id, Status::Error(ETIMEDOUT, "past its deadline"));
  // Liveness.
  for (uint32_t n = 0; n < nodes_; ++n) {
    if (n == self_) continue;
    Peer& peer = peers_[n];
    if (peer.state == PeerState::kDeparted) continue;
    if (peer.state == PeerState::kLive && now - peer.heard > options_.suspect_after) {
      peer.state = PeerState::kSuspected;
      peer.probe_interval = options_.heartbeat_interval;
      peer.next_probe = now;
      peer.queued.clear();
      FailFetchesFrom(n, Status::Error(EHOSTDOWN, "node " + std::to_string(n) + " is suspected"));
      if (handlers_.on_peer_state) handlers_.on_peer_state(n, PeerState::kSuspected);
    }
    Wire beat;
    beat.kind = kHeartbeat;
    if (peer.state == PeerState::kLive && now - peer.sent >= options_.heartbeat_interval) {
      SendCtrl(n, beat);
      ++stats_.heartbeats_sent;
    } else if (peer.state == PeerState::kSuspected && now >= peer.next_probe) {
      SendCtrl(n, beat);
      ++stats_.heartbeats_sent;
      peer.next_probe = now + peer.probe_interval;
      peer.probe_interval =
          std::min(peer.probe_interval * 2,
                   std::chrono::duration_cast<std::chrono::milliseconds>(kMaxProbeInterval));
    }
  }
}

bool PeerTransport::Poll(Clock::time_point now) {
  bool acted = false;
  if (!requests_.empty()) {
    std::vector<int> indices(requests_.size());
    std::vector<MPI_Status> statuses(requests_.size());
    int count = 0;
    MPI_Testsome(static_cast<int>(requests_.size()), requests_.data(), &count, indices.data(),
                 statuses.data());
    if (count != MPI_UNDEFINED && count > 0) {
      acted = true;
      // MPI_Testsome set the completed requests to MPI_REQUEST_NULL; handle each once.
      for (int i = 0; i < count; ++i) {
        const size_t slot = static_cast<size_t>(indices[static_cast<size_t>(i)]);
        OnOpDone(slot, statuses[static_cast<size_t>(i)]);
      }
    }
  }
  if (now - last_timers_ >= kTimerPeriod) {
    last_timers_ = now;
    Timers(now);
  }
  return acted;
}

TransportStats PeerTransport::stats() const {
  TransportStats s = stats_;
  s.fetches_in_flight = fetches_.size();
  uint64_t serving = 0;
  for (const Peer& p : peers_) serving += static_cast<uint64_t>(std::max(0, p.serving));
  s.serves_in_flight = serving;
  return s;
}

std::string PeerTransport::DescribePeer(uint32_t node, Clock::time_point now) const {
  const Peer& p = peers_[node];
  char text[160];
  snprintf(text, sizeof(text), "%s, heard %.1f s ago, %d fetches and %d serves in flight",
           PeerStateName(p.state), SecondsBetween(p.heard, now), p.fetching, p.serving);
  return text;
}

}  // namespace clairfs::peer
