// FuseAdapter: libfuse3 low-level callbacks that call the FileSystem core (see fuse_adapter.h).
#include "fs/fuse/fuse_adapter.h"

#include <fcntl.h>
#include <fuse_lowlevel.h>
#include <linux/fuse.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "fs/fuse/mount_table.h"
#include "fs/fuse/proc_groups.h"
#include "planner/base/log.h"

namespace clairfs {
namespace {

// The device number of the mount on `mountpoint` per /proc/self/mountinfo (0 if not found): the
// minor number names the connection's fusectl entry.
dev_t MountDevice(const std::string& mountpoint) {
  FILE* f = fopen("/proc/self/mountinfo", "re");
  if (f == nullptr) return 0;
  dev_t found = 0;
  char line[8192];
  while (fgets(line, sizeof(line), f) != nullptr) {
    unsigned major_no = 0, minor_no = 0;
    char point[4096];
    if (sscanf(line, "%*u %*u %u:%u %*s %4095s", &major_no, &minor_no, point) != 3) continue;
    if (UnescapeMountinfo(point) == mountpoint) found = makedev(major_no, minor_no);
  }
  fclose(f);
  return found;
}

FuseAdapter* AdapterOf(fuse_req_t req) { return static_cast<FuseAdapter*>(fuse_req_userdata(req)); }
FileSystem* FsOf(fuse_req_t req) { return AdapterOf(req)->fs(); }

// The one place a Status becomes a FUSE error reply.
void ReplyError(fuse_req_t req, const Status& st, const char* op) {
  int code = st.code() > 0 ? st.code() : EIO;
  if (code != ENOENT && code != ENODATA && code != EROFS) {
    CLAIRFS_LOG_DEBUG("%s: %s", op, st.message().c_str());
  }
  fuse_reply_err(req, code);
}

void FillEntry(fuse_req_t req, const NodeAttr& attr, struct fuse_entry_param* e) {
  std::memset(e, 0, sizeof(*e));
  const auto& o = AdapterOf(req)->options();
  e->ino = attr.ino;
  e->generation = 1;
  attr.ToStat(&e->attr);
  e->attr_timeout = o.attr_timeout;
  e->entry_timeout = o.entry_timeout;
}

void OnInit(void* userdata, struct fuse_conn_info* conn) {
  auto* adapter = static_cast<FuseAdapter*>(userdata);
  // With the custom io hooks installed, requests must be read through them, not spliced.
  if (adapter->options().read_mode == ReadMode::kSplice && !adapter->custom_io() &&
      (conn->capable & FUSE_CAP_SPLICE_READ)) {
    conn->want |= FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_MOVE;
  } else {
    conn->want &= ~(FUSE_CAP_SPLICE_READ | FUSE_CAP_SPLICE_MOVE);
  }
  if (conn->capable & FUSE_CAP_READDIRPLUS) conn->want |= FUSE_CAP_READDIRPLUS;
  conn->want &= ~FUSE_CAP_READDIRPLUS_AUTO;  // always plus: one round trip fills every entry
  if (conn->capable & FUSE_CAP_CACHE_SYMLINKS) conn->want |= FUSE_CAP_CACHE_SYMLINKS;
  if (conn->capable & FUSE_CAP_PARALLEL_DIROPS) conn->want |= FUSE_CAP_PARALLEL_DIROPS;
  if (conn->capable & FUSE_CAP_ASYNC_READ) conn->want |= FUSE_CAP_ASYNC_READ;
  // Datasets do not change during a job; invalidation is explicit when clairfs sees a change.
  conn->want &= ~(FUSE_CAP_AUTO_INVAL_DATA | FUSE_CAP_WRITEBACK_CACHE);
  // But a read must not trust a size an invalidation left stale (FuseAdapterOptions).
  if (adapter->options().attributes_before_reads) {
    if (conn->capable & FUSE_CAP_AUTO_INVAL_DATA) {
      conn->want |= FUSE_CAP_AUTO_INVAL_DATA;
    } else {
      Log(LogLevel::kWarn,
          "the kernel does not offer FUSE_CAP_AUTO_INVAL_DATA: with --revalidate open, a read "
          "right after a file shrank may return zeros past its new end");
    }
  }
  // A dataset with ACLs: the kernel checks them (with default_permissions), asking for each
  // inode's "system.posix_acl_access" once; without ACLs nothing is asked.
  if (adapter->options().posix_acl && (conn->capable & FUSE_CAP_POSIX_ACL)) {
    conn->want |= FUSE_CAP_POSIX_ACL;
    adapter->set_posix_acl_granted();
  }
  conn->max_readahead = 1 << 20;
  conn->max_background = 64;
  conn->congestion_threshold = 48;
}

void OnLookup(fuse_req_t req, fuse_ino_t parent, const char* name) {
  auto attr = FsOf(req)->Lookup(parent, name);
  if (!attr.ok()) {
    if (attr.status().code() == ENOENT) {
      // A negative entry with a timeout lets the kernel cache the miss.
      struct fuse_entry_param e;
      std::memset(&e, 0, sizeof(e));
      e.entry_timeout = AdapterOf(req)->options().entry_timeout;
      fuse_reply_entry(req, &e);
      return;
    }
    ReplyError(req, attr.status(), "lookup");
    return;
  }
  struct fuse_entry_param e;
  FillEntry(req, *attr, &e);
  fuse_reply_entry(req, &e);
}

void OnForget(fuse_req_t req, fuse_ino_t, uint64_t) { fuse_reply_none(req); }
void OnForgetMulti(fuse_req_t req, size_t, struct fuse_forget_data*) { fuse_reply_none(req); }

void OnGetattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info*) {
  auto attr = FsOf(req)->GetAttr(ino);
  if (!attr.ok()) return ReplyError(req, attr.status(), "getattr");
  struct stat st;
  attr->ToStat(&st);
  fuse_reply_attr(req, &st, AdapterOf(req)->options().attr_timeout);
}

void OnReadlink(fuse_req_t req, fuse_ino_t ino) {
  auto target = FsOf(req)->ReadLink(ino);
  if (!target.ok()) return ReplyError(req, target.status(), "readlink");
  fuse_reply_readlink(req, target->c_str());
}

void OnOpendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  auto listing = FsOf(req)->OpenDir(ino);
  if (!listing.ok()) return ReplyError(req, listing.status(), "opendir");
  fi->fh = reinterpret_cast<uint64_t>(listing->release());
  fi->cache_readdir = 1;
  fi->keep_cache = 1;
  if (fuse_reply_open(req, fi) != 0) delete reinterpret_cast<DirListing*>(fi->fh);
}

