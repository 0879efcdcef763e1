// `clairfs mount`: parses flags and -o options into MountOptions and runs the daemon.
#include <limits.h>
#include <unistd.h>

#include <memory>

#include "fs/daemon/daemon.h"
#include "fs/daemon/mount_options.h"
#include "tools/cli/cli.h"
#include "tools/commands.h"

namespace clairfs::cli {
namespace {

struct MountArgs {
  std::string backing, mountpoint;
  std::vector<std::string> items;  // key[=value] in the order given; -o lists are split later
  std::vector<std::string> o_lists;
};

}  // namespace

void RegisterMount(CLI::App& app) {
  auto args = std::make_shared<MountArgs>();
  CLI::App* cmd = AddCommand(
      &app, "mount",
      "Mount BACKING (a directory on the parallel filesystem) read-only at MOUNTPOINT, staging\n"
      "files into a node-local cache. Returns once the mount serves requests; the daemon keeps\n"
      "running in the background (use --foreground to keep it attached). Every flag also has\n"
      "an -o key=value form for fstab (e.g. -o cache=/nvme/clairfs,capacity=800G); each\n"
      "setting may be given once, as a flag or as -o (twice is a usage error). Sizes are\n"
      "binary and exact: digits, an optional fraction and K, M, G, T or P (no sign, no 1e3).");
  cmd->add_option("BACKING", args->backing, "Backing directory (the dataset on the PFS)")
      ->required();
  cmd->add_option("MOUNTPOINT", args->mountpoint, "Empty directory to mount on")->required();
  auto item = [args](const std::string& key) {
    return [args, key](const std::string& value) { args->items.push_back(key + "=" + value); };
  };
  auto flag = [args](const std::string& key) {
    return [args, key](int64_t) { args->items.push_back(key); };
  };
  cmd->add_option_function<std::string>("--cache", item("cache"),
                                        "Node-local cache directory (created 0700 if missing)")
      ->type_name("DIR");
  cmd->add_option_function<std::string>(
         "--capacity", item("capacity"),
         "Staged bytes allowed (allocated blocks): 800G (= 800 GiB), 1.5T, 512M or bytes. "
         "Default: the device, minus --min-free")
      ->type_name("SIZE");
  cmd->add_option_function<std::string>("--min-free", item("min_free"),
                                        "Free space to keep on the cache device (default 0); one "
                                        "not below the device's size fails the mount")
      ->type_name("SIZE");
  cmd->add_flag_function("-f,--foreground", flag("foreground"),
                         "Stay in the foreground (logs on stderr; Ctrl-C unmounts)");
  cmd->add_flag_function("--read-through", flag("read_through"),
                         "Stage every file on its first open (default)");
  cmd->add_flag_function("--no-read-through", flag("no_read_through"),
                         "Stage only on request (clairfs stage)");
  cmd->add_option_function<std::string>(
         "--revalidate", item("revalidate"),
         "never (default: datasets do not change during a job; the dataset is the one listed at "
         "mount: a staged file serves its listed version, an unstaged file that changed is "
         "refused with ESTALE, the next mount drops copies of changed files) or open (stat the "
         "backing file at every open: one PFS metadata call per open; a changed file is served "
         "in its new version, with its new mode and owner, never stale)")
      ->type_name("never|open");
  cmd->add_option_function<std::string>(
         "--open-mode", item("open_mode"),
         "open (default: every open and close of a file reaches the daemon, two round trips "
         "that cap small-file reads at a third to a half of local speed) or no-open (the daemon "
         "answers the first OPEN with ENOSYS and the kernel then opens files itself: a warm "
         "open+read+close costs no round trip, and a file's pages stay in the kernel's page "
         "cache across opens). Rule of thumb: small files and a dataset that fits in memory: "
         "no-open; large files or a dataset larger than memory: open (with passthrough). "
         "no-open excludes --passthrough on, --revalidate open, --hold-ahead and --held-copies; "
         "an open is then a file's first READ that reaches the daemon (docs/NO-OPEN.md)")
      ->type_name("open|no-open");
  cmd->add_option_function<std::string>(
         "--kept-files", item("kept_files"),
         "With --open-mode no-open: files the daemon keeps open between READs, which come "
         "without an OPEN (default 1024; least recently used closed first; an evicted copy's "
         "file is closed at once)")
      ->type_name("N");
  cmd->add_option_function<std::string>(
         "--manifest", item("manifest"),
         "rescan (default: list the backing tree at mount) or reuse (serve the stored listing as "
         "is, for fast remounts; asserts the dataset has not changed)")
      ->type_name("rescan|reuse");
  cmd->add_option_function<std::string>(
         "--attr-timeout", item("attr_timeout"),
         "Seconds the kernel may cache names and attributes (default 86400)")
      ->type_name("SECONDS");
  cmd->add_option_function<std::string>("--stage-threads", item("stage_threads"),
                                        "Files staged concurrently (default 4)")
      ->type_name("N");
  cmd->add_option_function<std::string>(
         "--request-threads", item("request_threads"),
         "Kernel requests served at once, threads made on demand (default 128): each open or read "
         "waiting on a hung backing store holds one, and when all are held every reader of the "
         "mount waits (opens and reads that must reach the backing store are answered by "
         "--backing-threads instead, unless that is 0 or the request came over io_uring)")
      ->type_name("N");
  cmd->add_option_function<std::string>(
         "--backing-threads", item("backing_threads"),
         "Threads that answer the opens and reads that must reach the backing store (opens of "
         "unstaged files, every open with --revalidate open, reads of unstaged files), made on "
         "demand up to N (default 256, at most 4096; idle ones end after 10 s; calls beyond N "
         "queue), so that a hung backing store holds no request thread and readers of staged "
         "files, lookups and listings go on; 0 serves them on the request threads")
      ->type_name("N");
  cmd->add_option_function<std::string>(
         "--stage-bandwidth", item("stage_bandwidth"),
         "Cap on staging reads from the backing store, MB/s (default 0 = none)")
      ->type_name("MB/s");
  cmd->add_option_function<std::string>(
         "--stage-settle", item("stage_settle"),
         "A file changed less than this before its copy began is staged later, once it has not "
         "changed for this long: a write under way could otherwise be copied half old, half new "
         "(default 2s; 0 = off; seconds, e.g. 0.5, or 250ms). Reads never wait for it; must "
         "exceed how far the backing store's clock lags the node's")
      ->type_name("DURATION");
  cmd->add_option_function<std::string>("--scan-threads", item("scan_threads"),
                                        "Threads listing the backing tree at mount (default 8)")
      ->type_name("N");
  cmd->add_option_function<std::string>(
         "--log-file", item("log_file"),
         "Where the background daemon logs after startup (default: CACHE/daemon.log; relative "
         "to the current directory). Opened by the mount command: a path it cannot write "
         "fails the mount")
      ->type_name("PATH");
  cmd->add_option_function<std::string>(
         "--metrics-file", item("metrics_file"),
         "Prometheus text file of the status counters, rewritten every 5 s, removed at unmount")
      ->type_name("PATH");
  cmd->add_option_function<std::string>(
         "--peer-key", item("peer_key"),
         "The site's peer key (default /etc/clairfs/peer.key, root-only): with it, staged copies "
         "are sealed and a job's `clairfs peer` agent may attach; without it (or with 'none') "
         "the peer tier is off. A key given here that cannot be used fails the mount "
         "(docs/ADMIN.md, \"The peer key\")")
      ->type_name("PATH|none");
  cmd->add_option_function<std::string>("--read-mode", item("read_mode"),
                                        "How staged bytes are sent to the kernel: pread "
                                        "(default) or splice")
      ->type_name("pread|splice");
  cmd->add_option_function<std::string>(
         "--passthrough", item("passthrough"),
         "Kernel FUSE passthrough for staged files: auto (default: use it when the daemon has "
         "CAP_SYS_ADMIN and the kernel accepts it), on (fail the mount without it) or off")
      ->type_name("auto|on|off");
  cmd->add_option_function<std::string>(
         "--hold-ahead", item("hold_ahead"),
         "With passthrough: right after mounting, register the staged copies (up to "
         "--held-copies, in name order, on a background thread), and each copy staged later as it "
         "is "
         "published, so that each file's first open skips opening its copy: on (default) or off")
      ->type_name("on|off");
  cmd->add_option_function<std::string>(
         "--held-copies", item("held_copies"),
         "With passthrough: how many staged copies stay registered with the kernel between "
         "opens (released, held ahead or held as staged; the least recently used is let go "
         "first), so their next open skips opening and registering them: default 65536 (each "
         "costs the kernel about 0.6 KiB and keeps its copy's inode in memory), rounded up to a "
         "multiple of 64; 0 holds none")
      ->type_name("N");
  cmd->add_option_function<std::string>(
         "--list-ahead", item("list_ahead"),
         "Right after mounting, list the dataset's directories for the kernel (one background "
         "thread at nice 10), so that a file's first open needs no LOOKUP round trip: on "
         "(default: up to 65536 names, about 1 KiB of kernel memory each, reclaimable), off, or "
         "a number of names")
      ->type_name("on|off|N");
  cmd->add_option_function<std::string>(
         "--fuse-uring", item("fuse_uring"),
         "FUSE requests over io_uring, one queue per CPU: auto (default: use it when the kernel "
         "offers it, i.e. Linux >= 6.14 with the fuse module parameter enable_uring=Y), on (fail "
         "the mount without it) or off (/dev/fuse only)")
      ->type_name("auto|on|off");
  cmd->add_option_function<std::string>(
         "--fuse-uring-threads", item("fuse_uring_threads"),
         "Ring threads per CPU queue (default 2). Each serves one request at a time and holds a "
         "buffer of the largest request (1 MiB), so CPUs x N MiB in all; a CPU's requests wait "
         "when its N threads are busy (e.g. opens on a slow backing store)")
      ->type_name("N");
  cmd->add_option_function<std::string>(
         "--sched", item("sched"),
         "CPU scheduling policy of the daemon's request-serving threads: normal (default, "
         "SCHED_OTHER: a request preempts what runs on its CPU) or batch (SCHED_BATCH: a woken "
         "daemon thread does not preempt the reader, which saves context switches per small "
         "file when CPUs are free, but delays requests, releases included, when the job keeps "
         "every CPU busy). Staging threads always run SCHED_OTHER")
      ->type_name("normal|batch");
  cmd->add_option_function<std::string>(
         "--plan", item("plan"),
         "Access plan (e.g. torch-distributed:seed=42,world=8,ranks=0-7): stage ahead in plan "
         "order and evict by next planned use (see clairfs plan show --help). 'auto' (also "
         "-o plan=auto) infers it from the first opens: torch DistributedSampler (seed + epoch "
         "< 2^20 or a popular seed, world <= 1024), torch RandomSampler and NumPy at popular "
         "seeds; adopted once the chance that a wrong plan explains the opens is below 1e-9 "
         "(status shows the search; docs/PLANNER.md)")
      ->type_name("SPEC");
  cmd->add_option_function<std::string>("--layout", item("layout"),
                                        "Sample numbering of the plan: imagefolder (default), "
                                        "sorted or list:FILE (a regular file of at most 1 GiB); "
                                        "needs --plan, as do --layout-root, --plan-window and "
                                        "--plan-uid")
      ->type_name("LAYOUT");
  cmd->add_option_function<std::string>(
         "--layout-root", item("layout_root"),
         "Dataset directory below the backing root (e.g. train); with "
         "--plan auto and imagefolder, inferred from the first "
         "opened path when not given")
      ->type_name("SUBDIR");
  cmd->add_option_function<std::string>(
         "--plan-window", item("plan_window"),
         "Planned positions per rank an open may run ahead of the rank's cursor (default 256; "
         "at least prefetch_factor x num_workers x batch_size)")
      ->type_name("N");
  cmd->add_option_function<std::string>(
         "--plan-uid", item("plan_uid"),
         "The user (name or uid) whose opens the plan follows and --plan auto watches; other "
         "users' opens are served as ever but move no cursor and cannot drop or steer the plan "
         "(default: every user's; on a mount other users read, e.g. -o allow_other, give the "
         "job's user)")
      ->type_name("USER");
  cmd->add_option("-o", args->o_lists,
                  "Comma-separated options: the flags above as key=value (cache=, capacity=, "
                  "min_free=, ...) and FUSE options such as allow_other; mount(8)/systemd "
                  "options (_netdev, nofail, x-*) are ignored")
      ->type_name("OPTS")
      ->allow_extra_args(false);
  cmd->callback([args]() {
    MountOptions options;
    options.backing = args->backing;
    options.mountpoint = args->mountpoint;
    // -o lists first, then the flags (each in the order given); together, so that a setting
    // given both ways is refused as given twice.
    std::vector<std::string> items;
    for (const auto& list : args->o_lists) {
      for (std::string& item : SplitMountOptionList(list)) items.push_back(std::move(item));
    }
    items.insert(items.end(), args->items.begin(), args->items.end());
    Status st = ApplyMountOptionItems(items, &options);
    if (!st.ok()) return SetExitCode(UsageError("mount", st.message()));
    options.plan = WithAbsoluteListFile(options.plan);
    options.plan_layout = WithAbsoluteListFile(options.plan_layout);
    SetExitCode(RunMountDaemon(options));
  });
}

}  // namespace clairfs::cli
