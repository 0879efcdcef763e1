// FuseAdapter: the thin libfuse3 low-level adapter over FileSystem.
//
// Each callback calls the core and replies through one helper that maps a Status to an errno
// (and logs unexpected errors at debug level). No exception leaves a callback. Inode numbers are
// the manifest's, stable for the life of the mount, so lookup counts need no bookkeeping here:
// forget only acknowledges. Kernel caching: long entry/attr timeouts, keep_cache on opens of
// unchanged files, cache_readdir, readdirplus, no FLUSH round trip (noflush).
//
// Lifetime: Create() makes the session; Mount() attaches it; Loop() serves until the filesystem
// is unmounted or Exit() is called (from a signal handler or another thread); the destructor
// unmounts if still mounted. InvalidateInode may be called from any thread while Loop() runs.
#pragma once

#include <memory>
#include <string>

#include "fs/filesystem.h"
#include "fs/passthrough.h"
#include "planner/status.h"

struct fuse_session;

namespace clairfs {

enum class ReadMode { kPread, kSplice };

struct FuseAdapterOptions {
  std::string kernel_options;  // the -o string (see KernelMountOptions)
  double entry_timeout = 86400;
  double attr_timeout = 86400;
  int max_threads = 16;
  int max_idle_threads = 8;
  ReadMode read_mode = ReadMode::kPread;
  PassthroughMode passthrough = PassthroughMode::kOff;
  std::string passthrough_probe_dir;              // on the staged copies' filesystem
  PassthroughState* passthrough_state = nullptr;  // reported by status; may be null
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

  void InvalidateInode(uint64_t ino) override;

  // Used by the C callbacks.
  FileSystem* fs() const { return fs_; }
  const FuseAdapterOptions& options() const { return options_; }
  // Null unless the passthrough hooks are installed.
  KernelPassthrough* passthrough() const { return passthrough_.get(); }

 private:
  FuseAdapter(FileSystem* fs, const FuseAdapterOptions& options) : fs_(fs), options_(options) {}
  // After mounting: installs the hooks and serves INIT (see the header comment).
  Status SetUpPassthrough();
  FileSystem* fs_;
  FuseAdapterOptions options_;
  struct fuse_session* session_ = nullptr;
  bool mounted_ = false;
  bool signals_installed_ = false;
  PassthroughState own_passthrough_state_;  // used when options_.passthrough_state is null
  std::unique_ptr<KernelPassthrough> passthrough_;
};

}  // namespace clairfs