// Offsets are positions in the listing: 0 = ".", 1 = "..", 2 + i = children[i].
void ReadDirCommon(fuse_req_t req, size_t size, off_t offset, struct fuse_file_info* fi,
                   bool plus) {
  auto* listing = reinterpret_cast<DirListing*>(fi->fh);
  std::vector<char> buf(size);
  size_t used = 0;
  const size_t total = listing->children.size() + 2;
  for (size_t pos = static_cast<size_t>(offset); pos < total; ++pos) {
    const char* name;
    struct fuse_entry_param e;
    std::memset(&e, 0, sizeof(e));
    if (pos < 2) {
      name = pos == 0 ? "." : "..";
      e.attr.st_ino = pos == 0 ? listing->ino : listing->parent_ino;
      e.attr.st_mode = S_IFDIR;
    } else {
      const ManifestChild& child = listing->children[pos - 2];
      name = child.name.c_str();
      FillEntry(req, child.attr, &e);
    }
    size_t len;
    if (plus) {
      if (pos < 2) {
        // "." and ".." carry no entry (ino 0) so the kernel takes no lookup reference.
        struct fuse_entry_param dot;
        std::memset(&dot, 0, sizeof(dot));
        dot.attr = e.attr;
        len = fuse_add_direntry_plus(req, buf.data() + used, size - used, name, &dot,
                                     static_cast<off_t>(pos + 1));
      } else {
        len = fuse_add_direntry_plus(req, buf.data() + used, size - used, name, &e,
                                     static_cast<off_t>(pos + 1));
      }
    } else {
      len = fuse_add_direntry(req, buf.data() + used, size - used, name, &e.attr,
                              static_cast<off_t>(pos + 1));
    }
    if (len > size - used) break;
    used += len;
  }
  fuse_reply_buf(req, buf.data(), used);
}

void OnReaddir(fuse_req_t req, fuse_ino_t, size_t size, off_t off, struct fuse_file_info* fi) {
  ReadDirCommon(req, size, off, fi, false);
}
void OnReaddirplus(fuse_req_t req, fuse_ino_t, size_t size, off_t off, struct fuse_file_info* fi) {
  ReadDirCommon(req, size, off, fi, true);
}

void OnReleasedir(fuse_req_t req, fuse_ino_t, struct fuse_file_info* fi) {
  delete reinterpret_cast<DirListing*>(fi->fh);
  fuse_reply_err(req, 0);
}

