// fuse_uring_probe: does FUSE-over-io_uring lower the per-open cost of small files on this
// machine? A standalone experiment (not part of the clairfs CLI; needs root).
//
// It writes N files of SIZE bytes into a temporary backing directory, sets the fuse module's
// enable_uring to Y (restoring the previous value at exit, also on SIGINT/SIGTERM), and mounts
// the same minimal filesystem (probe_fs.h) twice: once served by a classic /dev/fuse loop and
// once by FUSE-over-io_uring (one queue per CPU, one pinned thread per queue). After a verified
// warm-up read through both mounts (page caches warm, names cached, passthrough ids
// registered), it runs, REPEAT times and rotating which side goes first:
//   - open+read+close of every file with 1 and with 2 reader threads,
//   - CALLS x stat() of a file whose attributes are never cached (one GETATTR round trip each),
//   - CALLS x open()+close() of one warm file (an OPEN round trip plus an async RELEASE),
//   - the two loops again with the caller pinned to CPU 0,
// from threads of the probe's own process, or (--reader-process) from a child process per run,
// as a real client would, against the mounts and against the backing files directly, and prints
// medians, the ratios to the direct reads, and how many requests each side's daemon served per
// operation (and over which transport). Everything it mounts is unmounted and its directory removed
// on every exit path.
#include <fcntl.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "planner/base/status.h"
#include "tools/bench/probes/probe_fs.h"
#include "tools/bench/probes/probe_mount.h"
#include "tools/bench/probes/probe_workload.h"

namespace clairfs::probe {
namespace {

constexpr const char* kEnableUring = "/sys/module/fuse/parameters/enable_uring";

struct Options {
  size_t files = 3000;
  size_t file_size = 110 * 1024;
  int repeat = 5;
  int calls = 5000;
  ServeMode serve = ServeMode::kPassthrough;
  int classic_threads = 2;
  bool pin_classic = false;
  int depth = 8;
  int threads_per_queue = 1;
  bool defer_taskrun = true;
  bool reader_process = false;  // run each timed workload in a child process
  std::string dir = "/tmp";
};

const char* kUsage =
    "usage: fuse_uring_probe [--files N] [--size BYTES] [--repeat R] [--calls M]\n"
    "         [--serve passthrough|memory|no-open] [--classic-threads T] [--pin-classic]\n"
    "         [--threads-per-queue Q] [--depth D] [--no-defer-taskrun] [--reader-process]\n"
    "         [--dir DIR]\n";

Result<Options> ParseOptions(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i];
    auto value = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    auto number = [&](long min) -> Result<long> {
      const char* v = value();
      char* end = nullptr;
      long n = v != nullptr ? std::strtol(v, &end, 10) : 0;
      if (v == nullptr || *end != '\0' || n < min) {
        return Status::Invalid(arg + ": expected a number >= " + std::to_string(min));
      }
      return n;
    };
#define PROBE_NUMBER(field, min)                  \
  {                                               \
    auto n = number(min);                         \
    if (!n.ok()) return n.status();               \
    o.field = static_cast<decltype(o.field)>(*n); \
  }
    if (arg == "--files") {
      PROBE_NUMBER(files, 1)
    } else if (arg == "--size") {
      PROBE_NUMBER(file_size, 1)
    } else if (arg == "--repeat") {
      PROBE_NUMBER(repeat, 1)
    } else if (arg == "--calls") {
      PROBE_NUMBER(calls, 1)
    } else if (arg == "--classic-threads") {
      PROBE_NUMBER(classic_threads, 1)
    } else if (arg == "--threads-per-queue") {
      PROBE_NUMBER(threads_per_queue, 1)
    } else if (arg == "--depth") {
      PROBE_NUMBER(depth, 1)
    } else if (arg == "--pin-classic") {
      o.pin_classic = true;
    } else if (arg == "--no-defer-taskrun") {
      o.defer_taskrun = false;
    } else if (arg == "--reader-process") {
      o.reader_process = true;
    } else if (arg == "--serve") {
      const char* v = value();
      if (v != nullptr && std::strcmp(v, "passthrough") == 0) {
        o.serve = ServeMode::kPassthrough;
      } else if (v != nullptr && std::strcmp(v, "memory") == 0) {
        o.serve = ServeMode::kMemory;
      } else if (v != nullptr && std::string(v) == "no-open") {
        o.serve = ServeMode::kNoOpen;
      } else {
        return Status::Invalid("--serve: expected passthrough, memory or no-open");
      }
    } else if (arg == "--dir") {
      const char* v = value();
      if (v == nullptr) return Status::Invalid("--dir: expected a directory");
      o.dir = v;
    } else {
      return Status::Invalid("unknown argument " + arg);
    }
#undef PROBE_NUMBER
  }
  return o;
}

