// CacheDir: layout creation, format check and the exclusive lock (see cache_dir.h).
#include "cache/cache_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace clairfs {
namespace {

std::string ReadSmallFile(int fd) {
  char buf[256];
  ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

// A new cache, or one that is not ours: refuse to adopt a non-empty directory we did not make.
Status RefuseForeign(const std::string& root, Env* env) {
  struct stat st;
  if (env->Lstat(root + "/FORMAT", &st).ok()) return Status::Ok();
  std::vector<DirEntry> entries;
  CLAIRFS_RETURN_IF_ERROR(env->ListDir(root, &entries));
  for (const auto& e : entries) {
    if (e.name != "lock" && e.name != "data" && e.name != "tmp" && e.name != "index" &&
        e.name != "FORMAT.tmp") {
      return Status::Error(ENOTEMPTY, "cache directory " + root +
                                          " is not empty and is not a clairfs cache (found '" +
                                          e.name + "'): give an empty or new directory");
    }
  }
  return Status::Ok();
}

Status CheckFormat(const std::string& root, Env* env) {
  std::string path = root + "/FORMAT";
  std::string expected = "clairfs-cache " + std::to_string(kCacheFormatVersion) + "\n";
  auto fd = env->Open(path, O_RDONLY);
  if (fd.ok()) {
    std::string content = ReadSmallFile(*fd);
    (void)env->Close(*fd);
    if (content == expected) return Status::Ok();
    std::string found = content;
    while (!found.empty() && (found.back() == '\n' || found.back() == '\r')) found.pop_back();
    return Status::Error(EPROTO, "cache " + root + " has format '" + found +
                                     "' but this clairfs reads 'clairfs-cache " +
                                     std::to_string(kCacheFormatVersion) +
                                     "': use another --cache directory or remove this one");
  }
  if (fd.status().code() != ENOENT) return fd.status();
  CLAIRFS_RETURN_IF_ERROR(RefuseForeign(root, env));  // again, now under the lock
  auto out = env->Open(path + ".tmp", O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (!out.ok()) return out.status();
  Status st = env->PwriteAll(*out, expected.data(), expected.size(), 0);
  if (st.ok()) st = env->Fsync(*out);
  (void)env->Close(*out);
  CLAIRFS_RETURN_IF_ERROR(st);
  CLAIRFS_RETURN_IF_ERROR(env->Rename(path + ".tmp", path));
  return env->SyncDir(root);
}

}  // namespace

Result<std::unique_ptr<CacheDir>> CacheDir::Acquire(const std::string& root, Env* env) {
  CLAIRFS_RETURN_IF_ERROR(env->MkdirIfMissing(root, 0700));
  struct stat st;
  CLAIRFS_RETURN_IF_ERROR(env->Lstat(root, &st));
  if (!S_ISDIR(st.st_mode)) return Status::Error(ENOTDIR, "cache " + root + " is not a directory");
  if (access(root.c_str(), W_OK | X_OK) != 0) {
    return Status::FromErrno(errno, "cache directory " + root + " is not writable");
  }
  // Before touching anything: a mistyped --cache must not chmod or litter a user's directory.
  CLAIRFS_RETURN_IF_ERROR(RefuseForeign(root, env));
  // Private to the daemon's user, whatever the umask or a previous owner left.
  if ((st.st_mode & 0077) != 0 && chmod(root.c_str(), 0700) != 0) {
    return Status::FromErrno(errno, "chmod 0700 " + root);
  }
  auto lock_fd = env->Open(root + "/lock", O_RDWR | O_CREAT, 0600);
  if (!lock_fd.ok()) return lock_fd.status().WithContext("cache " + root);
  if (flock(*lock_fd, LOCK_EX | LOCK_NB) != 0) {
    int err = errno;
    std::string holder = ReadSmallFile(*lock_fd);
    while (!holder.empty() && (holder.back() == '\n')) holder.pop_back();
    (void)env->Close(*lock_fd);
    if (err == EWOULDBLOCK) {
      return Status::Error(EBUSY, "cache " + root + " is in use by another clairfs process" +
                                      (holder.empty() ? "" : " (pid " + holder + ")"));
    }
    return Status::FromErrno(err, "lock " + root + "/lock");
  }
  auto cache = std::unique_ptr<CacheDir>(new CacheDir(root, *lock_fd));
  cache->RecordOwnerPid();
  CLAIRFS_RETURN_IF_ERROR(CheckFormat(root, env));
  for (const char* sub : {"/data", "/tmp", "/index"}) {
    CLAIRFS_RETURN_IF_ERROR(env->MkdirIfMissing(root + sub, 0700));
  }
  for (int i = 0; i < 256; ++i) {
    char name[8];
    snprintf(name, sizeof(name), "/%02x", i);
    CLAIRFS_RETURN_IF_ERROR(env->MkdirIfMissing(root + "/data" + name, 0700));
  }
  return cache;
}

CacheDir::~CacheDir() {
  if (lock_fd_ >= 0) close(lock_fd_);
}

void CacheDir::RecordOwnerPid() {
  std::string pid = std::to_string(getpid()) + "\n";
  if (ftruncate(lock_fd_, 0) == 0) {
    ssize_t ignored = pwrite(lock_fd_, pid.data(), pid.size(), 0);
    (void)ignored;
  }
}

}  // namespace clairfs
