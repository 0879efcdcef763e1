// Ring entry <-> /dev/fuse message layout (see fuse_uring_request.h).
#include "fs/fuse/fuse_uring_request.h"

#include <linux/fuse.h>

#include <cstring>

namespace clairfs {

Status RingRequestToDevLayout(const fuse_abi::FuseUringReqHeader& header, const char* payload,
                              size_t payload_cap, std::vector<char>* out) {
  struct fuse_in_header in;
  std::memcpy(&in, header.in_out, sizeof(in));
  const size_t payload_size = header.ring_ent_in_out.payload_sz;
  if (payload_size > payload_cap) {
    return Status::Error(EPROTO, "ring request: payload larger than its buffer");
  }
  if (in.len < sizeof(in) + payload_size) {
    return Status::Error(EPROTO, "ring request: length shorter than header and payload");
  }
  const size_t op_size = in.len - sizeof(in) - payload_size;
  if (op_size > sizeof(header.op_in)) {
    return Status::Error(EPROTO, "ring request: argument struct larger than op_in");
  }
  out->resize(in.len);
  char* p = out->data();
  std::memcpy(p, &in, sizeof(in));
  std::memcpy(p + sizeof(in), header.op_in, op_size);
  if (payload_size > 0) std::memcpy(p + sizeof(in) + op_size, payload, payload_size);
  return Status::Ok();
}

Result<size_t> DevReplyToRing(const struct iovec* iov, int count,
                              fuse_abi::FuseUringReqHeader* header, char* payload,
                              size_t payload_cap) {
  if (count < 1 || iov[0].iov_len != sizeof(struct fuse_out_header)) {
    return Status::Error(EINVAL, "ring reply: iov[0] is not a fuse_out_header");
  }
  size_t args = 0;
  for (int i = 1; i < count; ++i) args += iov[i].iov_len;
  if (args > payload_cap) return Status::Error(EOVERFLOW, "ring reply: larger than the payload");
  size_t used = 0;
  for (int i = 1; i < count; ++i) {
    if (iov[i].iov_len == 0) continue;
    std::memcpy(payload + used, iov[i].iov_base, iov[i].iov_len);
    used += iov[i].iov_len;
  }
  std::memcpy(header->in_out, iov[0].iov_base, sizeof(struct fuse_out_header));
  header->ring_ent_in_out.payload_sz = static_cast<uint32_t>(args);
  return sizeof(struct fuse_out_header) + args;
}

}  // namespace clairfs
