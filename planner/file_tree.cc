// PosixFileTree: FileTree over POSIX calls (see file_tree.h).
#include "planner/file_tree.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include "planner/base/units.h"

namespace clairfs {
namespace {

EntryKind KindFromMode(mode_t mode) {
  if (S_ISREG(mode)) return EntryKind::kRegular;
  if (S_ISDIR(mode)) return EntryKind::kDirectory;
  if (S_ISLNK(mode)) return EntryKind::kSymlink;
  return EntryKind::kOther;
}

class PosixFileTree : public FileTree {
 public:
  Status ListDir(const std::string& dir, std::vector<TreeEntry>* entries) override {
    entries->clear();
    DIR* handle = opendir(dir.c_str());
    if (handle == nullptr) return Status::FromErrno(errno, "cannot list " + dir);
    int fd = dirfd(handle);
    Status status;
    while (true) {
      errno = 0;
      struct dirent* entry = readdir(handle);
      if (entry == nullptr) {
        if (errno != 0) status = Status::FromErrno(errno, "cannot list " + dir);
        break;
      }
      std::string name = entry->d_name;
      if (name == "." || name == "..") continue;
      TreeEntry out{name, EntryKind::kOther};
      switch (entry->d_type) {
        case DT_REG:
          out.kind = EntryKind::kRegular;
          break;
        case DT_DIR:
          out.kind = EntryKind::kDirectory;
          break;
        case DT_LNK:
          out.kind = EntryKind::kSymlink;
          break;
        case DT_UNKNOWN: {
          // Some filesystems (e.g. some NFS and Lustre setups) do not fill d_type.
          struct stat st;
          if (fstatat(fd, entry->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0) {
            status = Status::FromErrno(errno, "cannot stat " + dir + "/" + name);
            closedir(handle);
            return status;
          }
          out.kind = KindFromMode(st.st_mode);
          break;
        }
        default:
          break;
      }
      entries->push_back(std::move(out));
    }
    closedir(handle);
    return status;
  }

  Status StatFollow(const std::string& path, FollowedStat* out, int* error) override {
    struct stat st;
    *error = 0;
    if (stat(path.c_str(), &st) != 0) {
      int code = errno;
      if (code == ENOENT || code == ENOTDIR || code == ELOOP) {
        out->exists = false;
        *error = code;
        return Status::Ok();
      }
      return Status::FromErrno(code, "cannot stat " + path);
    }
    out->exists = true;
    out->kind = KindFromMode(st.st_mode);
    return Status::Ok();
  }

  Result<std::string> RealPath(const std::string& path) override {
    char* resolved = realpath(path.c_str(), nullptr);
    if (resolved == nullptr) return Status::FromErrno(errno, "cannot resolve " + path);
    std::string out(resolved);
    free(resolved);
    return out;
  }

  Result<std::string> ReadFile(const std::string& path, uint64_t max_bytes) override {
    // stat first: opening a device can have effects of its own, and a FIFO's open blocks.
    struct stat st;
    if (stat(path.c_str(), &st) != 0) return Status::FromErrno(errno, "cannot read " + path);
    CLAIRFS_RETURN_IF_ERROR(CheckReadable(path, st, max_bytes));
    // O_NONBLOCK: should a FIFO replace the file meanwhile, the open returns and fstat refuses.
    int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd < 0) return Status::FromErrno(errno, "cannot read " + path);
    Status checked = fstat(fd, &st) == 0 ? CheckReadable(path, st, max_bytes)
                                         : Status::FromErrno(errno, "cannot read " + path);
    if (!checked.ok()) {
      close(fd);
      return checked;
    }
    std::string content;
    content.reserve(static_cast<size_t>(st.st_size));
    char buffer[65536];
    while (true) {
      ssize_t n = read(fd, buffer, sizeof(buffer));
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        Status status = Status::FromErrno(errno, "cannot read " + path);
        close(fd);
        return status;
      }
      if (n == 0) break;
      // A file that grows while read is held to the same bound.
      if (content.size() + static_cast<size_t>(n) > max_bytes) {
        close(fd);
        return TooLarge(path, content.size() + static_cast<size_t>(n), max_bytes);
      }
      content.append(buffer, static_cast<size_t>(n));
    }
    close(fd);
    return content;
  }

 private:
  static Status TooLarge(const std::string& path, uint64_t size, uint64_t max_bytes) {
    return Status::Error(EFBIG, path + " is " + FormatBytes(size) + ", more than the " +
                                    FormatBytes(max_bytes) + " a list file may hold");
  }

  static Status CheckReadable(const std::string& path, const struct stat& st, uint64_t max_bytes) {
    if (S_ISDIR(st.st_mode)) {
      return Status::Error(EISDIR, path + " is a directory, not a file");
    }
    if (!S_ISREG(st.st_mode)) {
      return Status::Invalid(path + " is " + KindOfSpecial(st.st_mode) +
                             ", not a regular file (list files are read whole)");
    }
    if (static_cast<uint64_t>(st.st_size) > max_bytes) {
      return TooLarge(path, static_cast<uint64_t>(st.st_size), max_bytes);
    }
    return Status::Ok();
  }

  static std::string KindOfSpecial(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISCHR(mode)) return "a character device";
    if (S_ISBLK(mode)) return "a block device";
    if (S_ISSOCK(mode)) return "a socket";
    return "a special file";
  }
};

}  // namespace

FileTree* PosixFileTreeInstance() {
  static PosixFileTree* instance = new PosixFileTree();
  return instance;
}

}  // namespace clairfs
