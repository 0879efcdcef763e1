// FuseAdapter: the thin libfuse3 low-level adapter over FileSystem.
//
// Each callback calls the core and replies through one helper that maps a Status to an errno
// (and logs unexpected errors at debug level). No exception leaves a callback. Inode numbers are
// the manifest's, stable for the life of the mount, so lookup counts need no bookkeeping here:
// forget only acknowledges. Kernel caching: long entry/attr timeouts, keep_cache on opens of
// unchanged files, cache_readdir, readdirplus, no FLUSH round trip (noflush).
//
// No-open mode (options.no_open, docs/NO-OPEN.md): OPEN and FLUSH are answered ENOSYS, which the
// kernel takes as "no open support" for the whole connection: it sends no OPEN, FLUSH or RELEASE
// from then on, keeps every file's pages (keep_cache) and sends READs with no handle (fh 0),
// which FileSystem::FileForRead serves by inode. Excludes passthrough (set up in OPEN replies).
//
// Lifetime: Create() makes the session; Mount() attaches it; Loop() serves until the filesystem
// is unmounted or Exit() is called (from a signal handler or another thread); the destructor
// unmounts if still mounted. InvalidateInode may be called from any thread while Loop() runs.
//
// Backing-store calls (options.backing_threads > 0; docs/RELIABILITY.md, backing store faults,
// finding 3): an OPEN that must call the backing store (FileSystem::Open's `deferred`: a miss,
// or any open under revalidate=open) and a READ of a backing file (FileSystem::ReadCallsBacking;
// on a no-open mount, FileForRead's deferral) are handed to a BackingCallPool and answered from
// its thread, so a hung backing store holds no request thread. Hits stay on the request thread.
// Requests that arrived over the io_uring transport are not handed on: a ring entry is answered
// by its own ring thread (one entry per thread, SINGLE_ISSUER rings), so a hung backing call
// holds that ring thread as before. With passthrough, the OPEN's request note goes with it, so
// its reply is patched on the answering thread. EndBackingCalls() (at stop) answers queued calls
// ENOTCONN at once; the destructor waits for running ones (bounded by the daemon's deadline).
//
// libfuse's custom io hooks are installed when passthrough or the io_uring transport may be used;
// then Mount() serves INIT itself (the hooks negotiate both), starts the ring threads if the
// ring was accepted, and the writev hook routes each reply: to the ring entry of the request
// when the replying thread serves one, else to /dev/fuse.
#pragma once

#include <atomic>
#include <memory>
#include <string>

#include "fs/filesystem.h"
#include "fs/fuse/backing_calls.h"
#include "fs/fuse/fuse_uring_transport.h"
#include "fs/fuse/passthrough.h"
#include "planner/base/status.h"

struct fuse_session;

namespace clairfs {

enum class ReadMode { kPread, kSplice };

// Parses "pread" or "splice".
Result<ReadMode> ParseReadMode(const std::string& text);

struct FuseAdapterOptions {
  std::string kernel_options;  // the -o string (see KernelMountOptions)
  double entry_timeout = 86400;
  double attr_timeout = 86400;
  int max_threads = 128;
  int max_idle_threads = 8;
  ReadMode read_mode = ReadMode::kPread;
  PassthroughMode passthrough = PassthroughMode::kOff;
  std::string passthrough_probe_dir;                             // on the staged copies' filesystem
  PassthroughState* passthrough_state = nullptr;                 // reported by status; may be null
  uint64_t held_copies = KernelPassthrough::kDefaultHeldCopies;  // ids held between opens
  // FUSE over io_uring (docs/FUSE-URING.md): auto uses it when the kernel offers it at INIT
  // (enable_uring=Y), on fails the mount without it, off never asks.
  FuseUringMode fuse_uring = FuseUringMode::kOff;
  int uring_threads_per_queue = 2;
  FuseTransportState* transport_state = nullptr;  // reported by status; may be null
  // The dataset has entries with POSIX access ACLs: ask the kernel to enforce them
  // (FUSE_CAP_POSIX_ACL; the ACLs are served from the manifest); Mount fails if it cannot.
  bool posix_acl = false;
  // No-open mode (see the top); `passthrough` must be kOff with it.
  bool no_open = false;
  // With revalidate=open: the kernel asks for a file's attributes before a read when an
  // invalidation left them stale (FUSE_CAP_AUTO_INVAL_DATA), rather than reading within the old
  // size and learning a smaller one only from a short READ, which an invalidation crossing that
  // READ makes it drop, keeping the old size and zero-filled pages (docs/RELIABILITY.md, backing
  // store faults, finding 2). A kernel that does not offer it is logged as a warning.
  bool attributes_before_reads = false;
  // Threads that answer calls to the backing store (see the top); 0: on the request threads.
  int backing_threads = 256;
  BackingCallState* backing_state = nullptr;  // reported by status; may be null
};

class FuseAdapter final : public KernelNotifier {
 public:
  static Result<std::unique_ptr<FuseAdapter>> Create(FileSystem* fs,
                                                     const FuseAdapterOptions& options);
  ~FuseAdapter() override;
  FuseAdapter(const FuseAdapter&) = delete;
  FuseAdapter& operator=(const FuseAdapter&) = delete;

