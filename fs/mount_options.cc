// Parsing of `-o key=value` mount options and the kernel option string (see mount_options.h).
#include "fs/mount_options.h"

#include <cstdlib>

#include "planner/layout.h"
#include "planner/plan_spec.h"
#include "planner/units.h"

namespace clairfs {
namespace {

constexpr int kMaxHeldCopies = 1 << 24;  // each held copy pins an open file in the kernel

Result<int> ParseInt(const std::string& key, const std::string& value, int min, int max) {
  char* end = nullptr;
  errno = 0;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end != '\0' || errno != 0 || v < min || v > max) {
    return Status::Invalid("option " + key + "=" + value + ": expected an integer from " +
                           std::to_string(min) + " to " + std::to_string(max));
  }
  return static_cast<int>(v);
}

bool IsMountHelperOption(const std::string& key) {
  return key == "_netdev" || key == "nofail" || key == "defaults" || key == "auto" ||
         key == "noauto" || key == "user" || key == "users" || key == "nouser" ||
         key.rfind("x-", 0) == 0 || key == "rw" || key == "ro";
}

}  // namespace

Status ApplyMountOption(const std::string& item, MountOptions* o) {
  if (item.empty()) return Status::Ok();
  size_t eq = item.find('=');
  std::string key = item.substr(0, eq);
  std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
  bool has_value = eq != std::string::npos;
  auto need_value = [&]() {
    return Status::Invalid("option " + key + " needs a value (" + key + "=...)");
  };
  // Dashes and underscores are interchangeable so flags and -o keys match (min-free, min_free).
  std::string k = key;
  for (auto& c : k)
    if (c == '-') c = '_';

  if (k == "cache") {
    if (!has_value || value.empty()) return need_value();
    o->cache_dir = value;
  } else if (k == "capacity" || k == "min_free") {
    if (!has_value) return need_value();
    auto size = ParseSize(value);
    if (!size.ok()) return size.status().WithContext("option " + key);
    (k == "capacity" ? o->capacity : o->min_free) = *size;
  } else if (k == "foreground") {
    o->foreground = true;
  } else if (k == "read_through") {
    o->read_through = !has_value || value == "1" || value == "yes" || value == "true";
  } else if (k == "no_read_through") {
    o->read_through = false;
  } else if (k == "revalidate") {
    if (value == "never")
      o->revalidate = Revalidate::kNever;
    else if (value == "open")
      o->revalidate = Revalidate::kOpen;
    else
      return Status::Invalid("option revalidate=" + value + ": expected never or open");
  } else if (k == "manifest") {
    if (value == "rescan")
      o->manifest = ManifestMode::kRescan;
    else if (value == "reuse")
      o->manifest = ManifestMode::kReuse;
    else
      return Status::Invalid("option manifest=" + value + ": expected rescan or reuse");
  } else if (k == "attr_timeout") {
    if (!has_value) return need_value();
    char* end = nullptr;
    double t = std::strtod(value.c_str(), &end);
    if (value.empty() || *end != '\0' || !(t >= 0) || t > 1e9) {
      return Status::Invalid("option attr_timeout=" + value + ": expected seconds >= 0");
    }
    o->attr_timeout = t;
  } else if (k == "stage_threads") {
    auto n = ParseInt(key, value, 1, 1024);
    if (!n.ok()) return n.status();
    o->stage_threads = *n;
  } else if (k == "fuse_uring_threads") {
    auto n = ParseInt(key, value, 1, 64);
    if (!n.ok()) return n.status();
    o->fuse_uring_threads = *n;
  } else if (k == "scan_threads") {
    auto n = ParseInt(key, value, 1, 256);
    if (!n.ok()) return n.status();
    o->scan_threads = *n;
  } else if (k == "stage_bandwidth") {
    auto bw = ParseBandwidthMBps(value);
    if (!bw.ok()) return bw.status().WithContext("option " + key);
    o->stage_bandwidth = *bw;
  } else if (k == "read_mode") {
    if (value != "pread" && value != "splice") {
      return Status::Invalid("option read_mode=" + value + ": expected pread or splice");
    }
    o->read_mode = value;
  } else if (k == "passthrough") {
    if (value != "auto" && value != "on" && value != "off") {
      return Status::Invalid("option passthrough=" + value + ": expected auto, on or off");
    }
    o->passthrough = value;
  } else if (k == "hold_ahead") {
    if (value != "on" && value != "off") {
      return Status::Invalid("option hold_ahead=" + value + ": expected on or off");
    }
    o->hold_ahead = value == "on";
  } else if (k == "held_copies") {
    auto n = ParseInt(key, value, 0, kMaxHeldCopies);
    if (!n.ok()) {
      return Status::Invalid("option held_copies=" + value + ": expected a number from 0 to " +
                             std::to_string(kMaxHeldCopies));
    }
    o->held_copies = static_cast<uint64_t>(*n);
  } else if (k == "list_ahead") {
    if (value == "off") {
      o->list_ahead = 0;
    } else if (value == "on") {
      o->list_ahead = kDefaultListAheadNames;
    } else {
      auto n = ParseInt(key, value, 0, 1'000'000'000);
      if (!n.ok()) {
        return Status::Invalid("option list_ahead=" + value +
                               ": expected on, off or a number of names");
      }
      o->list_ahead = static_cast<uint64_t>(*n);
    }
  } else if (k == "sched") {
    if (value != "batch" && value != "normal") {
      return Status::Invalid("option sched=" + value + ": expected batch or normal");
    }
    o->sched = value;
  } else if (k == "fuse_uring") {
    if (value != "auto" && value != "on" && value != "off") {
      return Status::Invalid("option fuse_uring=" + value + ": expected auto, on or off");
    }
    o->fuse_uring = value;
  } else if (k == "log_file") {
    if (!has_value || value.empty()) return need_value();
    o->log_file = value;
  } else if (k == "plan" || k == "layout" || k == "layout_root") {
    if (!has_value || value.empty()) return need_value();
    (k == "plan" ? o->plan : k == "layout" ? o->plan_layout : o->plan_layout_root) = value;
  } else if (k == "plan_window") {
    auto n = ParseInt(key, value, 1, 1 << 24);
    if (!n.ok()) return n.status();
    o->plan_window = static_cast<uint64_t>(*n);
  } else if (k == "metrics_file") {
    if (!has_value || value.empty()) return need_value();
    o->metrics_file = value;
  } else if (k == "allow_other") {
    o->allow_other = true;
  } else if (k == "suid") {
    o->suid = true;
  } else if (k == "dev") {
    o->dev = true;
  } else if (k == "nosuid") {
    o->suid = false;
  } else if (k == "nodev") {
    o->dev = false;
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
  size_t start = 0;
  while (start <= list.size()) {
    size_t comma = list.find(',', start);
    if (comma == std::string::npos) comma = list.size();
    CLAIRFS_RETURN_IF_ERROR(ApplyMountOption(list.substr(start, comma - start), options));
    start = comma + 1;
  }
  return Status::Ok();
}

Status ValidateMountOptions(const MountOptions& o) {
  if (o.backing.empty()) return Status::Invalid("missing BACKING directory");
  if (!o.plan.empty()) {
    auto spec = ParsePlanSpec(o.plan);
    if (!spec.ok()) return spec.status().WithContext("--plan");
    auto layout = ParseLayoutSpec(o.plan_layout, o.plan_layout_root);
    if (!layout.ok()) return layout.status().WithContext("--layout");
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
  bool has_fsname = false, has_subtype = false;
  for (const auto& item : o.fuse_options) {
    if (item.rfind("fsname=", 0) == 0) has_fsname = true;
    if (item.rfind("subtype=", 0) == 0) has_subtype = true;
    s += "," + item;
  }
  if (!has_fsname) {
    // Commas in the fsname would split the option list; escape them as libfuse expects.
    std::string name = "clairfs:";
    for (char c : o.backing) {
      if (c == ',' || c == '\\') name += '\\';
      name += c;
    }
    s += ",fsname=" + name;
  }
  if (!has_subtype) s += ",subtype=clairfs";
  return s;
}

}  // namespace clairfs
