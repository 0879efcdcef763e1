// FUSE requests over io_uring for the daemon (see fuse_uring_transport.h).
#include "fs/fuse/fuse_uring_transport.h"

#include <liburing.h>
#include <linux/fuse.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <sys/eventfd.h>
#include <sys/sysinfo.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "fs/fuse/fuse_uring_abi.h"
#include "fs/fuse/fuse_uring_request.h"
#include "fs/fuse/fuse_uring_sqe.h"
#include "planner/base/log.h"

namespace clairfs {
namespace {

constexpr uint32_t kOpcodeInit = 26;       // FUSE_INIT
constexpr uint32_t kDefaultMaxPages = 32;  // FUSE_DEFAULT_MAX_PAGES_PER_REQ, without FUSE_MAX_PAGES
constexpr uint32_t kFlagMaxPages = 1u << 22;  // FUSE_MAX_PAGES
// user_data of the poll on the stop eventfd (entry commands carry 0).
constexpr uint64_t kStopTag = 1;

// The ring request the calling thread is serving (set by its ring thread around Dispatch).
struct CurrentRingRequest {
  fuse_abi::FuseUringReqHeader* header;
  char* payload;
  size_t payload_cap;
  uint64_t unique;
  bool answered;
};
thread_local CurrentRingRequest* tl_current = nullptr;

struct RingEntry {
  fuse_abi::FuseUringReqHeader header;
  std::unique_ptr<char[]> payload;
  struct iovec iov[2];
};

void PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  // An offline CPU cannot be pinned to; its queue receives no requests anyway.
  (void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// Answers the entry's request with `error` and no arguments.
void StoreErrorReply(RingEntry* e, uint64_t unique, int error) {
  struct fuse_out_header oh;
  oh.len = sizeof(oh);
  oh.error = -error;
  oh.unique = unique;
  std::memcpy(e->header.in_out, &oh, sizeof(oh));
  e->header.ring_ent_in_out.payload_sz = 0;
}

}  // namespace

Result<FuseUringMode> ParseFuseUringMode(const std::string& text) {
  if (text == "auto") return FuseUringMode::kAuto;
  if (text == "on") return FuseUringMode::kOn;
  if (text == "off") return FuseUringMode::kOff;
  return Status::Invalid("fuse_uring=" + text + ": expected auto, on or off");
}

void FuseTransportState::Set(bool uring, std::string reason, int queues, int threads_per_queue) {
  std::lock_guard<std::mutex> lock(mu_);
  uring_ = uring;
  reason_ = std::move(reason);
  queues_ = queues;
  threads_per_queue_ = threads_per_queue;
}
bool FuseTransportState::uring() const {
  std::lock_guard<std::mutex> lock(mu_);
  return uring_;
}
std::string FuseTransportState::reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reason_;
}
int FuseTransportState::queues() const {
  std::lock_guard<std::mutex> lock(mu_);
  return queues_;
}
int FuseTransportState::threads_per_queue() const {
  std::lock_guard<std::mutex> lock(mu_);
  return threads_per_queue_;
}

FuseUringTransport::FuseUringTransport(FuseUringMode mode, FuseTransportState* state)
    : mode_(mode), state_(state) {}

void FuseUringTransport::NoteDevRequest(const void* buf, ssize_t n) {
  if (init_seen_.load(std::memory_order_relaxed)) return;
  if (n < static_cast<ssize_t>(sizeof(struct fuse_in_header) + 20)) return;
  struct fuse_in_header in;
  std::memcpy(&in, buf, sizeof(in));
  if (in.opcode != kOpcodeInit) return;
  // fuse_init_in: major, minor, max_readahead, flags (offset 12), flags2 (offset 16).
  const char* arg = static_cast<const char*>(buf) + sizeof(in);
  uint32_t flags, flags2;
  std::memcpy(&flags, arg + 12, sizeof(flags));
  std::memcpy(&flags2, arg + 16, sizeof(flags2));
  const bool offered =
      (flags & fuse_abi::kInitExt) != 0 && (flags2 & fuse_abi::kFlags2OverIoUring) != 0;
  offered_.store(offered, std::memory_order_release);
  init_unique_.store(in.unique);
  init_seen_.store(true);
}

void FuseUringTransport::PatchInitReply(struct iovec* iov, int count) {
  if (!init_seen_.load() || init_patched_.load() || count < 2) return;
  if (iov[0].iov_len < sizeof(struct fuse_out_header) ||
      iov[1].iov_len < offsetof(struct fuse_init_out, flags2) + sizeof(uint32_t)) {
    return;
  }
  auto* oh = static_cast<struct fuse_out_header*>(iov[0].iov_base);
  if (oh->unique != init_unique_.load() || oh->error != 0) return;
  init_patched_.store(true);
  auto* out = static_cast<struct fuse_init_out*>(iov[1].iov_base);
  const uint32_t max_pages = (out->flags & kFlagMaxPages) ? out->max_pages : kDefaultMaxPages;
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  payload_size_.store(static_cast<uint32_t>(
      std::max<uint64_t>({fuse_abi::kUringMinPayload, out->max_write, max_pages * page})));
  if (mode_ == FuseUringMode::kOff || !offered()) return;
  out->flags |= fuse_abi::kInitExt;
  out->flags2 |= fuse_abi::kFlags2OverIoUring;
  accepted_.store(true, std::memory_order_release);
}

Status FuseUringTransport::Start(int fuse_fd, Dispatch dispatch, int threads_per_queue) {
  if (mode_ == FuseUringMode::kOff) {
    state_->Set(false, "disabled (--fuse-uring off)", 0, 0);
    return Status::Ok();
  }
  if (!accepted()) {
    std::string reason =
        !init_seen_.load()
            ? "INIT was not seen by the io hooks"
            : "the kernel does not offer FUSE_OVER_IO_URING (needs Linux >= 6.14 and the fuse "
              "module parameter enable_uring=Y)";
    state_->Set(false, reason, 0, 0);
    return Status::Error(EOPNOTSUPP, reason);
  }
  fuse_fd_ = fuse_fd;
  dispatch_ = std::move(dispatch);
  const int queues = get_nprocs_conf();  // the kernel makes one queue per possible CPU
  const int threads = queues * threads_per_queue;
  registered_ = std::vector<std::atomic<int>>(static_cast<size_t>(threads));
  stop_.store(false);
  stop_fd_ = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (stop_fd_ < 0) {
    Status st = Status::FromErrno(errno, "eventfd for the ring threads");
    state_->Set(false, st.message(), 0, 0);
    return st;
  }
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, i, threads_per_queue] { Run(i, i / threads_per_queue); });
  }
  // Registration is quick: the commands are queued in the kernel during io_uring_enter.
  Status result = Status::Ok();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int i = 0; i < threads && result.ok(); ++i) {
    while (registered_[i].load() == 0 && std::chrono::steady_clock::now() < deadline) {
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    const int r = registered_[i].load();
    if (r == 0) {
      result = Status::Error(ETIMEDOUT, "ring thread " + std::to_string(i) + " did not register");
    } else if (r < 0) {
      result = Status::FromErrno(
          -r, "registering ring entries of queue " + std::to_string(i / threads_per_queue));
    }
  }
  if (!result.ok()) {
    // The kernel dropped the ring for this connection at the failed REGISTER: requests use
    // /dev/fuse. Entries registered by other threads are cancelled when their rings close.
    Stop();
    state_->Set(false, "io_uring registration failed: " + result.message(), 0, 0);
    return result;
  }
  state_->Set(true, "requests arrive over io_uring, one queue per CPU", queues, threads_per_queue);
  Log(LogLevel::kInfo, "fuse transport: io_uring (%d queues x %d threads, %.1f MiB of buffers)",
      queues, threads_per_queue,
      static_cast<double>(threads) * payload_size_.load() / (1024.0 * 1024.0));
  return Status::Ok();
}

