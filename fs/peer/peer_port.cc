// PeerPort (see peer_port.h).
#include "fs/peer/peer_port.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <unordered_set>
#include <vector>

#include "cache/resolve_as.h"
#include "fs/control/caller_scope.h"
#include "fs/control/status_report.h"
#include "fs/peer/peer_protocol.h"
#include "planner/base/log.h"
#include "planner/base/name_escape.h"
#include "planner/placement/placement.h"

namespace clairfs {
namespace {

using json = nlohmann::json;
constexpr auto kTick = std::chrono::milliseconds(100);
constexpr int kSendTimeoutMs = 10000;
constexpr size_t kMaxWantsPerRequest = 4096;
constexpr size_t kMaxReportBytes = 64 << 10;

// The mean of `count` durations summing to `total_ns`, in ms (0 when there are none).
double MeanMs(uint64_t total_ns, uint64_t count) {
  return count == 0 ? 0.0 : static_cast<double>(total_ns) / 1e6 / static_cast<double>(count);
}

std::string ErrorLine(const Status& st) {
  json reply = {{"ok", false}, {"errno", st.code()}, {"error", SanitizeText(st.message())}};
  return DumpReply(reply) + "\n";
}

// Sends `line` whole, with `fd` (if >= 0) attached to its first bytes.
bool SendLine(int sock, const std::string& line, int fd) {
  size_t sent = 0;
  bool fd_sent = fd < 0;
  while (sent < line.size()) {
    struct iovec iov = {const_cast<char*>(line.data() + sent), line.size() - sent};
    struct msghdr msg {};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    alignas(struct cmsghdr) char control[CMSG_SPACE(sizeof(int))];
    if (!fd_sent) {
      std::memset(control, 0, sizeof(control));
      msg.msg_control = control;
      msg.msg_controllen = sizeof(control);
      struct cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
      cmsg->cmsg_level = SOL_SOCKET;
      cmsg->cmsg_type = SCM_RIGHTS;
      cmsg->cmsg_len = CMSG_LEN(sizeof(int));
      std::memcpy(CMSG_DATA(cmsg), &fd, sizeof(int));
    }
    ssize_t n = sendmsg(sock, &msg, MSG_NOSIGNAL);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    fd_sent = true;
    sent += static_cast<size_t>(n);
  }
  return true;
}

Result<uint64_t> UintField(const json& request, const char* key, uint64_t max) {
  auto it = request.find(key);
  if (it == request.end() || !it->is_number_unsigned() || it->get<uint64_t>() > max) {
    return Status::Invalid(std::string("field \"") + key + "\" must be an integer from 0 to " +
                           std::to_string(max));
  }
  return it->get<uint64_t>();
}

Result<CopySeal> SealField(const json& request) {
  CopySeal seal;
  for (auto [key, out] : {std::pair<const char*, Sha256*>{"digest", &seal.digest},
                          std::pair<const char*, Sha256*>{"auth", &seal.auth}}) {
    auto it = request.find(key);
    if (it == request.end() || !it->is_string()) {
      return Status::Invalid(std::string("field \"") + key + "\" must be 64 hex digits");
    }
    auto parsed = Sha256FromHex(it->get<std::string>());
    if (!parsed.ok()) return parsed.status().WithContext(key);
    *out = *parsed;
  }
  return seal;
}

}  // namespace

PeerPort::PeerPort(PeerPortSources sources) : s_(std::move(sources)) {
  if (s_.key) {
    deliverer_ = std::make_unique<PeerDeliverer>(
        s_.store, s_.manifest, s_.key,
        [this](const std::string& path, const Status& status, uint64_t bytes) {
          OnDelivery(path, status, bytes);
        });
  }
}

PeerPort::~PeerPort() {
  Stop();
  deliverer_.reset();
}

Status PeerPort::Start() {
  struct sockaddr_un addr {};
  addr.sun_family = AF_UNIX;
  if (s_.socket_path.size() >= sizeof(addr.sun_path)) {
    return Status::Error(ENAMETOOLONG,
                         "peer socket path too long: " + SanitizeText(s_.socket_path));
  }
  std::memcpy(addr.sun_path, s_.socket_path.data(), s_.socket_path.size());
  listen_fd_ = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) return Status::FromErrno(errno, "peer socket");
  auto failed = [this](Status why) {
    close(listen_fd_);
    listen_fd_ = -1;
    return why;
  };
  unlink(s_.socket_path.c_str());
  if (bind(listen_fd_, reinterpret_cast<struct sockaddr*>(&addr), sizeof(addr)) != 0) {
    return failed(Status::FromErrno(errno, "bind " + SanitizeText(s_.socket_path)));
  }
  // Anyone may connect; who may attach is decided by the caller's credentials.
  chmod(s_.socket_path.c_str(), 0666);
  if (listen(listen_fd_, 8) != 0) {
    return failed(Status::FromErrno(errno, "listen on the peer socket"));
  }
  if (pipe2(wake_pipe_, O_CLOEXEC) != 0) return failed(Status::FromErrno(errno, "pipe"));
  listening_.store(true);
  thread_ = std::thread([this] { Loop(); });
  return Status::Ok();
}

