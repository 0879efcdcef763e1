// `clairfs bench peers`: issue 19's benchmark of the peer tier (docs/PEERS.md). One job of N
// nodes on this machine, each node its own daemon, cache and mount, all over one PFS emulator,
// run twice: without agents (the baseline: every node with its own plan, alone) and with one
// peer agent per node under mpirun.
//
// Method: a synthetic image-folder dataset (imagenet-like sizes; every byte a function of the
// file's name) is written, or reused, locally and served by `clairfs pfs-emu` with --open-latency
// and --bandwidth (a cap over all files). For each mode, node i mounts the emulator at
// WORK/MODE/mnt<i> with a fresh cache WORK/MODE/cache<i> of --cache-percent of the dataset
// (rounded up to 4 KiB blocks per file), `--plan torch-distributed:seed=S,world=N,ranks=i-i,
// epochs=E --layout imagefolder`; the peers mode adds `--peer-key` (32 random bytes, 0600) and
// starts `mpirun --oversubscribe --enable-recovery -np N clairfs peer WORK/peers/mnt%r` (as
// root with OMPI_ALLOW_RUN_AS_ROOT), then waits until every node's status shows its agent
// attached. The baseline mounts have no key (a site without peers computes no digests).
// Each epoch, every node's reader (--threads threads sharing the node's list) reads its rank's
// files of that epoch in plan order (torch DistributedSampler, from the planner) through its own
// mount, all nodes starting together; each file is read to the end in 1 MiB reads, every byte
// checked against the synthetic content and the size against the listing, then its pages are
// dropped (posix_fadvise DONTNEED), so that a file read again on the same node is not served by
// the kernel's page cache, as on a node whose memory cannot hold the dataset; then --work-ms of
// simulated compute. The epoch's time is from the common start to the last node's last file.
// Phases: "setup" (mounts and agents; each daemon starts staging its plan as soon as it is
// mounted, so setup's PFS bytes hold much of epoch 1's, and the peers mode's setup, which waits
// for mpirun, stages more), each epoch (its reads; the staging for later epochs that runs meanwhile
// is charged to it), "end" (after the last reads until every node's staging is
// idle and the agents have exited: mpirun --enable-recovery exits 0 whatever its ranks return, so
// the agents' own lines are kept in WORK/peers/agents.log). Per phase: PFS bytes and opens from
// the emulator's counters (getxattr user.pfs_emu.counters), the daemons' read counters by source,
// hits and misses, and CPU-seconds of the daemons (/proc/PID/stat), the agents (mpirun and its
// ranks: /proc while they run, and the rusage of mpirun once reaped for what is left) and the
// reader threads (RUSAGE_THREAD). Then the targets (bench_peers_report.h).
//
// Output: a table, or one JSON object with --json. Exit codes: 0 measured (targets are reported,
// not enforced); 1 failed, including any byte that differs; 2 usage. Mounts are always unmounted
// and mpirun stopped (also on Ctrl-C: the mounts are detached, and the agents leave when their
// mounts go); the work directory is removed unless --keep or --dir.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <latch>
#include <map>
#include <memory>
#include <sstream>
#include <thread>
#include <unordered_map>

#include <nlohmann/json.hpp>

#include "planner/file_tree.h"
#include "planner/layout.h"
#include "planner/plan.h"
#include "planner/plan_spec.h"
#include "planner/synthetic_content.h"
#include "planner/synthetic_dataset.h"
#include "tools/bench/bench_mounts.h"
#include "tools/bench/bench_peers_report.h"
#include "tools/bench/bench_support.h"
#include "tools/bench/cmd_bench.h"
#include "tools/bench/dataset_writer.h"
#include "tools/bench/read_workload.h"
#include "tools/cli/cli.h"
#include "tools/cli/subprocess.h"

extern char** environ;

