// The PFS emulator's process lifecycle (see pfs_emu_daemon.h).
#include "tools/bench/pfs_emu_daemon.h"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <thread>

#include "fs/daemon/open_file_limit.h"
#include "planner/base/log.h"
#include "tools/bench/pfs_emu_fs.h"

namespace clairfs {
namespace {

constexpr char kPfsEmuDaemonCommand[] = "clairfs pfs-emu";
constexpr char kOkLine[] = "pfs-emu-status: ok\n";
constexpr char kErrorPrefix[] = "pfs-emu-status: error: ";
constexpr long kFuseSuperMagic = 0x65735546;
constexpr int kStartTimeoutSeconds = 60;

Status CheckBacking(const std::string& path) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    return Status::FromErrno(errno, "backing directory '" + path + "'");
  }
  if (!S_ISDIR(st.st_mode)) {
    return Status::Error(ENOTDIR, "backing directory '" + path + "' is not a directory");
  }
  return Status::Ok();
}

Status CheckMountpoint(const std::string& path) {
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) {
    return Status::FromErrno(errno, "mountpoint '" + path + "' is not an empty directory");
  }
  bool empty = true;
  while (dirent* e = readdir(dir)) {
    if (std::string(e->d_name) != "." && std::string(e->d_name) != "..") {
      empty = false;
      break;
    }
  }
  closedir(dir);
  if (!empty) {
    return Status::Error(ENOTEMPTY, "mountpoint '" + path + "' is not an empty directory");
  }
  return Status::Ok();
}

Result<std::string> Absolute(const std::string& path) {
  char* resolved = realpath(path.c_str(), nullptr);
  if (resolved == nullptr) return Status::FromErrno(errno, "'" + path + "'");
  std::string out(resolved);
  free(resolved);
  return out;
}

void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// Reads everything the child writes until EOF or the deadline; false on timeout.
bool ReadUntilEof(int fd, std::string* out, int timeout_seconds) {
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
  char buf[4096];
  for (;;) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return false;
    pollfd p{fd, POLLIN, 0};
    int r = poll(&p, 1, static_cast<int>(left.count()));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return true;
    out->append(buf, static_cast<size_t>(n));
  }
}

void RedirectStdioToDevNull() {
  int null_fd = open("/dev/null", O_RDWR | O_CLOEXEC);
  if (null_fd < 0) return;
  dup2(null_fd, STDIN_FILENO);
  dup2(null_fd, STDOUT_FILENO);
  dup2(null_fd, STDERR_FILENO);
  close(null_fd);
}

// Mounts and serves until unmounted. `ready_fd` >= 0 (daemon mode): report the verdict there.
int Serve(const PfsEmuOptions& options, int ready_fd) {
  auto report_error = [&](const std::string& message) {
    if (ready_fd >= 0) {
      WriteAll(ready_fd, kErrorPrefix + message + "\n");
    } else {
      fprintf(stderr, "%s: %s\n", kPfsEmuDaemonCommand, message.c_str());
    }
    return 1;
  };
  (void)RaiseOpenFileLimit();
  auto fs = PfsEmuFs::Create(options);
  if (!fs.ok()) return report_error(fs.status().message());

  // "ro" makes the kernel refuse writes before they reach us. No default_permissions and no
  // allow_other: only the mounting user can enter the mount (the kernel enforces that), and the
  // kernel's permission checks would add a GETATTR of every directory on each path walk, which
  // a PFS client does not pay (it caches directory permissions under its locks).
  std::string fsname = "pfs-emu:" + options.backing;
  std::string mount_options = "ro,subtype=pfs-emu,fsname=";
  for (char c : fsname) {
    if (c == ',' || c == '\\') mount_options += '\\';
    mount_options += c;
  }
  const char* argv[] = {"clairfs-pfs-emu", "-o", mount_options.c_str(), nullptr};
  fuse_args args = FUSE_ARGS_INIT(3, const_cast<char**>(argv));
  fuse_session* se =
      fuse_session_new(&args, &PfsEmuFs::Operations(), sizeof(fuse_lowlevel_ops), fs->get());
  fuse_opt_free_args(&args);  // option parsing may have copied argv onto the heap
  if (se == nullptr) return report_error("cannot create the FUSE session");
  if (fuse_set_signal_handlers(se) != 0) {
    fuse_session_destroy(se);
    return report_error("cannot install signal handlers");
  }
  if (fuse_session_mount(se, options.mountpoint.c_str()) != 0) {
    fuse_remove_signal_handlers(se);
    fuse_session_destroy(se);
    return report_error("cannot mount on '" + options.mountpoint + "'");
  }
  (*fs)->replies().Start();

  // Proof of service: a stat through the kernel only returns once our loop answers it.
  std::thread probe;
  if (ready_fd >= 0) {
    probe = std::thread([&options, ready_fd, se] {
      struct statfs sfs;
      struct stat st;
      if (stat(options.mountpoint.c_str(), &st) == 0 &&
          statfs(options.mountpoint.c_str(), &sfs) == 0 && sfs.f_type == kFuseSuperMagic) {
        RedirectStdioToDevNull();  // the parent's pipes must see EOF when it exits
        WriteAll(ready_fd, kOkLine);
      } else {
        WriteAll(ready_fd, std::string(kErrorPrefix) + "the mount at '" + options.mountpoint +
                               "' does not answer\n");
        fuse_session_exit(se);
        fuse_session_unmount(se);  // wakes the loop's read with ENODEV
      }
      close(ready_fd);
    });
  }

  fuse_loop_config* config = fuse_loop_cfg_create();
  fuse_loop_cfg_set_max_threads(config, 64);
  fuse_loop_cfg_set_idle_threads(config, 16);
  int loop_result = fuse_session_loop_mt(se, config);
  fuse_loop_cfg_destroy(config);
  if (probe.joinable()) probe.join();
  (*fs)->replies().Stop();  // answers whatever is still pending before the session goes
  fuse_session_unmount(se);
  fuse_remove_signal_handlers(se);
  fuse_session_destroy(se);
  // The loop returns 0 on unmount and on a termination signal.
  return loop_result == 0 ? 0 : 1;
}

}  // namespace

