// Unit tests of FuseUringTransport's INIT negotiation, reply routing and fallback (no mount; the
// ring itself is tested on real mounts in tests/fuse_uring_test.cc), and of the fuse_uring
// mount option.
#include "fs/fuse/fuse_uring_transport.h"

#include <linux/fuse.h>

#include <cstring>
#include <vector>

#include <gtest/gtest.h>

#include "fs/fuse/fuse_uring_abi.h"

namespace clairfs {
namespace {

// An INIT request as read from /dev/fuse, offering the ring or not.
std::vector<char> InitRequest(uint64_t unique, bool offer_ring) {
  struct fuse_in_header in;
  std::memset(&in, 0, sizeof(in));
  struct fuse_init_in arg;
  std::memset(&arg, 0, sizeof(arg));
  in.len = sizeof(in) + sizeof(arg);
  in.opcode = FUSE_INIT;
  in.unique = unique;
  arg.major = 7;
  arg.minor = 45;
  arg.flags = fuse_abi::kInitExt;
  arg.flags2 = offer_ring ? fuse_abi::kFlags2OverIoUring : 0;
  std::vector<char> buf(in.len);
  std::memcpy(buf.data(), &in, sizeof(in));
  std::memcpy(buf.data() + sizeof(in), &arg, sizeof(arg));
  return buf;
}

struct InitReply {
  struct fuse_out_header oh;
  struct fuse_init_out out;
  struct iovec iov[2];
  explicit InitReply(uint64_t unique) {
    std::memset(&oh, 0, sizeof(oh));
    std::memset(&out, 0, sizeof(out));
    oh.unique = unique;
    oh.len = sizeof(oh) + sizeof(out);
    out.flags = FUSE_MAX_PAGES;
    out.max_pages = 256;
    out.max_write = 1 << 20;
    iov[0] = {&oh, sizeof(oh)};
    iov[1] = {&out, sizeof(out)};
  }
};

TEST(FuseUringTransport, AcceptsTheRingOnlyWhenOfferedAndNotOff) {
  for (FuseUringMode mode : {FuseUringMode::kAuto, FuseUringMode::kOn, FuseUringMode::kOff}) {
    for (bool offer : {false, true}) {
      FuseTransportState state;
      FuseUringTransport t(mode, &state);
      auto req = InitRequest(7, offer);
      t.NoteDevRequest(req.data(), static_cast<ssize_t>(req.size()));
      InitReply reply(7);
      t.PatchInitReply(reply.iov, 2);
      const bool expect = offer && mode != FuseUringMode::kOff;
      EXPECT_EQ(t.offered(), offer);
      EXPECT_EQ(t.accepted(), expect);
      EXPECT_EQ((reply.out.flags2 & fuse_abi::kFlags2OverIoUring) != 0, expect);
      if (expect) {
        EXPECT_NE(reply.out.flags & fuse_abi::kInitExt, 0u);
      }
    }
  }
}

TEST(FuseUringTransport, LeavesOtherRepliesAlone) {
  FuseTransportState state;
  FuseUringTransport t(FuseUringMode::kAuto, &state);
  auto req = InitRequest(7, true);
  t.NoteDevRequest(req.data(), static_cast<ssize_t>(req.size()));
  InitReply other(8);  // not INIT's unique
  t.PatchInitReply(other.iov, 2);
  EXPECT_EQ(other.out.flags2, 0u);
  EXPECT_FALSE(t.accepted());
}

TEST(FuseUringTransport, StartWithoutTheRingSaysWhyAndStaysOnDevFuse) {
  FuseTransportState state;
  FuseUringTransport t(FuseUringMode::kAuto, &state);
  auto req = InitRequest(7, false);
  t.NoteDevRequest(req.data(), static_cast<ssize_t>(req.size()));
  InitReply reply(7);
  t.PatchInitReply(reply.iov, 2);
  Status st = t.Start(
      -1, [](char*, size_t) {}, 2);
  EXPECT_EQ(st.code(), EOPNOTSUPP);
  EXPECT_FALSE(state.uring());
  EXPECT_NE(state.reason().find("enable_uring"), std::string::npos) << state.reason();

  FuseTransportState off_state;
  FuseUringTransport off(FuseUringMode::kOff, &off_state);
  EXPECT_TRUE(off.Start(
                     -1, [](char*, size_t) {}, 2)
                  .ok());
  EXPECT_FALSE(off_state.uring());
  EXPECT_NE(off_state.reason().find("off"), std::string::npos);
}

TEST(FuseUringTransport, RepliesOffTheRingGoToDevFuse) {
  struct fuse_out_header oh;
  std::memset(&oh, 0, sizeof(oh));
  oh.unique = 5;
  struct iovec iov[1] = {{&oh, sizeof(oh)}};
  ssize_t written = 0;
  // This thread serves no ring request: the reply is not taken.
  EXPECT_FALSE(FuseUringTransport::TryReply(iov, 1, &written));
}

}  // namespace
}  // namespace clairfs