// The request's sender: uid and gid from the request header, supplementary groups from
// /proc (proc_groups.h), read only if a check needs them.
class FuseRequestCaller final : public RequestCaller {
 public:
  explicit FuseRequestCaller(fuse_req_t req) : req_(req) {}
  Caller Get() const override {
    const struct fuse_ctx* ctx = fuse_req_ctx(req_);
    return Caller{ctx->uid, ctx->gid, GroupsOfThread(ctx->pid)};
  }
  Opener Who() const override {
    const struct fuse_ctx* ctx = fuse_req_ctx(req_);
    return Opener{static_cast<uint32_t>(ctx->pid), static_cast<uint32_t>(ctx->uid)};
  }

 private:
  fuse_req_t req_;
};

// Set while a ring thread serves a request: its reply must come from this thread.
thread_local bool tl_ring_request = false;

// The pool a request that must call the backing store is handed to; null: served here (no pool,
// a ring request, or a request the pool is already serving).
BackingCallPool* PoolFor(FuseAdapter* adapter) {
  return tl_ring_request ? nullptr : adapter->backing_calls();
}

void ServeOpen(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi, BackingCallPool* pool);
void ServeRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info* fi,
               BackingCallPool* pool);

// An OPEN answered by a backing-call thread (fuse_adapter.h). The file info is the request's,
// copied: libfuse's lives on the request thread's stack.
class DeferredOpen final : public BackingCallPool::Call {
 public:
  DeferredOpen(fuse_req_t req, fuse_ino_t ino, const struct fuse_file_info& fi)
      : req_(req), ino_(ino), fi_(fi), note_(KernelPassthrough::CurrentRequest()) {}
  void Run() override {
    if (fuse_req_interrupted(req_) != 0) {
      fuse_reply_err(req_, EINTR);  // the reader gave up while the call waited for a thread
      return;
    }
    // Passthrough patches the reply of the OPEN this thread serves.
    KernelPassthrough::NoteRequest(note_.unique, note_.nodeid, note_.opcode);
    ServeOpen(req_, ino_, &fi_, nullptr);
    KernelPassthrough::NoteRequest(0, 0, 0);
  }
  void Cancel(int error) override { fuse_reply_err(req_, error); }

 private:
  fuse_req_t req_;
  fuse_ino_t ino_;
  struct fuse_file_info fi_;
  KernelPassthrough::RequestNote note_;
};

// A READ answered by a backing-call thread.
class DeferredRead final : public BackingCallPool::Call {
 public:
  DeferredRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off,
               const struct fuse_file_info& fi)
      : req_(req), ino_(ino), size_(size), off_(off), fi_(fi) {}
  void Run() override {
    if (fuse_req_interrupted(req_) != 0) {
      fuse_reply_err(req_, EINTR);  // the reader gave up while the call waited for a thread
      return;
    }
    ServeRead(req_, ino_, size_, off_, &fi_, nullptr);
  }
  void Cancel(int error) override { fuse_reply_err(req_, error); }

 private:
  fuse_req_t req_;
  fuse_ino_t ino_;
  size_t size_;
  off_t off_;
  struct fuse_file_info fi_;
};

void OnOpen(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  FuseAdapter* adapter = AdapterOf(req);
  adapter->fs()->counters().open_requests.Add(1);
  if (adapter->options().no_open) {
    // The kernel opens this file, and every later one, without the daemon (see the header).
    // A writing open never gets here: the mount is read-only (ro), so the VFS refuses it.
    fuse_reply_err(req, ENOSYS);
    return;
  }
  ServeOpen(req, ino, fi, PoolFor(adapter));
}

