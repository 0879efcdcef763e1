// NodeAttr encoding and conversions (see node_attr.h).
#include "cache/node_attr.h"

#include <cstring>

namespace clairfs {
namespace {
// Version 2 added the access ACL; a version-1 record is refused (it cannot say whether the entry
// had an ACL), so a manifest written before must be listed again.
constexpr uint8_t kNodeAttrVersion = 2;
constexpr size_t kFixedPart = 1 + 8 + 4 * 4 + 8 * 3 + 8 * 3 + 8 * 2 + 4 + 4;

int64_t Nanos(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}
struct timespec Timespec(int64_t ns) {
  struct timespec ts;
  ts.tv_sec = ns / 1000000000LL;
  ts.tv_nsec = ns % 1000000000LL;
  if (ts.tv_nsec < 0) {
    ts.tv_nsec += 1000000000LL;
    ts.tv_sec -= 1;
  }
  return ts;
}
}  // namespace

std::string FileIdentity::ToString() const {
  return "size " + std::to_string(size) + ", mtime " + std::to_string(mtime_ns) + ", ctime " +
         std::to_string(ctime_ns) + ", inode " + std::to_string(ino);
}

FileIdentity IdentityOf(const struct stat& st) {
  return FileIdentity{static_cast<uint64_t>(st.st_size), Nanos(st.st_mtim), Nanos(st.st_ctim),
                      static_cast<uint64_t>(st.st_ino)};
}

NodeAttr NodeAttr::FromStat(const struct stat& st, uint64_t ino) {
  NodeAttr a;
  a.ino = ino;
  a.mode = st.st_mode;
  a.uid = st.st_uid;
  a.gid = st.st_gid;
  a.nlink = static_cast<uint32_t>(st.st_nlink);
  a.size = static_cast<uint64_t>(st.st_size);
  a.blocks = static_cast<uint64_t>(st.st_blocks);
  a.rdev = st.st_rdev;
  a.atime_ns = Nanos(st.st_atim);
  a.mtime_ns = Nanos(st.st_mtim);
  a.ctime_ns = Nanos(st.st_ctim);
  a.backing_ino = st.st_ino;
  a.backing_dev = st.st_dev;
  return a;
}

void NodeAttr::ToStat(struct stat* st) const {
  std::memset(st, 0, sizeof(*st));
  st->st_ino = ino;
  st->st_mode = mode;
  st->st_uid = uid;
  st->st_gid = gid;
  st->st_nlink = nlink;
  st->st_size = static_cast<off_t>(size);
  st->st_blocks = static_cast<blkcnt_t>(blocks);
  st->st_blksize = 4096;
  st->st_rdev = rdev;
  st->st_atim = Timespec(atime_ns);
  st->st_mtim = Timespec(mtime_ns);
  st->st_ctim = Timespec(ctime_ns);
}

void PutFixed64(std::string* out, uint64_t v) {
  char b[8];
  for (int i = 0; i < 8; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 8);
}
void PutFixed32(std::string* out, uint32_t v) {
  char b[4];
  for (int i = 0; i < 4; ++i) b[i] = static_cast<char>(v >> (8 * i));
  out->append(b, 4);
}
uint64_t GetFixed64(const char* p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
uint32_t GetFixed32(const char* p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | static_cast<uint8_t>(p[i]);
  return v;
}
std::string BigEndian64(uint64_t v) {
  std::string out(8, '\0');
  for (int i = 0; i < 8; ++i) out[7 - i] = static_cast<char>(v >> (8 * i));
  return out;
}

std::string EncodeNodeAttr(const NodeAttr& a) {
  std::string out;
  out.reserve(kFixedPart + a.link_target.size() + a.acl_access.size());
  out.push_back(static_cast<char>(kNodeAttrVersion));
  PutFixed64(&out, a.ino);
  PutFixed32(&out, a.mode);
  PutFixed32(&out, a.uid);
  PutFixed32(&out, a.gid);
  PutFixed32(&out, a.nlink);
  PutFixed64(&out, a.size);
  PutFixed64(&out, a.blocks);
  PutFixed64(&out, a.rdev);
  PutFixed64(&out, static_cast<uint64_t>(a.atime_ns));
  PutFixed64(&out, static_cast<uint64_t>(a.mtime_ns));
  PutFixed64(&out, static_cast<uint64_t>(a.ctime_ns));
  PutFixed64(&out, a.backing_ino);
  PutFixed64(&out, a.backing_dev);
  PutFixed32(&out, static_cast<uint32_t>(a.link_target.size()));
  out += a.link_target;
  PutFixed32(&out, static_cast<uint32_t>(a.acl_access.size()));
  out += a.acl_access;
  return out;
}

Result<NodeAttr> DecodeNodeAttr(std::string_view b) {
  if (b.size() < kFixedPart || static_cast<uint8_t>(b[0]) != kNodeAttrVersion) {
    return Status::Error(EUCLEAN,
                         "corrupt manifest record (" + std::to_string(b.size()) + " bytes)");
  }
  const char* p = b.data() + 1;
  NodeAttr a;
  a.ino = GetFixed64(p), p += 8;
  a.mode = GetFixed32(p), p += 4;
  a.uid = GetFixed32(p), p += 4;
  a.gid = GetFixed32(p), p += 4;
  a.nlink = GetFixed32(p), p += 4;
  a.size = GetFixed64(p), p += 8;
  a.blocks = GetFixed64(p), p += 8;
  a.rdev = GetFixed64(p), p += 8;
  a.atime_ns = static_cast<int64_t>(GetFixed64(p)), p += 8;
  a.mtime_ns = static_cast<int64_t>(GetFixed64(p)), p += 8;
  a.ctime_ns = static_cast<int64_t>(GetFixed64(p)), p += 8;
  a.backing_ino = GetFixed64(p), p += 8;
  a.backing_dev = GetFixed64(p), p += 8;
  uint32_t link_len = GetFixed32(p);
  p += 4;
  if (b.size() < kFixedPart + link_len) {
    return Status::Error(EUCLEAN, "corrupt manifest record (link target length)");
  }
  a.link_target.assign(p, link_len);
  p += link_len;
  uint32_t acl_len = GetFixed32(p);
  p += 4;
  if (b.size() != kFixedPart + link_len + acl_len) {
    return Status::Error(EUCLEAN, "corrupt manifest record (ACL length)");
  }
  a.acl_access.assign(p, acl_len);
  return a;
}

}  // namespace clairfs