void PeerPort::Stop() {
  if (stopping_.exchange(true)) return;
  listening_.store(false);
  if (wake_pipe_[1] >= 0) {
    ssize_t ignored = write(wake_pipe_[1], "x", 1);
    (void)ignored;
  }
  if (thread_.joinable()) thread_.join();
  if (listen_fd_ >= 0) {
    close(listen_fd_);
    unlink(s_.socket_path.c_str());
    listen_fd_ = -1;
  }
  for (int& fd : wake_pipe_) {
    if (fd >= 0) close(fd);
    fd = -1;
  }
}

void PeerPort::Loop() {
  int session = -1;
  PeerCredentials creds;
  std::string buffer;
  auto end_session = [&](const char* why) {
    if (session < 0) return;
    close(session);
    session = -1;
    buffer.clear();
    Detach(why);
  };
  while (!stopping_.load()) {
    struct pollfd fds[3] = {
        {listen_fd_, POLLIN, 0}, {wake_pipe_[0], POLLIN, 0}, {session, POLLIN, 0}};
    int rc = poll(fds, session >= 0 ? 3 : 2, static_cast<int>(kTick.count()));
    if (rc < 0 && errno != EINTR) break;
    if (stopping_.load()) break;
    {
      std::shared_ptr<PlanTracker> tracker;
      bool attached = false;
      {
        std::lock_guard<std::mutex> lock(mu_);
        tracker = tracker_;
        attached = attached_;
      }
      if (attached) {
        s_.queue->Expire();
        deliverer_->Sweep();
      }
      if (session >= 0 && tracker != nullptr && s_.plan->tracker() != tracker) {
        end_session("the mount's plan changed");
        continue;
      }
    }
    if (rc <= 0) continue;
    if (fds[0].revents & POLLIN) {
      int fd = accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd >= 0) {
        const PeerCredentials peer = ControlServer::PeerOf(fd);
        const CallerScope scope = ScopeOf(peer, s_.owner_uid, s_.allow_other);
        std::string refusal;
        if (session >= 0) {
          refusal = ErrorLine(Status::Error(EBUSY, "another peer agent is attached to this mount"));
        } else if (scope == CallerScope::kNothing) {
          refusal = ErrorLine(PrivateMountError(s_.owner_uid));
        }
        if (!refusal.empty()) {
          (void)SendLine(fd, refusal, -1);
          close(fd);
        } else {
          struct timeval tv = {kSendTimeoutMs / 1000, 0};
          setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
          session = fd;
          creds = peer;
        }
      }
    }
    if (session >= 0 && (fds[2].revents & (POLLIN | POLLHUP | POLLERR))) {
      char chunk[1 << 16];
      ssize_t n = recv(session, chunk, sizeof(chunk), MSG_DONTWAIT);
      if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
      if (n <= 0) {
        end_session(n == 0 ? "the agent closed its connection" : "the agent's connection failed");
        continue;
      }
      buffer.append(chunk, static_cast<size_t>(n));
      size_t newline;
      while (session >= 0 && (newline = buffer.find('\n')) != std::string::npos) {
        const std::string line = buffer.substr(0, newline);
        buffer.erase(0, newline + 1);
        int fd = -1;
        bool bye = false;
        const std::string reply = Handle(line, creds, &fd, &bye);
        const bool sent = SendLine(session, reply, fd);
        if (fd >= 0) close(fd);
        if (!sent) end_session("the agent does not read its replies");
        if (bye && session >= 0) {
          close(session);
          session = -1;
          buffer.clear();
        }
      }
      if (session >= 0 && buffer.size() > kMaxPeerRequestBytes) {
        (void)SendLine(session, ErrorLine(Status::Invalid("request line too long")), -1);
        end_session("the agent sent an oversized request");
      }
    }
  }
  end_session("the mount is stopping");
}

