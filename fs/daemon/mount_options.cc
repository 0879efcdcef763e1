// Parsing of `-o key=value` mount options and the kernel option string (see mount_options.h).
#include "fs/daemon/mount_options.h"

#include <pwd.h>

#include <cstdlib>
#include <set>
#include <string>
#include <vector>

#include "planner/base/units.h"
#include "planner/layout.h"
#include "planner/plan_spec.h"

namespace clairfs {
namespace {

constexpr uint64_t kMaxHeldCopies = 1 << 24;  // each held copy pins an open file in the kernel

// What an error calls option `k` (underscored): the flag and the -o key, since either form may
// have been used ("--min-free (-o min_free)").
std::string OptionName(const std::string& k) {
  std::string flag = k;
  for (auto& c : flag)
    if (c == '_') c = '-';
  return "--" + flag + " (-o " + k + ")";
}

bool IsMountHelperOption(const std::string& key) {
  return key == "_netdev" || key == "nofail" || key == "defaults" || key == "auto" ||
         key == "noauto" || key == "user" || key == "users" || key == "nouser" ||
         key.rfind("x-", 0) == 0 || key == "rw" || key == "ro";
}

// The clairfs setting an -o key (underscored) sets, "" for FUSE, kernel and mount(8) options.
// Keys that set one field one way or the other share a setting.
std::string SettingOf(const std::string& k) {
  static const char* const kSettings[] = {"cache",
                                          "capacity",
                                          "min_free",
                                          "foreground",
                                          "read_through",
                                          "revalidate",
                                          "manifest",
                                          "attr_timeout",
                                          "stage_threads",
                                          "fuse_uring_threads",
                                          "scan_threads",
                                          "stage_bandwidth",
                                          "read_mode",
                                          "passthrough",
                                          "hold_ahead",
                                          "held_copies",
                                          "list_ahead",
                                          "sched",
                                          "fuse_uring",
                                          "log_file",
                                          "plan",
                                          "layout",
                                          "layout_root",
                                          "plan_window",
                                          "metrics_file",
                                          "peer_key",
                                          "request_threads",
                                          "open_mode",
                                          "kept_files",
                                          "stage_settle",
                                          "backing_threads",
                                          "plan_uid"};
  if (k == "no_read_through") return "read_through";
  for (const char* setting : kSettings) {
    if (k == setting) return setting;
  }
  return "";
}

std::string Underscored(const std::string& key) {
  std::string k = key;
  for (auto& c : k)
    if (c == '-') c = '_';
  return k;
}

// Seconds as digits with an optional fraction ("86400", "0.5"): no sign, exponent or hex.
bool ParseSeconds(const std::string& value, double* seconds) {
  size_t digits = 0, dots = 0;
  for (char c : value) {
    if (c >= '0' && c <= '9') {
      ++digits;
    } else if (c == '.' && dots == 0 && digits > 0) {
      ++dots;
    } else {
      return false;
    }
  }
  if (digits == 0 || value.back() == '.') return false;
  *seconds = std::strtod(value.c_str(), nullptr);
  return true;
}

// A duration as seconds ("2", "0.5", "2s") or milliseconds ("250ms"): digits with an optional
// fraction down to the nanosecond, no sign or exponent; in nanoseconds, at most `max_ns`.
bool ParseDurationNs(const std::string& text, uint64_t max_ns, uint64_t* ns) {
  std::string value = text;
  uint64_t unit = 1'000'000'000;
  int max_fraction = 9;
  if (value.size() > 2 && value.compare(value.size() - 2, 2, "ms") == 0) {
    value.resize(value.size() - 2);
    unit = 1'000'000;
    max_fraction = 6;
  } else if (value.size() > 1 && value.back() == 's') {
    value.pop_back();
  }
  const size_t dot = value.find('.');
  const std::string whole = value.substr(0, dot);
  const std::string fraction = dot == std::string::npos ? "" : value.substr(dot + 1);
  const auto digits = [](const std::string& s) {
    return s.find_first_not_of("0123456789") == std::string::npos;
  };
  if (whole.empty() || whole.size() > 12 || !digits(whole) || !digits(fraction) ||
      (dot != std::string::npos && fraction.empty()) ||
      static_cast<int>(fraction.size()) > max_fraction) {
    return false;
  }
  uint64_t frac_ns = 0;
  uint64_t scale = unit;
  for (char c : fraction) {
    scale /= 10;
    frac_ns += static_cast<uint64_t>(c - '0') * scale;
  }
  const uint64_t w = std::stoull(whole);
  if (w > max_ns / unit) return false;
  *ns = w * unit + frac_ns;
  return *ns <= max_ns;
}

}  // namespace

Result<uint32_t> ParseUserId(const std::string& text) {
  if (text.empty()) return Status::Invalid("a user name or uid is needed");
  if (text.find_first_not_of("0123456789") == std::string::npos) {
    // (uid_t)-1 means "no uid" to the kernel and to clairfs (Opener::kNoUid).
    if (text.size() > 10 || std::stoull(text) >= Opener::kNoUid) {
      return Status::Invalid("uid " + text + " is out of range");
    }
    return static_cast<uint32_t>(std::stoull(text));
  }
  struct passwd entry;
  struct passwd* found = nullptr;
  std::vector<char> buffer(16384);
  const int rc = getpwnam_r(text.c_str(), &entry, buffer.data(), buffer.size(), &found);
  if (rc != 0) return Status::Error(rc, "looking up user '" + text + "'");
  if (found == nullptr) return Status::Invalid("no user named '" + text + "'");
  return static_cast<uint32_t>(found->pw_uid);
}

Status ApplyMountOption(const std::string& item, MountOptions* o) {
  if (item.empty()) return Status::Ok();
  size_t eq = item.find('=');
  std::string key = item.substr(0, eq);
  std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
  bool has_value = eq != std::string::npos;
  // Dashes and underscores are interchangeable so flags and -o keys match (min-free, min_free).
  const std::string k = Underscored(key);
  auto invalid = [&](const std::string& why) {
    return Status::Invalid(OptionName(k) + ": " + why);
  };
  auto need_value = [&]() { return invalid("needs a value (-o " + k + "=...)"); };
  auto expected = [&](const std::string& what) {
    return invalid("'" + value + "' is not " + what);
  };
  // Options that are on by being named: `allow_other=0` must not turn allow_other on.
  auto named_only = [&]() -> Status {
    return has_value ? invalid("takes no value ('" + item + "' sets it: write only " + key + ")")
                     : Status::Ok();
  };
  auto count = [&](uint64_t min, uint64_t max) -> Result<uint64_t> {
    if (!has_value) return need_value();
    auto n = ParseCount(value, min, max);
    if (!n.ok()) return invalid(n.status().message());
    return n;
  };

  if (k == "cache") {
    if (!has_value || value.empty()) return need_value();
    o->cache_dir = value;
  } else if (k == "capacity" || k == "min_free") {
    if (!has_value) return need_value();
    auto size = ParseSize(value);
    if (!size.ok()) return invalid(size.status().message());
    (k == "capacity" ? o->capacity : o->min_free) = *size;
  } else if (k == "foreground") {
    CLAIRFS_RETURN_IF_ERROR(named_only());
    o->foreground = true;
  } else if (k == "read_through") {
    if (!has_value || value == "1" || value == "yes" || value == "true") {
      o->read_through = true;
    } else if (value == "0" || value == "no" || value == "false") {
      o->read_through = false;
    } else {
      return expected("1, yes, true, 0, no or false");
    }
  } else if (k == "no_read_through") {
    CLAIRFS_RETURN_IF_ERROR(named_only());
    o->read_through = false;
  } else if (k == "revalidate") {
    if (value == "never")
      o->revalidate = Revalidate::kNever;
    else if (value == "open")
      o->revalidate = Revalidate::kOpen;
    else
      return expected("never or open");
  } else if (k == "open_mode") {
    if (value == "open")
      o->open_mode = OpenMode::kOpen;
    else if (value == "no-open" || value == "no_open")
      o->open_mode = OpenMode::kNoOpen;
    else
      return expected("open or no-open");
  } else if (k == "kept_files") {
    auto n = count(1, 1 << 20);
    if (!n.ok()) return n.status();
    o->kept_files = *n;
  } else if (k == "manifest") {
    if (value == "rescan")
      o->manifest = ManifestMode::kRescan;
    else if (value == "reuse")
      o->manifest = ManifestMode::kReuse;
    else
      return expected("rescan or reuse");
  } else if (k == "attr_timeout") {
    if (!has_value) return need_value();
    double t = 0;
    if (!ParseSeconds(value, &t) || t > 1e9) return expected("a number of seconds from 0 to 1e9");
    o->attr_timeout = t;
  } else if (k == "stage_threads") {
    auto n = count(1, 1024);
    if (!n.ok()) return n.status();
    o->stage_threads = static_cast<int>(*n);
  } else if (k == "request_threads") {
    auto n = count(4, 4096);
    if (!n.ok()) return n.status();
    o->request_threads = static_cast<int>(*n);
  } else if (k == "backing_threads") {
    auto n = count(0, 4096);
    if (!n.ok()) return n.status();
    o->backing_threads = static_cast<int>(*n);
  } else if (k == "fuse_uring_threads") {
    auto n = count(1, 64);
    if (!n.ok()) return n.status();
    o->fuse_uring_threads = static_cast<int>(*n);
  } else if (k == "scan_threads") {
    auto n = count(1, 256);
    if (!n.ok()) return n.status();
    o->scan_threads = static_cast<int>(*n);
  } else if (k == "stage_bandwidth") {
    if (!has_value) return need_value();
    auto bw = ParseBandwidthMBps(value);
    if (!bw.ok()) return invalid(bw.status().message());
    o->stage_bandwidth = *bw;
  } else if (k == "stage_settle") {
    if (!has_value) return need_value();
    uint64_t ns = 0;
    if (!ParseDurationNs(value, 3600'000'000'000, &ns)) {
      return expected("a duration from 0 to 3600 s (e.g. 2, 0.5s or 250ms)");
    }
    o->stage_settle_ns = ns;
  } else if (k == "read_mode") {
    auto mode = ParseReadMode(value);
    if (!mode.ok()) return expected("pread or splice");
    o->read_mode = *mode;
  } else if (k == "passthrough") {
    auto mode = ParsePassthroughMode(value);
    if (!mode.ok()) return expected("auto, on or off");
    o->passthrough = *mode;
  } else if (k == "hold_ahead") {
    if (value != "on" && value != "off") return expected("on or off");
    o->hold_ahead = value == "on";
  } else if (k == "held_copies") {
    auto n = count(0, kMaxHeldCopies);
    if (!n.ok()) return n.status();
    o->held_copies = *n;
  } else if (k == "list_ahead") {
    if (value == "off") {
      o->list_ahead = 0;
    } else if (value == "on") {
      o->list_ahead = kDefaultListAheadNames;
    } else {
      auto n = ParseCount(value, 0, 1'000'000'000);
      if (!n.ok()) return expected("on, off or a number of names from 0 to 1000000000");
      o->list_ahead = *n;
    }
  } else if (k == "sched") {
    auto policy = ParseSchedPolicy(value);
    if (!policy.ok()) return expected("batch or normal");
    o->sched = *policy;
  } else if (k == "fuse_uring") {
    auto mode = ParseFuseUringMode(value);
    if (!mode.ok()) return expected("auto, on or off");
    o->fuse_uring = *mode;
  } else if (k == "log_file") {
    if (!has_value || value.empty()) return need_value();
    o->log_file = value;
  } else if (k == "plan" || k == "layout" || k == "layout_root") {
    if (!has_value || value.empty()) return need_value();
    (k == "plan" ? o->plan : k == "layout" ? o->plan_layout : o->plan_layout_root) = value;
  } else if (k == "plan_uid") {
    if (!has_value || value.empty()) return need_value();
    auto uid = ParseUserId(value);
    if (!uid.ok()) return uid.status().WithContext(OptionName("plan_uid"));
    o->plan_uid = *uid;
  } else if (k == "plan_window") {
    auto n = count(1, 1 << 24);
    if (!n.ok()) return n.status();
    o->plan_window = *n;
  } else if (k == "metrics_file") {
    if (!has_value || value.empty()) return need_value();
    o->metrics_file = value;
  } else if (k == "peer_key") {
    if (!has_value || value.empty()) return need_value();
    o->peer_key = value;
    o->peer_key_given = true;
  } else if (k == "allow_other" || k == "suid" || k == "dev" || k == "nosuid" || k == "nodev") {
    CLAIRFS_RETURN_IF_ERROR(named_only());
    if (k == "allow_other") o->allow_other = true;
    if (k == "suid" || k == "nosuid") o->suid = k == "suid";
    if (k == "dev" || k == "nodev") o->dev = k == "dev";
  } else if (IsMountHelperOption(key)) {
    // Meant for mount(8) or systemd, not for us or the kernel.
  } else if (k == "allow_root" || k == "auto_unmount" || k == "max_read" || k == "blksize" ||
             k == "fsname" || k == "subtype" || k == "noatime" || k == "nodiratime" ||
             k == "atime" || k == "relatime" || k == "noexec" || k == "exec" || k == "sync" ||
             k == "async" || k == "dirsync" || k == "default_permissions") {
    if (k != "default_permissions") o->fuse_options.push_back(item);
  } else {
    return Status::Invalid("unknown mount option '" + key + "'");
  }
  return Status::Ok();
}

Status ApplyMountOptionList(const std::string& list, MountOptions* options) {
  return ApplyMountOptionItems(SplitMountOptionList(list), options);
}

std::vector<std::string> SplitMountOptionList(const std::string& list) {
  std::vector<std::string> items;
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    items.push_back(list.substr(start, comma - start));
    start = comma + 1;
  }
  return items;
}

Status ApplyMountOptionItems(const std::vector<std::string>& items, MountOptions* options) {
  std::set<std::string> given;
  for (const std::string& item : items) {
    const std::string k = Underscored(item.substr(0, item.find('=')));
    const std::string setting = SettingOf(k);
    // Strict rather than last-wins: a value in a config file's OPTIONS and another on the
    // command line (or two -o lists) are a mistake to point out, not to settle silently.
    if (!setting.empty() && !given.insert(setting).second) {
      return Status::Invalid(OptionName(setting) + " given twice" +
                             (setting == "read_through"
                                  ? " (--read-through and --no-read-through set one thing)"
                                  : " (a flag and its -o form set one thing)"));
    }
    CLAIRFS_RETURN_IF_ERROR(ApplyMountOption(item, options));
  }
  if (options->open_mode == OpenMode::kNoOpen) {
    for (const char* passthrough_only : {"hold_ahead", "held_copies"}) {
      if (given.count(passthrough_only) != 0) {
        return Status::Invalid(OptionName(passthrough_only) +
                               " shapes passthrough, which --open-mode no-open excludes (the "
                               "kernel sends no OPEN whose reply would set it up)");
      }
    }
  } else if (given.count("kept_files") != 0) {
    return Status::Invalid(OptionName("kept_files") +
                           " needs --open-mode no-open (it bounds the files kept open for READs "
                           "that come without an OPEN)");
  }
  if (options->plan.empty()) {
    // They only shape a plan: without one they would be ignored, so they are refused.
    for (const char* plan_only : {"layout", "layout_root", "plan_window", "plan_uid"}) {
      if (given.count(plan_only) != 0) {
        return Status::Invalid(OptionName(plan_only) + " needs --plan (it shapes the plan's " +
                               (std::string(plan_only) == "plan_window" ? "prefetching"
                                : std::string(plan_only) == "plan_uid"  ? "readers"
                                                                        : "sample numbering") +
                               "; without a plan it would be ignored)");
      }
    }
  }
  return Status::Ok();
}

Status ValidateMountOptions(MountOptions* options) {
  const MountOptions& o = *options;
  if (o.backing.empty()) return Status::Invalid("missing BACKING directory");
  options->plan_config.reset();
  options->plan_auto.reset();
  if (o.plan == "auto") {
    auto layout = ParseLayoutSpec(o.plan_layout, o.plan_layout_root);
    if (!layout.ok()) return layout.status().WithContext("--layout");
    PlanWatcherConfig watch;
    watch.layout = std::move(*layout);
    watch.root_given = !o.plan_layout_root.empty();
    watch.window = o.plan_window;
    watch.uid = o.plan_uid;
    options->plan_auto = std::move(watch);
  } else if (!o.plan.empty()) {
    auto config = ParsePlanTrackerConfig(o.plan, o.plan_layout, o.plan_layout_root);
    if (!config.ok()) return config.status();
    config->window = o.plan_window;
    config->uid = o.plan_uid;
    options->plan_config = std::move(*config);
  }
  if (o.open_mode == OpenMode::kNoOpen && o.passthrough == PassthroughMode::kOn) {
    return Status::Invalid(
        "--open-mode no-open excludes --passthrough on: passthrough is set up in the reply to an "
        "OPEN, and a no-open mount gets none (use --passthrough auto or off)");
  }
  if (o.open_mode == OpenMode::kNoOpen && o.revalidate == Revalidate::kOpen) {
    return Status::Invalid(
        "--open-mode no-open excludes --revalidate open: it checks the backing file at each "
        "open, and a no-open mount sees no opens (use --revalidate never, or --open-mode open)");
  }
  if (o.mountpoint.empty()) return Status::Invalid("missing MOUNTPOINT");
  if (o.cache_dir.empty()) {
    return Status::Invalid("missing --cache DIR (or -o cache=DIR): where staged copies are kept");
  }
  return Status::Ok();
}

std::string KernelMountOptions(const MountOptions& o) {
  std::string s = "ro,default_permissions";
  if (!o.suid) s += ",nosuid";
  if (!o.dev) s += ",nodev";
  if (o.allow_other) s += ",allow_other";
  // libfuse splits the list at commas and reads a backslash as an escape of the byte after it
  // (or of three octal digits): every item goes escaped, so the kernel gets it as given.
  const auto escaped = [](const std::string& item) {
    std::string out;
    for (char c : item) {
      if (c == ',' || c == '\\') out += '\\';
      out += c;
    }
    return out;
  };
  bool has_fsname = false, has_subtype = false;
  for (const auto& item : o.fuse_options) {
    if (item.rfind("fsname=", 0) == 0) has_fsname = true;
    if (item.rfind("subtype=", 0) == 0) has_subtype = true;
    s += "," + escaped(item);
  }
  if (!has_fsname) s += ",fsname=" + escaped("clairfs:" + o.backing);
  if (!has_subtype) s += ",subtype=clairfs";
  return s;
}

}  // namespace clairfs
