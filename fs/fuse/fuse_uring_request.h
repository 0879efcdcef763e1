// Conversions between a FUSE-over-io_uring ring entry and the /dev/fuse message layout libfuse
// parses and produces (docs/FUSE-URING.md, "Dispatch" and "Replies"). Pure functions on
// caller-owned buffers: no I/O, no locks, safe from any thread.
//
// A ring entry delivers a request split in three: the fuse_in_header (in `in_out`), the opcode's
// argument struct (in `op_in`) and the remaining arguments (the first `payload_sz` bytes of the
// payload buffer). The header's `len` is the length the request would have on /dev/fuse, so the
// argument struct's size is len - sizeof(fuse_in_header) - payload_sz.
//
// A reply produced by libfuse for its writev hook is iov[0] = fuse_out_header, iov[1..] = the
// reply's arguments; on the ring the header goes to `in_out` and the arguments, concatenated, to
// the payload buffer, with payload_sz their total size.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <vector>

#include "fs/fuse/fuse_uring_abi.h"
#include "planner/base/status.h"

namespace clairfs {

// Writes the request of `header` (whose remaining arguments are the first
// header.ring_ent_in_out.payload_sz bytes of `payload`, a buffer of `payload_cap` bytes) to
// `out` in /dev/fuse layout; `out` is resized to the request's length. EPROTO when the header's
// sizes are inconsistent (length shorter than its parts, an argument struct larger than
// `op_in`, a payload larger than its buffer).
Status RingRequestToDevLayout(const fuse_abi::FuseUringReqHeader& header, const char* payload,
                              size_t payload_cap, std::vector<char>* out);

// Stores a reply given as writev iovecs into the entry: iov[0] must be exactly a
// fuse_out_header, the other iovecs are concatenated into `payload` (capacity `payload_cap`).
// Returns the reply's total size (what writev would have returned). EINVAL for a malformed
// iovec list, EOVERFLOW when the arguments do not fit (the entry is then left unchanged).
Result<size_t> DevReplyToRing(const struct iovec* iov, int count,
                              fuse_abi::FuseUringReqHeader* header, char* payload,
                              size_t payload_cap);

}  // namespace clairfs
