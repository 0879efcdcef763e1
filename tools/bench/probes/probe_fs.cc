// ProbeFs: the probe's minimal read-only filesystem (see probe_fs.h).
#include "tools/bench/probes/probe_fs.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "fs/fuse/fuse_uring_abi.h"

namespace clairfs::probe {
namespace {

constexpr uint64_t kLongTimeout = 86400;

template <typename T>
Reply PutStruct(const T& value, char* out, size_t cap) {
  if (cap < sizeof(T)) return Reply{EIO, 0, false};
  std::memcpy(out, &value, sizeof(T));
  return Reply{0, sizeof(T), false};
}

// "f00042" -> 42; -1 when the name is not a file name of this filesystem.
long FileIndex(const char* name) {
  if (name[0] != 'f') return -1;
  char* end = nullptr;
  long index = std::strtol(name + 1, &end, 10);
  if (end == name + 1 || *end != '\0' || index < 0) return -1;
  return index;
}

}  // namespace

ProbeFs::ProbeFs(std::string backing_dir, size_t files, size_t file_size, ServeMode mode)
    : backing_dir_(std::move(backing_dir)),
      files_(files),
      file_size_(file_size),
      mode_(mode),
      backing_ids_(files, -1),
      backing_fds_(files, -1) {}

ProbeFs::~ProbeFs() {
  // Backing ids die with the connection; the files are ours to close.
  for (int fd : backing_fds_) {
    if (fd >= 0) close(fd);
  }
}

size_t ProbeFs::OpArgSize(uint32_t opcode) {
  switch (opcode) {
    case FUSE_GETATTR:
      return sizeof(struct fuse_getattr_in);
    case FUSE_OPEN:
    case FUSE_OPENDIR:
      return sizeof(struct fuse_open_in);
    case FUSE_READ:
    case FUSE_READDIR:
    case FUSE_READDIRPLUS:
      return sizeof(struct fuse_read_in);
    case FUSE_RELEASE:
    case FUSE_RELEASEDIR:
      return sizeof(struct fuse_release_in);
    case FUSE_FLUSH:
      return sizeof(struct fuse_flush_in);
    case FUSE_GETXATTR:
    case FUSE_LISTXATTR:
      return sizeof(struct fuse_getxattr_in);
    case FUSE_ACCESS:
      return sizeof(struct fuse_access_in);
    default:
      return 0;  // LOOKUP, STATFS and the opcodes answered ENOSYS
  }
}

void ProbeFs::FillAttr(uint64_t ino, struct fuse_attr* attr) const {
  std::memset(attr, 0, sizeof(*attr));
  attr->ino = ino;
  attr->nlink = 1;
  attr->blksize = 4096;
  attr->mtime = attr->ctime = attr->atime = 1700000000;
  if (ino == kRootIno) {
    attr->mode = S_IFDIR | 0555;
    attr->nlink = 2;
  } else if (ino == kStatIno) {
    attr->mode = S_IFREG | 0444;
  } else {
    attr->mode = S_IFREG | 0444;
    attr->size = file_size_;
    attr->blocks = (file_size_ + 511) / 512;
  }
}

Reply ProbeFs::Lookup(const char* name, char* out, size_t cap) {
  uint64_t ino = 0;
  if (std::strcmp(name, "stat") == 0) {
    ino = kStatIno;
  } else {
    long index = FileIndex(name);
    if (index >= 0 && static_cast<size_t>(index) < files_) ino = kFirstFileIno + index;
  }
  struct fuse_entry_out entry;
  std::memset(&entry, 0, sizeof(entry));
  entry.entry_valid = kLongTimeout;  // with nodeid 0: a cached negative entry
  if (ino != 0) {
    entry.nodeid = ino;
    entry.generation = 1;
    entry.attr_valid = ino == kStatIno ? 0 : kLongTimeout;
    FillAttr(ino, &entry.attr);
  }
  return PutStruct(entry, out, cap);
}

Reply ProbeFs::GetAttr(uint64_t ino, char* out, size_t cap) {
  if (ino != kRootIno && ino != kStatIno && !IsFile(ino)) return Reply{ENOENT, 0, false};
  struct fuse_attr_out attr;
  std::memset(&attr, 0, sizeof(attr));
  attr.attr_valid = ino == kStatIno ? 0 : kLongTimeout;
  FillAttr(ino, &attr.attr);
  return PutStruct(attr, out, cap);
}

int ProbeFs::BackingId(uint64_t ino) {
  const size_t index = ino - kFirstFileIno;
  std::lock_guard<std::mutex> lock(backing_mu_);
  if (backing_ids_[index] >= 0) return backing_ids_[index];
  char path[64];
  std::snprintf(path, sizeof(path), "/f%05zu", index);
  int fd = open((backing_dir_ + path).c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return -1;
  fuse_abi::BackingMap map{fd, 0, 0};
  int id = ioctl(fuse_fd_, fuse_abi::kDevIocBackingOpen, &map);
  if (id < 0) {
    close(fd);
    return -1;
  }
  backing_fds_[index] = fd;
  backing_ids_[index] = id;
  return id;
}

Reply ProbeFs::Open(uint64_t ino, char* out, size_t cap) {
  if (ino == kStatIno) return Reply{EACCES, 0, false};
  if (!IsFile(ino)) return Reply{ENOENT, 0, false};
  opens_.fetch_add(1, std::memory_order_relaxed);
  if (mode_ == ServeMode::kNoOpen) return Reply{ENOSYS, 0, false};
  fuse_abi::OpenOut open_out{0, FOPEN_NOFLUSH, 0};
  if (mode_ == ServeMode::kPassthrough) {
    int id = BackingId(ino);
    if (id >= 0) {
      open_out.open_flags |= fuse_abi::kOpenPassthrough;
      open_out.backing_id = id;
      return PutStruct(open_out, out, cap);
    }
    backing_failures_.fetch_add(1, std::memory_order_relaxed);
  }
  open_out.open_flags |= FOPEN_KEEP_CACHE;
  return PutStruct(open_out, out, cap);
}

Reply ProbeFs::Read(uint64_t ino, const struct fuse_read_in& in, char* out, size_t cap) {
  if (!IsFile(ino)) return Reply{EBADF, 0, false};
  reads_.fetch_add(1, std::memory_order_relaxed);
  const size_t index = ino - kFirstFileIno;
  if (in.offset >= file_size_) return Reply{0, 0, false};
  size_t n = std::min<size_t>({in.size, file_size_ - in.offset, cap});
  for (size_t i = 0; i < n; ++i) out[i] = FileByte(index, in.offset + i);
  return Reply{0, n, false};
}

Reply ProbeFs::Handle(const struct fuse_in_header& in, const char* op, const char* rest, char* out,
                      size_t out_cap, Transport transport) {
  requests_[static_cast<int>(transport)].fetch_add(1, std::memory_order_relaxed);
  switch (in.opcode) {
    case FUSE_LOOKUP:
      if (in.nodeid != kRootIno) return Reply{ENOENT, 0, false};
      return Lookup(rest, out, out_cap);
    case FUSE_GETATTR:
      return GetAttr(in.nodeid, out, out_cap);
    case FUSE_OPEN:
      return Open(in.nodeid, out, out_cap);
    case FUSE_READ: {
      struct fuse_read_in read_in;
      std::memcpy(&read_in, op, sizeof(read_in));
      return Read(in.nodeid, read_in, out, out_cap);
    }
    case FUSE_FLUSH:
      return Reply{mode_ == ServeMode::kNoOpen ? ENOSYS : 0, 0, false};
    case FUSE_RELEASE:
    case FUSE_RELEASEDIR:
    case FUSE_ACCESS:
      return Reply{0, 0, false};
    case FUSE_OPENDIR: {
      if (in.nodeid != kRootIno) return Reply{ENOTDIR, 0, false};
      fuse_abi::OpenOut open_out{0, 0, 0};
      return PutStruct(open_out, out, out_cap);
    }
    case FUSE_READDIR:
    case FUSE_READDIRPLUS:
      return Reply{0, 0, false};  // the probe's directory lists as empty
    case FUSE_STATFS: {
      struct fuse_statfs_out st;
      std::memset(&st, 0, sizeof(st));
      st.st.bsize = st.st.frsize = 4096;
      st.st.namelen = 255;
      st.st.files = files_ + 2;
      return PutStruct(st, out, out_cap);
    }
    case FUSE_FORGET:
    case FUSE_BATCH_FORGET:
    case FUSE_INTERRUPT:
      return Reply{0, 0, true};
    default:
      return Reply{ENOSYS, 0, false};
  }
}

}  // namespace clairfs::probe
