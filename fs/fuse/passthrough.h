// KernelPassthrough: Linux FUSE passthrough (kernel >= 6.9) for staged files, reached from
// libfuse 3.14 (which does not negotiate it) through fuse_session_custom_io read/writev hooks.
//
// Protocol (kernel ABI, include/uapi/linux/fuse.h, protocol 7.40): the read hook notes the
// `unique` of INIT and OPEN requests; the writev hook patches their replies. INIT gets
// FUSE_INIT_EXT, FUSE_PASSTHROUGH (flags2 bit 5), max_stack_depth = 1 and no writeback cache;
// after the INIT reply a probe file in the cache directory is registered and unregistered
// (FUSE_DEV_IOC_BACKING_OPEN/CLOSE) to learn whether the kernel accepted. The OPEN reply of a
// passthrough open gets FOPEN_PASSTHROUGH, loses KEEP_CACHE and DIRECT_IO, and carries the
// backing id in fuse_open_out's former padding.
//
// Per-inode rule (the kernel fails an open with EIO otherwise, and refuses a non-passthrough open
// while an inode has a backing file): all live opens of one inode agree on the mode and use one
// backing id. BeginOpen decides at the first open of an inode (no live opens): passthrough if the
// open is served from a staged copy, else normal. Later opens follow that mode; in passthrough
// they reuse the inode's backing id (the copy the kernel holds, kept alive by it after an
// eviction) when they are the same backing file version. An open of a version that changed
// while passthrough opens of the old one are live cannot be served fresh through the kernel and
// must never be served stale: it fails with EBUSY until those opens are released (it first
// waits up to kReleaseWait for them: a close returns before its RELEASE arrives). The id is
// kept when the last open is released, as a held copy (HeldCopies): a later open of the same
// copy claims it without opening the copy or registering it again, which saves four system
// calls per open of a small file. At most `held_copies` ids (rounded up to a multiple of the 64
// shards) are held, the least recently released (or held) closed first; an id is closed as soon
// as its copy leaves the store (CopyRemoved) or the inode's next first open finds another copy,
// so an id never names a different copy and never pins evicted bytes.
//
// Threading: every method may be called from any FUSE worker. The per-open reply patch is
// carried in thread-local state set by ArmOpenReply on the thread that then calls
// fuse_reply_open (libfuse's writev hook runs on the replying thread). An OPEN answered later by
// a backing-call thread carries its request's note there (CurrentRequest, NoteRequest). Inode
// entries live in sharded maps whose locks are held only for map updates (the BACKING_OPEN ioctl, a
// table insert in the kernel, runs under a shard lock; no file I/O does). Errors: a refused
// BACKING_OPEN (EPERM) turns passthrough off for the rest of the mount, logged once; any other
// failure makes that one open a normal one.
#pragma once

#include <sys/uio.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <list>
#include <mutex>
#include <string>
#include <unordered_map>

#include "cache/node_attr.h"
#include "fs/held_copies.h"
#include "planner/base/status.h"

namespace clairfs {

enum class PassthroughMode { kAuto, kOn, kOff };

// Parses "auto", "on" or "off".
Result<PassthroughMode> ParsePassthroughMode(const std::string& text);

// What `clairfs status` reports: whether passthrough is in use and, if not, why. Thread-safe.
class PassthroughState {
 public:
  void Set(bool on, std::string reason);
  bool on() const;
  std::string reason() const;
  // Released backing ids held for the next open of their copy (see KernelPassthrough).
  uint64_t held_copies() const { return held_copies_.load(std::memory_order_relaxed); }
  void AddHeldCopies(int64_t delta) {
    held_copies_.fetch_add(static_cast<uint64_t>(delta), std::memory_order_relaxed);
  }

 private:
  std::atomic<uint64_t> held_copies_{0};
  // Guards on_ and reason_ (set at INIT and when passthrough is turned off, read by status).
  mutable std::mutex mu_;
  bool on_ = false;
  std::string reason_ = "not negotiated yet";
};

// Whether this process has CAP_SYS_ADMIN in its effective set (the kernel requires it for
// FUSE_DEV_IOC_BACKING_OPEN).
bool HaveCapSysAdmin();

struct OpenDecision {
  bool passthrough = false;
  int backing_id = -1;
  int error = 0;  // nonzero: answer the open with this errno (the open is already ended)
};

class KernelPassthrough final : public HeldCopies {
 public:
  // By default 64 Ki held ids in all: each pins an open file of the cache (a few hundred bytes of
  // kernel memory and its inode), so a dataset of up to 64 Ki files (several GiB of ~110 KB
  // samples) reopens with no registration at all, and larger ones hold their most recent files.
  static constexpr uint64_t kDefaultHeldCopies = 65536;
  static constexpr size_t kShards = 64;
  // The bound `held_copies` becomes: rounded up to a multiple of kShards (each shard holds an
  // equal share).
  static uint64_t EffectiveHeldCopies(uint64_t held_copies);

