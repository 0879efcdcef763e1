// The mount daemon: preflight checks, fork with a readiness pipe, startup, serving, teardown
// (see daemon.h).
#include "fs/daemon/daemon.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <sstream>
#include <thread>

#include "cache/backing_tree.h"
#include "cache/cache_dir.h"
#include "cache/cache_opener.h"
#include "cache/content_store.h"
#include "cache/device_probe.h"
#include "cache/heat_policy.h"
#include "cache/heat_store.h"
#include "cache/index_db.h"
#include "cache/manifest.h"
#include "cache/plan_or_heat_policy.h"
#include "cache/stager.h"
#include "fs/control/admin_handlers.h"
#include "fs/control/control_handlers.h"
#include "fs/control/control_server.h"
#include "fs/control/control_socket_dir.h"
#include "fs/control/heat_handlers.h"
#include "fs/control/metrics_writer.h"
#include "fs/control/plan_handlers.h"
#include "fs/control/status_report.h"
#include "fs/daemon/daemon_allocator.h"
#include "fs/daemon/open_file_limit.h"
#include "fs/daemon/stop_signals.h"
#include "fs/filesystem.h"
#include "fs/fuse/fuse_adapter.h"
#include "fs/fuse/held_copy_warmup.h"
#include "fs/fuse/list_ahead.h"
#include "fs/fuse/mount_table.h"
#include "fs/fuse/sched_policy.h"
#include "fs/peer/peer_port.h"
#include "fs/peer/peer_queue.h"
#include "fs/prefetch/plan_runtime.h"
#include "planner/base/log.h"
#include "planner/base/units.h"

