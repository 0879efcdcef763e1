// The two io_uring steps every FUSE-over-io_uring server repeats: taking a free SQE, and filling
// it with a ring-entry command (register, or commit-and-fetch). Shared by the daemon's transport
// (fs/fuse_uring_transport.cc) and the standalone probe (tools/probes/probe_transport.cc), which
// links no clairfs library: header-only, inline.
//
// Contract: the ring was created with IORING_SETUP_SQE128 (the command area is 80 bytes);
// `iov` points at the entry's two iovecs (headers, payload) and must outlive the command.
// PrepareFuseUringCommand leaves user_data 0 for the caller to set.
#pragma once

#include <liburing.h>
#include <sys/uio.h>

#include <cstdint>
#include <cstring>

#include "fs/fuse/fuse_uring_abi.h"

namespace clairfs {

// A free SQE, submitting what is queued when the submission queue is full.
inline struct io_uring_sqe* GetSqe(struct io_uring* ring) {
  struct io_uring_sqe* sqe = io_uring_get_sqe(ring);
  while (sqe == nullptr) {
    io_uring_submit(ring);
    sqe = io_uring_get_sqe(ring);
  }
  return sqe;
}

inline void PrepareFuseUringCommand(struct io_uring_sqe* sqe, int fuse_fd, uint32_t cmd,
                                    struct iovec* iov, uint16_t qid, uint64_t commit_id) {
  // SQE128: each SQE is two 64-byte slots; the command area starts at sqe->cmd.
  std::memset(static_cast<void*>(sqe), 0, 2 * sizeof(*sqe));
  sqe->opcode = IORING_OP_URING_CMD;
  sqe->fd = fuse_fd;
  sqe->cmd_op = cmd;
  sqe->addr = reinterpret_cast<uint64_t>(iov);
  sqe->len = 2;
  fuse_abi::FuseUringCmdReq req;
  std::memset(&req, 0, sizeof(req));
  req.commit_id = commit_id;
  req.qid = qid;
  std::memcpy(sqe->cmd, &req, sizeof(req));
}

}  // namespace clairfs