void PeerPort::Detach(const char* why) {
  bool was_attached = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    was_attached = attached_;
    attached_ = false;
    tracker_.reset();
    held_files_ = held_bytes_ = 0;
    last_detach_ = why;
  }
  if (was_attached) {
    s_.queue->Detach();
    s_.store->SetHolds(nullptr);
    if (deliverer_) deliverer_->AbandonAll();
    Log(LogLevel::kInfo, "peer agent detached: %s; staging from the PFS alone", why);
  }
}

std::string PeerPort::Handle(const std::string& line, const PeerCredentials& peer, int* fd_out,
                             bool* bye) {
  *fd_out = -1;
  if (bye != nullptr) *bye = false;
  try {
    json request = json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (!request.is_object() || !request.contains("op") || !request["op"].is_string()) {
      return ErrorLine(Status::Invalid("a request is a JSON object with a string \"op\""));
    }
    if (bye != nullptr) *bye = request["op"] == "bye";
    auto reply = Dispatch(request, peer, fd_out);
    if (!reply.ok()) {
      if (*fd_out >= 0) close(*fd_out);
      *fd_out = -1;
      return ErrorLine(reply.status());
    }
    json out = std::move(*reply);
    out["ok"] = true;
    if (*fd_out >= 0) out["fd"] = true;
    return DumpReply(out) + "\n";
  } catch (const std::exception& e) {
    if (*fd_out >= 0) close(*fd_out);
    *fd_out = -1;
    Log(LogLevel::kWarn, "peer socket: a request failed: %s", SanitizeText(e.what()).c_str());
    return ErrorLine(Status::Error(EIO, std::string("internal error: ") + e.what()));
  }
}

Result<json> PeerPort::Dispatch(const json& request, const PeerCredentials& peer, int* fd_out) {
  const std::string op = request["op"].get<std::string>();
  if (op == "hello") return Hello(request, peer);
  if (op == "bye") {
    Detach("the agent said bye");
    return json::object();
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (tracker_ == nullptr) return Status::Invalid("say hello first");
  }
  if (op == "attach") return Attach(request);
  if (op == "report") {
    auto it = request.find("agent");
    if (it == request.end() || !it->is_object() || it->dump().size() > kMaxReportBytes) {
      return Status::Invalid("field \"agent\" must be an object of at most 64 KiB");
    }
    std::lock_guard<std::mutex> lock(mu_);
    report_ = SanitizedStrings(*it);
    return json::object();
  }
  if (op == "progress") {
    std::shared_ptr<PlanTracker> tracker;
    {
      std::lock_guard<std::mutex> lock(mu_);
      tracker = tracker_;
    }
    return json{{"finished", tracker->Finished()}, {"epoch", tracker->StatusJson()["epoch"]}};
  }
  if (op == "wants") {
    if (!s_.queue->attached()) return Status::Invalid("attach first");
    auto max = UintField(request, "max", kMaxWantsPerRequest);
    if (!max.ok()) return max.status();
    std::shared_ptr<PlanTracker> tracker;
    {
      std::lock_guard<std::mutex> lock(mu_);
      tracker = tracker_;
    }
    json wants = json::array();
    for (const PeerWant& want : s_.queue->TakeWants(*max)) {
      auto file = tracker->IndexOf(want.path);
      if (!file) {
        s_.queue->Failed(want.path);  // not a file of this plan: the PFS's
        continue;
      }
      wants.push_back({{"file", *file}, {"size", want.identity.size}});
    }
    return json{{"wants", wants}};
  }
  auto path = PathOf(request);
  if (!path.ok()) return path.status();
  if (op == "fail") {
    s_.queue->Failed(*path);
    return json::object();
  }
  if (op == "serve") return Serve(request, peer, fd_out);
  if (op == "receive") {
    auto fd = deliverer_->Open(*path);
    if (!fd.ok()) return fd.status();
    *fd_out = *fd;
    return json{{"size", s_.manifest->GetByPath(*path).value()->attr.size}};
  }
  if (op == "deliver") {
    auto seal = SealField(request);
    if (!seal.ok()) return seal.status();
    CLAIRFS_RETURN_IF_ERROR(deliverer_->Deliver(*path, *seal));
    return json::object();
  }
  if (op == "abandon") {
    deliverer_->Abandon(*path);
    s_.queue->Failed(*path);
    return json::object();
  }
  if (op == "stage") {
    auto node = ResolvePath(*s_.manifest, *path);
    if (!node.ok()) return node.status();
    s_.queue->Prefetch(*path, node->attr.identity(), StagePriority::kHigh);
    return json::object();
  }
  return Status::Invalid("unknown op \"" + SanitizeText(op) + "\"");
}