  Status Mount(const std::string& mountpoint);
  // Installs SIGINT/SIGTERM/SIGHUP handlers that end Loop().
  Status InstallSignalHandlers();
  // Serves requests until unmounted or Exit(). Returns an error only if the loop failed.
  Status Loop();
  void Exit();
  void Unmount();
  // Detaches the mount now, lazily (MNT_DETACH): new lookups no longer reach it, files open in it
  // stay served until closed. Any thread; once. Unmount() after it only closes the session.
  void Detach();
  // Ends the FUSE connection now, for a daemon about to exit with requests still unanswered:
  // every request waiting on this daemon fails at once (ECONNABORTED) and no more are sent. Uses
  // the connection's "abort" file of fusectl (/sys/fs/fuse/connections, mounted privately for the
  // call when the system has not, as root), else closes the device. Any thread.
  void AbortConnection();

  void InvalidateInode(uint64_t ino) override;
  // Answers every queued backing call ENOTCONN now, and every later one at once; calls running
  // go on. For a daemon that is stopping. Any thread.
  void EndBackingCalls();
  // EndBackingCalls, then waits for the running calls to end (a hung one: until the daemon's
  // stop deadline ends the process). Any thread but a backing-call thread; before destruction.
  void StopBackingCalls();
  // Ends the io_uring transport's threads and waits for them, after Unmount: a thread whose
  // request hangs in a backing-store call holds the wait (until the daemon's stop deadline ends
  // the connection and the process), as a hung backing call holds StopBackingCalls.
  void StopRingThreads();

  // Used by the C callbacks.
  FileSystem* fs() const { return fs_; }
  const FuseAdapterOptions& options() const { return options_; }
  // Null unless the passthrough hooks are installed.
  KernelPassthrough* passthrough() const { return passthrough_.get(); }
  // Null unless the io_uring transport may be negotiated.
  FuseUringTransport* uring() const { return uring_.get(); }
  // Null unless backing calls are answered off the request threads.
  BackingCallPool* backing_calls() const { return backing_calls_.get(); }
  // Whether requests are read through the custom io hooks (then libfuse cannot splice).
  bool custom_io() const { return custom_io_; }
  // Called from INIT when the kernel took FUSE_CAP_POSIX_ACL.
  void set_posix_acl_granted() { posix_acl_granted_ = true; }

 private:
  FuseAdapter(FileSystem* fs, const FuseAdapterOptions& options) : fs_(fs), options_(options) {}
  // After mounting: installs the hooks and serves INIT (see the header comment).
  Status SetUpHooks();
  // Serves one request in /dev/fuse layout (a ring thread's Dispatch).
  void ProcessRingRequest(char* request, size_t len);
  FileSystem* fs_;
  FuseAdapterOptions options_;
  struct fuse_session* session_ = nullptr;
  std::atomic<bool> mounted_{false};
  std::atomic<bool> detached_{false};
  std::string mountpoint_;    // set by Mount
  dev_t connection_dev_ = 0;  // the mount's st_dev, whose minor names its fusectl entry
  bool signals_installed_ = false;
  PassthroughState own_passthrough_state_;  // used when options_.passthrough_state is null
  std::unique_ptr<KernelPassthrough> passthrough_;
  FuseTransportState own_transport_state_;  // used when options_.transport_state is null
  std::unique_ptr<FuseUringTransport> uring_;
  std::unique_ptr<BackingCallPool> backing_calls_;
  bool custom_io_ = false;
  bool posix_acl_granted_ = false;  // set by INIT, read after it
};

}  // namespace clairfs