// OPEN's work, on the request thread or (pool null) on a backing-call thread.
void ServeOpen(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi, BackingCallPool* pool) {
  FuseAdapter* adapter = AdapterOf(req);
  FileSystem* fs = adapter->fs();
  KernelPassthrough* passthrough = adapter->passthrough();
  const FuseRequestCaller caller(req);
  // Passthrough registers the copy's fd at once; otherwise it is opened at the first READ.
  auto opened = fs->Open(ino, fi->flags, /*open_copy_now=*/passthrough != nullptr, &caller,
                         /*defer_backing=*/pool != nullptr);
  if (!opened.ok()) return ReplyError(req, opened.status(), "open");
  if (opened->deferred) return pool->Submit(std::make_unique<DeferredOpen>(req, ino, *fi));
  OpenFile* file = opened->file.release();
  fi->fh = reinterpret_cast<uint64_t>(file);
  fi->keep_cache = opened->keep_cache ? 1 : 0;
  fi->direct_io = opened->direct_io ? 1 : 0;  // past the page cache another version's opens fill
  fi->noflush = 1;  // nothing to flush on a read-only file: save the FLUSH round trip on close
  if (file->held_handle >= 0) {
    // Claimed a copy the kernel already holds (only passthrough hands out handles).
    fi->keep_cache = 0;
    fi->direct_io = 0;
    fs->NotePassthroughOpen(*file);
    passthrough->ArmOpenReply(file->held_handle);
  } else if (passthrough != nullptr) {
    OpenDecision d =
        passthrough->BeginOpen(ino, file->fd, file->from_cache, file->identity, file->data_path);
    if (d.error != 0) {
      fs->Release(std::unique_ptr<OpenFile>(file));
      fuse_reply_err(req, d.error);
      return;
    }
    if (d.passthrough) {
      // The kernel reads the copy itself: count the whole file now (the usual read of a sample).
      fi->keep_cache = 0;
      fi->direct_io = 0;
      fs->NotePassthroughOpen(*file);
      passthrough->ArmOpenReply(d.backing_id);
    }
  }
  // After the reply, RELEASE may already run on another thread: touch no per-open state.
  int rc = fuse_reply_open(req, fi);
  if (passthrough != nullptr) passthrough->DisarmOpenReply();
  if (rc != 0) {
    // The kernel gave up on this open (interrupted): it will send no RELEASE.
    fs->Release(std::unique_ptr<OpenFile>(file));
    if (passthrough != nullptr) passthrough->EndOpen(ino);
  }
}

void OnRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info* fi) {
  FuseAdapter* adapter = AdapterOf(req);
  adapter->fs()->counters().read_requests.Add(1);
  ServeRead(req, ino, size, off, fi, PoolFor(adapter));
}

// READ's work, on the request thread or (pool null) on a backing-call thread.
void ServeRead(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info* fi,
               BackingCallPool* pool) {
  FuseAdapter* adapter = AdapterOf(req);
  FileSystem* fs = adapter->fs();
  // A no-open mount's READ carries no handle: it holds a kept file while it reads.
  std::shared_ptr<OpenFile> kept;
  if (adapter->options().no_open) {
    auto found = fs->FileForRead(ino, static_cast<uint64_t>(off), /*defer_backing=*/pool != nullptr,
                                 FuseRequestCaller(req).Who());
    if (!found.ok()) return ReplyError(req, found.status(), "read");
    if (*found == nullptr) {
      return pool->Submit(std::make_unique<DeferredRead>(req, ino, size, off, *fi));
    }
    kept = std::move(*found);
  }
  OpenFile* file = kept != nullptr ? kept.get() : reinterpret_cast<OpenFile*>(fi->fh);
  // Once the reply is sent, a RELEASE may free an open's file: only `kept`, which this call
  // owns a share of, may be touched after it (drop_pages is set on kept files alone).
  OpenFile* drop_after_reply = kept != nullptr && kept->drop_pages ? kept.get() : nullptr;
  if (pool != nullptr && kept == nullptr && FileSystem::ReadCallsBacking(*file)) {
    return pool->Submit(std::make_unique<DeferredRead>(req, ino, size, off, *fi));
  }
  if (adapter->options().read_mode == ReadMode::kSplice) {
    // Let libfuse splice from the fd into /dev/fuse (no copy through user space).
    auto fd = fs->DataFd(*file);
    if (!fd.ok()) return ReplyError(req, Status::Error(EIO, fd.status().message()), "read");
    uint64_t avail = off < static_cast<off_t>(file->size) ? file->size - off : 0;
    const uint64_t bytes = std::min<uint64_t>(size, avail);
    fs->NoteRead(*file, static_cast<uint64_t>(off), bytes, fs->Elapsed());
    struct fuse_bufvec buf = FUSE_BUFVEC_INIT(size);
    buf.buf[0].flags = static_cast<fuse_buf_flags>(FUSE_BUF_IS_FD | FUSE_BUF_FD_SEEK);
    buf.buf[0].fd = *fd;
    buf.buf[0].pos = off;
    fuse_reply_data(req, &buf, FUSE_BUF_SPLICE_MOVE);
    if (drop_after_reply != nullptr) {
      FileSystem::DropPages(*drop_after_reply, static_cast<uint64_t>(off), bytes);
    }
    return;
  }
  // One buffer per worker thread, grown to the largest request seen (at most max_read).
  thread_local std::vector<char> buffer;
  if (buffer.size() < size) buffer.resize(size);
  auto n = fs->Read(*file, buffer.data(), size, off);
  if (!n.ok()) return ReplyError(req, n.status(), "read");
  fuse_reply_buf(req, buffer.data(), *n);
  if (drop_after_reply != nullptr) {
    FileSystem::DropPages(*drop_after_reply, static_cast<uint64_t>(off), *n);
  }
}

