// NodeAttr: what the manifest records of one backing-store entry, and its byte encoding.
//
// The encoding is little-endian with a leading version byte; Decode rejects anything it does not
// understand (a corrupt record is an error, never garbage attributes). FileIdentity is the part
// that decides whether a staged copy is still the backing file's content: size, mtime and ctime to
// the nanosecond, and the backing inode number. A node also carries the raw value of its POSIX
// access ACL (the "system.posix_acl_access" extended attribute), empty when it has none, so that
// permission checks made for the mount see what the backing store would enforce.
#pragma once

#include <sys/stat.h>

#include <cstdint>
#include <string>
#include <string_view>

#include "planner/base/status.h"

namespace clairfs {

struct FileIdentity {
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t ino = 0;  // backing inode number
  bool operator==(const FileIdentity&) const = default;
  std::string ToString() const;
};

struct NodeAttr {
  uint64_t ino = 0;  // clairfs inode number (1 = root), assigned at listing
  uint32_t mode = 0;
  uint32_t uid = 0;
  uint32_t gid = 0;
  uint32_t nlink = 1;
  uint64_t size = 0;
  uint64_t blocks = 0;
  uint64_t rdev = 0;
  int64_t atime_ns = 0;
  int64_t mtime_ns = 0;
  int64_t ctime_ns = 0;
  uint64_t backing_ino = 0;
  uint64_t backing_dev = 0;
  std::string link_target;  // symlinks only
  // The backing entry's "system.posix_acl_access" value as the kernel returns it (the
  // posix_acl_xattr format, version 2); empty: no access ACL (mode bits alone decide).
  std::string acl_access;

  static NodeAttr FromStat(const struct stat& st, uint64_t ino);
  FileIdentity identity() const { return FileIdentity{size, mtime_ns, ctime_ns, backing_ino}; }
  // Fills a struct stat as the mount presents it (st_ino is the clairfs inode number).
  void ToStat(struct stat* st) const;
  bool is_dir() const { return S_ISDIR(mode); }
  bool is_reg() const { return S_ISREG(mode); }
  bool is_link() const { return S_ISLNK(mode); }
};

FileIdentity IdentityOf(const struct stat& st);

std::string EncodeNodeAttr(const NodeAttr& attr);
Result<NodeAttr> DecodeNodeAttr(std::string_view bytes);

// Little-endian and big-endian fixed-width helpers shared by the index encodings.
void PutFixed64(std::string* out, uint64_t v);
void PutFixed32(std::string* out, uint32_t v);
uint64_t GetFixed64(const char* p);
uint32_t GetFixed32(const char* p);
std::string BigEndian64(uint64_t v);

}  // namespace clairfs