namespace clairfs::cli {
namespace {

constexpr const char* kBenchPeersCommand = "bench peers";
constexpr uint64_t kPeersBlockBytes = 4096;

struct PeersArgs {
  std::string dir;
  std::string dataset;
  uint64_t files = 2000;
  int nodes = 4;
  int epochs = 4;
  int threads = 2;
  int cache_percent = 30;
  uint64_t seed = 42;
  double work_ms = 0;
  std::string open_latency = "2";
  std::string bandwidth = "200";
  std::string modes = "baseline,peers";
  std::string mpirun = "mpirun";
  int attach_timeout = 120;
  bool quick = false;
  bool keep = false;
  bool json = false;
};

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

// utime + stime of a live process (its children not included), in seconds.
Result<double> ProcessCpuSeconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t paren = stat.rfind(')');
  if (stat.empty() || paren == std::string::npos) {
    return Status::Error(ESRCH, "no process " + std::to_string(pid));
  }
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  unsigned long long utime = 0, stime = 0;
  // Fields from the state (3rd) on: utime is the 14th, stime the 15th of /proc/PID/stat.
  for (int i = 3; i <= 15 && fields >> field; ++i) {
    if (i == 14) utime = std::stoull(field);
    if (i == 15) stime = std::stoull(field);
  }
  return static_cast<double>(utime + stime) / static_cast<double>(sysconf(_SC_CLK_TCK));
}

double ThreadCpuSeconds() {
  rusage ru{};
  getrusage(RUSAGE_THREAD, &ru);
  return static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
         static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}

// The PFS emulator serving `mountpoint` (its daemon forked away from us): the process whose
// command line is `... pfs-emu BACKING MOUNTPOINT ...`; -1 if none is found.
pid_t FindEmulatorPid(const std::string& mountpoint) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::string name = entry.path().filename();
    if (name.empty() || !std::all_of(name.begin(), name.end(), ::isdigit)) continue;
    std::ifstream in(entry.path() / "cmdline");
    std::vector<std::string> argv;
    for (std::string arg; std::getline(in, arg, '\0');) argv.push_back(arg);
    for (size_t i = 0; i + 2 < argv.size(); ++i) {
      if (argv[i] == "pfs-emu" && argv[i + 2] == mountpoint) return std::stoi(name);
    }
  }
  return -1;
}

// mpirun of the agents, started in the background with its output in a log file. The destructor
// stops it (SIGTERM, then SIGKILL) if it still runs, and reaps it; only this pid is signalled.
class AgentJob {
 public:
  AgentJob() = default;
  ~AgentJob() { Stop(); }
  AgentJob(const AgentJob&) = delete;
  AgentJob& operator=(const AgentJob&) = delete;

  Status Start(const std::vector<std::string>& argv, const std::string& log) {
    log_ = log;
    std::vector<std::string> env_text;
    for (char** e = environ; *e != nullptr; ++e) env_text.push_back(*e);
    env_text.push_back("OMPI_MCA_rmaps_base_oversubscribe=1");
    if (geteuid() == 0) {
      env_text.push_back("OMPI_ALLOW_RUN_AS_ROOT=1");
      env_text.push_back("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1");
    }
    std::vector<char*> envp, args;
    for (auto& e : env_text) envp.push_back(e.data());
    envp.push_back(nullptr);
    std::vector<std::string> argv_copy = argv;
    for (auto& a : argv_copy) args.push_back(a.data());
    args.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
    posix_spawn_file_actions_adddup2(&actions, 1, 2);
    const int rc = posix_spawnp(&pid_, args[0], &actions, nullptr, args.data(), envp.data());
    posix_spawn_file_actions_destroy(&actions);
    if (rc != 0) {
      pid_ = -1;
      return Status::FromErrno(rc, "starting " + argv[0]);
    }
    return Status::Ok();
  }

  bool running() {
    Reap(false);
    return pid_ > 0;
  }
  pid_t pid() const { return pid_; }

