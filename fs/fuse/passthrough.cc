// Kernel FUSE passthrough through libfuse 3.14's custom io hooks (see passthrough.h).
#include "fs/fuse/passthrough.h"

#include <fcntl.h>
#include <linux/capability.h>
#include <linux/fuse.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "planner/base/log.h"

// Debian 12's linux-libc-dev carries FUSE protocol 7.38; passthrough arrived in 7.40 (Linux 6.9).
// These are the kernel ABI values from include/uapi/linux/fuse.h of Linux >= 6.9.
#ifndef FUSE_INIT_EXT
#define FUSE_INIT_EXT (1u << 30)
#endif
#ifndef FUSE_DEV_IOC_MAGIC
#define FUSE_DEV_IOC_MAGIC 229
#endif

namespace clairfs {
namespace {

constexpr uint32_t kInitExt = FUSE_INIT_EXT;
constexpr uint32_t kWritebackCache = 1u << 16;    // FUSE_WRITEBACK_CACHE
constexpr uint32_t kPassthroughFlags2 = 1u << 5;  // FUSE_PASSTHROUGH (1ULL << 37) in flags2
constexpr uint32_t kOpenDirectIo = 1u << 0;       // FOPEN_DIRECT_IO
constexpr uint32_t kOpenKeepCache = 1u << 1;      // FOPEN_KEEP_CACHE
constexpr uint32_t kOpenPassthrough = 1u << 7;    // FOPEN_PASSTHROUGH
constexpr uint32_t kOpcodeOpen = 14;              // FUSE_OPEN
constexpr uint32_t kFuseInitOpcode = 26;          // FUSE_INIT

// struct fuse_backing_map (7.40).
struct BackingMap {
  int32_t fd;
  uint32_t flags;
  uint64_t padding;
};
static_assert(sizeof(BackingMap) == 16);
const unsigned long kBackingOpen = _IOW(FUSE_DEV_IOC_MAGIC, 1, BackingMap);
const unsigned long kBackingClose = _IOW(FUSE_DEV_IOC_MAGIC, 2, uint32_t);

// Byte offsets in struct fuse_init_in / fuse_init_out (7.36+ layout).
constexpr size_t kInitInFlags = 12, kInitInFlags2 = 16;
constexpr size_t kInitOutFlags = 12, kInitOutFlags2 = 32, kInitOutMaxStackDepth = 36;
constexpr size_t kInitOutMinSize = 40;
// struct fuse_open_out: fh (8), open_flags (4), backing_id (4, formerly padding).
constexpr size_t kOpenOutFlags = 8, kOpenOutBackingId = 12, kOpenOutSize = 16;

uint32_t Load32(const void* base, size_t off) {
  uint32_t v;
  std::memcpy(&v, static_cast<const char*>(base) + off, sizeof(v));
  return v;
}
void Store32(void* base, size_t off, uint32_t v) {
  std::memcpy(static_cast<char*>(base) + off, &v, sizeof(v));
}

// The request this worker thread is serving (libfuse reads and processes on one thread).
thread_local uint64_t tl_request_unique = 0;
thread_local uint64_t tl_request_nodeid = 0;
thread_local uint32_t tl_request_opcode = 0;
// The passthrough patch for this thread's next OPEN reply.
thread_local bool tl_open_armed = false;
thread_local int tl_open_backing_id = -1;

int BackingOpen(int fuse_fd, int fd) {
  BackingMap map{fd, 0, 0};
  return ioctl(fuse_fd, kBackingOpen, &map);
}

void BackingClose(int fuse_fd, int id) {
  uint32_t backing_id = static_cast<uint32_t>(id);
  if (ioctl(fuse_fd, kBackingClose, &backing_id) != 0) {
    Log(LogLevel::kWarn, "passthrough: closing backing id %d failed: %s", id, strerror(errno));
  }
}

}  // namespace

Result<PassthroughMode> ParsePassthroughMode(const std::string& text) {
  if (text == "auto") return PassthroughMode::kAuto;
  if (text == "on") return PassthroughMode::kOn;
  if (text == "off") return PassthroughMode::kOff;
  return Status::Invalid("passthrough=" + text + ": expected auto, on or off");
}

void PassthroughState::Set(bool on, std::string reason) {
  std::lock_guard<std::mutex> lock(mu_);
  on_ = on;
  reason_ = std::move(reason);
}
bool PassthroughState::on() const {
  std::lock_guard<std::mutex> lock(mu_);
  return on_;
}
std::string PassthroughState::reason() const {
  std::lock_guard<std::mutex> lock(mu_);
  return reason_;
}

bool HaveCapSysAdmin() {
  struct __user_cap_header_struct header;
  struct __user_cap_data_struct data[2];
  std::memset(&header, 0, sizeof(header));
  std::memset(data, 0, sizeof(data));
  header.version = _LINUX_CAPABILITY_VERSION_3;
  header.pid = 0;
  if (syscall(SYS_capget, &header, data) != 0) return false;
  return (data[CAP_SYS_ADMIN / 32].effective & (1u << (CAP_SYS_ADMIN % 32))) != 0;
}

uint64_t KernelPassthrough::EffectiveHeldCopies(uint64_t held_copies) {
  return (held_copies + kShards - 1) / kShards * kShards;
}

KernelPassthrough::KernelPassthrough(std::string probe_dir, PassthroughState* state,
                                     uint64_t held_copies)
    : probe_dir_(std::move(probe_dir)),
      state_(state),
      idle_per_shard_(static_cast<size_t>(EffectiveHeldCopies(held_copies) / kShards)) {}

ssize_t KernelPassthrough::HookRead(int fd, void* buf, size_t len) {
  ssize_t n = ::read(fd, buf, len);
  if (n >= static_cast<ssize_t>(sizeof(struct fuse_in_header))) {
    const auto* in = static_cast<const struct fuse_in_header*>(buf);
    tl_request_unique = in->unique;
    tl_request_nodeid = in->nodeid;
    tl_request_opcode = in->opcode;
    if (in->opcode == kFuseInitOpcode &&
        n >= static_cast<ssize_t>(sizeof(struct fuse_in_header) + kInitInFlags2 + 4)) {
      const char* arg = static_cast<const char*>(buf) + sizeof(struct fuse_in_header);
      bool ext = (Load32(arg, kInitInFlags) & kInitExt) != 0;
      bool offers = ext && (Load32(arg, kInitInFlags2) & kPassthroughFlags2) != 0;
      kernel_offers_.store(offers);
      init_unique_.store(in->unique);
      init_seen_.store(true);
    }
  }
  return n;
}

void KernelPassthrough::PatchInitReply(struct iovec* iov, int count) {
  if (count < 2 || iov[1].iov_len < kInitOutMinSize) return;
  void* out = iov[1].iov_base;
  uint32_t flags = Load32(out, kInitOutFlags);
  flags |= kInitExt;
  flags &= ~kWritebackCache;  // the kernel refuses passthrough with writeback cache
  Store32(out, kInitOutFlags, flags);
  Store32(out, kInitOutFlags2, Load32(out, kInitOutFlags2) | kPassthroughFlags2);
  Store32(out, kInitOutMaxStackDepth, 1);  // staged copies live on a non-stacked filesystem
  init_patched_.store(true);
}

void KernelPassthrough::NoteRequest(uint64_t unique, uint64_t nodeid, uint32_t opcode) {
  tl_request_unique = unique;
  tl_request_nodeid = nodeid;
  tl_request_opcode = opcode;
}

KernelPassthrough::RequestNote KernelPassthrough::CurrentRequest() {
  return RequestNote{tl_request_unique, tl_request_nodeid, tl_request_opcode};
}

bool KernelPassthrough::PatchReply(struct iovec* iov, int count) {
  bool was_init = false;
  if (count >= 1 && iov[0].iov_len >= sizeof(struct fuse_out_header)) {
    auto* out = static_cast<struct fuse_out_header*>(iov[0].iov_base);
    if (out->error == 0) {
      if (init_seen_.load() && !init_patched_.load() && out->unique == init_unique_.load()) {
        was_init = true;
        if (kernel_offers_.load()) PatchInitReply(iov, count);
      } else if (tl_open_armed && out->unique == tl_request_unique && count >= 2 &&
                 iov[1].iov_len >= kOpenOutSize) {
        void* open_out = iov[1].iov_base;
        uint32_t flags = Load32(open_out, kOpenOutFlags);
        flags &= ~(kOpenKeepCache | kOpenDirectIo);
        flags |= kOpenPassthrough;
        Store32(open_out, kOpenOutFlags, flags);
        Store32(open_out, kOpenOutBackingId, static_cast<uint32_t>(tl_open_backing_id));
        tl_open_armed = false;
      }
    }
  }
  return was_init;
}

void KernelPassthrough::AfterReply(bool was_init, ssize_t written, int error) {
  // The kernel applies the INIT reply while it is written, so the probe below sees its result.
  if (!was_init) return;
  if (written < 0) {
    state_->Set(false, std::string("INIT reply failed: ") + strerror(error));
  } else if (!kernel_offers_.load()) {
    state_->Set(false,
                "the kernel does not offer FUSE_PASSTHROUGH (needs Linux >= 6.9 with "
                "CONFIG_FUSE_PASSTHROUGH)");
    Log(LogLevel::kInfo, "passthrough: off (%s)", state_->reason().c_str());
  } else {
    ProbeAfterInit();
  }
}

void KernelPassthrough::ProbeAfterInit() {
  int fd = open(probe_dir_.c_str(), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
  std::string named;
  if (fd < 0) {
    named = probe_dir_ + "/.passthrough-probe-XXXXXX";
    fd = mkostemp(named.data(), O_CLOEXEC);
    if (fd >= 0) unlink(named.c_str());
  }
  if (fd < 0) {
    state_->Set(false, "cannot create a probe file in " + probe_dir_ + ": " + strerror(errno));
    Log(LogLevel::kWarn, "passthrough: off (%s)", state_->reason().c_str());
    return;
  }
  int id = BackingOpen(fuse_fd_, fd);
  int err = errno;
  close(fd);
  if (id < 0) {
    std::string reason;
    if (err == EPERM) {
      reason =
          "the kernel refused BACKING_OPEN (EPERM): no CAP_SYS_ADMIN in the initial user "
          "namespace, or passthrough not accepted at INIT";
    } else if (err == ELOOP) {
      reason = "the cache directory is on a stacked filesystem (BACKING_OPEN: ELOOP)";
    } else {
      reason = std::string("BACKING_OPEN failed: ") + strerror(err);
    }
    state_->Set(false, reason);
    Log(LogLevel::kWarn, "passthrough: off (%s)", reason.c_str());
    return;
  }
  BackingClose(fuse_fd_, id);
  active_.store(true, std::memory_order_release);
  state_->Set(true, "staged files are read by the kernel from their copies");
  Log(LogLevel::kInfo, "passthrough: on (staged files are read directly by the kernel)");
}

void KernelPassthrough::Disable(const std::string& reason) {
  active_.store(false, std::memory_order_release);
  std::call_once(disabled_once_, [&] {
    state_->Set(false, reason);
    Log(LogLevel::kWarn, "passthrough: off (%s)", reason.c_str());
  });
}

bool KernelPassthrough::CurrentRequestIsOpenOf(uint64_t ino) const {
  return tl_request_opcode == kOpcodeOpen && tl_request_nodeid == ino;
}

void KernelPassthrough::ArmOpenReply(int backing_id) {
  tl_open_armed = true;
  tl_open_backing_id = backing_id;
}

void KernelPassthrough::DisarmOpenReply() { tl_open_armed = false; }

OpenDecision KernelPassthrough::BeginOpen(uint64_t ino, int fd, bool from_cache,
                                          const FileIdentity& identity,
                                          const std::string& data_path) {
  OpenDecision d;
  int stale_id = -1;
  {
    Shard& shard = ShardOf(ino);
    std::unique_lock<std::mutex> lock(shard.mu);
    for (bool waited = false;; waited = true) {
      auto it = shard.inodes.find(ino);
      if (it != shard.inodes.end() && it->second.opens == 0) {
        // A released id this open did not claim (another copy or version): retire it.
        stale_id = DropIdleLocked(shard, it);
        it = shard.inodes.end();
      }
      if (it == shard.inodes.end()) {
        // First open of the inode: the mode is free to choose.
        InodeEntry& e = shard.inodes[ino];
        if (from_cache && active() && CurrentRequestIsOpenOf(ino)) {
          int id = BackingOpen(fuse_fd_, fd);
          if (id >= 0) {
            e.passthrough = true;
            e.backing_id = id;
            e.identity = identity;
            e.data_path = data_path;
            if (!data_path.empty()) shard.by_data_path[data_path] = ino;
          } else if (errno == EPERM) {
            Disable("the kernel refused BACKING_OPEN (EPERM)");
          } else {
            Log(LogLevel::kDebug, "passthrough: BACKING_OPEN of inode %llu failed: %s",
                static_cast<unsigned long long>(ino), strerror(errno));
          }
        }
        e.opens = 1;
        it = shard.inodes.find(ino);
      } else {
        ++it->second.opens;
      }
      InodeEntry& e = it->second;
      if (!e.passthrough) break;
      if (e.identity == identity && CurrentRequestIsOpenOf(ino)) {
        // Same file version: the copy the kernel already holds has these bytes, even if it was
        // evicted or re-staged since.
        d.passthrough = true;
        d.backing_id = e.backing_id;
        break;
      }
      // Changed since the passthrough opens began: their copy is stale, and the kernel takes no
      // other backing file or non-passthrough open for the inode until they are released.
      --e.opens;  // e.opens stays > 0: the earlier opens still hold it
      if (!waited && !(e.identity == identity)) {
        // A close returns before the kernel sends its RELEASE: an open right after the last
        // close may arrive first. Give those releases a moment before failing.
        shard.released.wait_for(lock, kReleaseWait, [&] {
          auto found = shard.inodes.find(ino);
          return found == shard.inodes.end() || found->second.opens == 0;
        });
        continue;
      }
      d.error = EBUSY;
      Log(LogLevel::kInfo,
          "passthrough: inode %llu changed while open; new opens fail (EBUSY) until the "
          "earlier ones are closed",
          static_cast<unsigned long long>(ino));
      break;
    }
  }
  if (stale_id >= 0) BackingClose(fuse_fd_, stale_id);
  return d;
}

bool KernelPassthrough::Claim(uint64_t ino, const FileIdentity& identity,
                              const std::string& data_path, int* handle) {
  Shard& shard = ShardOf(ino);
  std::lock_guard<std::mutex> lock(shard.mu);
  auto it = shard.inodes.find(ino);
  if (it == shard.inodes.end()) return false;
  InodeEntry& e = it->second;
  if (!e.passthrough || !(e.identity == identity) || !CurrentRequestIsOpenOf(ino)) return false;
  if (e.opens == 0) {
    // A released id is reused only for the very copy it registered, still in the store.
    if (e.data_path.empty() || e.data_path != data_path) return false;
    shard.idle.erase(e.idle_pos);
    state_->AddHeldCopies(-1);
  }
  ++e.opens;
  *handle = e.backing_id;
  return true;
}

int KernelPassthrough::DropIdleLocked(Shard& shard,
                                      std::unordered_map<uint64_t, InodeEntry>::iterator it) {
  InodeEntry& e = it->second;
  int id = e.backing_id;
  shard.idle.erase(e.idle_pos);
  state_->AddHeldCopies(-1);
  if (!e.data_path.empty()) shard.by_data_path.erase(e.data_path);
  shard.inodes.erase(it);
  return id;
}

void KernelPassthrough::CopyRemoved(const std::string& data_path) {
  // The copy's inode is unknown here: look in every shard (evictions are rare next to opens).
  for (Shard& shard : shards_) {
    int close_id = -1;
    {
      std::lock_guard<std::mutex> lock(shard.mu);
      auto by_path = shard.by_data_path.find(data_path);
      if (by_path == shard.by_data_path.end()) continue;
      auto it = shard.inodes.find(by_path->second);
      shard.by_data_path.erase(by_path);
      if (it == shard.inodes.end()) continue;
      it->second.data_path.clear();  // live opens keep the copy; their last release closes it
      if (it->second.opens == 0) close_id = DropIdleLocked(shard, it);
    }
    if (close_id >= 0) BackingClose(fuse_fd_, close_id);
    return;
  }
}

size_t KernelPassthrough::HoldRoom() const {
  if (!active()) return 0;
  const size_t bound = idle_per_shard_ * shards_.size();
  const uint64_t held = state_->held_copies();
  return held >= bound ? 0 : static_cast<size_t>(bound - held);
}

bool KernelPassthrough::Hold(uint64_t ino, int fd, const FileIdentity& identity,
                             const std::string& data_path, HoldRank rank) {
  if (!active() || idle_per_shard_ == 0) return false;
  const bool displaces = rank == HoldRank::kMostRecent;
  Shard& shard = ShardOf(ino);
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    if (shard.inodes.count(ino) > 0 || (!displaces && shard.idle.size() >= idle_per_shard_)) {
      return false;
    }
  }
  // Registered outside the lock (a kernel table insert), then entered if nothing came first.
  const int id = BackingOpen(fuse_fd_, fd);
  if (id < 0) return false;
  bool held = false;
  int dropped_id = -1;
  {
    std::lock_guard<std::mutex> lock(shard.mu);
    if (shard.inodes.count(ino) == 0 && (displaces || shard.idle.size() < idle_per_shard_)) {
      if (shard.idle.size() >= idle_per_shard_) {
        dropped_id = DropIdleLocked(shard, shard.inodes.find(shard.idle.back()));
      }
      InodeEntry& e = shard.inodes[ino];
      e.passthrough = true;
      e.backing_id = id;
      e.identity = identity;
      e.data_path = data_path;
      shard.by_data_path[data_path] = ino;
      if (displaces) {
        shard.idle.push_front(ino);
        e.idle_pos = shard.idle.begin();
      } else {
        // Behind the ids of released opens: a recently used copy outranks a guess.
        shard.idle.push_back(ino);
        e.idle_pos = std::prev(shard.idle.end());
      }
      state_->AddHeldCopies(1);
      held = true;
    }
  }
  if (dropped_id >= 0) BackingClose(fuse_fd_, dropped_id);
  if (!held) BackingClose(fuse_fd_, id);
  return held;
}

void KernelPassthrough::EndOpen(uint64_t ino) {
  int close_id = -1;
  {
    Shard& shard = ShardOf(ino);
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.inodes.find(ino);
    if (it == shard.inodes.end()) return;
    InodeEntry& e = it->second;
    if (--e.opens > 0) return;
    shard.released.notify_all();  // an open of a changed file may wait for this (BeginOpen)
    if (e.passthrough && !e.data_path.empty()) {
      // Hold the id for the next open of this copy; retire the oldest held one beyond the bound.
      shard.idle.push_front(ino);
      e.idle_pos = shard.idle.begin();
      state_->AddHeldCopies(1);
      if (shard.idle.size() > idle_per_shard_) {
        close_id = DropIdleLocked(shard, shard.inodes.find(shard.idle.back()));
      }
    } else {
      close_id = e.backing_id;
      shard.inodes.erase(it);
    }
  }
  // The kernel's files hold their own references to the backing file.
  if (close_id >= 0) BackingClose(fuse_fd_, close_id);
}

}  // namespace clairfs
