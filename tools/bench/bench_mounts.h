// Mounts driven by tools (the benchmark instruments and `clairfs demo`): run `clairfs mount`,
// `clairfs pfs-emu`, `clairfs umount` and other `clairfs` commands against a mount, read a
// mount's status, and wait for its staging to go idle.
//
// MountStack records every mount it made and unmounts them in reverse order, on every exit path:
// explicitly with Pop()/PopAll() (which report failures) or from the destructor (which only
// cleans up). A clairfs mount is unmounted with `clairfs umount`, an emulator with
// `fusermount3 -u`; if that fails, `fusermount3 -uz` detaches it lazily so nothing is left behind.
// Each mount is also registered for cleanup when the command is interrupted
// (tools/interrupt_cleanup.h) from before its mount command runs until it is unmounted.
// When `clairfs umount` reports the mount gone but the daemon still exiting (it may take a while
// on a loaded machine), Pop waits up to two minutes for the daemon to exit, so that the next
// mount of the same cache directory does not find it locked.
// Thread-safety: a MountStack belongs to one thread; the free functions are independent.
// Errors: Status values naming the mountpoint and carrying the failing command's stderr.
#pragma once

#include <sys/types.h>

#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/base/status.h"

namespace clairfs {

class MountStack {
 public:
  // `self` is the clairfs executable (SelfExecutable()).
  explicit MountStack(std::string self) : self_(std::move(self)) {}
  ~MountStack() { (void)PopAll(); }
  MountStack(const MountStack&) = delete;
  MountStack& operator=(const MountStack&) = delete;

  // Runs `clairfs mount BACKING MNT <flags>` and records the mount.
  Status MountClairfs(const std::string& backing, const std::string& mountpoint,
                      const std::vector<std::string>& flags);
  // Runs `clairfs pfs-emu BACKING MNT <flags>` and records the mount.
  Status MountEmulator(const std::string& backing, const std::string& mountpoint,
                       const std::vector<std::string>& flags);
  // Unmounts the most recent mount; the first failure of PopAll is returned.
  Status Pop();
  Status PopAll();
  bool empty() const { return mounts_.empty(); }
  const std::string& self() const { return self_; }

 private:
  Status Run(const std::vector<std::string>& argv, const std::string& mountpoint, bool is_clairfs);

  struct Mounted {
    std::string mountpoint;
    bool is_clairfs = false;
    pid_t daemon_pid = -1;  // clairfs daemon (from status), -1 if unknown
  };
  std::string self_;
  std::vector<Mounted> mounts_;
};

// Runs `SELF ARGS...` (another `clairfs` command, e.g. `stage MNT --wait`) with stdout on
// /dev/null; a non-zero exit is EIO naming the command, its exit code and its stderr.
Status RunClairfsCommand(const std::string& self, const std::vector<std::string>& args);

// The daemon's `status` reply (see fs/status_report.h).
Result<nlohmann::json> MountStatus(const std::string& mountpoint);

// The PFS emulator's counters since its mount (pfs_emu_fs.h): files opened, bytes read from the
// backing store.
struct PfsEmuCounters {
  uint64_t opens = 0;
  uint64_t bytes_read = 0;
};
Result<PfsEmuCounters> ReadEmulatorCounters(const std::string& mountpoint);

// Polls status until staging.queued == 0 and staging.in_flight == 0; ETIMEDOUT after
// `timeout_seconds`.
Status WaitStagingIdle(const std::string& mountpoint, int timeout_seconds = 600);

}  // namespace clairfs