  // `probe_dir`: a directory on the cache's filesystem for the post-INIT probe file.
  // `held_copies`: at most this many ids held between opens (0: none, every open registers).
  KernelPassthrough(std::string probe_dir, PassthroughState* state,
                    uint64_t held_copies = kDefaultHeldCopies);

  // The mounted session's /dev/fuse fd (set before the hooks are installed on it).
  void set_fuse_fd(int fd) { fuse_fd_ = fd; }
  // True once INIT negotiated passthrough and the probe registered a backing file.
  bool active() const { return active_.load(std::memory_order_acquire); }

  // The hooks (called from FuseAdapter's C trampolines). HookRead reads one request and notes
  // it; a reply is PatchReply (INIT and armed OPEN replies; returns true for INIT), then the
  // write (to /dev/fuse or a ring entry), then AfterReply with its result (probes after INIT).
  ssize_t HookRead(int fd, void* buf, size_t len);
  bool PatchReply(struct iovec* iov, int count);
  void AfterReply(bool was_init, ssize_t written, int error);
  // Notes the request this thread serves when it did not come through HookRead (a ring request,
  // or a request a backing-call thread answers: fs/fuse/backing_calls.h).
  static void NoteRequest(uint64_t unique, uint64_t nodeid, uint32_t opcode);
  // The request this thread serves, as noted: carried to the thread that answers it later.
  struct RequestNote {
    uint64_t unique = 0;
    uint64_t nodeid = 0;
    uint32_t opcode = 0;
  };
  static RequestNote CurrentRequest();

  // Called by OnOpen once the core has opened the file, before replying. `fd` is the open data
  // file, `from_cache` whether it is a staged copy, `identity` the backing file's version.
  // Every BeginOpen must be matched by one EndOpen (at RELEASE, or at once if the reply fails).
  // `data_path` is the staged copy's file (empty when not from the cache).
  OpenDecision BeginOpen(uint64_t ino, int fd, bool from_cache, const FileIdentity& identity,
                         const std::string& data_path);
  void EndOpen(uint64_t ino);

  // HeldCopies: an open claims the inode's id (live, or held after release) when it is the same
  // file version (and, for a released id, the same copy); its reply carries the id.
  bool Claim(uint64_t ino, const FileIdentity& identity, const std::string& data_path,
             int* handle) override;
  void CopyRemoved(const std::string& data_path) override;
  size_t HoldRoom() const override;
  bool Hold(uint64_t ino, int fd, const FileIdentity& identity, const std::string& data_path,
            HoldRank rank) override;

  // Arms the OPEN reply patch for the request this thread is serving; false if this thread's
  // current request is not the OPEN of `ino` (then the open must not be passthrough).
  bool CurrentRequestIsOpenOf(uint64_t ino) const;
  void ArmOpenReply(int backing_id);
  void DisarmOpenReply();

 private:
  struct InodeEntry {
    int opens = 0;  // 0: released, held in the shard's idle list
    bool passthrough = false;
    int backing_id = -1;
    FileIdentity identity;
    std::string data_path;                   // the registered copy; empty once it left the store
    std::list<uint64_t>::iterator idle_pos;  // valid while opens == 0
  };
  struct Shard {
    // Guards everything in this shard (inodes, by_data_path, idle; `released` waits on it). One
    // shard's lock at a time: no path holds two, so there is no lock order. Never held across a
    // reply to the kernel. The BACKING_OPEN of an inode's first open runs under it (so that all
    // opens of the inode agree on one id); backing ids are closed after it is released.
    std::mutex mu;
    std::unordered_map<uint64_t, InodeEntry> inodes;
    std::unordered_map<std::string, uint64_t> by_data_path;  // registered copies -> inode
    std::list<uint64_t> idle;          // held ids, highest rank (most recently released) first
    std::condition_variable released;  // an inode's last open ended
  };
  // How long an open of a changed file waits for the RELEASEs of the old version's opens.
  static constexpr std::chrono::milliseconds kReleaseWait{200};
  Shard& ShardOf(uint64_t ino) { return shards_[ino % shards_.size()]; }
  void PatchInitReply(struct iovec* iov, int count);
  void ProbeAfterInit();
  void Disable(const std::string& reason);
  // Removes a released entry from the shard (lock held); returns its id to close.
  int DropIdleLocked(Shard& shard, std::unordered_map<uint64_t, InodeEntry>::iterator it);

  std::string probe_dir_;
  PassthroughState* state_;
  int fuse_fd_ = -1;
  std::atomic<uint64_t> init_unique_{0};
  std::atomic<bool> init_seen_{false};
  std::atomic<bool> kernel_offers_{false};
  std::atomic<bool> init_patched_{false};
  std::atomic<bool> active_{false};
  std::once_flag disabled_once_;
  size_t idle_per_shard_;  // each shard's share of the held-copy bound
  std::array<Shard, kShards> shards_;
};

}  // namespace clairfs
