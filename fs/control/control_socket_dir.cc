// Choosing and checking the control socket's directory (see control_socket_dir.h).
#include "fs/control/control_socket_dir.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "planner/base/fnv1a.h"
#include "planner/base/log.h"
#include "planner/base/name_escape.h"

namespace clairfs {
namespace {

std::string Octal(mode_t mode) {
  char buf[16];
  snprintf(buf, sizeof(buf), "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

std::string Uid(uid_t uid) { return "uid " + std::to_string(uid); }

// Every directory above `dir` must be owned by root or `uid`, and not writable by group or others
// unless sticky: otherwise someone else could rename `dir` away and put theirs in its place.
Status CheckAncestors(const std::string& dir, uid_t uid) {
  std::string path = dir;
  while (true) {
    const size_t slash = path.rfind('/');
    if (slash == std::string::npos) return Status::Ok();
    path = slash == 0 ? "/" : path.substr(0, slash);
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return Status::FromErrno(errno, SanitizeText(path));
    if (!S_ISDIR(st.st_mode)) {
      return Status::Error(ENOTDIR, SanitizeText(path) + " is not a directory");
    }
    if (st.st_uid != 0 && st.st_uid != uid) {
      return Status::Error(EPERM, SanitizeText(path) + ", above " + SanitizeText(dir) +
                                      ", is owned by " + Uid(st.st_uid));
    }
    if ((st.st_mode & 022) != 0 && (st.st_mode & S_ISVTX) == 0) {
      return Status::Error(EPERM, SanitizeText(path) + ", above " + SanitizeText(dir) +
                                      ", is writable by others (mode " + Octal(st.st_mode) +
                                      ", owner " + Uid(st.st_uid) + ")");
    }
    if (path == "/") return Status::Ok();
  }
}

}  // namespace

std::string ControlFileStem(const std::string& canonical_mountpoint) {
  char name[24];
  snprintf(name, sizeof(name), "%016llx",
           static_cast<unsigned long long>(Fnv1a64(canonical_mountpoint)));
  return name;
}

std::vector<std::string> ControlDirCandidates(uid_t uid, const char* xdg_runtime_dir) {
  if (uid == 0) return {"/run/clairfs"};
  std::vector<std::string> out;
  if (xdg_runtime_dir != nullptr && xdg_runtime_dir[0] == '/') {
    out.push_back(std::string(xdg_runtime_dir) + "/clairfs");
  }
  out.push_back("/run/user/" + std::to_string(uid) + "/clairfs");
  out.push_back("/tmp/clairfs-" + std::to_string(uid));
  return out;
}

Status CheckControlDir(const std::string& dir, uid_t uid) {
  const std::string shown = SanitizeText(dir);
  // O_PATH: other users may search a 0711 directory but not read it.
  int fd = open(dir.c_str(), O_PATH | O_NOFOLLOW | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) {
    const int err = errno;
    struct stat lst;
    const bool have = lstat(dir.c_str(), &lst) == 0;
    if (have && S_ISLNK(lst.st_mode)) {
      return Status::Error(ELOOP, shown + " is a symbolic link (owned by " + Uid(lst.st_uid) + ")");
    }
    if (have && !S_ISDIR(lst.st_mode)) {
      return Status::Error(ENOTDIR,
                           shown + " is not a directory (owned by " + Uid(lst.st_uid) + ")");
    }
    return Status::FromErrno(err, shown);
  }
  struct stat st;
  const int rc = fstat(fd, &st);
  const int err = errno;
  close(fd);
  if (rc != 0) return Status::FromErrno(err, shown);
  if (st.st_uid != uid) {
    return Status::Error(EPERM, shown + " is owned by " + Uid(st.st_uid) + ", not by " + Uid(uid));
  }
  if ((st.st_mode & 022) != 0) {
    return Status::Error(EPERM, shown + " is writable by group or others (mode " +
                                    Octal(st.st_mode) + ", owner " + Uid(st.st_uid) + ")");
  }
  return CheckAncestors(dir, uid);
}

std::vector<std::string> FallbackControlDirs(uid_t uid) {
  std::vector<std::string> out;
  const std::string prefix = "clairfs-" + std::to_string(uid) + "-";
  DIR* tmp = opendir("/tmp");
  if (tmp == nullptr) return out;
  while (struct dirent* e = readdir(tmp)) {
    const std::string name = e->d_name;
    if (name.rfind(prefix, 0) != 0) continue;
    const std::string dir = "/tmp/" + name;
    if (CheckControlDir(dir, uid).ok()) out.push_back(dir);
  }
  closedir(tmp);
  return out;
}

Result<std::string> ChooseControlDir(uid_t uid) {
  for (const std::string& dir : ControlDirCandidates(uid, getenv("XDG_RUNTIME_DIR"))) {
    const mode_t mode = uid == 0 ? 0755 : dir.rfind("/tmp/", 0) == 0 ? 0711 : 0700;
    if (mkdir(dir.c_str(), mode) == 0) {
      // Ours since mkdir made it; the umask may have taken bits the others need.
      if (chmod(dir.c_str(), mode) != 0) {
        Log(LogLevel::kWarn, "control socket directory %s: chmod: %s", dir.c_str(),
            strerror(errno));
      }
    } else if (errno != EEXIST) {
      // A parent that does not exist or is not ours (no /run/user/<uid>): not a hostile path.
      CLAIRFS_LOG_DEBUG("control socket directory %s not usable: %s", dir.c_str(), strerror(errno));
      continue;
    }
    Status st = CheckControlDir(dir, uid);
    if (st.ok()) return dir;
    Log(LogLevel::kWarn, "control socket directory skipped: %s", st.message().c_str());
  }
  std::string templ = "/tmp/clairfs-" + std::to_string(uid) + "-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) {
    return Status::FromErrno(errno, "control socket directory " + templ);
  }
  chmod(templ.c_str(), uid == 0 ? 0755 : 0711);
  CLAIRFS_RETURN_IF_ERROR(CheckControlDir(templ, uid));
  Log(LogLevel::kWarn, "control socket directory: using the fresh directory %s", templ.c_str());
  return templ;
}

Result<std::unique_ptr<DaemonLock>> DaemonLock::Acquire(const std::string& path) {
  int fd = open(path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return Status::FromErrno(errno, "daemon lock " + SanitizeText(path));
  if (flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    close(fd);
    return Status::FromErrno(err,
                             "daemon lock " + SanitizeText(path) + " (held by another daemon)");
  }
  const std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(fd, 0) != 0 || pwrite(fd, pid.data(), pid.size(), 0) < 0) {
    Log(LogLevel::kWarn, "daemon lock %s: writing the pid: %s", path.c_str(), strerror(errno));
  }
  return std::unique_ptr<DaemonLock>(new DaemonLock(path, fd));
}

DaemonLock::~DaemonLock() {
  // Unlinked before the lock goes: a waiting `clairfs umount` holds its own fd of the file.
  unlink(path_.c_str());
  close(fd_);
}

HeldDaemonLock OpenHeldDaemonLock(const std::string& dir, const std::string& canonical_mountpoint,
                                  uid_t owner) {
  HeldDaemonLock held;
  if (!CheckControlDir(dir, owner).ok()) return held;
  const std::string path = dir + "/" + ControlFileStem(canonical_mountpoint) + ".lock";
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) return held;
  struct stat st;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != owner || !DaemonLockHeld(fd)) {
    close(fd);
    return held;
  }
  char buf[32] = {};
  const ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  held.fd = fd;
  held.pid = n > 0 ? static_cast<pid_t>(atol(buf)) : -1;
  return held;
}

bool DaemonLockHeld(int fd) {
  if (flock(fd, LOCK_SH | LOCK_NB) == 0) {
    flock(fd, LOCK_UN);
    return false;
  }
  return errno == EWOULDBLOCK;
}

}  // namespace clairfs