Result<json> PeerPort::Hello(const json& request, const PeerCredentials& peer) {
  auto protocol = UintField(request, "protocol", 1 << 20);
  if (!protocol.ok()) return protocol.status();
  if (*protocol != static_cast<uint64_t>(kPeerProtocolVersion)) {
    return Status::Error(EPROTO, "peer protocol " + std::to_string(*protocol) +
                                     " asked, this daemon speaks " +
                                     std::to_string(kPeerProtocolVersion));
  }
  if (!s_.key) {
    return Status::Error(EPERM, "this mount has no peer key, so it takes no peer agent: " +
                                    s_.key_problem + " (docs/ADMIN.md, \"The peer key\")");
  }
  std::shared_ptr<PlanTracker> tracker = s_.plan->tracker();
  if ((tracker == nullptr || tracker->dropped()) && s_.plan->Inferring()) {
    return Status::Error(
        EAGAIN,
        "this mount infers its plan (--plan auto) and has not adopted one yet: "
        "the peer tier places files by the plan (clairfs status shows the search)");
  }
  if (tracker == nullptr || tracker->dropped()) {
    return Status::Error(ENOENT,
                         "this mount has no active plan: the peer tier places files by the plan "
                         "(clairfs mount --plan, or clairfs plan set)");
  }
  const PlanTrackerConfig& config = tracker->config();
  if (config.spec.kind == SamplerKind::kList) {
    return Status::Error(ENOTSUP, "the peer tier needs a sampler plan, not a list: plan");
  }
  auto digest = ManifestDigest();
  if (!digest.ok()) return digest.status();
  {
    std::lock_guard<std::mutex> lock(mu_);
    tracker_ = tracker;
    agent_ = peer;
  }
  const char* layout = config.layout.kind == LayoutKind::kImageFolder ? "imagefolder"
                       : config.layout.kind == LayoutKind::kSorted    ? "sorted"
                                                                      : "list";
  return json{{"protocol", kPeerProtocolVersion},
              {"manifest_digest", *digest},
              {"key_id", s_.key->KeyId()},
              {"spec", FormatPlanSpec(config.spec)},
              {"global_spec", FormatJobPlanSpec(config.spec)},
              {"world", config.spec.world},
              {"first_rank", config.spec.first_rank},
              {"last_rank", config.spec.last_rank},
              {"layout", layout},
              {"layout_root", EscapeName(config.layout.root)},
              {"files", tracker->num_files()},
              {"capacity", s_.store->capacity()},
              {"plan", reinterpret_cast<uintptr_t>(tracker.get())}};
}

