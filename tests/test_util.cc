// Test helpers (see test_util.h).
#include "tests/test_util.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "fs/fuse/mount_table.h"

namespace clairfs::testing {
namespace fsys = std::filesystem;

namespace {

std::vector<std::string> FuseMountsUnder(const std::string& prefix) {
  std::vector<std::string> result;
  for (const MountTableEntry& m : ReadMountTable()) {
    if (m.fstype.rfind("fuse", 0) != 0) continue;
    if (m.mountpoint == prefix || m.mountpoint.rfind(prefix + "/", 0) == 0) {
      result.push_back(m.mountpoint);
    }
  }
  return result;
}

}  // namespace

TempDir::TempDir() {
  const char* base = getenv("TMPDIR");
  std::string templ = std::string(base && *base ? base : "/tmp") + "/clairfs-test-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (mkdtemp(buf.data()) == nullptr) abort();
  path_ = buf.data();
}

TempDir::~TempDir() {
  for (const auto& mp : FuseMountsUnder(path_)) {
    Run({"fusermount3", "-uz", mp}, 30);
  }
  std::error_code ec;
  // Make everything writable first (tests create read-only files and dirs).
  Run({"chmod", "-R", "u+rwx", path_}, 60);
  fsys::remove_all(path_, ec);
}

void MakeDirs(const std::string& path) {
  std::error_code ec;
  fsys::create_directories(path, ec);
}

void WriteFile(const std::string& path, const std::string& data) {
  MakeDirs(fsys::path(path).parent_path());
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data.data(), static_cast<std::streamsize>(data.size()));
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

std::string ReadByMmap(const std::string& path, bool drop_pages) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return "<open failed>";
  struct stat st;
  std::string out;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    void* p = mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      out.assign(static_cast<const char*>(p), static_cast<size_t>(st.st_size));
      munmap(p, static_cast<size_t>(st.st_size));
    } else {
      out = "<mmap failed>";
    }
  }
  if (drop_pages) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  return out;
}

size_t ResidentPages(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY);
  if (fd < 0) return 0;
  struct stat st;
  size_t resident = 0;
  if (fstat(fd, &st) == 0 && st.st_size > 0) {
    const size_t len = static_cast<size_t>(st.st_size);
    void* p = mmap(nullptr, len, PROT_READ, MAP_SHARED, fd, 0);
    if (p != MAP_FAILED) {
      std::vector<unsigned char> vec((len + 4095) / 4096);
      if (mincore(p, len, vec.data()) == 0) {
        for (unsigned char v : vec) resident += v & 1;
      }
      munmap(p, len);
    }
  }
  close(fd);
  return resident;
}

bool PathExists(const std::string& path) {
  struct stat st;
  return lstat(path.c_str(), &st) == 0;
}

std::string RandomBytes(size_t size, uint64_t seed) {
  std::string out(size, '\0');
  uint64_t x = seed * 0x9E3779B97F4A7C15ULL + 1;
  for (size_t i = 0; i < size; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    out[i] = static_cast<char>(x >> 24);
  }
  return out;
}

namespace {

void DrainInto(int fd, std::string* out) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
}

}  // namespace

void ExecInChild(const std::vector<std::string>& argv, const std::vector<std::string>& env) {
  int devnull = open("/dev/null", O_RDONLY);
  if (devnull >= 0) dup2(devnull, 0);
  for (const auto& kv : env) putenv(strdup(kv.c_str()));
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  _exit(127);
}

CommandResult Cli(const std::vector<std::string>& args, int timeout_seconds) {
  std::vector<std::string> argv = {ClairfsBin()};
  argv.insert(argv.end(), args.begin(), args.end());
  return Run(argv, timeout_seconds);
}

nlohmann::json ParseJson(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_discarded() ? nlohmann::json::object() : j;
}