// Only a no-open mount gets FLUSH (its opens carry no noflush): ENOSYS stops them for good.
void OnFlush(fuse_req_t req, fuse_ino_t, struct fuse_file_info*) {
  FsOf(req)->counters().flush_requests.Add(1);
  fuse_reply_err(req, ENOSYS);
}

void OnRelease(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info* fi) {
  FsOf(req)->counters().release_requests.Add(1);
  // fh 0: an open the kernel made without the daemon (no-open mode); nothing to release.
  if (fi->fh != 0) {
    FsOf(req)->Release(std::unique_ptr<OpenFile>(reinterpret_cast<OpenFile*>(fi->fh)));
    if (KernelPassthrough* passthrough = AdapterOf(req)->passthrough()) passthrough->EndOpen(ino);
  }
  fuse_reply_err(req, 0);
}

void OnStatfs(fuse_req_t req, fuse_ino_t) {
  struct statvfs st;
  FsOf(req)->StatFs(&st);
  fuse_reply_statfs(req, &st);
}

void ReplyXattr(fuse_req_t req, const std::string& value, size_t size) {
  if (size == 0) {
    fuse_reply_xattr(req, value.size());
  } else if (size < value.size()) {
    fuse_reply_err(req, ERANGE);
  } else {
    fuse_reply_buf(req, value.data(), value.size());
  }
}

void OnGetxattr(fuse_req_t req, fuse_ino_t ino, const char* name, size_t size) {
  auto value = FsOf(req)->GetXattr(ino, name);
  if (!value.ok()) return ReplyError(req, value.status(), "getxattr");
  ReplyXattr(req, *value, size);
}

void OnListxattr(fuse_req_t req, fuse_ino_t ino, size_t size) {
  auto names = FsOf(req)->ListXattr(ino);
  if (!names.ok()) return ReplyError(req, names.status(), "listxattr");
  ReplyXattr(req, *names, size);
}

// Every mutating request: the mount is read-only.
void Erofs(fuse_req_t req) { fuse_reply_err(req, EROFS); }
void OnSetattr(fuse_req_t req, fuse_ino_t, struct stat*, int, struct fuse_file_info*) {
  Erofs(req);
}
void OnMknod(fuse_req_t req, fuse_ino_t, const char*, mode_t, dev_t) { Erofs(req); }
void OnMkdir(fuse_req_t req, fuse_ino_t, const char*, mode_t) { Erofs(req); }
void OnUnlink(fuse_req_t req, fuse_ino_t, const char*) { Erofs(req); }
void OnRmdir(fuse_req_t req, fuse_ino_t, const char*) { Erofs(req); }
void OnSymlink(fuse_req_t req, const char*, fuse_ino_t, const char*) { Erofs(req); }
void OnRename(fuse_req_t req, fuse_ino_t, const char*, fuse_ino_t, const char*, unsigned) {
  Erofs(req);
}
void OnLink(fuse_req_t req, fuse_ino_t, fuse_ino_t, const char*) { Erofs(req); }
void OnWrite(fuse_req_t req, fuse_ino_t, const char*, size_t, off_t, struct fuse_file_info*) {
  Erofs(req);
}
void OnSetxattr(fuse_req_t req, fuse_ino_t, const char*, const char*, size_t, int) { Erofs(req); }
void OnRemovexattr(fuse_req_t req, fuse_ino_t, const char*) { Erofs(req); }
void OnCreate(fuse_req_t req, fuse_ino_t, const char*, mode_t, struct fuse_file_info*) {
  Erofs(req);
}
void OnFallocate(fuse_req_t req, fuse_ino_t, int, off_t, off_t, struct fuse_file_info*) {
  Erofs(req);
}
void OnCopyFileRange(fuse_req_t req, fuse_ino_t, off_t, struct fuse_file_info*, fuse_ino_t, off_t,
                     struct fuse_file_info*, size_t, int) {
  Erofs(req);
}