  // Waits up to `seconds` for mpirun to exit; true if it did.
  bool Wait(int seconds) {
    const auto deadline = Clock::now() + std::chrono::seconds(seconds);
    while (running()) {
      if (Clock::now() > deadline) return false;
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return true;
  }

  void Stop() {
    if (!running()) return;
    kill(pid_, SIGTERM);
    if (Wait(10)) return;
    kill(pid_, SIGKILL);
    Reap(true);
  }

  // CPU-seconds of mpirun and the ranks it reaped, once it has exited (else 0).
  double reaped_cpu_seconds() const { return reaped_cpu_; }

  // The last `bytes` of the log.
  std::string LogTail(size_t bytes = 2000) const {
    std::ifstream in(log_);
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    return text.size() > bytes ? text.substr(text.size() - bytes) : text;
  }

 private:
  void Reap(bool block) {
    if (pid_ <= 0) return;
    int status = 0;
    rusage ru{};
    const pid_t r = wait4(pid_, &status, block ? 0 : WNOHANG, &ru);
    if (r == pid_ || (r < 0 && errno == ECHILD)) {
      if (r == pid_) {
        reaped_cpu_ = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                      static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
      }
      pid_ = -1;
    }
  }

  pid_t pid_ = -1;
  std::string log_;
  double reaped_cpu_ = 0;
};

struct PeersInputs {
  std::string dataset, pfs;
  std::vector<SyntheticFile> files;
  // orders[e][rank]: the files rank `rank` reads in epoch e, in order, as indices into `files`.
  std::vector<std::vector<std::vector<uint32_t>>> orders;
  uint64_t dataset_bytes = 0;
  uint64_t capacity = 0;
};

std::string PeersSamplerSpec(const PeersArgs& a) {
  return "torch-distributed:seed=" + std::to_string(a.seed) + ",world=" + std::to_string(a.nodes);
}

Status PlanOrders(const PeersArgs& a, PeersInputs* in) {
  auto layout_spec = ParseLayoutSpec("imagefolder", "");
  if (!layout_spec.ok()) return layout_spec.status();
  auto layout = BuildLayout(PosixFileTreeInstance(), in->dataset, *layout_spec);
  if (!layout.ok()) return layout.status();
  auto spec = ParsePlanSpec(PeersSamplerSpec(a));
  if (!spec.ok()) return spec.status();
  auto plan = Plan::Create(*spec, layout->size());
  if (!plan.ok()) return plan.status();
  std::unordered_map<std::string, uint32_t> id;
  for (size_t i = 0; i < in->files.size(); ++i) id[in->files[i].relpath] = static_cast<uint32_t>(i);
  for (int e = 0; e < a.epochs; ++e) {
    std::vector<std::vector<uint32_t>> ranks;
    for (int r = 0; r < a.nodes; ++r) {
      auto indices = (*plan)->RankIndices(static_cast<uint64_t>(e), static_cast<uint32_t>(r));
      if (!indices.ok()) return indices.status();
      std::vector<uint32_t> order;
      for (uint64_t sample : *indices) {
        auto it = id.find(layout->path(sample));
        if (it == id.end()) {
          return Status::Error(EIO, "layout path not in the dataset: " + layout->path(sample));
        }
        order.push_back(it->second);
      }
      ranks.push_back(std::move(order));
    }
    in->orders.push_back(std::move(ranks));
  }
  return Status::Ok();
}

struct PeersEpochRead {
  double seconds = 0;
  uint64_t files = 0, bytes = 0, verified = 0, expected = 0;
  double cpu_seconds = 0;
  std::vector<double> node_seconds;  // when each node's last file was read
  double read_ms_median = 0, read_ms_p99 = 0, read_ms_max = 0;  // one file's open to close
};

// Every node's reader for epoch `e`, all starting together; stops at the first wrong byte.
Result<PeersEpochRead> ReadPeersEpoch(const PeersArgs& a, const PeersInputs& in, size_t e,
                                      const std::vector<std::string>& mounts) {
  const size_t nodes = mounts.size();
  std::vector<std::atomic<size_t>> next(nodes);
  std::atomic<bool> failed{false};
  std::atomic<uint64_t> files{0}, bytes{0};
  std::vector<Status> errors(nodes * static_cast<size_t>(a.threads));
  std::vector<double> cpu(errors.size(), 0.0);
  std::vector<double> done_at(errors.size(), 0.0);
  std::vector<std::vector<double>> read_ms(errors.size());
  const auto work = std::chrono::microseconds(static_cast<int64_t>(a.work_ms * 1000));
  std::latch ready(static_cast<ptrdiff_t>(errors.size()) + 1);
  // Set before the last arrival at `ready`, so every reader sees it once it is past the latch.
  Clock::time_point start_line{};
  std::vector<std::thread> pool;
  for (size_t n = 0; n < nodes; ++n) {
    for (int t = 0; t < a.threads; ++t) {
      const size_t slot = n * static_cast<size_t>(a.threads) + static_cast<size_t>(t);
      pool.emplace_back([&, n, slot] {
        constexpr size_t kBuf = 1 << 20;
        std::unique_ptr<char[]> buf(new char[kBuf]);
        ready.arrive_and_wait();
        const double cpu_start = ThreadCpuSeconds();
        const auto& order = in.orders[e][n];
        read_ms[slot].reserve(order.size());
        for (size_t i = next[n]++; i < order.size() && !failed.load(); i = next[n]++) {
          const SyntheticFile& f = in.files[order[i]];
          uint64_t got = 0;
          const auto file_start = Clock::now();
          Status st = ReadSyntheticFile(mounts[n] + "/" + f.relpath, f, /*verify=*/true,
                                        /*drop_pages=*/true, buf.get(), kBuf, &got);
          read_ms[slot].push_back(Since(file_start) * 1000);
          if (!st.ok()) {
            errors[slot] = st.WithContext("node " + std::to_string(n));
            failed = true;
            break;
          }
          bytes += got;
          ++files;
          if (work.count() > 0) std::this_thread::sleep_for(work);
        }
        cpu[slot] = ThreadCpuSeconds() - cpu_start;
        done_at[slot] = Since(start_line);
      });
    }
  }
  start_line = Clock::now();
  ready.arrive_and_wait();
  for (auto& th : pool) th.join();
  PeersEpochRead r;
  r.seconds = Since(start_line);
  for (const auto& st : errors) {
    if (!st.ok()) return st;
  }
  r.files = files;
  r.bytes = bytes;
  r.verified = bytes;  // every byte counted was checked
  for (const auto& order : in.orders[e]) {
    for (uint32_t id : order) r.expected += in.files[id].size;
  }
  for (double c : cpu) r.cpu_seconds += c;
  r.node_seconds.assign(nodes, 0.0);
  std::vector<double> all_ms;
  for (size_t slot = 0; slot < errors.size(); ++slot) {
    double& node = r.node_seconds[slot / static_cast<size_t>(a.threads)];
    node = std::max(node, done_at[slot]);
    all_ms.insert(all_ms.end(), read_ms[slot].begin(), read_ms[slot].end());
  }
  if (!all_ms.empty()) {
    std::sort(all_ms.begin(), all_ms.end());
    r.read_ms_median = all_ms[all_ms.size() / 2];
    r.read_ms_p99 = all_ms[std::min(all_ms.size() - 1, all_ms.size() * 99 / 100)];
    r.read_ms_max = all_ms.back();
  }
  return r;
}

// Counters read at a phase boundary.
struct Snapshot {
  PfsEmuCounters pfs;
  std::vector<nlohmann::json> status;  // per node
  double daemons_cpu = 0, agents_cpu = 0;
};

struct ModeRun {
  std::vector<std::string> mounts;
  std::vector<pid_t> daemons;
  std::vector<pid_t> agents;  // rank pids seen attached
  std::map<pid_t, double> agent_cpu_seen;
  AgentJob* job = nullptr;
};

Result<Snapshot> Take(const PeersInputs& in, ModeRun* run) {
  Snapshot s;
  auto pfs = ReadEmulatorCounters(in.pfs);
  if (!pfs.ok()) return pfs.status();
  s.pfs = *pfs;
  for (size_t i = 0; i < run->mounts.size(); ++i) {
    auto st = MountStatus(run->mounts[i]);
    if (!st.ok()) return st.status().WithContext("node " + std::to_string(i));
    s.status.push_back(*st);
    const nlohmann::json& peers = (*st)["peers"];
    if (peers.is_object() && peers.value("attached", false)) {
      const pid_t agent = peers.value("agent_pid", -1);
      if (agent > 0 &&
          std::find(run->agents.begin(), run->agents.end(), agent) == run->agents.end()) {
        run->agents.push_back(agent);
      }
    }
  }
  for (pid_t pid : run->daemons) {
    auto cpu = ProcessCpuSeconds(pid);
    if (cpu.ok()) s.daemons_cpu += *cpu;
  }
  if (run->job != nullptr) {
    if (run->job->running()) {
      std::vector<pid_t> pids = run->agents;
      pids.push_back(run->job->pid());
      for (pid_t pid : pids) {
        auto cpu = ProcessCpuSeconds(pid);
        if (cpu.ok()) run->agent_cpu_seen[pid] = *cpu;
      }
      for (const auto& [pid, cpu] : run->agent_cpu_seen) s.agents_cpu += cpu;
    } else {
      // Reaped: its rusage holds mpirun and every rank it waited for.
      double seen = 0;
      for (const auto& [pid, cpu] : run->agent_cpu_seen) seen += cpu;
      s.agents_cpu = std::max(seen, run->job->reaped_cpu_seconds());
    }
  }
  return s;
}

uint64_t Delta(const Snapshot& to, const Snapshot* from, size_t node, const char* key) {
  const uint64_t now = to.status[node].value(key, uint64_t{0});
  const uint64_t before = from ? from->status[node].value(key, uint64_t{0}) : 0;
  return now - before;
}

// One row: the change between two snapshots (`from` null: since the mounts were made, whose
// counters start at zero; `pfs_from` is the emulator's counters before them).
nlohmann::json Phase(const std::string& name, double seconds, const Snapshot& to,
                     const Snapshot* from, const PfsEmuCounters& pfs_from,
                     const PeersEpochRead& read) {
  uint64_t local = 0, peers = 0, backing = 0, hits = 0, misses = 0;
  nlohmann::json causes = nlohmann::json::object();
  for (size_t i = 0; i < to.status.size(); ++i) {
    // The daemons' miss causes, summed over the nodes (docs/ADMIN.md, "Why opens miss").
    const nlohmann::json none = nlohmann::json::object();
    const nlohmann::json& now = to.status[i].value("miss_causes", none);
    for (const auto& [cause, count] : now.items()) {
      const nlohmann::json& before =
          from != nullptr ? from->status[i].value("miss_causes", none) : none;
      causes[cause] = causes.value(cause, uint64_t{0}) + count.get<uint64_t>() -
                      before.value(cause, uint64_t{0});
    }
    const uint64_t cache = Delta(to, from, i, "bytes_from_cache");
    const uint64_t peer = Delta(to, from, i, "bytes_from_peer_copies");
    local += cache - peer;
    peers += peer;
    backing += Delta(to, from, i, "bytes_from_backing");
    hits += Delta(to, from, i, "hits");
    misses += Delta(to, from, i, "misses");
  }
  const double daemons = to.daemons_cpu - (from ? from->daemons_cpu : 0);
  const double agents = to.agents_cpu - (from ? from->agents_cpu : 0);
  return {{"phase", name},
          {"seconds", seconds},
          {"pfs_bytes", to.pfs.bytes_read - pfs_from.bytes_read},
          {"pfs_opens", to.pfs.opens - pfs_from.opens},
          {"bytes_read", read.bytes},
          {"bytes_verified", read.verified},
          {"bytes_expected", read.expected},
          {"files_read", read.files},
          {"bytes_from_local", local},
          {"bytes_from_peers", peers},
          {"bytes_from_pfs", backing},
          {"hits", hits},
          {"misses", misses},
          {"miss_causes", causes},
          {"node_seconds", read.node_seconds},
          {"read_ms",
           {{"median", read.read_ms_median}, {"p99", read.read_ms_p99}, {"max", read.read_ms_max}}},
          {"cpu",
           {{"daemons", daemons},
            {"agents", agents},
            {"readers", read.cpu_seconds},
            {"total", daemons + agents + read.cpu_seconds}}}};
}

nlohmann::json SumPhases(const nlohmann::json& phases) {
  nlohmann::json job = {{"phase", "job"}};
  for (const char* k :
       {"pfs_bytes", "pfs_opens", "bytes_read", "bytes_verified", "bytes_expected", "files_read",
        "bytes_from_local", "bytes_from_peers", "bytes_from_pfs", "hits", "misses"}) {
    uint64_t sum = 0;
    for (const auto& p : phases) sum += p[k].get<uint64_t>();
    job[k] = sum;
  }
  nlohmann::json causes = nlohmann::json::object();
  for (const auto& p : phases) {
    for (const auto& [cause, count] : p["miss_causes"].items()) {
      causes[cause] = causes.value(cause, uint64_t{0}) + count.get<uint64_t>();
    }
  }
  job["miss_causes"] = causes;
  double seconds = 0;
  nlohmann::json cpu = {{"daemons", 0.0}, {"agents", 0.0}, {"readers", 0.0}, {"total", 0.0}};
  for (const auto& p : phases) {
    seconds += p["seconds"].get<double>();
    for (auto& [k, v] : cpu.items()) v = v.get<double>() + p["cpu"][k].get<double>();
  }
  job["seconds"] = seconds;
  job["cpu"] = cpu;
  return job;
}

Status WritePeerKey(const std::string& path) {
  unsigned char key[32];
  if (getrandom(key, sizeof(key), 0) != static_cast<ssize_t>(sizeof(key))) {
    return Status::FromErrno(errno, "getrandom");
  }
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno(errno, "creating " + path);
  const bool ok = write(fd, key, sizeof(key)) == static_cast<ssize_t>(sizeof(key));
  close(fd);
  if (!ok) return Status::FromErrno(errno, "writing " + path);
  return Status::Ok();
}

// Waits until every node's status shows its agent attached; fails early if mpirun exits.
Status WaitAttached(const std::vector<std::string>& mounts, AgentJob* job, int timeout_seconds) {
  const auto deadline = Clock::now() + std::chrono::seconds(timeout_seconds);
  for (;;) {
    size_t attached = 0;
    for (const auto& m : mounts) {
      auto s = MountStatus(m);
      if (!s.ok()) return s.status();
      const nlohmann::json& p = (*s)["peers"];
      attached += p.is_object() && p.value("attached", false);
    }
    if (attached == mounts.size()) return Status::Ok();
    if (!job->running()) {
      return Status::Error(EIO, "the agents exited before attaching: " + job->LogTail());
    }
    if (Clock::now() > deadline) {
      return Status::Error(ETIMEDOUT, std::to_string(attached) + " of " +
                                          std::to_string(mounts.size()) + " agents attached in " +
                                          std::to_string(timeout_seconds) +
                                          " s: " + job->LogTail());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

// The 4-node job once, with or without agents.
Result<nlohmann::json> RunMode(const PeersArgs& a, const PeersInputs& in, const BenchWorkDir& work,
                               const std::string& self, bool peers) {
  const std::string mode = peers ? "peers" : "baseline";
  {
    // Fresh caches every run: a kept --dir must not hand the next run last run's copies.
    std::error_code ec;
    std::filesystem::remove_all(work.path() + "/" + mode, ec);
    if (ec) return Status::FromErrno(ec.value(), "removing " + work.path() + "/" + mode);
  }
  auto base = work.Subdir(mode);
  if (!base.ok()) return base.status();
  std::string key;
  if (peers) {
    key = *base + "/peer.key";
    CLAIRFS_RETURN_IF_ERROR(WritePeerKey(key));
  }
  ModeRun run;
  // Declared before the agents: on any exit the agents are stopped first, then the mounts go.
  MountStack stack(self);
  AgentJob agents;
  auto pfs_before = ReadEmulatorCounters(in.pfs);
  if (!pfs_before.ok()) return pfs_before.status();
  const std::string load_start = LoadAverage();
  const auto setup_start = Clock::now();
  nlohmann::json transport;
  for (int i = 0; i < a.nodes; ++i) {
    auto mnt = work.Subdir(mode + "/mnt" + std::to_string(i));
    auto cache = work.Subdir(mode + "/cache" + std::to_string(i));
    if (!mnt.ok()) return mnt.status();
    if (!cache.ok()) return cache.status();
    std::vector<std::string> flags = {"--cache",
                                      *cache,
                                      "--capacity",
                                      std::to_string(in.capacity),
                                      "--plan",
                                      PeersSamplerSpec(a) + ",ranks=" + std::to_string(i) + "-" +
                                          std::to_string(i) + ",epochs=" + std::to_string(a.epochs),
                                      "--layout",
                                      "imagefolder"};
    if (peers) flags.insert(flags.end(), {"--peer-key", key});
    CLAIRFS_RETURN_IF_ERROR(stack.MountClairfs(in.pfs, *mnt, flags));
    run.mounts.push_back(*mnt);
    auto st = MountStatus(*mnt);
    if (!st.ok()) return st.status();
    run.daemons.push_back(st->value("pid", -1));
    if (i == 0) {  // what the mounts got, for the record (every node gets the same)
      transport = {{"passthrough", (*st)["passthrough"].value("state", "")},
                   {"fuse_transport", (*st)["fuse_transport"].value("state", "")}};
    }
  }
  if (peers) {
    CLAIRFS_RETURN_IF_ERROR(agents.Start({a.mpirun, "--oversubscribe", "--enable-recovery", "-np",
                                          std::to_string(a.nodes), self, "peer", *base + "/mnt%r"},
                                         *base + "/agents.log"));
    run.job = &agents;
    CLAIRFS_RETURN_IF_ERROR(WaitAttached(run.mounts, &agents, a.attach_timeout));
  }
  auto prev = Take(in, &run);
  if (!prev.ok()) return prev.status();
  nlohmann::json phases = nlohmann::json::array();
  phases.push_back(
      Phase("setup", Since(setup_start), *prev, nullptr, *pfs_before, PeersEpochRead{}));
  std::vector<double> steady;
  for (size_t e = 0; e < static_cast<size_t>(a.epochs); ++e) {
    auto read = ReadPeersEpoch(a, in, e, run.mounts);
    if (!read.ok()) return read.status().WithContext("epoch " + std::to_string(e + 1));
    auto now = Take(in, &run);
    if (!now.ok()) return now.status();
    phases.push_back(Phase(std::to_string(e + 1), read->seconds, *now, &*prev, prev->pfs, *read));
    if (e > 0 || a.epochs == 1) steady.push_back(read->seconds);
    prev = std::move(now);
  }
  // The end: staging idle everywhere, the agents gone (they leave when every plan is done).
  const auto end_start = Clock::now();
  nlohmann::json peer_report = nlohmann::json::array();
  for (const auto& s : prev->status) peer_report.push_back(s["peers"]);
  bool agents_left = true;
  if (peers) agents_left = agents.Wait(120);
  for (const auto& m : run.mounts) CLAIRFS_RETURN_IF_ERROR(WaitStagingIdle(m));
  auto last = Take(in, &run);
  if (!last.ok()) return last.status();
  phases.push_back(Phase("end", Since(end_start), *last, &*prev, prev->pfs, PeersEpochRead{}));
  nlohmann::json final_peers = nlohmann::json::array();
  for (const auto& s : last->status) final_peers.push_back(s["peers"]);
  const std::string agents_log = peers ? agents.LogTail(4000) : std::string();
  agents.Stop();
  CLAIRFS_RETURN_IF_ERROR(stack.PopAll());
  nlohmann::json out = {{"mode", mode},
                        {"phases", phases},
                        {"job", SumPhases(phases)},
                        {"steady_seconds", Median(steady)},
                        {"mounts", transport},
                        {"loadavg_start", load_start},
                        {"loadavg_end", LoadAverage()}};
  if (peers) {
    out["peer_report_last_epoch"] = peer_report;
    out["peer_report_end"] = final_peers;
    out["agents_left_by_themselves"] = agents_left;
    out["agents_log_tail"] = agents_log;
  }
  if (!a.keep && a.dir.empty()) {  // free the caches' space before the next mode
    std::error_code ec;
    std::filesystem::remove_all(*base, ec);
  }
  return out;
}

Status Measure(const PeersArgs& a, nlohmann::json* out) {
  auto modes = ParseChoiceList("--modes", a.modes, {"baseline", "peers"});
  if (!modes.ok()) return modes.status();
  if (modes->size() == 2 && (*modes)[0] == (*modes)[1]) {
    return Status::Invalid("--modes: each mode once");
  }
  auto self = SelfExecutable();
  if (!self.ok()) return self.status();
  BenchWorkDir work;
  CLAIRFS_RETURN_IF_ERROR(work.Init(a.dir, "peers", a.keep));
  PeersInputs in;
  if (a.dataset.empty()) {
    auto d = work.Subdir("dataset");
    if (!d.ok()) return d.status();
    in.dataset = *d;
  } else {
    in.dataset = std::filesystem::absolute(a.dataset).string();
  }
  auto pfs = work.Subdir("pfs");
  if (!pfs.ok()) return pfs.status();
  in.pfs = *pfs;
  SyntheticSpec spec;
  spec.files = a.files;
  spec.classes = std::max<uint64_t>(1, a.files / 100);
  spec.seed = a.seed;
  auto files = PlanSyntheticDataset(spec);
  if (!files.ok()) return files.status();
  in.files = *files;
  auto written = WriteSyntheticDataset(in.dataset, in.files, SettledForMount());
  if (!written.ok()) return written.status().WithContext("dataset " + in.dataset);
  uint64_t blocks = 0;
  for (const auto& f : in.files) {
    in.dataset_bytes += f.size;
    blocks += (f.size + kPeersBlockBytes - 1) / kPeersBlockBytes * kPeersBlockBytes;
  }
  in.capacity = blocks * static_cast<uint64_t>(a.cache_percent) / 100;
  CLAIRFS_RETURN_IF_ERROR(PlanOrders(a, &in));

  MountStack stack(*self);
  CLAIRFS_RETURN_IF_ERROR(stack.MountEmulator(
      in.dataset, in.pfs, {"--open-latency", a.open_latency, "--bandwidth", a.bandwidth}));
  const pid_t emulator = FindEmulatorPid(in.pfs);
  auto emulator_cpu = [emulator]() -> double {
    if (emulator <= 0) return 0;
    auto cpu = ProcessCpuSeconds(emulator);
    return cpu.ok() ? *cpu : 0;
  };
  *out = {{"files", in.files.size()},
          {"dataset_bytes", in.dataset_bytes},
          {"nodes", a.nodes},
          {"epochs", a.epochs},
          {"threads", a.threads},
          {"cache_percent", a.cache_percent},
          {"capacity_bytes", in.capacity},
          {"seed", a.seed},
          {"work_ms", a.work_ms},
          {"open_latency_ms", a.open_latency},
          {"bandwidth_mbps", a.bandwidth},
          {"cpus", std::thread::hardware_concurrency()},
          {"loadavg_start", LoadAverage()}};
  nlohmann::json results = nlohmann::json::array();
  for (const std::string& mode : *modes) {
    const double cpu_before = emulator_cpu();
    auto r = RunMode(a, in, work, *self, mode == "peers");
    if (!r.ok()) return r.status().WithContext(mode);
    if (emulator > 0) {
      (*r)["emulator_cpu_seconds"] = emulator_cpu() - cpu_before;
    }
    results.push_back(*r);
  }
  CLAIRFS_RETURN_IF_ERROR(stack.PopAll());
  (*out)["modes"] = results;
  (*out)["loadavg_end"] = LoadAverage();
  (*out)["targets"] = PeersTargets(*out);
  return Status::Ok();
}

}  // namespace

void RegisterBenchPeers(CLI::App& bench) {
  auto args = std::make_shared<PeersArgs>();
  CLI::App* cmd = AddCommand(
      &bench, "peers",
      "The peer tier (issue 19): NODES nodes on this machine, each its own daemon, cache and "
      "mount over one PFS emulator, read a torch DistributedSampler job (one rank per node) "
      "twice, without agents (baseline) and with `clairfs peer` under mpirun; prints per epoch "
      "the time, PFS bytes at the emulator, bytes served from local copies, peer copies and the "
      "PFS, CPU-seconds, and the ratios beside issue 19's targets. Every byte read is verified");
  cmd->add_option("--dir", args->dir, "Work directory (default: a temporary one, removed after)");
  cmd->add_option("--dataset", args->dataset,
                  "Write (or reuse, if it is already there) the dataset in this directory and "
                  "keep it (default: inside the work directory)");
  cmd->add_option("--files", args->files, "Files in the dataset (default 2000; --quick 240)")
      ->transform(Count(uint64_t{1}, uint64_t{10'000'000}));
  cmd->add_option("--nodes", args->nodes, "Nodes = torch-distributed world (default 4)")
      ->transform(Count(2, 64));
  cmd->add_option("--epochs", args->epochs, "Epochs (default 4; --quick 3)")
      ->transform(Count(1, 1000));
  cmd->add_option("--threads", args->threads, "Reader threads per node (default 2)")
      ->transform(Count(1, 64));
  cmd->add_option("--cache-percent", args->cache_percent,
                  "Each node's cache in percent of the dataset (default 30)")
      ->transform(Count(1, 1000));
  cmd->add_option("--seed", args->seed, "Sampler and dataset seed (default 42)")
      ->transform(Count(0, UINT64_MAX));
  cmd->add_option("--work-ms", args->work_ms, "Simulated compute per sample, ms (default 0)")
      ->check(CLI::Range(0.0, 10000.0));
  cmd->add_option("--open-latency", args->open_latency,
                  "Emulated PFS open latency, ms (default 2)");
  cmd->add_option("--bandwidth", args->bandwidth,
                  "Emulated PFS bandwidth over all files and nodes, MB/s (default 200)");
  cmd->add_option("--modes", args->modes,
                  "Which runs, in this order: baseline, peers (default baseline,peers)");
  cmd->add_option("--mpirun", args->mpirun, "The mpirun to start the agents with (default mpirun)");
  cmd->add_option("--attach-timeout", args->attach_timeout,
                  "Seconds to wait for every agent to attach (default 120)")
      ->transform(Count(1, 3600));
  cmd->add_flag("--quick", args->quick, "A small run: 240 files, 3 epochs (unless given)");
  cmd->add_flag("--keep", args->keep, "Keep the temporary work directory");
  cmd->add_flag("--json", args->json, "Print one JSON object");
  cmd->footer(
      "\nEach mode mounts NODES fresh caches over one `clairfs pfs-emu`; node i gets "
      "`--plan torch-distributed:seed=S,world=NODES,ranks=i-i,epochs=E --layout imagefolder`, "
      "the peers mode also a peer key and `mpirun --oversubscribe --enable-recovery -np NODES "
      "clairfs peer WORK/peers/mnt%r`. Each epoch every node's readers read its rank's files in "
      "plan order through its own mount, all nodes starting together, checking every byte, and "
      "drop each file's pages after reading it.\n\nRows: setup (mounts and agents; the daemons "
      "already stage their plans), each epoch, end (until staging is idle and the agents have "
      "left). Columns: wall time; PFS bytes counted at the emulator (% of the dataset); bytes "
      "the daemons served from local copies, from copies pulled from peers, and from the PFS on "
      "a miss; hits/opens; CPU-seconds of the daemons, the agents (mpirun and its ranks) and the "
      "readers.\n\nTargets (issue 19, reported, not enforced): with peers, PFS bytes of each "
      "epoch >= 2 <= 5% of the dataset and <= 1.15x the dataset over the job; steady epoch time "
      "(median of epochs >= 2) at least 2x faster than the baseline; every byte verified.\n\n"
      "Exit codes: 0 measured; 1 failed (a wrong byte included); 2 usage. Mounts and mpirun "
      "are always stopped, also on Ctrl-C. Needs mpirun (Open MPI) and FUSE; as root the "
      "OMPI_ALLOW_RUN_AS_ROOT variables are set for mpirun.");
  cmd->callback([args, cmd]() {
    PeersArgs a = *args;
    if (a.quick) {
      if (cmd->count("--files") == 0) a.files = 240;
      if (cmd->count("--epochs") == 0) a.epochs = 3;
    }
    nlohmann::json result;
    const Status measured = Measure(a, &result);
    SetExitCode(ReportBench(kBenchPeersCommand, measured, result, a.json, PrintPeersTable));
  });
}

}  // namespace clairfs::cli
