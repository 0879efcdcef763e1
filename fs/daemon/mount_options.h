// MountOptions: everything `clairfs mount` accepts, from flags or from `-o key=value` (fstab).
//
// ApplyMountOption() takes one `-o` item: clairfs keys (cache=, capacity=, min_free=, ...)
// set fields; FUSE/kernel options (allow_other, ro, ...) pass through to the kernel; options meant
// only for mount(8) or systemd (_netdev, nofail, defaults, auto, noauto, user, x-*) are dropped.
// ApplyMountOptionItems() applies everything one `clairfs mount` was given (flags as key=value
// and -o items, in order) and is strict where one item alone cannot be: a clairfs setting given
// twice (`--capacity 1G -o capacity=2G`, `--read-through --no-read-through`) is refused rather
// than settled last-wins, and so are --layout, --layout-root and --plan-window without --plan,
// --kept-files without --open-mode no-open, and --hold-ahead and --held-copies with it (they shape
// passthrough, which no-open excludes).
// Values are parsed strictly (planner/units.h): no signs, exponents or hex in sizes and counts.
// Validate() checks values that do not depend on the filesystem (see daemon.h for the checks that
// do). Errors are EINVAL and name the option as flag and -o key ("--min-free (-o min_free): ...").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "fs/fuse/fuse_adapter.h"
#include "fs/fuse/fuse_uring_transport.h"
#include "fs/fuse/list_ahead.h"
#include "fs/fuse/passthrough.h"
#include "fs/fuse/sched_policy.h"
#include "fs/prefetch/plan_tracker.h"
#include "fs/prefetch/plan_watcher.h"
#include "fs/revalidate.h"
#include "planner/base/status.h"

namespace clairfs {

enum class ManifestMode { kRescan, kReuse };

// How files are opened (docs/NO-OPEN.md): kOpen, every open reaches the daemon (OPEN, RELEASE);
// kNoOpen, none does and READs name the inode (fs/fuse/fuse_adapter.h).
enum class OpenMode { kOpen, kNoOpen };

// Default bound of the files a no-open mount keeps open between READs (fs/kept_files.h).
inline constexpr uint64_t kDefaultKeptFiles = 1024;

inline constexpr char kDefaultPeerKeyPath[] = "/etc/clairfs/peer.key";

struct MountOptions {
  std::string backing;     // backing root (the PFS directory)
  std::string mountpoint;  // where the view is mounted
  std::string cache_dir;   // node-local cache directory
  uint64_t capacity = 0;   // bytes of staged data (allocated blocks); 0 = device size
  uint64_t min_free = 0;   // free space to keep on the cache device
  bool foreground = false;
  bool read_through = true;
  Revalidate revalidate = Revalidate::kNever;
  OpenMode open_mode = OpenMode::kOpen;
  uint64_t kept_files = kDefaultKeptFiles;  // no-open mode: files kept open between READs
  ManifestMode manifest = ManifestMode::kRescan;
  double attr_timeout = 86400.0;  // seconds; entry and attribute timeouts
  int stage_threads = 4;
  // Requests served at once (libfuse's worker threads, made on demand). An open or read that
  // waits on a hung backing store holds one; more of them than this stall every reader.
  int request_threads = 128;
  // Threads that answer OPENs and READs which must call the backing store (made on demand, idle
  // ones end), so that hung calls hold no request thread (fs/fuse/backing_calls.h); calls beyond
  // them queue. 0: such calls are served on the request threads.
  int backing_threads = 256;
  uint64_t stage_bandwidth = 0;  // bytes/s; 0 = unlimited
  // A copy of a file whose ctime is less than this before the copy began is not published but
  // staged again later: it may still be being written (StagerOptions::settle_ns). 0 = off.
  uint64_t stage_settle_ns = 2'000'000'000;
  bool allow_other = false;
  bool suid = false;  // by default nosuid,nodev
  bool dev = false;
  int scan_threads = 8;
  ReadMode read_mode = ReadMode::kPread;                 // how staged bytes reach /dev/fuse
  PassthroughMode passthrough = PassthroughMode::kAuto;  // kernel FUSE passthrough
  bool hold_ahead = true;        // passthrough: hold staged copies at mount (fs/held_copy_warmup.h)
  uint64_t held_copies = 65536;  // passthrough: ids held between opens (fs/passthrough.h); 0: none
  uint64_t list_ahead = kDefaultListAheadNames;     // names listed for the kernel at mount; 0: none
  FuseUringMode fuse_uring = FuseUringMode::kAuto;  // FUSE over io_uring (docs/FUSE-URING.md)
  int fuse_uring_threads = 2;                // ring threads per CPU queue, each with one entry
  SchedPolicy sched = SchedPolicy::kNormal;  // request-serving threads' CPU policy
  std::string log_file;                      // daemon log after startup (default: stderr)
  std::string metrics_file;  // Prometheus text file rewritten every few seconds (empty = none)
  // The site's peer key (docs/PEERS.md; docs/ADMIN.md "The peer key"): with it, staged copies
  // are sealed and a job's peer agent may attach. "none": no peer tier. A key given explicitly
  // that cannot be used fails the mount; the default one, when absent, just leaves peers off.
  std::string peer_key = kDefaultPeerKeyPath;
  bool peer_key_given = false;
  std::vector<std::string> fuse_options;  // passed to the kernel as -o
  // Access plan (see docs/PLANNER.md): spec, layout and layout root; empty spec = no plan. A
  // spec holds commas, so it is given with --plan (an -o list is split at commas).
  std::string plan;
  std::string plan_layout = "imagefolder";
  std::string plan_layout_root;
  uint64_t plan_window = 256;  // planned positions of reordering tolerated per rank
  // --plan-uid: the user whose opens the plan follows (and plan auto watches); kNoUid: everyone.
  uint32_t plan_uid = Opener::kNoUid;
  // The plan parsed by ValidateMountOptions (empty without --plan, and with --plan auto).
  std::optional<PlanTrackerConfig> plan_config;
  // --plan auto: the plan is inferred from the first opens (fs/prefetch/plan_watcher.h).
  std::optional<PlanWatcherConfig> plan_auto;
};

// A user as --plan-uid and `plan set --uid` take it: a uid (digits) or a name from the user
// database. EINVAL for a name that is not a user or a number that is not a uid.
Result<uint32_t> ParseUserId(const std::string& text);

// Applies one item of a comma-separated -o list (already split). Returns an error naming the
// option for an unknown clairfs key or a bad value.
Status ApplyMountOption(const std::string& item, MountOptions* options);
// "a,b=c,d" -> {"a", "b=c", "d"}.
std::vector<std::string> SplitMountOptionList(const std::string& list);
// Applies every item in order, refusing a clairfs setting given twice and plan-only settings
// without a plan (see the top of this file).
Status ApplyMountOptionItems(const std::vector<std::string>& items, MountOptions* options);
// ApplyMountOptionItems of one split -o list.
Status ApplyMountOptionList(const std::string& list, MountOptions* options);
// Checks value ranges and required fields, and parses the plan (--plan, --layout, --layout-root,
// --plan-window) into plan_config: the one parse of a mount's plan.
Status ValidateMountOptions(MountOptions* options);
// The -o string handed to the kernel: always default_permissions and ro, nosuid/nodev unless
// suid/dev, allow_other if set, fsname=clairfs:<backing>, subtype=clairfs, plus passthrough items.
std::string KernelMountOptions(const MountOptions& options);

}  // namespace clairfs