// Custom io trampolines: installed when passthrough or the io_uring transport may be used.
ssize_t IoWritev(int fd, struct iovec* iov, int count, void* userdata) {
  auto* adapter = static_cast<FuseAdapter*>(userdata);
  KernelPassthrough* passthrough = adapter->passthrough();
  FuseUringTransport* uring = adapter->uring();
  const bool was_init = passthrough != nullptr && passthrough->PatchReply(iov, count);
  if (uring != nullptr) uring->PatchInitReply(iov, count);
  ssize_t n;
  if (!FuseUringTransport::TryReply(iov, count, &n)) n = ::writev(fd, iov, count);
  const int saved = errno;
  if (passthrough != nullptr) passthrough->AfterReply(was_init, n, saved);
  errno = saved;
  return n;
}
ssize_t IoRead(int fd, void* buf, size_t len, void* userdata) {
  auto* adapter = static_cast<FuseAdapter*>(userdata);
  ssize_t n = adapter->passthrough() != nullptr ? adapter->passthrough()->HookRead(fd, buf, len)
                                                : ::read(fd, buf, len);
  const int saved = errno;
  if (adapter->uring() != nullptr) adapter->uring()->NoteDevRequest(buf, n);
  errno = saved;
  return n;
}

struct fuse_lowlevel_ops MakeOps() {
  struct fuse_lowlevel_ops ops;
  std::memset(&ops, 0, sizeof(ops));
  ops.init = OnInit;
  ops.lookup = OnLookup;
  ops.forget = OnForget;
  ops.forget_multi = OnForgetMulti;
  ops.getattr = OnGetattr;
  ops.readlink = OnReadlink;
  ops.opendir = OnOpendir;
  ops.readdir = OnReaddir;
  ops.readdirplus = OnReaddirplus;
  ops.releasedir = OnReleasedir;
  ops.open = OnOpen;
  ops.read = OnRead;
  ops.release = OnRelease;
  ops.flush = OnFlush;
  ops.statfs = OnStatfs;
  ops.getxattr = OnGetxattr;
  ops.listxattr = OnListxattr;
  ops.setattr = OnSetattr;
  ops.mknod = OnMknod;
  ops.mkdir = OnMkdir;
  ops.unlink = OnUnlink;
  ops.rmdir = OnRmdir;
  ops.symlink = OnSymlink;
  ops.rename = OnRename;
  ops.link = OnLink;
  ops.write = OnWrite;
  ops.setxattr = OnSetxattr;
  ops.removexattr = OnRemovexattr;
  ops.create = OnCreate;
  ops.fallocate = OnFallocate;
  ops.copy_file_range = OnCopyFileRange;
  return ops;
}

}  // namespace

Result<ReadMode> ParseReadMode(const std::string& text) {
  if (text == "pread") return ReadMode::kPread;
  if (text == "splice") return ReadMode::kSplice;
  return Status::Invalid("read_mode=" + text + ": expected pread or splice");
}

Result<std::unique_ptr<FuseAdapter>> FuseAdapter::Create(FileSystem* fs,
                                                         const FuseAdapterOptions& options) {
  auto adapter = std::unique_ptr<FuseAdapter>(new FuseAdapter(fs, options));
  std::string opts = options.kernel_options;
  std::vector<std::string> argv_storage = {"clairfs", "-o", opts};
  std::vector<char*> argv;
  for (auto& a : argv_storage) argv.push_back(a.data());
  struct fuse_args args = FUSE_ARGS_INIT(static_cast<int>(argv.size()), argv.data());
  static const struct fuse_lowlevel_ops ops = MakeOps();
  adapter->session_ = fuse_session_new(&args, &ops, sizeof(ops), adapter.get());
  fuse_opt_free_args(&args);
  if (adapter->session_ == nullptr) {
    return Status::Error(EINVAL, "cannot create the FUSE session (options: " + opts + ")");
  }
  fs->set_notifier(adapter.get());
  if (options.backing_threads > 0) {
    adapter->backing_calls_ = std::make_unique<BackingCallPool>(
        static_cast<size_t>(options.backing_threads), options.backing_state);
  }
  return adapter;
}

FuseAdapter::~FuseAdapter() {
  if (session_ != nullptr) {
    if (signals_installed_) fuse_remove_signal_handlers(session_);
    Unmount();
    StopBackingCalls();  // they reply through the session
    // Unmounting ended the ring threads' commands; they use the session until joined.
    StopRingThreads();
    fuse_session_destroy(session_);
  }
}

