// A directory made by a command and removed again if the command fails (see
// created_directory.h).
#include "tools/created_directory.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <vector>

#include "planner/base/name_escape.h"

namespace clairfs {
namespace {

// Removes everything below the open directory `fd` (which it closes), never following a link.
Status RemoveContents(int fd, const std::string& shown) {
  DIR* dir = fdopendir(fd);
  if (dir == nullptr) {
    Status st = Status::FromErrno(errno, "listing " + shown);
    close(fd);
    return st;
  }
  std::vector<std::string> names;
  errno = 0;
  while (struct dirent* e = readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..") names.push_back(std::move(name));
  }
  Status result = errno != 0 ? Status::FromErrno(errno, "listing " + shown) : Status::Ok();
  for (const std::string& name : names) {
    if (!result.ok()) break;
    const std::string child = shown + "/" + EscapeName(name);
    struct stat st;
    if (fstatat(dirfd(dir), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) {
      if (errno != ENOENT) result = Status::FromErrno(errno, child);
      continue;
    }
    if (S_ISDIR(st.st_mode)) {
      int sub = openat(dirfd(dir), name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
      if (sub < 0) {
        result = Status::FromErrno(errno, child);
        continue;
      }
      result = RemoveContents(sub, child);
      if (result.ok() && unlinkat(dirfd(dir), name.c_str(), AT_REMOVEDIR) != 0) {
        result = Status::FromErrno(errno, "removing " + child);
      }
    } else if (unlinkat(dirfd(dir), name.c_str(), 0) != 0 && errno != ENOENT) {
      result = Status::FromErrno(errno, "removing " + child);
    }
  }
  closedir(dir);
  return result;
}

}  // namespace

CreatedDirectory::~CreatedDirectory() {
  if (parent_fd_ >= 0) close(parent_fd_);
}

Result<std::unique_ptr<CreatedDirectory>> CreatedDirectory::Make(const std::string& path,
                                                                 mode_t mode) {
  const std::string shown = EscapeName(path);
  std::string trimmed = path;
  while (trimmed.size() > 1 && trimmed.back() == '/') trimmed.pop_back();
  const size_t slash = trimmed.rfind('/');
  const std::string parent =
      slash == std::string::npos ? "." : (slash == 0 ? "/" : trimmed.substr(0, slash));
  const std::string name = slash == std::string::npos ? trimmed : trimmed.substr(slash + 1);
  if (name.empty() || name == "." || name == "..") {
    return Status::Invalid("directory " + shown + ": give a path that names a new directory");
  }
  int parent_fd = open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (parent_fd < 0) return Status::FromErrno(errno, "directory " + shown);
  if (mkdirat(parent_fd, name.c_str(), mode) != 0) {
    const int err = errno;
    close(parent_fd);
    if (err != EEXIST) return Status::FromErrno(err, "directory " + shown);
    // There before us: never ours to remove.
    return std::unique_ptr<CreatedDirectory>(new CreatedDirectory(path, -1, name, 0, 0));
  }
  struct stat st;
  if (fstatat(parent_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISDIR(st.st_mode)) {
    const int err = errno != 0 ? errno : ENOTDIR;
    close(parent_fd);
    return Status::FromErrno(err, "directory " + shown + " changed as it was made");
  }
  return std::unique_ptr<CreatedDirectory>(
      new CreatedDirectory(path, parent_fd, name, st.st_dev, st.st_ino));
}

Status CreatedDirectory::Remove() {
  if (parent_fd_ < 0) return Status::Ok();
  const std::string shown = EscapeName(path_);
  const int parent = parent_fd_;
  parent_fd_ = -1;
  int fd = openat(parent, name_.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) {
    Status st = errno == ENOENT ? Status::Ok() : Status::FromErrno(errno, "removing " + shown);
    close(parent);
    return st;
  }
  struct stat st;
  if (fstat(fd, &st) != 0 || st.st_dev != dev_ || st.st_ino != ino_) {
    close(fd);
    close(parent);
    return Status::Error(
        EEXIST, "not removing " + shown + ": it is no longer the directory this command made");
  }
  Status contents = RemoveContents(fd, shown);
  Status result = contents;
  if (contents.ok() && unlinkat(parent, name_.c_str(), AT_REMOVEDIR) != 0) {
    result = Status::FromErrno(errno, "removing " + shown);
  }
  close(parent);
  return result;
}

}  // namespace clairfs