Result<json> PeerPort::Attach(const json& request) {
  std::shared_ptr<PlanTracker> tracker;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tracker = tracker_;
  }
  auto deadline = UintField(request, "deadline_ms", 3'600'000);
  if (!deadline.ok()) return deadline.status();
  if (*deadline < 10) return Status::Invalid("deadline_ms below 10");
  auto budget = UintField(request, "hold_budget", UINT64_MAX);
  if (!budget.ok()) return budget.status();
  auto own = request.find("own");
  if (own == request.end() || !own->is_array())
    return Status::Invalid("field \"own\" must be an array");
  std::vector<uint64_t> files;
  files.reserve(own->size());
  for (const json& f : *own) {
    if (!f.is_number_unsigned() || f.get<uint64_t>() >= tracker->num_files()) {
      return Status::Invalid("field \"own\" holds a file number outside the plan");
    }
    files.push_back(f.get<uint64_t>());
  }
  std::unordered_set<std::string> own_paths;
  for (uint64_t f : files) own_paths.insert(tracker->PathOf(static_cast<uint32_t>(f)));
  // Home files held in the agent's order while their estimated blocks fit the budget.
  auto size_of = [&](uint64_t f) {
    auto node = s_.manifest->GetByPath(tracker->PathOf(static_cast<uint32_t>(f)));
    return node.ok() && node->has_value() ? ContentStore::EstimateAlloc((*node)->attr.size)
                                          : uint64_t{0};
  };
  std::vector<uint64_t> held = HoldWithin(files, size_of, *budget);
  auto holds = std::make_shared<std::unordered_set<std::string>>();
  uint64_t held_bytes = 0;
  for (uint64_t f : held) {
    holds->insert(tracker->PathOf(static_cast<uint32_t>(f)));
    held_bytes += size_of(f);
  }
  s_.store->SetHolds(holds);
  s_.queue->Attach(std::move(own_paths), std::chrono::milliseconds(*deadline), held_bytes);
  {
    std::lock_guard<std::mutex> lock(mu_);
    attached_ = true;
    attached_at_ = std::chrono::system_clock::now();
    held_files_ = held.size();
    held_bytes_ = held_bytes;
    ++agents_attached_;
  }
  Log(LogLevel::kInfo,
      "peer agent attached (pid %d, uid %u): %zu home files, %zu held (%llu bytes), deadline %llu "
      "ms",
      static_cast<int>(agent_.pid), static_cast<unsigned>(agent_.uid), files.size(), held.size(),
      static_cast<unsigned long long>(held_bytes), static_cast<unsigned long long>(*deadline));
  return json{{"held", held.size()}, {"held_bytes", held_bytes}};
}

Result<json> PeerPort::Serve(const json& request, const PeerCredentials& peer, int* fd_out) {
  auto path = PathOf(request);
  if (!path.ok()) return path.status();
  auto listed = ResolvePath(*s_.manifest, *path);
  if (!listed.ok()) return listed.status();
  if (!listed->attr.is_reg()) return Status::Error(ENOENT, ShownPath(*path) + " is not a file");
  if (ScopeOf(peer, s_.owner_uid, s_.allow_other) != CallerScope::kEverything) {
    // Only what the agent's user could read through the mount.
    const Caller caller = CallerOf(peer);
    auto reachable = ResolveAs(*s_.manifest, *path, caller);
    if (!reachable.ok()) return reachable.status();
    if (!MayAccess(reachable->attr, caller, R_OK)) {
      return Status::Error(EACCES, ShownPath(*path) + ": permission denied");
    }
  }
  const FileIdentity identity = listed->attr.identity();
  auto copy = s_.store->Find(*path, /*touch=*/false);
  if (!copy) return Status::Error(ENOENT, ShownPath(*path) + " is not staged here");
  if (!(copy->identity == identity)) {
    return Status::Error(ESTALE, ShownPath(*path) + ": the copy here is of another version");
  }
  if (!copy->seal) {
    return Status::Error(ENOENT, ShownPath(*path) +
                                     ": the copy here has no seal (staged before "
                                     "the mount had a peer key)");
  }
  int fd = open(copy->data_path.c_str(), O_RDONLY | O_CLOEXEC | O_NOATIME);
  if (fd < 0 && errno == EPERM) fd = open(copy->data_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::Error(ENOENT, ShownPath(*path) + " left the cache");
  // Data names are never reused, so an open that succeeded found the indexed copy (perhaps
  // being evicted now: its bytes stay whole while open). Its size is checked all the same.
  struct stat st {};
  if (fstat(fd, &st) != 0 || static_cast<uint64_t>(st.st_size) != identity.size) {
    close(fd);
    return Status::Error(ESTALE, ShownPath(*path) + ": the copy is not of the listed size");
  }
  *fd_out = fd;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++copies_served_;
    bytes_served_ += identity.size;
  }
  return json{{"size", identity.size},
              {"digest", HexOf(copy->seal->digest)},
              {"auth", HexOf(copy->seal->auth)}};
}

