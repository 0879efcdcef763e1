// libFuzzer target for mount options (fs/daemon/mount_options.h): the `-o` string of `clairfs
// mount` and fstab, and the validation after it. Built with -DCLAIRFS_FUZZ=ON, run by .ci/fuzz.
// Input: "BACKING\0OPTIONS" (or just OPTIONS, over a fixed backing path with a comma and a
// backslash in it); OPTIONS holds no NUL (argv cannot). Properties:
//   - a refused list gets EINVAL with a message;
//   - an accepted list gives a value to no option that takes none (`allow_other=0` must not turn
//     allow_other on), and a stage_bandwidth equal to its decimal text in bytes per second;
//   - the kernel's option string, split as libfuse splits it (',' separates, '\' escapes the next
//     byte, '\ooo' is an octal byte), gives exactly ro, default_permissions, nosuid/nodev unless
//     suid/dev, allow_other if set, the FUSE options given, fsname=clairfs:BACKING unless given
//     and subtype=clairfs unless given;
//   - the options written out again as items (each setting once) apply to the same options;
//   - ValidateMountOptions accepts a plan only if its spec parses.
#include <fuzzer/FuzzedDataProvider.h>

#include <cerrno>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "fs/daemon/mount_options.h"
#include "planner/plan_spec.h"

namespace {

using namespace clairfs;

std::string Underscored(std::string key) {
  for (char& c : key) c = c == '-' ? '_' : c;
  return key;
}

// Options that are on or off by being named: a value given to one must be refused.
bool TakesNoValue(const std::string& key) {
  for (const char* k :
       {"foreground", "no_read_through", "allow_other", "suid", "dev", "nosuid", "nodev"}) {
    if (key == k) return true;
  }
  return false;
}

// libfuse's reading of an -o string (fuse_opt.c): items separated by ',', a backslash takes the
// next byte as it is, or three octal digits (first 0-3) as one byte.
std::vector<std::string> SplitAsLibfuse(const std::string& s) {
  std::vector<std::string> items(1);
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ',') {
      items.emplace_back();
    } else if (s[i] == '\\' && i + 1 < s.size()) {
      const auto octal = [&](size_t k, char max) {
        return k < s.size() && s[k] >= '0' && s[k] <= max;
      };
      if (octal(i + 1, '3') && octal(i + 2, '7') && octal(i + 3, '7')) {
        items.back().push_back(
            static_cast<char>((s[i + 1] - '0') * 64 + (s[i + 2] - '0') * 8 + (s[i + 3] - '0')));
        i += 3;
      } else {
        items.back().push_back(s[++i]);
      }
    } else {
      items.back().push_back(s[i]);
    }
  }
  return items;
}

std::vector<std::string> ExpectedKernelItems(const MountOptions& o) {
  std::vector<std::string> items = {"ro", "default_permissions"};
  if (!o.suid) items.push_back("nosuid");
  if (!o.dev) items.push_back("nodev");
  if (o.allow_other) items.push_back("allow_other");
  bool fsname = false, subtype = false;
  for (const std::string& item : o.fuse_options) {
    items.push_back(item);
    fsname = fsname || item.rfind("fsname=", 0) == 0;
    subtype = subtype || item.rfind("subtype=", 0) == 0;
  }
  if (!fsname) items.push_back("fsname=clairfs:" + o.backing);
  if (!subtype) items.push_back("subtype=clairfs");
  return items;
}

std::string Seconds(double value) {
  char buf[512];
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::fixed);
  if (ec != std::errc()) __builtin_trap();
  return std::string(buf, end);
}

// The word of an on/off/auto mode, as -o takes it.
template <typename Mode>
std::string ModeWord(Mode mode) {
  return mode == Mode::kOn ? "on" : mode == Mode::kOff ? "off" : "auto";
}

