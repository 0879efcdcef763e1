// Tests of the ring entry <-> /dev/fuse layout conversions, with the shapes the kernel produced
// in tools/probes/fuse_uring_probe (LOOKUP: len 47 with a 7-byte name; OPEN: len 48).
#include "fs/fuse/fuse_uring_request.h"

#include <gtest/gtest.h>
#include <linux/fuse.h>

#include <cstring>
#include <string>
#include <vector>

namespace clairfs {
namespace {

fuse_abi::FuseUringReqHeader MakeHeader(uint32_t opcode, uint32_t len, uint32_t payload_sz) {
  fuse_abi::FuseUringReqHeader h;
  std::memset(&h, 0, sizeof(h));
  struct fuse_in_header in;
  std::memset(&in, 0, sizeof(in));
  in.len = len;
  in.opcode = opcode;
  in.unique = 42;
  in.nodeid = 7;
  std::memcpy(h.in_out, &in, sizeof(in));
  h.ring_ent_in_out.payload_sz = payload_sz;
  h.ring_ent_in_out.commit_id = 42;
  return h;
}

TEST(FuseUringRequestTest, LookupHasNoArgumentStructAndTheNameInThePayload) {
  auto h = MakeHeader(FUSE_LOOKUP, 47, 7);
  char payload[64] = "f00000";  // 6 characters and the terminating zero
  std::vector<char> out;
  ASSERT_TRUE(RingRequestToDevLayout(h, payload, sizeof(payload), &out).ok());
  ASSERT_EQ(out.size(), 47u);
  struct fuse_in_header in;
  std::memcpy(&in, out.data(), sizeof(in));
  EXPECT_EQ(in.opcode, static_cast<uint32_t>(FUSE_LOOKUP));
  EXPECT_EQ(in.unique, 42u);
  EXPECT_STREQ(out.data() + sizeof(in), "f00000");
}

TEST(FuseUringRequestTest, OpenCarriesItsArgumentStructFromOpIn) {
  auto h = MakeHeader(FUSE_OPEN, 48, 0);
  struct fuse_open_in open_in {
    0x8000, 0
  };
  std::memcpy(h.op_in, &open_in, sizeof(open_in));
  std::vector<char> out;
  ASSERT_TRUE(RingRequestToDevLayout(h, nullptr, 0, &out).ok());
  ASSERT_EQ(out.size(), 48u);
  struct fuse_open_in got;
  std::memcpy(&got, out.data() + sizeof(struct fuse_in_header), sizeof(got));
  EXPECT_EQ(got.flags, 0x8000u);
}

TEST(FuseUringRequestTest, InconsistentSizesAreRefused) {
  std::vector<char> out;
  char payload[16] = {};
  // Length shorter than header + payload.
  EXPECT_EQ(RingRequestToDevLayout(MakeHeader(FUSE_LOOKUP, 44, 7), payload, 16, &out).code(),
            EPROTO);
  // Payload larger than its buffer.
  EXPECT_EQ(RingRequestToDevLayout(MakeHeader(FUSE_LOOKUP, 80, 40), payload, 16, &out).code(),
            EPROTO);
  // An argument struct larger than op_in.
  EXPECT_EQ(RingRequestToDevLayout(MakeHeader(FUSE_READ, 40 + 129, 0), payload, 16, &out).code(),
            EPROTO);
}

TEST(FuseUringRequestTest, ReplyHeaderGoesToInOutAndArgumentsAreConcatenated) {
  auto h = MakeHeader(FUSE_READ, 80, 0);
  struct fuse_out_header oh {
    16 + 5, 0, 42
  };
  char a[] = "ab", b[] = "cde";
  struct iovec iov[3] = {{&oh, sizeof(oh)}, {a, 2}, {b, 3}};
  char payload[8];
  auto n = DevReplyToRing(iov, 3, &h, payload, sizeof(payload));
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 21u);
  EXPECT_EQ(h.ring_ent_in_out.payload_sz, 5u);
  EXPECT_EQ(std::string(payload, 5), "abcde");
  struct fuse_out_header got;
  std::memcpy(&got, h.in_out, sizeof(got));
  EXPECT_EQ(got.unique, 42u);
  EXPECT_EQ(h.ring_ent_in_out.commit_id, 42u);  // untouched: the commit names the request
}

TEST(FuseUringRequestTest, ErrorReplyHasNoPayload) {
  auto h = MakeHeader(FUSE_OPEN, 48, 0);
  h.ring_ent_in_out.payload_sz = 99;  // left over from the request
  struct fuse_out_header oh {
    16, -ENOENT, 42
  };
  struct iovec iov[1] = {{&oh, sizeof(oh)}};
  auto n = DevReplyToRing(iov, 1, &h, nullptr, 0);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(*n, 16u);
  EXPECT_EQ(h.ring_ent_in_out.payload_sz, 0u);
}

TEST(FuseUringRequestTest, OversizedOrMalformedRepliesAreRefusedAndLeaveTheEntry) {
  auto h = MakeHeader(FUSE_READ, 80, 3);
  struct fuse_out_header oh {
    16 + 9, 0, 42
  };
  char big[9] = {};
  struct iovec iov[2] = {{&oh, sizeof(oh)}, {big, sizeof(big)}};
  char payload[8];
  EXPECT_EQ(DevReplyToRing(iov, 2, &h, payload, sizeof(payload)).status().code(), EOVERFLOW);
  EXPECT_EQ(h.ring_ent_in_out.payload_sz, 3u);
  struct iovec short_header[1] = {{&oh, 8}};
  EXPECT_EQ(DevReplyToRing(short_header, 1, &h, payload, sizeof(payload)).status().code(), EINVAL);
}

}  // namespace
}  // namespace clairfs