int RunPfsEmulator(const PfsEmuOptions& requested) {
  PfsEmuOptions options = requested;
  auto fail = [](const Status& status) {
    fprintf(stderr, "%s: %s\n", kPfsEmuDaemonCommand, status.message().c_str());
    return 1;
  };
  Status backing_ok = CheckBacking(options.backing);
  if (!backing_ok.ok()) return fail(backing_ok);
  Status mountpoint_ok = CheckMountpoint(options.mountpoint);
  if (!mountpoint_ok.ok()) return fail(mountpoint_ok);
  auto backing = Absolute(options.backing);
  auto mountpoint = Absolute(options.mountpoint);
  if (!backing.ok()) return fail(backing.status());
  if (!mountpoint.ok()) return fail(mountpoint.status());
  options.backing = *backing;
  options.mountpoint = *mountpoint;
  SetLogTag("clairfs-pfs-emu[" + std::to_string(getpid()) + "]");
  if (options.foreground) return Serve(options, -1);

  int pipe_fds[2];
  if (pipe2(pipe_fds, O_CLOEXEC) != 0) return fail(Status::FromErrno(errno, "pipe"));
  fflush(nullptr);
  pid_t child = fork();
  if (child < 0) return fail(Status::FromErrno(errno, "fork"));
  if (child == 0) {
    close(pipe_fds[0]);
    setsid();
    if (chdir("/") != 0) _exit(1);
    SetLogTag("clairfs-pfs-emu[" + std::to_string(getpid()) + "]");
    // Until the verdict, everything the child or libfuse (or fusermount3) prints goes to the
    // parent, which shows it as part of its one error line.
    dup2(pipe_fds[1], STDERR_FILENO);
    int code = Serve(options, pipe_fds[1]);
    fflush(nullptr);
    _exit(code);
  }
  close(pipe_fds[1]);
  std::string report;
  bool complete = ReadUntilEof(pipe_fds[0], &report, kStartTimeoutSeconds);
  close(pipe_fds[0]);
  if (complete && report.size() >= sizeof(kOkLine) - 1 &&
      report.compare(report.size() - (sizeof(kOkLine) - 1), std::string::npos, kOkLine) == 0) {
    return 0;
  }
  if (!complete) {
    kill(child, SIGTERM);  // its handler ends the loop, which unmounts
    report += std::string(kErrorPrefix) + "no answer from the mount within " +
              std::to_string(kStartTimeoutSeconds) + " s\n";
  }
  int status = 0;
  waitpid(child, &status, 0);
  // One line: the child's verdict first, then whatever libfuse said, joined.
  std::string verdict, details;
  size_t start = 0;
  while (start < report.size()) {
    size_t end = report.find('\n', start);
    if (end == std::string::npos) end = report.size();
    std::string line = report.substr(start, end - start);
    start = end + 1;
    if (line.empty()) continue;
    if (line.rfind(kErrorPrefix, 0) == 0) {
      verdict = line.substr(sizeof(kErrorPrefix) - 1);
    } else {
      details += (details.empty() ? "" : "; ") + line;
    }
  }
  if (verdict.empty()) verdict = "the daemon exited before the mount was ready";
  if (!details.empty()) verdict += " (" + details + ")";
  fprintf(stderr, "%s: %s\n", kPfsEmuDaemonCommand, verdict.c_str());
  return 1;
}

}  // namespace clairfs
