// The probe's transports: INIT, the /dev/fuse loop and the io_uring queues (see
// probe_transport.h).
#include "tools/bench/probes/probe_transport.h"

#include <liburing.h>
#include <pthread.h>
#include <sched.h>
#include <sys/sysinfo.h>
#include <sys/uio.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>

#include "fs/fuse/fuse_uring_abi.h"
#include "fs/fuse/fuse_uring_sqe.h"

namespace clairfs::probe {
namespace {

void PinToCpu(int cpu) {
  cpu_set_t set;
  CPU_ZERO(&set);
  CPU_SET(cpu, &set);
  pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

// Room for a request read from /dev/fuse: the kernel refuses buffers smaller than the largest
// WRITE it may send (header + fuse_write_in + max_write).
size_t DevReadBufferSize(uint32_t max_write) {
  return std::max<size_t>(FUSE_MIN_READ_BUFFER, max_write + 4096);
}

}  // namespace

Result<InitResult> ServeInit(int fuse_fd, const InitRequest& request) {
  std::vector<char> buf(DevReadBufferSize(request.max_write));
  ssize_t n;
  do {
    n = read(fuse_fd, buf.data(), buf.size());
  } while (n < 0 && errno == EINTR);
  if (n < 0) return Status::FromErrno(errno, "reading INIT from /dev/fuse");
  struct fuse_in_header in;
  if (static_cast<size_t>(n) < sizeof(in) + sizeof(struct fuse_init_in)) {
    return Status::Error(EPROTO, "short INIT request");
  }
  std::memcpy(&in, buf.data(), sizeof(in));
  if (in.opcode != FUSE_INIT) return Status::Error(EPROTO, "first request is not INIT");
  struct fuse_init_in init_in;
  std::memcpy(&init_in, buf.data() + sizeof(in), sizeof(init_in));

  InitResult result;
  result.kernel_major = init_in.major;
  result.kernel_minor = init_in.minor;
  const bool ext = (init_in.flags & fuse_abi::kInitExt) != 0;
  result.uring_offered = ext && (init_in.flags2 & fuse_abi::kFlags2OverIoUring) != 0;
  result.passthrough_offered = ext && (init_in.flags2 & fuse_abi::kFlags2Passthrough) != 0;

  struct fuse_init_out out;
  std::memset(&out, 0, sizeof(out));
  out.major = FUSE_KERNEL_VERSION;
  out.minor = std::min<uint32_t>(init_in.minor, 42);
  out.max_readahead = init_in.max_readahead;
  const uint32_t wanted = FUSE_ASYNC_READ | FUSE_PARALLEL_DIROPS | FUSE_MAX_PAGES |
                          FUSE_BIG_WRITES | fuse_abi::kInitExt;
  out.flags = init_in.flags & wanted;
  out.max_background = 64;
  out.congestion_threshold = 48;
  out.max_write = request.max_write;
  out.time_gran = 1;
  out.max_pages = static_cast<uint16_t>(request.max_write / 4096);
  if (request.want_uring && result.uring_offered) {
    out.flags2 |= fuse_abi::kFlags2OverIoUring;
    result.uring_accepted = true;
  }
  if (request.want_passthrough && result.passthrough_offered) {
    out.flags2 |= fuse_abi::kFlags2Passthrough;
    const uint32_t depth = 1;  // backing files live on a non-stacked filesystem
    std::memcpy(reinterpret_cast<char*>(&out) + fuse_abi::kInitOutMaxStackDepthOffset, &depth,
                sizeof(depth));
    result.passthrough_accepted = true;
  }
  struct fuse_out_header oh;
  oh.len = sizeof(oh) + sizeof(out);
  oh.error = 0;
  oh.unique = in.unique;
  struct iovec iov[2] = {{&oh, sizeof(oh)}, {&out, sizeof(out)}};
  if (writev(fuse_fd, iov, 2) < 0) return Status::FromErrno(errno, "writing the INIT reply");
  return result;
}

void DevFuseLoop::Start(int fuse_fd, ProbeFs* fs, int threads, bool pin, uint32_t max_write) {
  fd_ = fuse_fd;
  fs_ = fs;
  max_write_ = max_write;
  for (int i = 0; i < threads; ++i) threads_.emplace_back([this, i, pin] { Run(i, pin); });
}

void DevFuseLoop::Join() {
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void DevFuseLoop::Run(int index, bool pin) {
  if (pin) PinToCpu(index % get_nprocs());
  std::vector<char> in_buf(DevReadBufferSize(max_write_));
  std::vector<char> out_buf(max_write_);
  for (;;) {
    ssize_t n = read(fd_, in_buf.data(), in_buf.size());
    if (n < 0) {
      if (errno == EINTR || errno == EAGAIN || errno == ENOENT) continue;
      return;  // ENODEV: unmounted
    }
    if (static_cast<size_t>(n) < sizeof(struct fuse_in_header)) continue;
    struct fuse_in_header in;
    std::memcpy(&in, in_buf.data(), sizeof(in));
    const char* op = in_buf.data() + sizeof(in);
    const char* rest = op + ProbeFs::OpArgSize(in.opcode);
    Reply reply = fs_->Handle(in, op, rest, out_buf.data(), out_buf.size(), Transport::kDevFuse);
    if (reply.none) continue;
    struct fuse_out_header oh;
    oh.len = static_cast<uint32_t>(sizeof(oh) + reply.size);
    oh.error = -reply.error;
    oh.unique = in.unique;
    struct iovec iov[2] = {{&oh, sizeof(oh)}, {out_buf.data(), reply.size}};
    // ENOENT: the request was interrupted meanwhile; nothing to do.
    (void)writev(fd_, iov, reply.size > 0 ? 2 : 1);
  }
}

namespace {

struct RingEntry {
  fuse_abi::FuseUringReqHeader header;
  std::unique_ptr<char[]> payload;
  struct iovec iov[2];
  bool live = false;
};

}  // namespace

Status RingQueues::Start(int fuse_fd, ProbeFs* fs, int threads_per_queue, int depth,
                         uint32_t payload_size, bool defer_taskrun) {
  fd_ = fuse_fd;
  fs_ = fs;
  depth_ = depth;
  payload_size_ = std::max<uint32_t>(payload_size, fuse_abi::kUringMinPayload);
  defer_taskrun_ = defer_taskrun;
  queues_ = get_nprocs_conf();  // the kernel makes one queue per possible CPU
  const int threads = queues_ * threads_per_queue;
  registered_ = std::vector<std::atomic<int>>(threads);
  for (int i = 0; i < threads; ++i) {
    threads_.emplace_back([this, i, threads_per_queue] { Run(i, i / threads_per_queue); });
  }
  // Registration is quick: the commands are queued in the kernel during io_uring_enter.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  for (int i = 0; i < threads; ++i) {
    while (registered_[i].load() == 0) {
      if (std::chrono::steady_clock::now() > deadline) {
        return Status::Error(ETIMEDOUT, "ring thread " + std::to_string(i) + " did not register");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    if (registered_[i].load() < 0) {
      return Status::FromErrno(-registered_[i].load(),
                               "registering ring thread " + std::to_string(i));
    }
  }
  return Status::Ok();
}

void RingQueues::Join() {
  for (auto& t : threads_) t.join();
  threads_.clear();
}

void RingQueues::Run(int index, int qid) {
  PinToCpu(qid);
  struct io_uring ring;
  struct io_uring_params params;
  std::memset(&params, 0, sizeof(params));
  params.flags = IORING_SETUP_SQE128;
  if (defer_taskrun_) params.flags |= IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN;
  int rc = io_uring_queue_init_params(static_cast<unsigned>(depth_ * 2), &ring, &params);
  if (rc < 0) {
    registered_[index].store(rc);
    return;
  }
  std::vector<RingEntry> entries(static_cast<size_t>(depth_));
  for (size_t i = 0; i < entries.size(); ++i) {
    RingEntry& e = entries[i];
    std::memset(&e.header, 0, sizeof(e.header));
    e.payload.reset(new char[payload_size_]);
    e.iov[0] = {&e.header, sizeof(e.header)};
    e.iov[1] = {e.payload.get(), payload_size_};
    e.live = true;
    struct io_uring_sqe* sqe = GetSqe(&ring);
    PrepareFuseUringCommand(sqe, fd_, fuse_abi::kFuseUringCmdRegister, e.iov,
                            static_cast<uint16_t>(qid), 0);
    sqe->user_data = i;  // the entry's index
  }
  rc = io_uring_submit(&ring);
  // A refused REGISTER completes at once with an error (EOPNOTSUPP: enable_uring is off or the
  // INIT reply did not accept the ring).
  struct io_uring_cqe* cqe = nullptr;
  if (rc >= 0 && io_uring_peek_cqe(&ring, &cqe) == 0 && cqe->res < 0) rc = cqe->res;
  registered_[index].store(rc < 0 ? rc : 1);
  if (rc < 0) {
    io_uring_queue_exit(&ring);
    return;
  }
  size_t live = entries.size();
  while (live > 0) {
    rc = io_uring_submit_and_wait(&ring, 1);
    if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) break;
    unsigned head;
    unsigned seen = 0;
    io_uring_for_each_cqe(&ring, head, cqe) {
      ++seen;
      RingEntry& e = entries[cqe->user_data];
      if (cqe->res < 0) {
        // ENOTCONN at teardown, or a failed commit: the entry is gone either way.
        if (e.live) {
          e.live = false;
          --live;
        }
        continue;
      }
      struct fuse_in_header in;
      std::memcpy(&in, e.header.in_out, sizeof(in));
      Reply reply = fs_->Handle(in, e.header.op_in, e.payload.get(), e.payload.get(), payload_size_,
                                Transport::kRing);
      if (reply.none) reply = Reply{ENOSYS, 0, false};  // never on the ring; answer anyway
      struct fuse_out_header oh;
      oh.len = static_cast<uint32_t>(sizeof(oh) + reply.size);
      oh.error = -reply.error;
      oh.unique = in.unique;
      std::memcpy(e.header.in_out, &oh, sizeof(oh));
      e.header.ring_ent_in_out.payload_sz = static_cast<uint32_t>(reply.size);
      struct io_uring_sqe* sqe = GetSqe(&ring);
      PrepareFuseUringCommand(sqe, fd_, fuse_abi::kFuseUringCmdCommitAndFetch, e.iov,
                              static_cast<uint16_t>(qid), e.header.ring_ent_in_out.commit_id);
      sqe->user_data = cqe->user_data;
    }
    io_uring_cq_advance(&ring, seen);
  }
  io_uring_queue_exit(&ring);
}

}  // namespace clairfs::probe
