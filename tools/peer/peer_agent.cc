// PeerAgent (see peer_agent.h).
#include "tools/peer/peer_agent.h"

#include <signal.h>
#include <sys/mman.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <iterator>
#include <list>
#include <memory>
#include <optional>
#include <thread>
#include <unordered_map>
#include <vector>

#include "planner/base/name_escape.h"
#include "planner/placement/placement.h"
#include "planner/plan.h"
#include "planner/plan_spec.h"
#include "tools/peer/daemon_link.h"
#include "tools/peer/node_facts.h"
#include "tools/peer/peer_transport.h"

namespace clairfs::peer {
namespace {

using json = nlohmann::json;
constexpr uint64_t kMaxPeerFileBytes = uint64_t{1} << 30;  // larger files come from the PFS
constexpr auto kWantsEvery = std::chrono::milliseconds(2);
constexpr auto kReportEvery = std::chrono::milliseconds(1000);

std::atomic<int> g_stop_signal{0};
void OnStopSignal(int signo) { g_stop_signal.store(signo); }

std::string HostName() {
  char host[64] = {};
  gethostname(host, sizeof(host) - 1);
  return host;
}

// Test builds only (--fault): the lying peer's private copies, each freed when its send
// completes. A send that never completes (its receiver gave up on a short answer) keeps its
// buffer for the process's life, as the transport keeps its own (docs/PEERS.md, "Failure"): held
// here, reachable, so that LeakSanitizer does not count it. Only the agent's one thread uses it.
std::list<std::vector<uint8_t>>& FaultCopies() {
  static auto* copies = new std::list<std::vector<uint8_t>>();  // never destroyed
  return *copies;
}

// A mapping of `size` bytes of `fd` (none for 0 bytes); the descriptor is closed either way.
void* MapFd(int fd, uint64_t size, bool writable) {
  void* p = nullptr;
  if (size > 0) {
    p = mmap(nullptr, size, writable ? PROT_READ | PROT_WRITE : PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) p = nullptr;
  }
  close(fd);
  return p;
}

class Agent {
 public:
  Agent(const AgentOptions& options, MPI_Comm comm, DaemonLink link, json hello,
        Placement placement)
      : options_(options),
        link_(std::move(link)),
        plan_id_(hello["plan"].get<uint64_t>()),
        placement_(std::move(placement)),
        transport_(comm, TransportOptions{}, MakeHandlers()) {
    live_.assign(transport_.nodes(), 1);
    done_.assign(transport_.nodes(), 0);
  }

  int Run();

 private:
  struct Pending {
    uint64_t file;
    uint64_t size;
    Clock::time_point deadline;
  };
  struct InFlight {
    uint64_t file;
  };

  PeerTransport::Handlers MakeHandlers() {
    PeerTransport::Handlers h;
    h.on_request = [this](uint32_t node, uint64_t request, uint64_t file, uint64_t size) {
      OnRequest(node, request, file, size);
    };
    h.on_fetched = [this](uint64_t fetch, const Status& status, const CopySeal& seal) {
      OnFetched(fetch, status, seal);
    };
    h.on_peer_state = [this](uint32_t node, PeerState state) { OnPeerState(node, state); };
    h.on_done = [this](uint32_t node) { done_[node] = 1; };
    return h;
  }

  // A daemon call; a link failure ends the agent (the mount went away).
  std::optional<LinkReply> Call(json request) {
    request["plan"] = plan_id_;
    const Clock::time_point start = Clock::now();
    auto reply = link_.Call(request);
    ++daemon_calls_;
    daemon_call_time_ += Clock::now() - start;
    if (reply.ok()) return std::move(*reply);
    if (reply.status().code() == ENOTCONN || reply.status().code() == ETIMEDOUT ||
        reply.status().code() == ESTALE) {
      if (link_error_.empty()) link_error_ = reply.status().message();
    } else if (options_.verbose) {
      fprintf(stderr, "clairfs peer: rank %u: %s: %s\n", transport_.self(),
              request.value("op", std::string()).c_str(), reply.status().message().c_str());
    }
    last_error_ = reply.status();
    return std::nullopt;
  }