namespace clairfs {
namespace {

std::string Canonical(const std::string& path) {
  char* real = realpath(path.c_str(), nullptr);
  if (real == nullptr) return "";
  std::string out(real);
  free(real);
  return out;
}

bool IsInside(const std::string& inner, const std::string& outer) {
  return inner == outer || (outer == "/" ? true : inner.rfind(outer + "/", 0) == 0);
}

// Startup failures that the parent prints as one line.
struct Preflight {
  std::string backing;
  std::string mountpoint;
  std::string cache;
};

Result<Preflight> CheckPaths(const MountOptions& o) {
  Preflight p;
  struct stat st;
  if (stat(o.backing.c_str(), &st) != 0) {
    return Status::FromErrno(errno, "backing directory " + o.backing);
  }
  if (!S_ISDIR(st.st_mode))
    return Status::Error(ENOTDIR, "backing " + o.backing + " is not a directory");
  if (access(o.backing.c_str(), R_OK | X_OK) != 0) {
    return Status::FromErrno(errno, "backing directory " + o.backing + " is not readable");
  }
  p.backing = Canonical(o.backing);

  // A dead daemon's mount answers ENOTCONN to anything the kernel cannot serve from its caches;
  // statfs always reaches the daemon, so it tells a stale mount from a live one.
  struct statvfs vfs;
  if (statvfs(o.mountpoint.c_str(), &vfs) != 0 && errno == ENOTCONN) {
    if (ClearStaleMount(o.mountpoint)) {
      Log(LogLevel::kInfo, "cleared a stale mount on %s left by a dead daemon",
          o.mountpoint.c_str());
    }
  }
  if (stat(o.mountpoint.c_str(), &st) != 0) {
    return Status::FromErrno(errno, "mountpoint " + o.mountpoint);
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::Error(ENOTDIR, "mountpoint " + o.mountpoint + " is not a directory");
  }
  p.mountpoint = Canonical(o.mountpoint);
  if (IsMountpoint(p.mountpoint)) {
    return Status::Error(
        EBUSY, "mountpoint " + p.mountpoint + " is busy: something is already mounted there");
  }
  std::vector<DirEntry> entries;
  Status ls = Env::Default()->ListDir(p.mountpoint, &entries);
  if (!ls.ok()) return ls;
  if (!entries.empty()) {
    return Status::Error(ENOTEMPTY, "mountpoint " + p.mountpoint + " is not empty");
  }
  if (IsInside(p.mountpoint, p.backing) || IsInside(p.backing, p.mountpoint)) {
    return Status::Error(EINVAL, "backing " + p.backing + " and mountpoint " + p.mountpoint +
                                     " must not be inside one another");
  }
  if (mkdir(o.cache_dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return Status::FromErrno(errno, "cache directory " + o.cache_dir);
  }
  p.cache = Canonical(o.cache_dir);
  if (p.cache.empty()) return Status::FromErrno(errno, "cache directory " + o.cache_dir);
  if (IsInside(p.cache, p.mountpoint) || IsInside(p.cache, p.backing) ||
      IsInside(p.backing, p.cache)) {
    return Status::Error(
        EINVAL, "cache " + p.cache + " must not be inside the mountpoint or the backing tree");
  }
  return p;
}

// The background daemon's log, opened by the mount command itself (before it forks and the
// daemon moves to "/"), so that a relative path means what the caller meant and a path that
// cannot be written fails the mount with one line instead of leaving the daemon logging nowhere.
// O_NONBLOCK: a FIFO without a reader fails (ENXIO) instead of blocking the mount.
Result<int> OpenDaemonLog(const std::string& path, const std::string& what) {
  int fd =
      open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY | O_NONBLOCK, 0600);
  if (fd < 0) return Status::FromErrno(errno, what + " " + path + " cannot be written");
  struct stat st;
  if (fstat(fd, &st) != 0 || S_ISDIR(st.st_mode)) {
    close(fd);
    return Status::Error(EISDIR, what + " " + path + " is a directory");
  }
  fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
  return fd;
}

// Writes the one-line outcome for the waiting parent: "OK" or "ERR <message>".
void ReportToParent(int fd, const std::string& line) {
  if (fd < 0) return;
  std::string msg = line + "\n";
  ssize_t ignored = write(fd, msg.data(), msg.size());
  (void)ignored;
  close(fd);
}

// Everything the running daemon owns, in construction order (destroyed in reverse).
struct Daemon {
  // Released last, when the daemon is done: `clairfs umount` waits for that (control_socket_dir.h).
  std::unique_ptr<DaemonLock> liveness;
  MountOptions options;
  Preflight paths;
  std::unique_ptr<CacheDir> cache_dir;
  // Opened once, first: every later read of the backing store resolves beneath this descriptor,
  // so a swap of the root's own path later cannot redirect the mount (cache/backing_tree.h).
  std::shared_ptr<const BackingTree> backing;
  std::unique_ptr<IndexDb> index;
  std::unique_ptr<Manifest> manifest;
  std::unique_ptr<HeatStore> heat;
  std::unique_ptr<ContentStore> store;
  std::unique_ptr<Stager> stager;
  std::unique_ptr<CacheDeviceProbe> device_probe;  // notices a dead device under passthrough
  // The peer tier (docs/PEERS.md): the key (null: off, and why), the staging queue between the
  // prefetcher and the stager, and the socket an agent attaches to.
  std::shared_ptr<const PeerKey> peer_key;
  std::string peer_key_problem;
  std::unique_ptr<PeerStagingQueue> peer_queue;
  std::unique_ptr<PeerPort> peer_port;
  std::unique_ptr<FileSystem> fs;
  std::unique_ptr<HeldCopyWarmup> held_warmup;  // runs once the mount has passthrough
  std::unique_ptr<ListAhead> list_ahead;        // lists the mount for the kernel once it is up
  PassthroughState passthrough;                 // written by the adapter, read by status
  FuseTransportState transport;                 // written by the adapter, read by status
  BackingCallState backing_calls;               // written by the adapter's pool, read by status
  std::string request_sched;                    // policy of the request-serving threads (status)
  PlanPolicy* plan_policy = nullptr;            // owned by store; set when mounted with --plan
  HeatPolicy* heat_policy = nullptr;            // owned by store; set when mounted without --plan
  // Owned by store; set when mounted without --plan: heat, or the plan while one set later is
  // active (plan_policy and heat_policy are its parts).
  PlanOrHeatPolicy* plan_or_heat_policy = nullptr;
  std::unique_ptr<PlanRuntime> plan;
  std::unique_ptr<ControlServer> control;
  std::unique_ptr<FuseAdapter> adapter;
  std::unique_ptr<MetricsWriter> metrics;
  std::unique_ptr<StopSignalWatch> stop_signals;  // installed once the mount serves
  std::chrono::steady_clock::time_point started = std::chrono::steady_clock::now();
};

// How long the daemon may take to stop once asked (a signal, or the kernel's unmount): enough for
// requests in flight, the stager's abort and the index flush, and no more. Past it, a backing
// store that hangs (an open that never returns) holds a thread that nobody can join, and readers
// of files still open would wait on it: the daemon exits at once instead. That is safe at any
// instant (the cache is consistent after a kill), and the exit closes the FUSE connection, so
// those readers get ENOTCONN rather than a hang.
constexpr int kStopGraceSeconds = 3;

// The adapter the stop deadline may abort; null once StopDaemon is about to destroy it.
std::mutex g_abort_mu;
FuseAdapter* g_abort_adapter = nullptr;  // guarded by g_abort_mu

void ArmStopDeadline(const std::string& mountpoint) {
  static std::atomic<bool> armed{false};
  if (armed.exchange(true)) return;
  std::thread([mountpoint] {
    std::this_thread::sleep_for(std::chrono::seconds(kStopGraceSeconds));
    Log(LogLevel::kWarn,
        "still stopping after %d s (a call to the backing store or the cache device hangs): "
        "ending the FUSE connection and exiting now; %s is detached and its cache stays "
        "consistent",
        kStopGraceSeconds, mountpoint.c_str());
    // A thread stuck in a backing-store call cannot be joined, and it may hold the process past
    // _exit: end the connection first, so that no reader waits on it.
    {
      std::lock_guard<std::mutex> lock(g_abort_mu);
      if (g_abort_adapter != nullptr) g_abort_adapter->AbortConnection();
    }
    _exit(0);
  }).detach();
}

// What `status` (and the metrics file) report about this mount.
StatusSources StatusSourcesOf(Daemon* d) {
  StatusSources sources{d->options.min_free,
                        d->options.held_copies,
                        d->options.allow_other,
                        d->paths.backing,
                        d->paths.mountpoint,
                        d->paths.cache,
                        d->manifest.get(),
                        d->store.get(),
                        d->stager.get(),
                        d->fs.get(),
                        d->started,
                        &d->passthrough,
                        {},
                        d->heat.get(),
                        &d->transport,
                        d->request_sched};
  PlanRuntime* plan_runtime = d->plan.get();
  sources.plan = [plan_runtime] { return plan_runtime->StatusJson(); };
  sources.held_warmup = d->held_warmup.get();
  sources.list_ahead = d->list_ahead.get();
  sources.backing_calls = &d->backing_calls;
  sources.backing_threads = d->options.backing_threads;
  if (PeerPort* port = d->peer_port.get()) {
    sources.peers = [port] { return port->StatusJson(); };
  }
  return sources;
}

// The peer key (MountOptions::peer_key): a key given explicitly must load; the default one may be
// absent (peers off, and status says why), and one present but unusable is logged.
Status LoadPeerKey(Daemon* d) {
  const MountOptions& o = d->options;
  if (o.peer_key == "none") {
    d->peer_key_problem = "the mount was given --peer-key none";
    return Status::Ok();
  }
  auto key = PeerKey::Load(o.peer_key, getuid());
  if (key.ok()) {
    d->peer_key = *key;
    Log(LogLevel::kInfo, "peer key %s (id %s): copies are sealed; a job's agent may attach",
        o.peer_key.c_str(), (*key)->KeyId().c_str());
    return Status::Ok();
  }
  if (o.peer_key_given) return key.status().WithContext("--peer-key");
  d->peer_key_problem =
      key.status().code() == ENOENT ? "no peer key at " + o.peer_key : key.status().message();
  if (key.status().code() != ENOENT) {
    Log(LogLevel::kWarn, "%s: the peer tier is off", key.status().message().c_str());
  }
  return Status::Ok();
}

Status StartDaemon(Daemon* d) {
  Env* env = Env::Default();
  // An fd per open file, held copy and copy in flight: the default 1024 would be our bound.
  const OpenFileLimit fds = RaiseOpenFileLimit();
  auto limit_text = [](uint64_t n) {
    return n == static_cast<uint64_t>(RLIM_INFINITY) ? std::string("unlimited") : std::to_string(n);
  };
  if (!fds.error.empty()) {
    Log(LogLevel::kWarn, "open files: the limit stays at %s (%s)", limit_text(fds.after).c_str(),
        fds.error.c_str());
  } else {
    Log(LogLevel::kInfo, "open files: limit %s (was %s)", limit_text(fds.after).c_str(),
        limit_text(fds.before).c_str());
  }
  auto backing = BackingTree::Open(d->paths.backing, env);
  if (!backing.ok()) return backing.status();
  d->backing = std::move(*backing);
  CLAIRFS_RETURN_IF_ERROR(LoadPeerKey(d));
  // The cache as a unit (cache/cache_opener.h): index, manifest, heat, the store and its policy.
  CacheOpenOptions open;
  open.acquired = std::move(d->cache_dir);
  open.listing = d->options.manifest == ManifestMode::kReuse ? ManifestListing::kReuse
                                                             : ManifestListing::kRescan;
  open.backing = d->backing;
  open.backing_root = d->paths.backing;
  open.scan_threads = d->options.scan_threads;
  open.open_heat = true;
  open.store_options = ContentStoreOptions{d->options.capacity, d->options.min_free, d->peer_key};
  // With a plan at mount (or --plan auto) the plan decides; otherwise heat does (plain LRU while
  // the index holds no heat), and the plan does while a plan set later is active.
  open.make_policy = [d](HeatStore* heat) -> std::unique_ptr<EvictionPolicy> {
    if (d->options.plan_config || d->options.plan_auto) {
      auto plan_policy = std::make_unique<PlanPolicy>();
      d->plan_policy = plan_policy.get();
      return plan_policy;
    }
    auto policy = std::make_unique<PlanOrHeatPolicy>();
    policy->heat()->SetHeat(heat->snapshot());
    d->heat_policy = policy->heat();
    d->plan_policy = policy->plan();
    d->plan_or_heat_policy = policy.get();
    return policy;
  };
  auto opened = OpenCache(std::move(open), env);
  if (!opened.ok()) return opened.status();
  d->cache_dir = std::move(opened->dir);
  d->index = std::move(opened->index);
  d->manifest = std::move(opened->manifest);
  d->heat = std::move(opened->heat);
  d->store = std::move(opened->store);
  const ManifestSummary& s = d->manifest->summary();
  if (d->options.manifest == ManifestMode::kReuse) {
    Log(LogLevel::kInfo, "reusing the stored manifest of %s: %llu files, %s (not re-listed)",
        d->paths.backing.c_str(), static_cast<unsigned long long>(s.files),
        FormatBytes(s.bytes).c_str());
  } else {
    Log(LogLevel::kInfo, "listed %s: %llu files (%s), %llu directories in %.2f s",
        d->paths.backing.c_str(), static_cast<unsigned long long>(s.files),
        FormatBytes(s.bytes).c_str(), static_cast<unsigned long long>(s.dirs), s.scan_seconds);
  }
  const HeatSummary heat_summary = d->heat->summary();
  Log(LogLevel::kInfo, "eviction: %s (%llu files with heat from %llu logs)",
      d->store->policy()->name(), static_cast<unsigned long long>(heat_summary.files_hot),
      static_cast<unsigned long long>(heat_summary.logs));
  const RecoveryReport& r = d->store->recovery();
  Log(LogLevel::kInfo,
      "cache %s: %llu staged copies (%s); recovery discarded %llu temp copies, %llu entries "
      "without data, %llu orphan files",
      d->paths.cache.c_str(), static_cast<unsigned long long>(r.entries),
      FormatBytes(r.bytes).c_str(), static_cast<unsigned long long>(r.temp_removed),
      static_cast<unsigned long long>(r.entries_dropped),
      static_cast<unsigned long long>(r.orphans_removed));
  const uint64_t stale_at_mount = opened->stale_dropped;
  if (stale_at_mount > 0) {
    Log(LogLevel::kInfo,
        "dropped %llu staged copies whose backing file changed or is gone since they were staged",
        static_cast<unsigned long long>(stale_at_mount));
  }
  StagerOptions stager_options;
  stager_options.backing_root = d->paths.backing;
  stager_options.backing = d->backing;
  stager_options.threads = d->options.stage_threads;
  stager_options.bandwidth = d->options.stage_bandwidth;
  stager_options.drop_pages = d->options.open_mode == OpenMode::kNoOpen;
  stager_options.settle_ns = d->options.stage_settle_ns;
  d->stager = std::make_unique<Stager>(stager_options, d->store.get(), env);
  d->device_probe =
      std::make_unique<CacheDeviceProbe>(d->store.get(), d->cache_dir->root() + "/FORMAT");
  d->device_probe->Start();

  FileSystemConfig fs_config{d->paths.backing, d->backing, d->options.revalidate,
                             d->options.read_through};
  fs_config.no_open = d->options.open_mode == OpenMode::kNoOpen;
  fs_config.kept_files = d->options.kept_files;
  fs_config.settle_ns = d->options.stage_settle_ns;  // for the page cache under revalidate=open
  d->fs = std::make_unique<FileSystem>(fs_config, d->manifest.get(), d->store.get(),
                                       d->stager.get(), env);
  d->fs->counters().stale_at_mount.Add(stale_at_mount);
  d->held_warmup = std::make_unique<HeldCopyWarmup>(d->manifest.get(), d->store.get(), env);
  // Copies staged from here on are held for their first open too, once the warm-up has started.
  d->store->set_publish_listener(
      [warmup = d->held_warmup.get()](const std::string& path) { warmup->OnPublished(path); });
  d->list_ahead = std::make_unique<ListAhead>(env, d->options.list_ahead);

  PlanRuntimeDeps plan_deps;
  plan_deps.store = d->store.get();
  // The prefetcher stages through the peer queue: its requests reach the stager directly
  // until an agent attaches (fs/peer/peer_queue.h).
  d->peer_queue = std::make_unique<PeerStagingQueue>(d->stager.get());
  if (d->peer_key != nullptr) d->peer_queue->ExpectAgents();
  plan_deps.stager = d->peer_queue.get();
  plan_deps.manifest = d->manifest.get();
  plan_deps.policy = d->plan_policy;
  plan_deps.backing_root = d->paths.backing;
  plan_deps.env = env;
  if (PlanOrHeatPolicy* policy = d->plan_or_heat_policy) {
    // Heat steps aside while a plan is active, and the plan evicts.
    plan_deps.on_plan_active = [policy](bool active) {
      policy->heat()->SetEnabled(!active);
      policy->SetPlanActive(active);
    };
  }
  d->plan = std::make_unique<PlanRuntime>(plan_deps);
  if (d->options.plan_config) {
    CLAIRFS_RETURN_IF_ERROR(d->plan->Set(*d->options.plan_config).WithContext("--plan"));
  } else if (d->options.plan_auto) {
    CLAIRFS_RETURN_IF_ERROR(d->plan->SetAuto(*d->options.plan_auto).WithContext("--plan auto"));
  }
  d->fs->set_open_observer(d->plan.get());
  d->plan->Start();

  // Threads this thread creates from here on inherit its policy: the control server's, the
  // ring threads the adapter's Mount starts and libfuse's workers (Loop), i.e. those that serve
  // requests. The staging, plan and index threads, created above, keep SCHED_OTHER so that
  // prefetching keeps pace with readers that load the CPU (fs/sched_policy.h).
  Status sched_set = ApplySchedPolicy(d->options.sched);
  if (!sched_set.ok()) {
    Log(LogLevel::kWarn, "scheduling policy %s not applied: %s",
        d->options.sched == SchedPolicy::kBatch ? "batch" : "normal", sched_set.message().c_str());
  }
  d->request_sched = CurrentSchedPolicyName();

  auto control_dir = ChooseControlDir(getuid());
  const std::string control_stem =
      control_dir.ok() ? *control_dir + "/" + ControlFileStem(d->paths.mountpoint) : "";
  if (control_dir.ok()) {
    auto liveness = DaemonLock::Acquire(control_stem + ".lock");
    if (liveness.ok()) {
      d->liveness = std::move(*liveness);
    } else {
      Log(LogLevel::kWarn, "%s: clairfs umount will not see this daemon exit",
          liveness.status().message().c_str());
    }
  }
  d->control = std::make_unique<ControlServer>(control_stem + ".sock", getuid());
  // Made before the status handlers, which report it; started with the control socket.
  PeerPortSources peer_sources;
  peer_sources.socket_path = control_stem + ".peer";
  peer_sources.owner_uid = getuid();
  peer_sources.allow_other = d->options.allow_other;
  peer_sources.manifest = d->manifest.get();
  peer_sources.store = d->store.get();
  peer_sources.plan = d->plan.get();
  peer_sources.queue = d->peer_queue.get();
  peer_sources.key = d->peer_key;
  peer_sources.key_problem = d->peer_key_problem;
  d->peer_port = std::make_unique<PeerPort>(std::move(peer_sources));
  PlanRuntime* plan_runtime = d->plan.get();
  AdminSources admin{d->paths.mountpoint, d->manifest.get(),
                     d->store.get(),      d->stager.get(),
                     d->heat.get(),       [plan_runtime] { return plan_runtime->Active(); }};
  admin.owner_uid = getuid();
  admin.allow_other = d->options.allow_other;
  HeatStore* heat_store = d->heat.get();
  HeatPolicy* heat_policy = d->heat_policy;
  HeatSources heat{d->manifest.get(), heat_store, [=] {
                     if (heat_policy != nullptr) heat_policy->SetHeat(heat_store->snapshot());
                   }};
  RegisterControlHandlers(d->control.get(), ControlSources{StatusSourcesOf(d), plan_runtime,
                                                           std::move(admin), std::move(heat)});
  Status control = control_dir.ok() ? d->control->Start() : control_dir.status();
  if (!control.ok()) {
    Log(LogLevel::kWarn,
        "control socket unavailable (%s): status and admin commands will not "
        "reach this mount",
        control.message().c_str());
    d->control.reset();
  } else {
    d->fs->set_control_socket(d->control->socket_path());
    Status peer_started = d->peer_port->Start();
    if (!peer_started.ok()) {
      Log(LogLevel::kWarn, "peer socket unavailable (%s): no peer agent can attach",
          peer_started.message().c_str());
    }
  }

  FuseAdapterOptions adapter_options;
  adapter_options.kernel_options = KernelMountOptions(d->options);
  adapter_options.entry_timeout = d->options.attr_timeout;
  adapter_options.attr_timeout = d->options.attr_timeout;
  adapter_options.read_mode = d->options.read_mode;
  adapter_options.max_threads = d->options.request_threads;
  adapter_options.passthrough = d->options.passthrough;
  adapter_options.passthrough_probe_dir = d->paths.cache;
  adapter_options.passthrough_state = &d->passthrough;
  adapter_options.held_copies = d->options.held_copies;
  adapter_options.fuse_uring = d->options.fuse_uring;
  adapter_options.transport_state = &d->transport;
  adapter_options.uring_threads_per_queue = d->options.fuse_uring_threads;
  adapter_options.posix_acl = d->manifest->summary().acl_entries > 0;
  adapter_options.no_open = d->options.open_mode == OpenMode::kNoOpen;
  adapter_options.attributes_before_reads = d->options.revalidate == Revalidate::kOpen;
  adapter_options.backing_threads = d->options.backing_threads;
  adapter_options.backing_state = &d->backing_calls;
  if (adapter_options.posix_acl) {
    Log(LogLevel::kInfo, "%llu files and directories carry POSIX ACLs: the kernel enforces them",
        static_cast<unsigned long long>(d->manifest->summary().acl_entries));
  }
  auto adapter = FuseAdapter::Create(d->fs.get(), adapter_options);
  if (!adapter.ok()) return adapter.status();
  d->adapter = std::move(*adapter);
  CLAIRFS_RETURN_IF_ERROR(d->adapter->Mount(d->paths.mountpoint));
  if (KernelPassthrough* passthrough = d->adapter->passthrough();
      d->options.hold_ahead && passthrough != nullptr && passthrough->active()) {
    d->held_warmup->Start(passthrough);
  }
  if (d->options.list_ahead > 0) d->list_ahead->Start(d->paths.mountpoint);
  if (!d->options.metrics_file.empty()) {
    const StatusSources sources = StatusSourcesOf(d);
    d->metrics = std::make_unique<MetricsWriter>(d->options.metrics_file, d->paths.mountpoint,
                                                 [sources] { return BuildStatus(sources); });
    CLAIRFS_RETURN_IF_ERROR(d->metrics->Start());
  }
  return d->adapter->InstallSignalHandlers();
}

void StopDaemon(Daemon* d) {
  d->metrics.reset();  // stops the writer thread and removes the file
  if (d->control) d->control->Stop();
  if (d->peer_port) d->peer_port->Stop();      // the agent detaches: wants go to the stager
  if (d->held_warmup) d->held_warmup->Stop();  // it holds into the adapter's passthrough
  // A listing in flight waits for a request thread; the walk is joined once the session is gone.
  if (d->list_ahead) d->list_ahead->RequestStop();
  if (d->plan) d->plan->Stop();
  if (d->stager) d->stager->Shutdown();
  if (d->adapter) {
    d->adapter->Unmount();
    // Backing calls still running reply through the session: they end here, while the stop
    // deadline can still end the connection for their readers (a hung one holds the stop until
    // then, as a hung request thread holds libfuse's loop).
    d->adapter->StopBackingCalls();
    // So do requests served over io_uring, which hold their ring threads instead: the deadline
    // must still be able to end the connection while this waits for those threads.
    d->adapter->StopRingThreads();
    {
      std::lock_guard<std::mutex> lock(g_abort_mu);
      g_abort_adapter = nullptr;
    }
    d->adapter.reset();
  }
  d->list_ahead.reset();
  if (d->store) d->store->set_publish_listener(nullptr);  // no committing thread is left
  d->held_warmup.reset();
  d->fs.reset();
  d->plan.reset();
  d->peer_port.reset();  // its deliverer publishes what it holds into the store
  d->peer_queue.reset();
  d->stager.reset();
  d->device_probe.reset();
  d->store.reset();
  d->heat.reset();
  d->manifest.reset();
  if (d->index) {
    Status st = d->index->Flush();
    if (!st.ok()) Log(LogLevel::kWarn, "index flush at exit: %s", st.message().c_str());
    d->index.reset();
  }
}

// Type=notify units: tell systemd the mount is up ($NOTIFY_SOCKET, no libsystemd needed).
void NotifySystemdReady() {
  const char* socket_path = getenv("NOTIFY_SOCKET");
  if (socket_path == nullptr || *socket_path == '\0') return;
  struct sockaddr_un addr;
  std::memset(&addr, 0, sizeof(addr));
  addr.sun_family = AF_UNIX;
  size_t len = std::strlen(socket_path);
  if (len >= sizeof(addr.sun_path)) return;
  std::memcpy(addr.sun_path, socket_path, len);
  if (addr.sun_path[0] == '@') addr.sun_path[0] = '\0';  // abstract namespace
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return;
  const char msg[] = "READY=1";
  sendto(fd, msg, sizeof(msg) - 1, MSG_NOSIGNAL, reinterpret_cast<struct sockaddr*>(&addr),
         static_cast<socklen_t>(offsetof(struct sockaddr_un, sun_path) + len));
  close(fd);
}

}  // namespace

// The signal that interrupted `clairfs mount` while its daemon started (0: none).
static volatile sig_atomic_t g_mount_interrupted = 0;

bool IsMountpoint(const std::string& canonical_path) {
  for (const MountTableEntry& m : ReadMountTable()) {
    if (m.mountpoint == canonical_path) return true;
  }
  return false;
}

bool ClearStaleMount(const std::string& path) {
  if (geteuid() == 0 && umount2(path.c_str(), MNT_DETACH) == 0) return true;
  pid_t pid = fork();
  if (pid == 0) {
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, 1);
      dup2(devnull, 2);
    }
    execlp("fusermount3", "fusermount3", "-uz", path.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  if (pid > 0) waitpid(pid, &status, 0);
  return pid > 0 && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

int RunMountDaemon(MountOptions options) {
  Status valid = ValidateMountOptions(&options);
  if (!valid.ok()) {
    fprintf(stderr, "clairfs mount: %s\n", valid.message().c_str());
    return 2;
  }
  if (!options.metrics_file.empty() && options.metrics_file[0] != '/') {
    // The daemon runs in "/" after forking.
    char cwd[4096];
    if (getcwd(cwd, sizeof(cwd)) != nullptr)
      options.metrics_file = cwd + ("/" + options.metrics_file);
  }
  auto paths = CheckPaths(options);
  if (!paths.ok()) {
    fprintf(stderr, "clairfs mount: %s\n", paths.status().message().c_str());
    return 1;
  }
  auto cache_dir = CacheDir::Acquire(paths->cache, Env::Default());
  if (!cache_dir.ok()) {
    fprintf(stderr, "clairfs mount: %s\n", cache_dir.status().message().c_str());
    return 1;
  }
  int log_fd = -1;  // the background daemon's stderr once it serves (foreground: stderr stays)
  if (!options.foreground) {
    auto log = options.log_file.empty() ? OpenDaemonLog(paths->cache + "/daemon.log", "log file")
                                        : OpenDaemonLog(options.log_file, "--log-file");
    if (!log.ok()) {
      fprintf(stderr, "clairfs mount: %s\n", log.status().message().c_str());
      return 1;
    }
    log_fd = *log;
  }

  // Fork before RocksDB, io_uring or any thread exists; the parent waits for the verdict.
  int ready_fd = -1;
  if (!options.foreground) {
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) != 0) {
      perror("clairfs mount: pipe");
      return 1;
    }
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
      perror("clairfs mount: fork");
      return 1;
    }
    if (pid > 0) {
      close(pipefd[1]);
      close(log_fd);
      // Interrupted while the daemon starts (Ctrl-C, or a tool's cleanup): the mount must not
      // come up behind a command that failed. The daemon is stopped at once: before its mount a
      // signal's default action ends it (a cache is consistent after a kill at any instant, and a
      // manifest whose listing did not finish is never reused); once mounted, its handler
      // unmounts. A mount left by a daemon that died in between is cleared.
      g_mount_interrupted = 0;
      struct sigaction sa;
      memset(&sa, 0, sizeof(sa));
      sa.sa_handler = [](int sig) { g_mount_interrupted = sig; };
      sigemptyset(&sa.sa_mask);
      for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
        struct sigaction old;
        // A signal the caller ignores (nohup, a background job of a script) stays ignored.
        if (sigaction(sig, nullptr, &old) == 0 && old.sa_handler != SIG_IGN) {
          sigaction(sig, &sa, nullptr);
        }
      }
      std::string verdict;
      char buf[4096];
      ssize_t n;
      bool stopped = false;
      while ((n = read(pipefd[0], buf, sizeof(buf))) > 0 || (n < 0 && errno == EINTR)) {
        if (n > 0) verdict.append(buf, static_cast<size_t>(n));
        if (g_mount_interrupted != 0 && !stopped) {
          kill(pid, SIGTERM);
          stopped = true;
        }
      }
      close(pipefd[0]);
      if (g_mount_interrupted != 0) {
        const int sig = g_mount_interrupted;
        if (!stopped) kill(pid, SIGTERM);  // the verdict came first: it unmounts and exits
        // An unmount waits for the index to flush; a daemon that takes longer than a minute is
        // killed (its mount, if any, is cleared below).
        int status = 0;
        const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
        while (waitpid(pid, &status, WNOHANG) == 0) {
          if (std::chrono::steady_clock::now() > deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
            }
            break;
          }
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        if (IsMountpoint(paths->mountpoint)) (void)ClearStaleMount(paths->mountpoint);
        const bool left = IsMountpoint(paths->mountpoint);
        fprintf(stderr, "clairfs mount: interrupted (%s); %s\n", strsignal(sig),
                left ? "could not undo the mount" : "nothing was left mounted");
        return 128 + sig;
      }
      if (verdict.rfind("OK", 0) == 0) return 0;
      while (!verdict.empty() && verdict.back() == '\n') verdict.pop_back();
      if (verdict.rfind("ERR ", 0) == 0) {
        fprintf(stderr, "clairfs mount: %s\n", verdict.substr(4).c_str());
        // The daemon reports before it has cleaned up; it holds the cache's lock until it
        // exits. Wait for it, so a mount retried right after this failure finds the cache free.
        int status = 0;
        waitpid(pid, &status, 0);
      } else {
        int status = 0;
        waitpid(pid, &status, 0);
        fprintf(stderr, "clairfs mount: the daemon died during startup (%s)\n",
                WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "no report");
      }
      return 1;
    }
    close(pipefd[0]);
    ready_fd = pipefd[1];
    setsid();
    if (chdir("/") != 0) {
      // Not fatal: every path we use is absolute.
    }
    int devnull = open("/dev/null", O_RDWR);
    if (devnull >= 0) {
      dup2(devnull, STDIN_FILENO);
      dup2(devnull, STDOUT_FILENO);
      close(devnull);
    }
    (*cache_dir)->RecordOwnerPid();
  }
  SetLogTag("clairfs[" + std::to_string(getpid()) + "]");
  ConfigureDaemonAllocator();  // before any thread allocates

  Daemon daemon;
  daemon.options = options;
  daemon.paths = *paths;
  daemon.cache_dir = std::move(*cache_dir);
  Status started = StartDaemon(&daemon);
  if (!started.ok()) {
    Log(LogLevel::kError, "mount failed: %s", started.message().c_str());
    ReportToParent(ready_fd, "ERR " + started.message());
    StopDaemon(&daemon);
    if (options.foreground) fprintf(stderr, "clairfs mount: %s\n", started.message().c_str());
    return 1;
  }
  Log(LogLevel::kInfo, "mounted %s on %s (cache %s, capacity %s)", daemon.paths.backing.c_str(),
      daemon.paths.mountpoint.c_str(), daemon.paths.cache.c_str(),
      daemon.store->capacity() ? FormatBytes(daemon.store->capacity()).c_str() : "device");
  if (!options.foreground) {
    // Detach from the caller's stderr: a daemon holding it would hang `$(clairfs mount ...)` or
    // a pipe, and would write onto a terminal after the command returned.
    dup2(log_fd, STDERR_FILENO);
    close(log_fd);
  } else {
    NotifySystemdReady();
  }
  // Asked to stop: new requests must not queue behind requests that wait on a hung backing store,
  // so the mount is detached at once, and the rest of the stop is bounded (kStopGraceSeconds).
  daemon.stop_signals = std::make_unique<StopSignalWatch>();
  FuseAdapter* adapter = daemon.adapter.get();
  {
    std::lock_guard<std::mutex> lock(g_abort_mu);
    g_abort_adapter = adapter;
  }
  const std::string mountpoint = daemon.paths.mountpoint;
  Status watch = daemon.stop_signals->Install([adapter, mountpoint](int sig) {
    Log(LogLevel::kInfo, "stopping (%s): detaching %s now", strsignal(sig), mountpoint.c_str());
    adapter->Detach();
    // Calls waiting for a backing-call thread are answered now, not after the deadline.
    adapter->EndBackingCalls();
    ArmStopDeadline(mountpoint);
  });
  if (!watch.ok()) Log(LogLevel::kWarn, "stop signals: %s", watch.message().c_str());
  ReportToParent(ready_fd, "OK");
  Status loop = daemon.adapter->Loop();
  Log(LogLevel::kInfo, "unmounting %s", daemon.paths.mountpoint.c_str());
  ArmStopDeadline(mountpoint);
  daemon.stop_signals.reset();
  StopDaemon(&daemon);
  // The last line of a clean stop (tests and admins look for it; a crash never writes it).
  Log(LogLevel::kInfo, "stopped: %s unmounted, cache closed", mountpoint.c_str());
  if (!loop.ok()) {
    Log(LogLevel::kError, "%s", loop.message().c_str());
    return 1;
  }
  return 0;
}

}  // namespace clairfs