// What a signal handler needs to leave nothing behind (async-signal-safe calls only).
char g_mountpoints[2][512];
char g_saved_enable = 0;

void OnSignal(int) {
  for (auto& m : g_mountpoints) {
    if (m[0] != '\0') umount2(m, MNT_DETACH);
  }
  if (g_saved_enable != 0) {
    int fd = open(kEnableUring, O_WRONLY);
    if (fd >= 0) {
      (void)!write(fd, &g_saved_enable, 1);
      close(fd);
    }
  }
  _exit(130);
}

// Sets enable_uring to Y for its lifetime and restores the previous value.
class EnableUring {
 public:
  Status Set() {
    std::ifstream in(kEnableUring);
    std::string old;
    if (!(in >> old) || old.empty()) {
      return Status::Error(
          ENOENT, std::string(kEnableUring) + " is missing: this kernel has no FUSE-over-io_uring");
    }
    Status st = Write('Y');
    if (!st.ok()) return st;
    saved_ = old[0];
    g_saved_enable = saved_;
    return Status::Ok();
  }
  ~EnableUring() {
    if (saved_ != 0) (void)Write(saved_);
  }
  char saved() const { return saved_; }

 private:
  static Status Write(char c) {
    std::ofstream out(kEnableUring);
    out << c << '\n';
    out.close();
    if (!out) return Status::FromErrno(EACCES, std::string("writing ") + kEnableUring);
    return Status::Ok();
  }
  char saved_ = 0;
};