  void TakeWants(Clock::time_point now);
  void StartFetches(Clock::time_point now);
  void OnFetched(uint64_t fetch, const Status& status, const CopySeal& seal);
  void OnRequest(uint32_t node, uint64_t request, uint64_t file, uint64_t size);
  void OnPeerState(uint32_t node, PeerState state);
  void Report();
  bool AllOthersFinished() const;
  void Leave();

  AgentOptions options_;
  DaemonLink link_;
  uint64_t plan_id_;
  Placement placement_;
  PeerTransport transport_;
  LiveNodes live_;
  std::vector<uint8_t> done_;
  std::deque<Pending> pending_;
  std::unordered_map<uint64_t, InFlight> in_flight_;
  std::string link_error_;
  Status last_error_;
  bool self_done_ = false;
  std::vector<std::string> lost_;
  uint64_t pulled_ = 0, pulled_bytes_ = 0, fetch_failures_ = 0, from_pfs_ = 0;
  uint64_t served_ = 0, refused_ = 0;
  uint64_t daemon_calls_ = 0;
  Clock::duration daemon_call_time_{};
};

void Agent::TakeWants(Clock::time_point now) {
  const size_t room =
      static_cast<size_t>(options_.max_fetches) > in_flight_.size() + pending_.size()
          ? static_cast<size_t>(options_.max_fetches) - in_flight_.size() - pending_.size()
          : 0;
  if (room == 0) return;
  auto reply = Call({{"op", "wants"}, {"max", room}});
  if (!reply) return;
  for (const json& want : reply->body["wants"]) {
    const uint64_t file = want["file"].get<uint64_t>();
    const uint64_t size = want["size"].get<uint64_t>();
    pending_.push_back(Pending{file, size, now + options_.deadline});
  }
}

void Agent::StartFetches(Clock::time_point now) {
  for (size_t tries = pending_.size(); tries > 0 && !pending_.empty(); --tries) {
    Pending p = pending_.front();
    pending_.pop_front();
    const uint32_t home = placement_.Home(p.file, live_);
    const bool from_peer = home != kNoNode && home != transport_.self() &&
                           p.size <= kMaxPeerFileBytes && p.deadline > now;
    if (!from_peer) {
      ++from_pfs_;
      Call({{"op", "fail"}, {"file", p.file}});
      continue;
    }
    if (!transport_.CanFetchFrom(home)) {
      if (transport_.state(home) != PeerState::kLive) {
        ++from_pfs_;
        Call({{"op", "fail"}, {"file", p.file}});
      } else {
        pending_.push_back(p);  // that peer is busy: later, or the PFS at the deadline
      }
      continue;
    }
    auto memfile = Call({{"op", "receive"}, {"file", p.file}});
    if (!memfile) {
      if (last_error_.code() == EAGAIN) {
        pending_.push_back(p);
      } else if (last_error_.code() != EEXIST) {
        Call({{"op", "fail"}, {"file", p.file}});
      }
      continue;
    }
    void* buffer = MapFd(memfile->fd, p.size, /*writable=*/true);
    if (p.size > 0 && buffer == nullptr) {
      Call({{"op", "abandon"}, {"file", p.file}});
      continue;
    }
    const uint64_t size = p.size;
    const uint64_t fetch = transport_.Fetch(home, p.file, buffer, size, p.deadline, [buffer, size] {
      if (buffer != nullptr) munmap(buffer, size);
    });
    in_flight_[fetch] = InFlight{p.file};
  }
}

void Agent::OnFetched(uint64_t fetch, const Status& status, const CopySeal& seal) {
  auto it = in_flight_.find(fetch);
  if (it == in_flight_.end()) return;
  const uint64_t file = it->second.file;
  in_flight_.erase(it);
  if (!status.ok()) {
    ++fetch_failures_;
    Call({{"op", "abandon"}, {"file", file}});
    return;
  }
  // The mapping is gone by now (released before this call), so the daemon can seal the file.
  ++pulled_;
  Call({{"op", "deliver"},
        {"file", file},
        {"digest", HexOf(seal.digest)},
        {"auth", HexOf(seal.auth)}});
}

void Agent::OnRequest(uint32_t node, uint64_t request, uint64_t file, uint64_t size) {
  auto copy = Call({{"op", "serve"}, {"file", file}});
  if (!copy) {
    const int error = last_error_.code() != 0 ? last_error_.code() : EIO;
    if (error == ENOENT && placement_.PreferredHome(file) != transport_.self() &&
        placement_.Home(file, live_) == transport_.self()) {
      // This node stands in for a lost home: fetch the file for next time. (A file whose first
      // reader is this node is not fetched early: its own reader brings it in the first epoch.)
      Call({{"op", "stage"}, {"file", file}});
    }
    ++refused_;
    transport_.Refuse(node, request, error);
    return;
  }
  const uint64_t copy_size = copy->body["size"].get<uint64_t>();
  auto digest = Sha256FromHex(copy->body["digest"].get<std::string>());
  auto auth = Sha256FromHex(copy->body["auth"].get<std::string>());
  if (copy_size != size || !digest.ok() || !auth.ok()) {
    close(copy->fd);
    ++refused_;
    transport_.Refuse(node, request, EBADMSG);
    return;
  }
  CopySeal seal{*digest, *auth};
  void* data = MapFd(copy->fd, size, /*writable=*/false);
  if (size > 0 && data == nullptr) {
    ++refused_;
    transport_.Refuse(node, request, EIO);
    return;
  }
  std::function<void()> release = [data, size] {
    if (data != nullptr) munmap(data, size);
  };
  const void* send_from = data;
  uint64_t send_size = size;
  if (options_.fault != ServeFault::kNone && size > 0) {
    // Test builds only: a peer that lies. The bytes sent come from a private copy.
    std::list<std::vector<uint8_t>>& copies = FaultCopies();
    copies.emplace_back(static_cast<const uint8_t*>(data),
                        static_cast<const uint8_t*>(data) + size);
    const auto copy = std::prev(copies.end());
    munmap(data, size);
    if (options_.fault == ServeFault::kCorrupt) (*copy)[size / 2] ^= 0x5a;
    if (options_.fault == ServeFault::kShort) send_size = size - 1;
    if (options_.fault == ServeFault::kForge) seal.auth[0] ^= 1;
    send_from = copy->data();
    release = [copy] { FaultCopies().erase(copy); };
  }
  ++served_;
  transport_.Serve(node, request, send_from, send_size, seal, std::move(release));
}

void Agent::OnPeerState(uint32_t node, PeerState state) {
  live_[node] = state == PeerState::kLive ? 1 : 0;
  const char* what = state == PeerState::kLive        ? "answers again: live"
                     : state == PeerState::kSuspected ? "is suspected (silent for 5 s): its files "
                                                        "come from their next homes or the PFS"
                                                      : "left";
  fprintf(stderr, "clairfs peer: rank %u: node %u %s\n", transport_.self(), node, what);
  if (state == PeerState::kSuspected && !done_[node]) {
    lost_.push_back("node " + std::to_string(node));
  }
}

void Agent::Report() {
  const TransportStats t = transport_.stats();
  json peers = json::array();
  uint64_t live = 0, suspected = 0;
  for (uint32_t n = 0; n < transport_.nodes(); ++n) {
    if (n == transport_.self()) continue;
    const PeerState state = transport_.state(n);
    live += state == PeerState::kLive ? 1 : 0;
    suspected += state == PeerState::kSuspected ? 1 : 0;
    peers.push_back({{"node", n},
                     {"state", PeerStateName(state)},
                     {"done", done_[n] != 0},
                     {"detail", transport_.DescribePeer(n)}});
  }
  json agent = {{"rank", transport_.self()},
                {"ranks", transport_.nodes()},
                {"live", live},
                {"suspected", suspected},
                {"files_pulled", t.fetches_ok},
                {"bytes_pulled", t.bytes_fetched},
                {"files_served", t.served},
                {"bytes_served", t.bytes_served},
                {"refused", t.refused},
                {"fetch_failures", t.fetches_failed},
                {"left_to_pfs", from_pfs_},
                {"fetches_in_flight", t.fetches_in_flight},
                {"serves_in_flight", t.serves_in_flight},
                {"retained_buffers", t.retained_buffers},
                {"daemon_calls", daemon_calls_},
                {"daemon_call_ms",
                 std::chrono::duration_cast<std::chrono::milliseconds>(daemon_call_time_).count()},
                {"done", self_done_},
                {"peers", peers}};
  Call({{"op", "report"}, {"agent", agent}});
}

bool Agent::AllOthersFinished() const {
  for (uint32_t n = 0; n < transport_.nodes(); ++n) {
    if (n == transport_.self()) continue;
    if (!done_[n] && transport_.state(n) == PeerState::kLive) return false;
  }
  return true;
}

void Agent::Leave() {
  transport_.SendBye();
  // Give the byes a moment to leave (they are tiny; a dead peer's never completes).
  const auto until = Clock::now() + std::chrono::milliseconds(200);
  while (Clock::now() < until) {
    if (!transport_.Poll()) std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  auto reply = link_.Call({{"op", "bye"}});
  (void)reply;
}

int Agent::Run() {
  Clock::time_point last_wants{}, last_report{}, last_progress{};
  auto idle = std::chrono::microseconds(50);
  for (;;) {
    const Clock::time_point now = Clock::now();
    bool acted = transport_.Poll(now);
    if (g_stop_signal.load() != 0) {
      fprintf(stderr, "clairfs peer: rank %u: stopped by signal %d\n", transport_.self(),
              g_stop_signal.load());
      Leave();
      return 1;
    }
    if (now - last_wants >= kWantsEvery) {
      last_wants = now;
      TakeWants(now);
      StartFetches(now);
    }
    if (now - last_report >= kReportEvery) {
      last_report = now;
      Report();
      auto progress = Call({{"op", "progress"}});
      if (progress && progress->body.value("finished", false) && !self_done_) {
        self_done_ = true;
        transport_.SendDone();
      }
    }
    if (!link_error_.empty()) {
      fprintf(stderr, "clairfs peer: rank %u: leaving: %s\n", transport_.self(),
              link_error_.c_str());
      transport_.SendBye();
      return 1;
    }
    if (self_done_ && AllOthersFinished()) {
      Report();
      Leave();
      break;
    }
    (void)last_progress;
    if (acted) {
      idle = std::chrono::microseconds(50);
    } else {
      std::this_thread::sleep_for(idle);
      idle = std::min(idle * 2, std::chrono::microseconds(2000));
    }
  }
  const TransportStats t = transport_.stats();
  fprintf(stderr,
          "clairfs peer: rank %u: done: pulled %llu files (%llu bytes) from peers, served %llu "
          "(%llu bytes), %llu left to the PFS%s%s\n",
          transport_.self(), static_cast<unsigned long long>(t.fetches_ok),
          static_cast<unsigned long long>(t.bytes_fetched),
          static_cast<unsigned long long>(t.served),
          static_cast<unsigned long long>(t.bytes_served),
          static_cast<unsigned long long>(from_pfs_ + t.fetches_failed),
          lost_.empty() ? "" : "; lost: ", lost_.empty() ? "" : lost_.front().c_str());
  return lost_.empty() ? 0 : 3;
}

}  // namespace

std::string MountpointOfRank(const std::string& pattern, int rank) {
  std::string out;
  for (size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] == '%' && i + 1 < pattern.size() && pattern[i + 1] == 'r') {
      out += std::to_string(rank);
      ++i;
    } else {
      out += pattern[i];
    }
  }
  return out;
}

