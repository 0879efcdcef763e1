// PfsEmuFs: the FUSE callbacks of the PFS emulator (see pfs_emu_fs.h for the model).
//
// Every callback follows one shape: find the inode, do the real operation on the backing store
// now, then Reply*() with the delay that operation is charged. A reply whose delay is zero is
// sent inline by DeferredReplies.
#include "tools/bench/pfs_emu_fs.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "planner/base/log.h"

namespace clairfs {
namespace {

PfsEmuFs* Fs(fuse_req_t req) { return static_cast<PfsEmuFs*>(fuse_req_userdata(req)); }

// The path to hand to *at(root_fd, ...): "." for the root.
const char* AtPath(const std::string& relpath) { return relpath.empty() ? "." : relpath.c_str(); }

std::string Join(const std::string& parent, const char* name) {
  return parent.empty() ? std::string(name) : parent + "/" + name;
}

uint64_t DueIn(uint64_t delay_ns) { return DeferredReplies::NowNanos() + delay_ns; }

void ReplyErrorAfter(fuse_req_t req, uint64_t delay_ns, int error) {
  Fs(req)->replies().Submit(DueIn(delay_ns), [req, error] { fuse_reply_err(req, error); });
}

// One open file: the backing fd, the errno of a matching read: failure rule, and its own
// bandwidth cap.
struct OpenFile {
  OpenFile(int fd_in, uint64_t stream_rate, int read_error_in, uint64_t read_delay_ns_in)
      : fd(fd_in),
        read_error(read_error_in),
        read_delay_ns(read_delay_ns_in),
        stream(stream_rate) {}
  ~OpenFile() { close(fd); }
  const int fd;
  const int read_error;          // from a read: failure rule, or 0
  const uint64_t read_delay_ns;  // from a read: slow rule, or 0
  TokenBucket stream;
};

struct DirEntryCopy {
  std::string name;
  ino_t ino;
  unsigned char type;
};

// An open directory: its entries read once at opendir, so offsets are stable indices.
struct OpenDir {
  std::vector<DirEntryCopy> entries;
};

Status ListDirectory(int root_fd, const std::string& relpath, OpenDir* dir) {
  int fd = openat(root_fd, AtPath(relpath), O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return Status::FromErrno(errno, "opendir");
  DIR* raw = fdopendir(fd);
  if (raw == nullptr) {
    int error = errno;
    close(fd);
    return Status::FromErrno(error, "fdopendir");
  }
  std::unique_ptr<DIR, int (*)(DIR*)> stream(raw, closedir);  // closed even if push_back throws
  for (;;) {
    errno = 0;  // readdir returns nullptr both at the end and on error; errno tells them apart
    dirent* e = readdir(stream.get());
    if (e == nullptr) break;
    dir->entries.push_back(DirEntryCopy{e->d_name, e->d_ino, e->d_type});
  }
  if (errno != 0) return Status::FromErrno(errno, "readdir");
  return Status::Ok();
}

void OpLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  PfsEmuFs* fs = Fs(req);
  const uint64_t delay = fs->options().stat_latency_ns;
  auto dir = fs->inodes().Find(parent);
  if (!dir) return ReplyErrorAfter(req, delay, ESTALE);
  // The kernel resolves "." and ".." itself; refusing them here keeps every path we build
  // inside the backing root whatever a peer on /dev/fuse sends.
  if (std::strcmp(name, ".") == 0 || std::strcmp(name, "..") == 0 || std::strchr(name, '/')) {
    return ReplyErrorAfter(req, delay, EINVAL);
  }
  std::string relpath = Join(dir->relpath, name);
  CLAIRFS_LOG_DEBUG("lookup %s", relpath.c_str());
  fuse_entry_param entry;
  std::memset(&entry, 0, sizeof(entry));
  if (fstatat(fs->root_fd(), relpath.c_str(), &entry.attr, AT_SYMLINK_NOFOLLOW) != 0) {
    return ReplyErrorAfter(req, delay, errno);
  }
  entry.attr_timeout = 0;
  entry.entry_timeout = 0;
  // entry.ino is the FUSE node id (lookup order); entry.attr.st_ino stays the backing file's, so
  // stat(2) shows the same inode number after an emulator restart, as a PFS client would.
  entry.ino = fs->inodes().AddLookup(entry.attr.st_dev, entry.attr.st_ino, relpath);
  DeferredReplies::Callback reply;
  try {
    reply = [fs, req, entry] {
      // An interrupted request never reaches the kernel: it holds no reference to forget later.
      if (fuse_reply_entry(req, &entry) != 0) fs->inodes().Forget(entry.ino, 1);
    };
  } catch (...) {
    fs->inodes().Forget(entry.ino, 1);  // the kernel will never hear of this lookup
    throw;
  }
  fs->replies().Submit(DueIn(delay), std::move(reply));
}

void OpForget(fuse_req_t req, fuse_ino_t ino, uint64_t nlookup) {
  Fs(req)->inodes().Forget(ino, nlookup);
  fuse_reply_none(req);
}

void OpForgetMulti(fuse_req_t req, size_t count, fuse_forget_data* forgets) {
  for (size_t i = 0; i < count; ++i) Fs(req)->inodes().Forget(forgets[i].ino, forgets[i].nlookup);
  fuse_reply_none(req);
}

void OpGetattr(fuse_req_t req, fuse_ino_t ino, fuse_file_info* /*fi*/) {
  PfsEmuFs* fs = Fs(req);
  const uint64_t delay = fs->options().stat_latency_ns;
  auto inode = fs->inodes().Find(ino);
  if (!inode) return ReplyErrorAfter(req, delay, ESTALE);
  CLAIRFS_LOG_DEBUG("getattr %s", inode->relpath.c_str());
  struct stat st;
  if (fstatat(fs->root_fd(), AtPath(inode->relpath), &st, AT_SYMLINK_NOFOLLOW) != 0) {
    return ReplyErrorAfter(req, delay, errno);
  }
  // The backing file's inode number, not the node id `ino` (see OpLookup).
  fs->replies().Submit(DueIn(delay), [req, st] { fuse_reply_attr(req, &st, 0); });
}

void OpReadlink(fuse_req_t req, fuse_ino_t ino) {
  PfsEmuFs* fs = Fs(req);
  auto inode = fs->inodes().Find(ino);
  if (!inode) return (void)fuse_reply_err(req, ESTALE);
  char target[PATH_MAX + 1];
  ssize_t n = readlinkat(fs->root_fd(), AtPath(inode->relpath), target, PATH_MAX);
  if (n < 0) return (void)fuse_reply_err(req, errno);
  target[n] = '\0';
  fuse_reply_readlink(req, target);
}

void OpOpen(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  PfsEmuFs* fs = Fs(req);
  uint64_t delay = fs->options().open_latency_ns;
  if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
    return (void)fuse_reply_err(req, EROFS);
  }
  auto inode = fs->inodes().Find(ino);
  if (!inode) return ReplyErrorAfter(req, delay, ESTALE);
  CLAIRFS_LOG_DEBUG("open %s", inode->relpath.c_str());
  const auto& slow = fs->options().slow_rules;
  delay += MatchSlowRule(slow, PfsFailRule::Op::kOpen, inode->relpath);
  const auto& rules = fs->options().fail_rules;
  if (int error = MatchFailRule(rules, PfsFailRule::Op::kOpen, inode->relpath)) {
    return ReplyErrorAfter(req, delay, error);
  }
  int fd = openat(fs->root_fd(), AtPath(inode->relpath), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
  if (fd < 0) return ReplyErrorAfter(req, delay, errno);
  auto file =
      std::make_unique<OpenFile>(fd, fs->options().stream_bandwidth,
                                 MatchFailRule(rules, PfsFailRule::Op::kRead, inode->relpath),
                                 MatchSlowRule(slow, PfsFailRule::Op::kRead, inode->relpath));
  fuse_file_info reply_fi = *fi;  // `fi` is only valid during this call
  reply_fi.fh = reinterpret_cast<uint64_t>(file.get());
  reply_fi.direct_io = 1;  // every read reaches us: the page cache cannot hide the PFS
  reply_fi.keep_cache = 0;
  DeferredReplies::Callback reply = [req, reply_fi] {
    // If the open was interrupted the kernel never sees the handle and sends no RELEASE.
    if (fuse_reply_open(req, &reply_fi) != 0) delete reinterpret_cast<OpenFile*>(reply_fi.fh);
  };
  file.release();  // owned by the kernel's handle from here: freed in OpRelease
  fs->opens().fetch_add(1, std::memory_order_relaxed);
  fs->replies().Submit(DueIn(delay), std::move(reply));
}

void OpRead(fuse_req_t req, fuse_ino_t /*ino*/, size_t size, off_t offset, fuse_file_info* fi) {
  PfsEmuFs* fs = Fs(req);
  const PfsEmuOptions& options = fs->options();
  auto* file = reinterpret_cast<OpenFile*>(fi->fh);
  const uint64_t latency = options.read_latency_ns + file->read_delay_ns;
  if (file->read_error != 0) return ReplyErrorAfter(req, latency, file->read_error);
  const bool immediate = latency == 0 && options.bandwidth == 0 && options.stream_bandwidth == 0;
  // Nothing to charge: read into this worker's reusable buffer and answer at once. (Replying with
  // the backing fd and FUSE_CAP_SPLICE_WRITE/MOVE was slower in one A/B run on this loaded
  // 2-core machine, 0.04x vs 0.07x of direct reads, so the bytes take one user-space copy.)
  thread_local std::vector<char> immediate_buf;
  std::shared_ptr<char[]> deferred_buf;
  char* buf;
  if (immediate) {
    if (immediate_buf.size() < size) immediate_buf.resize(size);
    buf = immediate_buf.data();
  } else {
    deferred_buf.reset(new char[size]);
    buf = deferred_buf.get();
  }
  size_t got = 0;
  while (got < size) {
    ssize_t n = pread(file->fd, buf + got, size - got, offset + static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return ReplyErrorAfter(req, latency, errno);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  fs->bytes_read().fetch_add(got, std::memory_order_relaxed);
  if (immediate) return (void)fuse_reply_buf(req, buf, got);
  // The bytes leave after the request latency, at the pace both buckets allow.
  uint64_t due = DueIn(latency);
  if (options.bandwidth > 0) due = std::max(due, fs->aggregate_bucket().Reserve(got, due));
  if (options.stream_bandwidth > 0) due = std::max(due, file->stream.Reserve(got, due));
  fs->replies().Submit(due,
                       [req, deferred_buf, got] { fuse_reply_buf(req, deferred_buf.get(), got); });
}

void OpRelease(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
  delete reinterpret_cast<OpenFile*>(fi->fh);
  fuse_reply_err(req, 0);
}

void OpOpendir(fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
  PfsEmuFs* fs = Fs(req);
  auto inode = fs->inodes().Find(ino);
  if (!inode) return (void)fuse_reply_err(req, ESTALE);
  auto dir = std::make_unique<OpenDir>();
  Status status = ListDirectory(fs->root_fd(), inode->relpath, dir.get());
  if (!status.ok()) return (void)fuse_reply_err(req, status.code());
  fi->fh = reinterpret_cast<uint64_t>(dir.get());
  if (fuse_reply_open(req, fi) == 0) dir.release();
}

void OpReaddir(fuse_req_t req, fuse_ino_t /*ino*/, size_t size, off_t offset, fuse_file_info* fi) {
  auto* dir = reinterpret_cast<OpenDir*>(fi->fh);
  std::vector<char> buf(size);
  size_t used = 0;
  for (size_t i = static_cast<size_t>(std::max<off_t>(offset, 0)); i < dir->entries.size(); ++i) {
    const DirEntryCopy& e = dir->entries[i];
    struct stat st;
    std::memset(&st, 0, sizeof(st));
    st.st_ino = e.ino;
    st.st_mode = static_cast<mode_t>(e.type) << 12;  // DT_* to S_IF*
    size_t need = fuse_add_direntry(req, buf.data() + used, size - used, e.name.c_str(), &st,
                                    static_cast<off_t>(i + 1));
    if (need > size - used) break;
    used += need;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void OpReleasedir(fuse_req_t req, fuse_ino_t /*ino*/, fuse_file_info* fi) {
  delete reinterpret_cast<OpenDir*>(fi->fh);
  fuse_reply_err(req, 0);
}

// The counters, on the root only (pfs_emu_fs.h). Every other name is ENODATA, never ENOSYS: the
// kernel stops sending GETXATTR for good after one ENOSYS.
void OpGetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  if (ino != FUSE_ROOT_ID || std::strcmp(name, kPfsEmuCountersXattr) != 0) {
    return (void)fuse_reply_err(req, ENODATA);
  }
  PfsEmuFs* fs = Fs(req);
  const std::string value =
      "{\"opens\":" + std::to_string(fs->opens().load(std::memory_order_relaxed)) +
      ",\"bytes_read\":" + std::to_string(fs->bytes_read().load(std::memory_order_relaxed)) + "}";
  if (size == 0) return (void)fuse_reply_xattr(req, value.size());
  if (size < value.size()) return (void)fuse_reply_err(req, ERANGE);
  fuse_reply_buf(req, value.data(), value.size());
}

void OpStatfs(fuse_req_t req, fuse_ino_t /*ino*/) {
  struct statvfs st;
  if (fstatvfs(Fs(req)->root_fd(), &st) != 0) return (void)fuse_reply_err(req, errno);
  fuse_reply_statfs(req, &st);
}

// Mutations: the emulated store is read-only (the mount is "ro" too, so most never arrive).
void RoSetattr(fuse_req_t req, fuse_ino_t, struct stat*, int, fuse_file_info*) {
  fuse_reply_err(req, EROFS);
}
void RoMknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { fuse_reply_err(req, EROFS); }
void RoMkdir(fuse_req_t req, fuse_ino_t, const char*, mode_t) { fuse_reply_err(req, EROFS); }
void RoUnlink(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void RoSymlink(fuse_req_t req, const char*, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void RoRename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned int) {
  fuse_reply_err(req, EROFS);
}
void RoLink(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void RoWrite(fuse_req_t req, fuse_ino_t, const char*, size_t, off_t, fuse_file_info*) {
  fuse_reply_err(req, EROFS);
}
void RoCreate(fuse_req_t req, fuse_ino_t, const char*, mode_t, fuse_file_info*) {
  fuse_reply_err(req, EROFS);
}
void RoSetxattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) {
  fuse_reply_err(req, EROFS);
}
void RoRemovexattr(fuse_req_t req, fuse_ino_t, const char*) { fuse_reply_err(req, EROFS); }
void RoFallocate(fuse_req_t req, fuse_ino_t, int, off_t, off_t, fuse_file_info*) {
  fuse_reply_err(req, EROFS);
}

// Runs a callback body so that no exception crosses libfuse's C frames. Only allocation can
// throw in these bodies, and each allocates before it replies (DeferredReplies::Submit never
// throws), so answering ENOMEM here is never a second reply.
template <typename Body>
void Guard(fuse_req_t req, Body&& body) noexcept {
  try {
    body();
  } catch (...) {
    fuse_reply_err(req, ENOMEM);
  }
}

fuse_lowlevel_ops MakeOperations() {
  fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof(ops));
  ops.lookup = [](fuse_req_t req, fuse_ino_t parent, const char* name) {
    Guard(req, [&] { OpLookup(req, parent, name); });
  };
  ops.forget = OpForget;  // no allocation
  ops.forget_multi = OpForgetMulti;
  ops.getattr = [](fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Guard(req, [&] { OpGetattr(req, ino, fi); });
  };
  ops.readlink = [](fuse_req_t req, fuse_ino_t ino) { Guard(req, [&] { OpReadlink(req, ino); }); };
  ops.open = [](fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Guard(req, [&] { OpOpen(req, ino, fi); });
  };
  ops.read = [](fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    Guard(req, [&] { OpRead(req, ino, size, off, fi); });
  };
  ops.release = OpRelease;  // no allocation
  ops.opendir = [](fuse_req_t req, fuse_ino_t ino, fuse_file_info* fi) {
    Guard(req, [&] { OpOpendir(req, ino, fi); });
  };
  ops.readdir = [](fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, fuse_file_info* fi) {
    Guard(req, [&] { OpReaddir(req, ino, size, off, fi); });
  };
  ops.releasedir = OpReleasedir;
  ops.statfs = OpStatfs;
  ops.getxattr = [](fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
    Guard(req, [&] { OpGetxattr(req, ino, name, size); });
  };
  ops.setattr = RoSetattr;
  ops.mknod = RoMknod;
  ops.mkdir = RoMkdir;
  ops.unlink = RoUnlink;
  ops.rmdir = RoUnlink;
  ops.symlink = RoSymlink;
  ops.rename = RoRename;
  ops.link = RoLink;
  ops.write = RoWrite;
  ops.create = RoCreate;
  ops.setxattr = RoSetxattr;
  ops.removexattr = RoRemovexattr;
  ops.fallocate = RoFallocate;
  return ops;
}

}  // namespace

const fuse_lowlevel_ops& PfsEmuFs::Operations() {
  static const fuse_lowlevel_ops ops = MakeOperations();
  return ops;
}

Result<std::unique_ptr<PfsEmuFs>> PfsEmuFs::Create(const PfsEmuOptions& options) {
  int fd = open(options.backing.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "backing directory '" + options.backing + "'");
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int error = errno;
    close(fd);
    return Status::FromErrno(error, "backing directory '" + options.backing + "'");
  }
  return std::unique_ptr<PfsEmuFs>(new PfsEmuFs(options, fd, st.st_dev, st.st_ino));
}

PfsEmuFs::PfsEmuFs(const PfsEmuOptions& options, int root_fd, dev_t dev, ino_t ino)
    : options_(options), root_fd_(root_fd), inodes_(dev, ino), aggregate_(options.bandwidth) {}

PfsEmuFs::~PfsEmuFs() {
  replies_.Stop();
  close(root_fd_);
}

}  // namespace clairfs