CommandResult Run(const std::vector<std::string>& argv, int timeout_seconds,
                  const std::vector<std::string>& env) {
  CommandResult result;
  int out_pipe[2], err_pipe[2];
  if (pipe2(out_pipe, O_CLOEXEC) != 0 || pipe2(err_pipe, O_CLOEXEC) != 0) return result;
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_pipe[1], 1);
    dup2(err_pipe[1], 2);
    ExecInChild(argv, env);
  }
  close(out_pipe[1]);
  close(err_pipe[1]);
  std::thread err_reader([&] { DrainInto(err_pipe[0], &result.err); });
  std::thread watchdog;
  std::atomic<bool> done{false};
  watchdog = std::thread([&] {
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_seconds);
    while (!done.load()) {
      if (std::chrono::steady_clock::now() > deadline) {
        kill(pid, SIGKILL);
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  DrainInto(out_pipe[0], &result.out);
  err_reader.join();
  int status = 0;
  waitpid(pid, &status, 0);
  done = true;
  watchdog.join();
  close(out_pipe[0]);
  close(err_pipe[0]);
  if (WIFEXITED(status))
    result.exit_code = WEXITSTATUS(status);
  else if (WIFSIGNALED(status))
    result.exit_code = 128 + WTERMSIG(status);
  return result;
}

CommandResult Shell(const std::string& command_line, int timeout_seconds) {
  return Run({"/bin/sh", "-c", command_line}, timeout_seconds);
}

bool InCi() {
  const char* ci = getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

CommandResult RunAs(uid_t uid, const std::vector<std::string>& argv, int timeout_seconds) {
  std::vector<std::string> as = {"setpriv", "--reuid=" + std::to_string(uid),
                                 "--regid=" + std::to_string(uid), "--clear-groups"};
  as.insert(as.end(), argv.begin(), argv.end());
  return Run(as, timeout_seconds);
}

bool CanRunAsOtherUsers() {
  return geteuid() == 0 && Run({"sh", "-c", "command -v setpriv"}).exit_code == 0;
}

void WriteBackDirtyPages() { sync(); }

std::string ClairfsBin() {
  const char* bin = getenv("CLAIRFS_BIN");
  if (bin && *bin) return bin;
  return "clairfs";
}

std::string SharedDir() {
  const char* dir = getenv("CLAIRFS_SHARED_DIR");
  if (dir && *dir) return dir;
  // Tests run with the source tree as working directory; shared/ sits beside the checkout.
  return "../shared";
}

bool IsFuseMounted(const std::string& path) {
  std::error_code ec;
  std::string canonical = fsys::weakly_canonical(path, ec).string();
  for (const auto& mp : FuseMountsUnder(canonical)) {
    if (mp == canonical) return true;
  }
  return false;
}

MountGuard::~MountGuard() {
  if (IsFuseMounted(mountpoint_)) {
    if (Run({"fusermount3", "-u", mountpoint_}, 30).exit_code != 0) {
      Run({"fusermount3", "-uz", mountpoint_}, 30);
    }
  }
  if (pid_ > 0) {
    for (int i = 0; i < 100 && kill(pid_, 0) == 0; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (kill(pid_, 0) == 0) kill(pid_, SIGKILL);
  }
}

pid_t DaemonPid(const std::string& mountpoint) {
  // Scan /proc for a clairfs daemon whose command line names this mountpoint.
  std::error_code ec;
  std::string canonical = fsys::weakly_canonical(mountpoint, ec).string();
  for (const auto& entry : fsys::directory_iterator("/proc", ec)) {
    std::string name = entry.path().filename().string();
    if (name.empty() || !isdigit(static_cast<unsigned char>(name[0]))) continue;
    std::string cmdline = ReadFile("/proc/" + name + "/cmdline");
    std::vector<std::string> args;
    size_t start = 0;
    for (size_t i = 0; i < cmdline.size(); ++i) {
      if (cmdline[i] == '\0') {
        args.push_back(cmdline.substr(start, i - start));
        start = i + 1;
      }
    }
    if (args.size() < 3) continue;
    if (args[0].find("clairfs") == std::string::npos) continue;
    bool is_mount = false, names_mp = false;
    for (const auto& a : args) {
      if (a == "mount" || a == "pfs-emu") is_mount = true;
      std::string c = fsys::weakly_canonical(a, ec).string();
      if (!ec && c == canonical) names_mp = true;
    }
    if (is_mount && names_mp) return static_cast<pid_t>(std::stol(name));
  }
  return -1;
}

}  // namespace clairfs::testing
