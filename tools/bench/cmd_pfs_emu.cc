// `clairfs pfs-emu BACKING MOUNTPOINT`: mounts a directory as an emulated busy PFS client
// (latency, bandwidth caps, injected errors). See pfs_emu_fs.h for the model and
// pfs_emu_daemon.h for the process contract. Exit codes: 0 mounted (or, with --foreground,
// served until unmounted), 1 could not mount, 2 bad arguments.
#include <memory>
#include <string>
#include <vector>

#include "planner/base/units.h"
#include "tools/bench/cmd_bench.h"
#include "tools/bench/pfs_emu_daemon.h"
#include "tools/bench/pfs_emu_options.h"
#include "tools/cli/cli.h"

namespace clairfs::cli {
namespace {

constexpr const char* kPfsEmuCommand = "pfs-emu";

struct PfsEmuArgs {
  std::string backing;
  std::string mountpoint;
  std::string open_latency = "0";
  std::string stat_latency = "0";
  std::string read_latency = "0";
  std::string bandwidth = "0";
  std::string stream_bandwidth = "0";
  std::vector<std::string> fail;
  std::vector<std::string> slow;
  bool foreground = false;
};

Result<PfsEmuOptions> BuildOptions(const PfsEmuArgs& args) {
  PfsEmuOptions options;
  options.backing = args.backing;
  options.mountpoint = args.mountpoint;
  options.foreground = args.foreground;
  struct Latency {
    const char* flag;
    const std::string* text;
    uint64_t* out;
  } latencies[] = {{"--open-latency", &args.open_latency, &options.open_latency_ns},
                   {"--stat-latency", &args.stat_latency, &options.stat_latency_ns},
                   {"--read-latency", &args.read_latency, &options.read_latency_ns}};
  for (const auto& l : latencies) {
    auto ns = ParseLatencyMs(*l.text);
    if (!ns.ok()) return ns.status().WithContext(l.flag);
    *l.out = *ns;
  }
  auto bandwidth = ParseBandwidthMBps(args.bandwidth);
  if (!bandwidth.ok()) return bandwidth.status().WithContext("--bandwidth");
  options.bandwidth = *bandwidth;
  auto stream = ParseBandwidthMBps(args.stream_bandwidth);
  if (!stream.ok()) return stream.status().WithContext("--stream-bandwidth");
  options.stream_bandwidth = *stream;
  for (const auto& text : args.fail) {
    auto rule = ParseFailRule(text);
    if (!rule.ok()) return rule.status();
    options.fail_rules.push_back(*rule);
  }
  for (const auto& text : args.slow) {
    auto rule = ParseSlowRule(text);
    if (!rule.ok()) return rule.status();
    options.slow_rules.push_back(*rule);
  }
  return options;
}

}  // namespace

void RegisterPfsEmu(CLI::App& app) {
  auto args = std::make_shared<PfsEmuArgs>();
  CLI::App* cmd = AddCommand(
      &app, kPfsEmuCommand,
      "Mount BACKING read-only at MOUNTPOINT as an emulated busy parallel-filesystem client: "
      "per-operation latency (overlapping across requests), bandwidth caps and injected errors, "
      "with no kernel caching. A benchmark instrument, not part of clairfs. Files opened and bytes "
      "read since the mount: `getfattr --only-values -n user.pfs_emu.counters MOUNTPOINT` (JSON). "
      "Unmount with `fusermount3 -u MOUNTPOINT`.");
  cmd->add_option("BACKING", args->backing, "Directory to serve")->required();
  cmd->add_option("MOUNTPOINT", args->mountpoint, "Empty directory to mount on")->required();
  cmd->add_option("--open-latency", args->open_latency, "Added to each open, ms (default 0)")
      ->type_name("MS");
  cmd->add_option("--stat-latency", args->stat_latency,
                  "Added to each lookup and getattr, ms (default 0)")
      ->type_name("MS");
  cmd->add_option("--read-latency", args->read_latency,
                  "Added to each read request, ms (default 0)")
      ->type_name("MS");
  cmd->add_option("--bandwidth", args->bandwidth, "Aggregate read cap, MB/s (default 0: none)")
      ->type_name("MB/s");
  cmd->add_option("--stream-bandwidth", args->stream_bandwidth,
                  "Per-open-file read cap, MB/s (default 0: none)")
      ->type_name("MB/s");
  cmd->add_option("--fail", args->fail,
                  "GLOB:ERRNO makes opens of matching relative paths fail (e.g. "
                  "'class_0001/*:EIO'); read:GLOB:ERRNO makes their reads fail. Repeatable")
      ->type_name("RULE")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_option("--slow", args->slow,
                  "GLOB:MS makes opens of matching relative paths take MS ms more (e.g. "
                  "'class_0001/*:20000': a per-file hang); read:GLOB:MS delays each of their "
                  "reads. Repeatable")
      ->type_name("RULE")
      ->expected(1)
      ->multi_option_policy(CLI::MultiOptionPolicy::TakeAll);
  cmd->add_flag("--foreground", args->foreground, "Serve in this process until unmounted");
  cmd->callback([args]() {
    auto options = BuildOptions(*args);
    if (!options.ok()) return SetExitCode(Fail(kPfsEmuCommand, options.status()));
    SetExitCode(RunPfsEmulator(*options));
  });
}

}  // namespace clairfs::cli