Status FuseAdapter::Mount(const std::string& mountpoint) {
  if (fuse_session_mount(session_, mountpoint.c_str()) != 0) {
    return Status::Error(EIO, "cannot mount on " + mountpoint +
                                  " (see the fuse message above; is /dev/fuse available?)");
  }
  mountpoint_ = mountpoint;
  mounted_ = true;
  // Not stat(): until INIT is answered, any request to the new mount would wait for this thread.
  connection_dev_ = MountDevice(mountpoint);
  return SetUpHooks();
}

Status FuseAdapter::SetUpHooks() {
  PassthroughState* pt_state =
      options_.passthrough_state != nullptr ? options_.passthrough_state : &own_passthrough_state_;
  FuseTransportState* tr_state =
      options_.transport_state != nullptr ? options_.transport_state : &own_transport_state_;
  const bool pt_required = options_.passthrough == PassthroughMode::kOn;
  const int fuse_fd = fuse_session_fd(session_);
  if (options_.passthrough == PassthroughMode::kOff) {
    pt_state->Set(false, "disabled (--passthrough off)");
  } else if (options_.no_open) {
    pt_state->Set(false,
                  "--open-mode no-open: the kernel sends no OPEN whose reply would set it up");
    if (pt_required) return Status::Invalid("--passthrough on: " + pt_state->reason());
  } else if (!HaveCapSysAdmin()) {
    pt_state->Set(false, "the daemon lacks CAP_SYS_ADMIN, which the kernel requires");
    if (pt_required) return Status::Error(EPERM, "--passthrough on: " + pt_state->reason());
    Log(LogLevel::kInfo, "passthrough: off (%s)", pt_state->reason().c_str());
  } else {
    passthrough_ = std::make_unique<KernelPassthrough>(options_.passthrough_probe_dir, pt_state,
                                                       options_.held_copies);
    passthrough_->set_fuse_fd(fuse_fd);
  }
  if (options_.fuse_uring == FuseUringMode::kOff) {
    tr_state->Set(false, "disabled (--fuse-uring off)", 0, 0);
  } else {
    uring_ = std::make_unique<FuseUringTransport>(options_.fuse_uring, tr_state);
  }
  if (passthrough_ != nullptr || uring_ != nullptr) {
    static const struct fuse_custom_io io = {IoWritev, IoRead, nullptr, nullptr};
    if (fuse_session_custom_io(session_, &io, fuse_fd) != 0) {
      passthrough_.reset();
      uring_.reset();
      pt_state->Set(false, "libfuse refused the custom io hooks");
      tr_state->Set(false, "libfuse refused the custom io hooks", 0, 0);
      if (pt_required) return Status::Error(EIO, "--passthrough on: " + pt_state->reason());
      if (options_.fuse_uring == FuseUringMode::kOn) {
        return Status::Error(EIO, "--fuse-uring on: " + tr_state->reason());
      }
    } else {
      custom_io_ = true;
    }
  }
  if (!custom_io_ && !options_.posix_acl) return Status::Ok();
  // Serve INIT (the kernel's first request) here: the hooks negotiate passthrough and the ring
  // and probe passthrough, and a dataset with ACLs needs the kernel to enforce them, so the mount
  // can fail (on, ACLs) or report the reason (auto) before it reports ready.
  struct fuse_buf buf;
  std::memset(&buf, 0, sizeof(buf));
  int rc = fuse_session_receive_buf(session_, &buf);
  if (rc <= 0) {
    free(buf.mem);
    return Status::FromErrno(rc < 0 ? -rc : EIO, "reading the kernel's INIT request");
  }
  fuse_session_process_buf(session_, &buf);
  free(buf.mem);
  if (options_.posix_acl && !posix_acl_granted_) {
    return Status::Error(ENOTSUP,
                         "the dataset has files or directories with POSIX ACLs and this kernel "
                         "cannot enforce ACLs for FUSE (FUSE_POSIX_ACL); refusing to serve them "
                         "by their mode bits alone");
  }
  if (passthrough_ != nullptr) {
    if (pt_required && !passthrough_->active()) {
      return Status::Error(EPERM, "--passthrough on: " + pt_state->reason());
    }
    if (passthrough_->active()) fs_->set_held_copies(passthrough_.get());
  }
  if (uring_ != nullptr) {
    // The kernel holds new requests until every queue has registered an entry.
    Status st = uring_->Start(
        fuse_fd, [this](char* request, size_t len) { ProcessRingRequest(request, len); },
        std::max(1, options_.uring_threads_per_queue));
    if (!st.ok()) {
      if (options_.fuse_uring == FuseUringMode::kOn) return st.WithContext("--fuse-uring on");
      Log(LogLevel::kInfo, "fuse transport: /dev/fuse (%s)", tr_state->reason().c_str());
    }
  }
  return Status::Ok();
}

