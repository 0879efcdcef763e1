// FUSE kernel ABI pieces newer than Debian 12's <linux/fuse.h> (protocol 7.38), for
// FUSE-over-io_uring (protocol 7.42, Linux >= 6.14) and kernel passthrough (7.40, Linux >= 6.9).
//
// *** Kernel ABI, not project design. *** The values and layouts below are those of
// include/uapi/linux/fuse.h in Linux >= 6.14 (documented there and in
// Documentation/filesystems/fuse-io-uring.rst); they must never be changed. The static_asserts
// pin the layouts the kernel reads and writes. When linux-libc-dev carries protocol >= 7.42,
// this header can give way to <linux/fuse.h>.
//
// How the io_uring transport works (what the kernel expects; see docs/FUSE-URING.md):
// - INIT still arrives on /dev/fuse. The kernel offers FUSE_OVER_IO_URING (flags2 bit 9) only
//   when the fuse module's `enable_uring` parameter is set; the daemon accepts it in its INIT
//   reply (with FUSE_INIT_EXT).
// - After the INIT reply, the daemon registers ring entries on an io_uring created with
//   IORING_SETUP_SQE128: one IORING_OP_URING_CMD SQE per entry, fd = the /dev/fuse fd,
//   cmd_op = kFuseUringCmdRegister, addr = an array of two iovecs (headers: a
//   FuseUringReqHeader; payload: at least max(8192, max_write, max_pages * page size) bytes),
//   len = 2, and a FuseUringCmdReq in the SQE's 80-byte command area with the queue id.
//   There is one queue per possible CPU (qid = CPU number); the kernel switches the
//   connection to the ring only when every queue has at least one registered entry, and
//   blocks new requests until then.
// - A request issued by a task on CPU n goes to queue n. The entry's command completes (CQE)
//   when a request has been copied in: fuse_in_header in `in_out`, the opcode's fixed
//   argument struct (the first in-arg) in `op_in`, every further argument in the payload
//   buffer, and ring_ent_in_out.commit_id / payload_sz.
// - The reply goes back in the same entry: fuse_out_header in `in_out`, every out-arg in the
//   payload buffer, payload_sz = their total size; then a kFuseUringCmdCommitAndFetch SQE with
//   the commit_id and qid commits it and makes the entry wait for the next request.
// - FORGET, BATCH_FORGET and INTERRUPT still arrive on /dev/fuse; notifications (unique 0)
//   are still written to /dev/fuse.
#pragma once

#include <linux/fuse.h>
#include <sys/ioctl.h>

#include <cstddef>
#include <cstdint>

namespace clairfs::fuse_abi {

// INIT flags (fuse_init_in/out.flags and flags2).
inline constexpr uint32_t kInitExt = 1u << 30;           // FUSE_INIT_EXT: flags2 is valid
inline constexpr uint32_t kFlags2Passthrough = 1u << 5;  // FUSE_PASSTHROUGH (1ULL << 37)
inline constexpr uint32_t kFlags2OverIoUring = 1u << 9;  // FUSE_OVER_IO_URING (1ULL << 41)

// fuse_init_out.max_stack_depth (7.40) sits in what 7.38 calls unused[0]: byte offset 36.
inline constexpr size_t kInitOutMaxStackDepthOffset = 36;

// OPEN reply: FOPEN_PASSTHROUGH and the backing id in fuse_open_out's former padding.
inline constexpr uint32_t kOpenPassthrough = 1u << 7;
struct OpenOut {
  uint64_t fh;
  uint32_t open_flags;
  int32_t backing_id;
};
static_assert(sizeof(OpenOut) == sizeof(struct fuse_open_out));

// Passthrough backing files (struct fuse_backing_map, FUSE_DEV_IOC_BACKING_OPEN/CLOSE).
struct BackingMap {
  int32_t fd;
  uint32_t flags;
  uint64_t padding;
};
static_assert(sizeof(BackingMap) == 16);
inline constexpr unsigned kDevIocMagic = 229;
inline const unsigned long kDevIocBackingOpen = _IOW(kDevIocMagic, 1, BackingMap);
inline const unsigned long kDevIocBackingClose = _IOW(kDevIocMagic, 2, uint32_t);

// FUSE-over-io_uring (struct fuse_uring_ent_in_out, fuse_uring_req_header, fuse_uring_cmd_req,
// enum fuse_uring_cmd).
inline constexpr size_t kUringInOutHeaderSize = 128;  // FUSE_URING_IN_OUT_HEADER_SZ
inline constexpr size_t kUringOpInOutSize = 128;      // FUSE_URING_OP_IN_OUT_SZ

struct FuseUringEntInOut {
  uint64_t flags;
  uint64_t commit_id;   // kernel -> daemon; echoed in FuseUringCmdReq::commit_id at commit
  uint32_t payload_sz;  // bytes used in the payload buffer, in either direction
  uint32_t padding;
  uint64_t reserved;
};
static_assert(sizeof(FuseUringEntInOut) == 32);

struct FuseUringReqHeader {
  char in_out[kUringInOutHeaderSize];  // fuse_in_header (request) / fuse_out_header (reply)
  char op_in[kUringOpInOutSize];       // the opcode's fixed argument struct (request only)
  FuseUringEntInOut ring_ent_in_out;
};
static_assert(sizeof(FuseUringReqHeader) == 288);
static_assert(offsetof(FuseUringReqHeader, ring_ent_in_out) == 256);

inline constexpr uint32_t kFuseUringCmdRegister = 1;        // FUSE_IO_URING_CMD_REGISTER
inline constexpr uint32_t kFuseUringCmdCommitAndFetch = 2;  // FUSE_IO_URING_CMD_COMMIT_AND_FETCH

// In the SQE's command area (80 bytes with IORING_SETUP_SQE128; the rest must be zero).
struct FuseUringCmdReq {
  uint64_t flags;
  uint64_t commit_id;  // 0 for REGISTER
  uint16_t qid;        // the queue (CPU) the entry serves
  uint8_t padding[6];
};
static_assert(sizeof(FuseUringCmdReq) == 24);

// The payload buffer of an entry must hold at least this many bytes (FUSE_MIN_READ_BUFFER).
inline constexpr size_t kUringMinPayload = 8192;

}  // namespace clairfs::fuse_abi