int RunPeerAgent(const AgentOptions& options, MPI_Comm comm) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  struct sigaction sa {};
  sa.sa_handler = OnStopSignal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  const std::string host = HostName();
  const std::string mountpoint = MountpointOfRank(options.mountpoint, rank);

  // Attach and say hello; a failure is shared with the others, not kept to this rank.
  std::optional<DaemonLink> link;
  json hello;
  NodeFacts mine;
  auto connected = DaemonLink::Connect(mountpoint);
  if (!connected.ok()) {
    mine = FactsFromError(SanitizeText(connected.status().message()), host);
  } else {
    link.emplace(std::move(*connected));
    auto reply = link->Call({{"op", "hello"}, {"protocol", 1}});
    // A --plan auto mount that has not inferred its plan yet: wait for it (the readers' first
    // opens decide it), up to --plan-wait.
    const auto wait_until = std::chrono::steady_clock::now() + options.plan_wait;
    bool said = false;
    while (!reply.ok() && reply.status().code() == EAGAIN && g_stop_signal.load() == 0 &&
           std::chrono::steady_clock::now() < wait_until) {
      if (!said && (options.verbose || rank == 0)) {
        fprintf(stderr, "clairfs peer: rank %d: %s: waiting for the mount to infer its plan\n",
                rank, mountpoint.c_str());
        said = true;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      reply = link->Call({{"op", "hello"}, {"protocol", 1}});
    }
    if (!reply.ok()) {
      mine = FactsFromError(SanitizeText(mountpoint) + ": " + reply.status().message(), host);
    } else {
      hello = reply->body;
      mine = FactsFromHello(hello, host);
    }
  }
  std::vector<NodeFacts> all(static_cast<size_t>(size));
  MPI_Allgather(&mine, sizeof(NodeFacts), MPI_BYTE, all.data(), sizeof(NodeFacts), MPI_BYTE, comm);
  auto shape = CheckJob(all);
  if (!shape.ok()) {
    if (rank == 0) fprintf(stderr, "clairfs peer: %s\n", shape.status().message().c_str());
    return 1;
  }
  // The same placement on every rank, from the job's plan alone.
  auto spec = ParsePlanSpec(all[0].global_spec);
  if (!spec.ok()) {
    if (rank == 0) fprintf(stderr, "clairfs peer: %s\n", spec.status().message().c_str());
    return 1;
  }
  Result<Placement> placement = Status::Invalid("no placement");
  if (shape->distributed) {
    auto plan = Plan::Create(*spec, all[0].files);
    if (!plan.ok()) {
      if (rank == 0) fprintf(stderr, "clairfs peer: %s\n", plan.status().message().c_str());
      return 1;
    }
    auto first = (*plan)->Epoch(spec->start_epoch);
    if (!first.ok()) {
      if (rank == 0) fprintf(stderr, "clairfs peer: %s\n", first.status().message().c_str());
      return 1;
    }
    placement = Placement::ByFirstReader(**first, shape->node_of_rank, static_cast<uint32_t>(size),
                                         all[0].files);
  } else {
    placement = Placement::ByHash(static_cast<uint32_t>(size), all[0].files);
  }
  if (!placement.ok()) {
    if (rank == 0) fprintf(stderr, "clairfs peer: %s\n", placement.status().message().c_str());
    return 1;
  }
  const uint64_t capacity = all[static_cast<size_t>(rank)].capacity;
  const uint64_t hold_budget = HoldBudget(capacity);
  json own = json::array();
  for (uint64_t f : placement->HomeFiles(static_cast<uint32_t>(rank))) own.push_back(f);
  auto attached = link->Call({{"op", "attach"},
                              {"plan", hello["plan"]},
                              {"own", own},
                              {"deadline_ms", options.deadline.count()},
                              {"hold_budget", hold_budget}});
  if (!attached.ok()) {
    fprintf(stderr, "clairfs peer: rank %d: %s: %s\n", rank, mountpoint.c_str(),
            attached.status().message().c_str());
    return 1;
  }
  if (options.verbose || rank == 0) {
    fprintf(stderr, "clairfs peer: rank %d of %d on %s: %zu home files, %llu held\n", rank, size,
            mountpoint.c_str(), own.size(),
            static_cast<unsigned long long>(attached->body.value("held", uint64_t{0})));
  }
  Agent agent(options, comm, std::move(*link), hello, std::move(*placement));
  return agent.Run();
}

}  // namespace clairfs::peer