void FuseAdapter::ProcessRingRequest(char* request, size_t len) {
  struct fuse_in_header in;
  std::memcpy(&in, request, sizeof(in));
  // Passthrough's OPEN reply patch keys on the request this thread serves.
  KernelPassthrough::NoteRequest(in.unique, in.nodeid, in.opcode);
  struct fuse_buf buf;
  std::memset(&buf, 0, sizeof(buf));
  buf.mem = request;
  buf.size = len;
  tl_ring_request = true;  // answered on this thread, into its ring entry
  fuse_session_process_buf(session_, &buf);
  tl_ring_request = false;
}

Status FuseAdapter::InstallSignalHandlers() {
  if (fuse_set_signal_handlers(session_) != 0) {
    return Status::Error(EIO, "cannot install signal handlers");
  }
  signals_installed_ = true;
  return Status::Ok();
}

Status FuseAdapter::Loop() {
  struct fuse_loop_config* config = fuse_loop_cfg_create();
  fuse_loop_cfg_set_max_threads(config, static_cast<unsigned>(options_.max_threads));
  fuse_loop_cfg_set_idle_threads(config, static_cast<unsigned>(options_.max_idle_threads));
  fuse_loop_cfg_set_clone_fd(config, 0);
  int rc = fuse_session_loop_mt(session_, config);
  fuse_loop_cfg_destroy(config);
  if (rc < 0) return Status::FromErrno(-rc, "FUSE session loop");
  return Status::Ok();
}

void FuseAdapter::Exit() {
  if (session_ != nullptr) fuse_session_exit(session_);
}

void FuseAdapter::Unmount() {
  if (mounted_.exchange(false) && session_ != nullptr && !detached_.load()) {
    fuse_session_unmount(session_);
  }
}

namespace {

// Writes "1" to DIR/<minor>/abort; false if there is no such file.
bool WriteAbort(const std::string& dir, dev_t dev) {
  const std::string path = dir + "/" + std::to_string(minor(dev)) + "/abort";
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, "1", 1) == 1;
  close(fd);
  return ok;
}

}  // namespace

void FuseAdapter::AbortConnection() {
  if (connection_dev_ != 0) {
    if (WriteAbort("/sys/fs/fuse/connections", connection_dev_)) return;
    if (geteuid() == 0) {
      char dir[] = "/run/clairfs-fusectl-XXXXXX";
      if (mkdtemp(dir) != nullptr) {
        bool aborted = false;
        if (mount("fusectl", dir, "fusectl", MS_NOSUID | MS_NODEV | MS_NOEXEC, nullptr) == 0) {
          aborted = WriteAbort(dir, connection_dev_);
          umount2(dir, MNT_DETACH);
        }
        rmdir(dir);
        if (aborted) return;
      }
    }
  }
  // No fusectl: closing the device ends the connection once no thread is blocked reading it
  // (libfuse cancels its idle workers when the loop ends).
  if (session_ != nullptr) close(fuse_session_fd(session_));
}

void FuseAdapter::Detach() {
  if (!mounted_.load() || detached_.exchange(true)) return;
  if (geteuid() == 0) {
    if (umount2(mountpoint_.c_str(), MNT_DETACH) != 0) {
      Log(LogLevel::kWarn, "detaching %s: %s", mountpoint_.c_str(), strerror(errno));
    }
    return;
  }
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    execlp("fusermount3", "fusermount3", "-uz", mountpoint_.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0) {
    Log(LogLevel::kWarn, "detaching %s: fusermount3 -uz failed", mountpoint_.c_str());
  }
}

void FuseAdapter::EndBackingCalls() {
  if (backing_calls_ != nullptr) backing_calls_->Shutdown(ENOTCONN);
}

void FuseAdapter::StopBackingCalls() {
  EndBackingCalls();
  backing_calls_.reset();
}

void FuseAdapter::StopRingThreads() {
  if (uring_ != nullptr) uring_->Stop();
}

void FuseAdapter::InvalidateInode(uint64_t ino) {
  if (session_ == nullptr) return;
  int rc = fuse_lowlevel_notify_inval_inode(session_, ino, 0, 0);
  if (rc != 0 && rc != -ENOENT) {
    Log(LogLevel::kWarn, "kernel cache invalidation of inode %llu failed: %s",
        static_cast<unsigned long long>(ino), strerror(-rc));
  }
}

}  // namespace clairfs
