// PfsEmuOptions: what `clairfs pfs-emu` accepts, and the parsers for its values.
//
// Latencies are milliseconds (decimals allowed: 0.5), bandwidths decimal MB/s (0 = unlimited),
// as the rest of the CLI. A failure rule is GLOB:ERRNO, or read:GLOB:ERRNO: GLOB is matched with
// fnmatch(3) (flags 0, so '*' also matches '/') against the path relative to the backing root
// (e.g. "class_0001/img_00000042.jpg"); ERRNO is a number or a name (EIO, ENOENT, EACCES, ...).
// A plain rule makes open(2) fail with that errno; a read: rule lets open succeed and makes every
// read of the file fail (a PFS that breaks mid-file). The first matching rule wins.
// A slow rule is GLOB:MS, or read:GLOB:MS: opens (or each read) of matching files take MS more
// milliseconds, on top of the global latencies (a PFS whose storage target for some files hangs
// while the rest answer). The first matching rule wins.
//
// Thread-safety: values and pure functions. Errors: EINVAL Status values naming the bad text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "planner/base/status.h"

namespace clairfs {

// The extended attribute of the emulator's root that holds its counters as JSON,
// {"opens":N,"bytes_read":N} (pfs_emu_fs.h).
inline constexpr char kPfsEmuCountersXattr[] = "user.pfs_emu.counters";

struct PfsFailRule {
  enum class Op { kOpen, kRead };
  Op op = Op::kOpen;
  std::string glob;
  int error = 0;  // errno, > 0
};

struct PfsSlowRule {
  PfsFailRule::Op op = PfsFailRule::Op::kOpen;
  std::string glob;
  uint64_t delay_ns = 0;
};

struct PfsEmuOptions {
  std::string backing;     // the directory served (absolute after Validate in the daemon)
  std::string mountpoint;  // an empty directory
  uint64_t open_latency_ns = 0;
  uint64_t stat_latency_ns = 0;   // lookup and getattr
  uint64_t read_latency_ns = 0;   // each read request
  uint64_t bandwidth = 0;         // bytes/s over all files, 0 = unlimited
  uint64_t stream_bandwidth = 0;  // bytes/s per open file, 0 = unlimited
  std::vector<PfsFailRule> fail_rules;
  std::vector<PfsSlowRule> slow_rules;
  bool foreground = false;
};

// Milliseconds (e.g. "2", "0.5") as nanoseconds; at most one hour.
Result<uint64_t> ParseLatencyMs(std::string_view text);
// "EIO", "eio", "5".
Result<int> ParseErrno(std::string_view text);
// The name of an errno value ("EIO"), or its number as text if it has no name here.
std::string ErrnoName(int error);
// "GLOB:ERRNO" or "read:GLOB:ERRNO" (the errno is after the last ':').
Result<PfsFailRule> ParseFailRule(std::string_view text);
// The errno of the first rule for `op` whose glob matches `relpath`, or 0.
int MatchFailRule(const std::vector<PfsFailRule>& rules, PfsFailRule::Op op,
                  std::string_view relpath);
// "GLOB:MS" or "read:GLOB:MS" (the milliseconds are after the last ':').
Result<PfsSlowRule> ParseSlowRule(std::string_view text);
// The added delay (ns) of the first slow rule for `op` whose glob matches `relpath`, or 0.
uint64_t MatchSlowRule(const std::vector<PfsSlowRule>& rules, PfsFailRule::Op op,
                       std::string_view relpath);

}  // namespace clairfs