// `o` as -o items, each setting that differs from the defaults once, FUSE options as given.
std::vector<std::string> WriteOut(const MountOptions& o) {
  const MountOptions d;
  std::vector<std::string> items;
  auto add = [&](bool differs, const std::string& item) {
    if (differs) items.push_back(item);
  };
  add(o.cache_dir != d.cache_dir, "cache=" + o.cache_dir);
  add(o.capacity != d.capacity, "capacity=" + std::to_string(o.capacity));
  add(o.min_free != d.min_free, "min_free=" + std::to_string(o.min_free));
  add(o.foreground, "foreground");
  add(!o.read_through, "no_read_through");
  add(o.revalidate != d.revalidate, "revalidate=open");
  add(o.manifest != d.manifest, "manifest=reuse");
  add(o.open_mode != d.open_mode, "open_mode=no-open");
  add(o.kept_files != d.kept_files, "kept_files=" + std::to_string(o.kept_files));
  add(o.attr_timeout != d.attr_timeout, "attr_timeout=" + Seconds(o.attr_timeout));
  add(o.stage_threads != d.stage_threads, "stage_threads=" + std::to_string(o.stage_threads));
  add(o.request_threads != d.request_threads,
      "request_threads=" + std::to_string(o.request_threads));
  add(o.backing_threads != d.backing_threads,
      "backing_threads=" + std::to_string(o.backing_threads));
  add(o.stage_bandwidth != d.stage_bandwidth,
      "stage_bandwidth=" + std::to_string(o.stage_bandwidth / 1000000) + "." +
          std::to_string(1000000 + o.stage_bandwidth % 1000000).substr(1));
  add(o.stage_settle_ns != d.stage_settle_ns,
      "stage_settle=" + std::to_string(o.stage_settle_ns / 1000000000) + "." +
          std::to_string(1000000000 + o.stage_settle_ns % 1000000000).substr(1));
  add(o.allow_other, "allow_other");
  add(o.suid, "suid");
  add(o.dev, "dev");
  add(o.scan_threads != d.scan_threads, "scan_threads=" + std::to_string(o.scan_threads));
  add(o.read_mode != d.read_mode,
      std::string("read_mode=") + (o.read_mode == ReadMode::kSplice ? "splice" : "pread"));
  add(o.passthrough != d.passthrough, "passthrough=" + ModeWord(o.passthrough));
  add(o.hold_ahead != d.hold_ahead, "hold_ahead=off");
  add(o.held_copies != d.held_copies, "held_copies=" + std::to_string(o.held_copies));
  add(o.list_ahead != d.list_ahead, "list_ahead=" + std::to_string(o.list_ahead));
  add(o.fuse_uring != d.fuse_uring, "fuse_uring=" + ModeWord(o.fuse_uring));
  add(o.fuse_uring_threads != d.fuse_uring_threads,
      "fuse_uring_threads=" + std::to_string(o.fuse_uring_threads));
  add(o.sched != d.sched,
      std::string("sched=") + (o.sched == SchedPolicy::kBatch ? "batch" : "normal"));
  add(o.log_file != d.log_file, "log_file=" + o.log_file);
  add(o.metrics_file != d.metrics_file, "metrics_file=" + o.metrics_file);
  add(o.peer_key_given, "peer_key=" + o.peer_key);
  add(o.plan != d.plan, "plan=" + o.plan);
  add(o.plan_layout != d.plan_layout, "layout=" + o.plan_layout);
  add(o.plan_layout_root != d.plan_layout_root, "layout_root=" + o.plan_layout_root);
  add(o.plan_window != d.plan_window, "plan_window=" + std::to_string(o.plan_window));
  items.insert(items.end(), o.fuse_options.begin(), o.fuse_options.end());
  return items;
}

// The bytes per second a bandwidth text means ("12.5" or "12.5M" or "12.5MB/s"), approximately.
long double BandwidthOf(const std::string& text) {
  return std::strtold(text.c_str(), nullptr) * 1e6L;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  MountOptions options;
  options.backing = "/pfs/data,set\\012";
  options.mountpoint = "/mnt/data";
  std::string list = input;
  const size_t nul = input.find('\0');
  if (nul != std::string::npos) {
    options.backing = input.substr(0, nul);
    list = input.substr(nul + 1);
    if (list.find('\0') != std::string::npos || options.backing.empty()) return 0;
  }
  MountOptions given = options;
  Status applied = ApplyMountOptionList(list, &options);
  if (!applied.ok()) {
    if (applied.code() != EINVAL || applied.message().empty()) __builtin_trap();
    return 0;
  }
  for (const std::string& item : SplitMountOptionList(list)) {
    const size_t eq = item.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = Underscored(item.substr(0, eq));
    if (TakesNoValue(key)) __builtin_trap();
    if (key == "stage_bandwidth") {
      const long double expected = BandwidthOf(item.substr(eq + 1));
      if (std::fabs(static_cast<long double>(options.stage_bandwidth) - expected) >
          1 + expected * 1e-15L) {
        __builtin_trap();
      }
    }
  }

  if (SplitAsLibfuse(KernelMountOptions(options)) != ExpectedKernelItems(options)) {
    __builtin_trap();
  }

  MountOptions again = given;
  Status reapplied = ApplyMountOptionItems(WriteOut(options), &again);
  // The same settings: written out again, they give the same items.
  if (!reapplied.ok() || WriteOut(again) != WriteOut(options)) __builtin_trap();

  if (options.cache_dir.empty()) options.cache_dir = "/cache";
  Status valid = ValidateMountOptions(&options);
  if (valid.ok() && !options.plan.empty() && options.plan != "auto" &&
      !ParsePlanSpec(options.plan).ok()) {
    __builtin_trap();
  }
  if (!valid.ok() && valid.code() != EINVAL) __builtin_trap();
  return 0;
}