void FuseUringTransport::Stop() {
  stop_.store(true);
  if (stop_fd_ >= 0) {
    const uint64_t one = 1;
    (void)!write(stop_fd_, &one, sizeof(one));  // completes every ring's poll on it
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
  if (stop_fd_ >= 0) close(stop_fd_);
  stop_fd_ = -1;
}

bool FuseUringTransport::TryReply(const struct iovec* iov, int count, ssize_t* written) {
  CurrentRingRequest* cur = tl_current;
  if (cur == nullptr || cur->answered || count < 1 ||
      iov[0].iov_len < sizeof(struct fuse_out_header)) {
    return false;
  }
  const auto* oh = static_cast<const struct fuse_out_header*>(iov[0].iov_base);
  if (oh->unique != cur->unique) return false;
  auto n = DevReplyToRing(iov, count, cur->header, cur->payload, cur->payload_cap);
  if (!n.ok()) {
    // Left unanswered: the ring thread answers EIO.
    *written = -1;
    errno = n.status().code();
    return true;
  }
  cur->answered = true;
  *written = static_cast<ssize_t>(*n);
  return true;
}

void FuseUringTransport::Run(int index, int qid) {
  pthread_setname_np(pthread_self(), "clairfs-ring");
  PinToCpu(qid);
  struct io_uring ring;
  struct io_uring_params params;
  std::memset(&params, 0, sizeof(params));
  params.flags = IORING_SETUP_SQE128 | IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  int rc = io_uring_queue_init_params(4, &ring, &params);
  if (rc < 0) {
    registered_[index].store(rc);
    return;
  }
  const uint32_t payload_size = payload_size_.load();
  RingEntry entry;
  std::memset(&entry.header, 0, sizeof(entry.header));
  entry.payload.reset(new char[payload_size]);
  entry.iov[0] = {&entry.header, sizeof(entry.header)};
  entry.iov[1] = {entry.payload.get(), payload_size};
  const auto q = static_cast<uint16_t>(qid);
  PrepareFuseUringCommand(GetSqe(&ring), fuse_fd_, fuse_abi::kFuseUringCmdRegister, entry.iov, q,
                          0);
  rc = io_uring_submit(&ring);
  // A refused REGISTER completes at once with an error.
  struct io_uring_cqe* cqe = nullptr;
  if (rc >= 0 && io_uring_peek_cqe(&ring, &cqe) == 0 && cqe->res < 0) rc = cqe->res;
  registered_[index].store(rc < 0 ? rc : 1);
  if (rc < 0) {
    io_uring_queue_exit(&ring);
    return;
  }
  // Stop() makes the stop eventfd readable, which completes this poll and wakes the thread.
  struct io_uring_sqe* poll = GetSqe(&ring);
  io_uring_prep_poll_add(poll, stop_fd_, POLLIN);
  io_uring_sqe_set_data64(poll, kStopTag);
  std::vector<char> request;
  for (;;) {
    rc = io_uring_submit_and_wait(&ring, 1);
    if (stop_.load()) break;
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) break;
    if (io_uring_peek_cqe(&ring, &cqe) != 0) continue;
    if (cqe->user_data == kStopTag) break;
    const int res = cqe->res;
    io_uring_cqe_seen(&ring, cqe);
    if (res < 0) {
      // ENOTCONN / ECONNABORTED at unmount. Anything else is a refused command: the entry is
      // gone, and once a queue has none left its requests wait. Kernels before the "once
      // enabled on a connection, it can't be disabled" fix refuse every command (EOPNOTSUPP)
      // after the admin sets enable_uring back to N while ring mounts are live.
      if (res != -ENOTCONN && res != -ECONNABORTED) {
        Log(LogLevel::kError,
            "fuse transport: the kernel refused a ring command on queue %d (%s); this thread "
            "stops serving (was enable_uring set back to N while mounted?)",
            qid, std::strerror(-res));
      }
      break;
    }
    struct fuse_in_header in;
    std::memcpy(&in, entry.header.in_out, sizeof(in));
    Status rebuilt =
        RingRequestToDevLayout(entry.header, entry.payload.get(), payload_size, &request);
    CurrentRingRequest cur{&entry.header, entry.payload.get(), payload_size, in.unique, false};
    if (rebuilt.ok()) {
      state_->AddRingRequest();
      tl_current = &cur;
      dispatch_(request.data(), request.size());
      tl_current = nullptr;
    }
    if (!cur.answered) {
      state_->AddRingUnanswered();
      std::call_once(unanswered_logged_, [&] {
        Log(LogLevel::kWarn, "fuse transport: a ring request (opcode %u) was not answered: %s",
            in.opcode, rebuilt.ok() ? "no reply from its handler" : rebuilt.message().c_str());
      });
      StoreErrorReply(&entry, in.unique, rebuilt.ok() ? EIO : EPROTO);
    }
    PrepareFuseUringCommand(GetSqe(&ring), fuse_fd_, fuse_abi::kFuseUringCmdCommitAndFetch,
                            entry.iov, q, entry.header.ring_ent_in_out.commit_id);
  }
  io_uring_queue_exit(&ring);
}

}  // namespace clairfs