Result<std::string> PeerPort::PathOf(const json& request) {
  std::shared_ptr<PlanTracker> tracker;
  {
    std::lock_guard<std::mutex> lock(mu_);
    tracker = tracker_;
  }
  auto plan = UintField(request, "plan", UINTPTR_MAX);
  if (!plan.ok()) return plan.status();
  if (*plan != reinterpret_cast<uintptr_t>(tracker.get()) || s_.plan->tracker() != tracker) {
    return Status::Error(ESTALE, "the mount's plan changed");
  }
  auto file = UintField(request, "file", UINT32_MAX);
  if (!file.ok()) return file.status();
  if (*file >= tracker->num_files()) return Status::Invalid("file number outside the plan");
  return tracker->PathOf(static_cast<uint32_t>(*file));
}

Result<std::string> PeerPort::ManifestDigest() {
  Sha256Stream digest;
  Status listed = s_.manifest->ForEachFile([&](const std::string& path, const NodeAttr& attr) {
    const FileIdentity id = attr.identity();
    const uint64_t fields[5] = {path.size(), id.size, static_cast<uint64_t>(id.mtime_ns),
                                static_cast<uint64_t>(id.ctime_ns), id.ino};
    digest.Update(&fields[0], sizeof(fields[0]));
    digest.Update(path.data(), path.size());
    digest.Update(&fields[1], sizeof(fields) - sizeof(fields[0]));
    return true;
  });
  if (!listed.ok()) return listed;
  return HexOf(digest.Finish());
}

void PeerPort::OnDelivery(const std::string& path, const Status& status, uint64_t bytes) {
  if (status.ok()) {
    s_.queue->Delivered(path, bytes);
  } else if (status.code() != EEXIST) {
    s_.queue->Failed(path);  // staged from the PFS
  }
}

json PeerPort::StatusJson() {
  json j;
  std::lock_guard<std::mutex> lock(mu_);
  j["key"] = s_.key ? json("present") : json(SanitizeText(s_.key_problem));
  j["socket"] = listening_.load() ? json(EscapeName(s_.socket_path)) : json(nullptr);
  j["attached"] = attached_;
  j["agents_attached"] = agents_attached_;
  j["last_detach"] = last_detach_;
  if (attached_) {
    j["agent_pid"] = agent_.pid;
    j["agent_uid"] = agent_.uid;
    j["attached_at"] =
        std::chrono::duration_cast<std::chrono::seconds>(attached_at_.time_since_epoch()).count();
    j["held_files"] = held_files_;
    j["held_bytes"] = held_bytes_;
  }
  j["agent"] = report_;
  j["copies_served"] = copies_served_;
  j["bytes_served"] = bytes_served_;
  const PeerQueueStats q = s_.queue->peer_stats();
  j["wants"] = {{"offered", q.wants},
                {"delivered", q.delivered},
                {"failed", q.failed},
                {"expired", q.expired},
                {"waiting", q.waiting},
                {"taken", q.taken},
                {"withdrawn", q.withdrawn},
                {"kept_in_flight", q.kept_in_flight},
                {"delivery_ms_mean", MeanMs(q.delivery_ns, q.delivered_timed)},
                {"failure_ms_mean", MeanMs(q.failure_ns, q.failed_timed)}};
  if (deliverer_) {
    const PeerDeliveryStats d = deliverer_->stats();
    j["received"] = {{"files", d.published},
                     {"bytes", d.bytes_published},
                     {"rejected", d.rejected},
                     {"dropped", d.dropped},
                     {"open", d.open}};
    if (d.published > 0) {
      const double n = static_cast<double>(d.published) * 1e6;
      j["received"]["ms_mean"] = {{"filling", static_cast<double>(d.filling_ns) / n},
                                  {"queued", static_cast<double>(d.queued_ns) / n},
                                  {"publishing", static_cast<double>(d.publishing_ns) / n}};
    }
  }
  return j;
}

}  // namespace clairfs