// The temporary work directory: removed (after the mounts are gone) at scope exit.
class WorkDir {
 public:
  Status Create(const std::string& parent) {
    std::string templ = parent + "/fuse-uring-probe-XXXXXX";
    if (mkdtemp(templ.data()) == nullptr) return Status::FromErrno(errno, "mkdtemp " + templ);
    path_ = templ;
    return Status::Ok();
  }
  ~WorkDir() {
    if (path_.empty()) return;
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

Status WriteBackingFiles(const std::string& dir, size_t files, size_t size) {
  std::vector<char> buf(size);
  for (size_t i = 0; i < files; ++i) {
    for (size_t k = 0; k < size; ++k) buf[k] = FileByte(i, k);
    char name[32];
    std::snprintf(name, sizeof(name), "/f%05zu", i);
    std::string path = dir + name;
    int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0444);
    if (fd < 0) return Status::FromErrno(errno, "create " + path);
    ssize_t n = write(fd, buf.data(), size);
    close(fd);
    if (n != static_cast<ssize_t>(size)) return Status::FromErrno(errno, "write " + path);
  }
  return Status::Ok();
}

std::vector<std::string> FilePaths(const std::string& dir, size_t files) {
  std::vector<std::string> paths;
  for (size_t i = 0; i < files; ++i) {
    char name[32];
    std::snprintf(name, sizeof(name), "/f%05zu", i);
    paths.push_back(dir + name);
  }
  return paths;
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string a, b, c;
  in >> a >> b >> c;
  return a + " " + b + " " + c;
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// The three sides of every comparison.
enum Side { kDirect = 0, kClassic = 1, kUring = 2, kSides = 3 };

struct Workload {
  std::string name;
  bool seconds;  // result in seconds (reads) or microseconds per call (loops)
  double ops;    // operations per run (files or calls), for requests per operation
  // Runs once against a directory (the mountpoint, or the backing directory).
  std::function<Result<double>(Side side, const std::string& dir)> run;
};

struct Samples {
  std::vector<double> time[kSides];
  std::vector<double> dev_requests[kSides];   // requests via /dev/fuse per operation
  std::vector<double> ring_requests[kSides];  // requests via the ring per operation
  std::vector<double> cpu_us[kSides];         // CPU time of the whole process per operation
};

// User + system CPU time of every thread of this process (readers and daemon) and of its
// reaped reader processes (--reader-process), in us.
double ProcessCpuMicros() {
  auto us = [](const struct timeval& tv) { return tv.tv_sec * 1e6 + tv.tv_usec; };
  double total = 0;
  for (int who : {RUSAGE_SELF, RUSAGE_CHILDREN}) {
    struct rusage ru;
    getrusage(who, &ru);
    total += us(ru.ru_utime) + us(ru.ru_stime);
  }
  return total;
}

// Runs `fn` in a forked child and returns its result. A reader in another process reaches the
// server the way a real FUSE client does: every round trip switches address space, which costs
// about twice a switch within one process on a PVM guest (switch_cost_probe). The child only
// runs the workload (open/read/stat and its own threads) and exits with _exit.
Result<double> InReaderProcess(const std::function<Result<double>()>& fn) {
  int fds[2];
  if (pipe2(fds, O_CLOEXEC) != 0) return Status::FromErrno(errno, "pipe2");
  const pid_t pid = fork();
  if (pid < 0) {
    const int err = errno;
    close(fds[0]);
    close(fds[1]);
    return Status::FromErrno(err, "fork");
  }
  if (pid == 0) {
    close(fds[0]);
    Result<double> r = fn();
    const double reply[2] = {r.ok() ? *r : 0.0,
                             r.ok() ? 0.0 : static_cast<double>(r.status().code())};
    const bool sent = write(fds[1], reply, sizeof(reply)) == static_cast<ssize_t>(sizeof(reply));
    _exit(sent ? 0 : 1);
  }
  close(fds[1]);
  double reply[2] = {0, 0};
  const ssize_t n = read(fds[0], reply, sizeof(reply));
  close(fds[0]);
  int wstatus = 0;
  if (waitpid(pid, &wstatus, 0) < 0) return Status::FromErrno(errno, "waitpid");
  if (n != static_cast<ssize_t>(sizeof(reply)) || !WIFEXITED(wstatus)) {
    return Status::Error(EIO, "the reader process died");
  }
  if (reply[1] != 0) return Status::Error(static_cast<int>(reply[1]), "in the reader process");
  return reply[0];
}

Status Run(const Options& o) {
  if (geteuid() != 0) return Status::Error(EPERM, "must run as root (mount(2), passthrough)");
  WorkDir work;
  CLAIRFS_RETURN_IF_ERROR(work.Create(o.dir));
  const std::string backing = work.path() + "/backing";
  const std::string mnt_classic = work.path() + "/mnt-classic";
  const std::string mnt_uring = work.path() + "/mnt-uring";
  for (const auto& d : {backing, mnt_classic, mnt_uring}) {
    if (mkdir(d.c_str(), 0755) != 0) return Status::FromErrno(errno, "mkdir " + d);
  }
  CLAIRFS_RETURN_IF_ERROR(WriteBackingFiles(backing, o.files, o.file_size));

  EnableUring enable;
  CLAIRFS_RETURN_IF_ERROR(enable.Set());
  std::snprintf(g_mountpoints[0], sizeof(g_mountpoints[0]), "%s", mnt_classic.c_str());
  std::snprintf(g_mountpoints[1], sizeof(g_mountpoints[1]), "%s", mnt_uring.c_str());
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);

  ProbeFs fs_classic(backing, o.files, o.file_size, o.serve);
  ProbeFs fs_uring(backing, o.files, o.file_size, o.serve);
  ProbeMountOptions mo;
  mo.dev_threads = o.classic_threads;
  mo.pin_dev_threads = o.pin_classic;
  mo.queue_depth = o.depth;
  mo.ring_threads_per_queue = o.threads_per_queue;
  mo.defer_taskrun = o.defer_taskrun;
  mo.mountpoint = mnt_classic;
  auto classic = ProbeMount::Start(&fs_classic, mo);
  if (!classic.ok()) return classic.status().WithContext("classic mount");
  mo.mountpoint = mnt_uring;
  mo.uring = true;
  auto uring = ProbeMount::Start(&fs_uring, mo);
  if (!uring.ok()) return uring.status().WithContext("io_uring mount");

  struct utsname uts;
  uname(&uts);
  const InitResult& init = (*uring)->init();
  std::printf("fuse_uring_probe: %zu files x %zu B, serve %s, repeat %d, %d calls per loop\n",
              o.files, o.file_size,
              o.serve == ServeMode::kPassthrough ? "passthrough"
              : o.serve == ServeMode::kNoOpen    ? "no-open (READs from memory)"
                                                 : "memory",
              o.repeat, o.calls);
  std::printf(
      "kernel %s, %ld CPUs online (%ld possible), FUSE %u.%u; INIT offered: io_uring %s, "
      "passthrough %s (enable_uring was %c, set to Y)\n",
      uts.release, sysconf(_SC_NPROCESSORS_ONLN), sysconf(_SC_NPROCESSORS_CONF), init.kernel_major,
      init.kernel_minor, init.uring_offered ? "yes" : "no", init.passthrough_offered ? "yes" : "no",
      enable.saved());
  std::printf(
      "classic: /dev/fuse read/writev loop, %d threads%s; uring: %d queues x %d threads x %d "
      "entries, threads pinned to their queue's CPU%s, + 1 /dev/fuse thread\n",
      o.classic_threads, o.pin_classic ? " pinned" : " unpinned", (*uring)->ring_queues(),
      o.threads_per_queue, o.depth, o.defer_taskrun ? ", SINGLE_ISSUER|DEFER_TASKRUN" : "");
  std::printf("readers: %s\n", o.reader_process
                                   ? "a child process per timed run (switches change address space)"
                                   : "threads of this process (no address-space switch)");
  std::printf("load average at start: %s\n", LoadAverage().c_str());
  std::fflush(stdout);

  // Warm-up, verifying every byte on each side.
  const std::string dirs[kSides] = {backing, mnt_classic, mnt_uring};
  for (int side = 0; side < kSides; ++side) {
    auto t = ReadFiles(FilePaths(dirs[side], o.files), 1, o.file_size, /*verify=*/true);
    if (!t.ok()) return t.status().WithContext("warm-up");
  }
  if (fs_classic.backing_failures() + fs_uring.backing_failures() > 0) {
    return Status::Error(EIO, "passthrough registration failed for some files");
  }

  const std::vector<std::string> names = FilePaths("", o.files);
  auto reads = [&](int threads) {
    return [&, threads](Side, const std::string& dir) {
      std::vector<std::string> paths;
      paths.reserve(names.size());
      for (const auto& n : names) paths.push_back(dir + n);
      return ReadFiles(paths, threads, o.file_size, false);
    };
  };
  // First reads: the mounts' pages of every file are dropped first (untimed: an open, which sends
  // nothing once a no-open mount is switched, and POSIX_FADV_DONTNEED), so each file's read
  // reaches the server; the backing files stay warm, as clairfs's copies are in `bench
  // passthrough`'s first-read row.
  auto first_reads = [&](int threads) {
    return [&, threads](Side side, const std::string& dir) -> Result<double> {
      std::vector<std::string> paths;
      paths.reserve(names.size());
      for (const auto& n : names) paths.push_back(dir + n);
      if (side != kDirect) CLAIRFS_RETURN_IF_ERROR(DropPages(paths));
      return ReadFiles(paths, threads, o.file_size, false);
    };
  };
  // stat(): the mounts' `stat` file has no cached attributes; directly, a backing file.
  auto stats = [&](bool pin) {
    return [&, pin](Side side, const std::string& dir) {
      return StatLoop(dir + (side == kDirect ? "/f00000" : "/stat"), o.calls, pin);
    };
  };
  auto opens = [&](bool pin) {
    return [&, pin](Side, const std::string& dir) {
      return OpenCloseLoop(dir + "/f00000", o.calls, pin);
    };
  };
  const double files = static_cast<double>(o.files), calls = o.calls;
  std::vector<Workload> workloads = {
      {"open+read+close, 1 thread", true, files, reads(1)},
      {"open+read+close, 2 threads", true, files, reads(2)},
      {"first read (pages dropped), 2 threads", true, files, first_reads(2)},
      {"stat (GETATTR round trip)", false, calls, stats(false)},
      {"open+close (OPEN + RELEASE)", false, calls, opens(false)},
      {"stat, caller pinned to CPU 0", false, calls, stats(true)},
      {"open+close, caller pinned to CPU 0", false, calls, opens(true)},
  };
  ProbeFs* fs_of[kSides] = {nullptr, &fs_classic, &fs_uring};
  std::vector<Samples> samples(workloads.size());
  for (int rep = 0; rep < o.repeat; ++rep) {
    for (size_t w = 0; w < workloads.size(); ++w) {
      for (int k = 0; k < kSides; ++k) {
        const Side side = static_cast<Side>((k + rep + static_cast<int>(w)) % kSides);
        ProbeFs* fs = fs_of[side];
        uint64_t dev0 = fs ? fs->requests(Transport::kDevFuse) : 0;
        uint64_t ring0 = fs ? fs->requests(Transport::kRing) : 0;
        double cpu0 = ProcessCpuMicros();
        auto run = [&] { return workloads[w].run(side, dirs[side]); };
        auto t = o.reader_process ? InReaderProcess(run) : run();
        if (!t.ok()) return t.status().WithContext(workloads[w].name);
        // RELEASE is asynchronous: let the last ones land before counting.
        if (fs) usleep(20000);
        Samples& s = samples[w];
        s.cpu_us[side].push_back((ProcessCpuMicros() - cpu0) / workloads[w].ops);
        s.time[side].push_back(*t);
        s.dev_requests[side].push_back(
            fs ? (fs->requests(Transport::kDevFuse) - dev0) / workloads[w].ops : 0);
        s.ring_requests[side].push_back(
            fs ? (fs->requests(Transport::kRing) - ring0) / workloads[w].ops : 0);
      }
    }
  }

  std::printf("\nmedians of %d runs (reads: wall time of all files; loops: time per call)\n",
              o.repeat);
  std::printf("%-36s %10s %10s %10s %9s %9s %9s  %s\n", "workload", "direct", "classic", "uring",
              "cl/uring", "dir/cl", "dir/ur", "requests per op: classic dev | uring ring+dev");
  for (size_t w = 0; w < workloads.size(); ++w) {
    const Samples& s = samples[w];
    double t[kSides];
    for (int side = 0; side < kSides; ++side) t[side] = Median(s.time[side]);
    auto fmt = [&](double v) {
      char buf[32];
      if (workloads[w].seconds) {
        std::snprintf(buf, sizeof(buf), "%.3f s", v);
      } else {
        std::snprintf(buf, sizeof(buf), "%.1f us", v);
      }
      return std::string(buf);
    };
    std::printf("%-36s %10s %10s %10s %8.2fx %8.2fx %8.2fx  %.2f | %.2f+%.2f\n",
                workloads[w].name.c_str(), fmt(t[kDirect]).c_str(), fmt(t[kClassic]).c_str(),
                fmt(t[kUring]).c_str(), t[kClassic] / t[kUring], t[kDirect] / t[kClassic],
                t[kDirect] / t[kUring], Median(s.dev_requests[kClassic]),
                Median(s.ring_requests[kUring]), Median(s.dev_requests[kUring]));
  }
  std::printf(
      "(cl/uring: classic time / uring time; dir/cl, dir/ur: direct time / mount time, "
      "the issue #7 ratio)\n");
  std::printf("\nCPU time per operation, readers and daemon together (getrusage, medians)\n");
  std::printf("%-36s %10s %10s %10s %9s\n", "workload", "direct", "classic", "uring", "cl/uring");
  for (size_t w = 0; w < workloads.size(); ++w) {
    const Samples& s = samples[w];
    double c[kSides];
    for (int side = 0; side < kSides; ++side) c[side] = Median(s.cpu_us[side]);
    std::printf("%-36s %7.1f us %7.1f us %7.1f us %8.2fx\n", workloads[w].name.c_str(), c[kDirect],
                c[kClassic], c[kUring], c[kClassic] / c[kUring]);
  }
  std::printf("runs (classic | uring):\n");
  for (size_t w = 0; w < workloads.size(); ++w) {
    std::printf("  %-34s", workloads[w].name.c_str());
    for (double v : samples[w].time[kClassic]) std::printf(" %.4g", v);
    std::printf(" |");
    for (double v : samples[w].time[kUring]) std::printf(" %.4g", v);
    std::printf("\n");
  }
  std::printf("load average at end: %s\n", LoadAverage().c_str());
  (*uring)->Stop();
  (*classic)->Stop();
  g_mountpoints[0][0] = g_mountpoints[1][0] = '\0';
  return Status::Ok();
}

}  // namespace
}  // namespace clairfs::probe

int main(int argc, char** argv) {
  auto options = clairfs::probe::ParseOptions(argc, argv);
  if (!options.ok()) {
    std::fprintf(stderr, "fuse_uring_probe: %s\n%s", options.status().message().c_str(),
                 clairfs::probe::kUsage);
    return 2;
  }
  clairfs::Status st = clairfs::probe::Run(*options);
  if (!st.ok()) {
    std::fprintf(stderr, "fuse_uring_probe: %s\n", st.message().c_str());
    return 1;
  }
  return 0;
}
