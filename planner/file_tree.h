// FileTree: the one seam through which the planner reads the filesystem.
//
// The planner is pure logic except for reading the dataset tree (to build layouts) and list
// files (list: plans and layouts). Both go through this small interface so tests can wrap the
// POSIX implementation (real temporary directories) and inject failures. Paths are absolute or
// relative to the process's working directory, exactly as given.
//
// List files are read whole, so they are bounded: ReadFile refuses anything that is not a regular
// file (a FIFO would block, /dev/zero never ends, a directory is no list) before reading a byte,
// and a file larger than the bound it is given (kMaxListFileBytes for list files) without
// reading it.
//
// Errors: every method returns a Status/Result carrying the errno and a message naming the path.
// Thread-safety: PosixFileTree holds no state and may be used from any thread.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "planner/base/status.h"

namespace clairfs {

// The most a list file (list: plans and layouts) may hold: 1 GiB, about 25 million paths of
// ImageNet's length (`train/n01440764/n01440764_10026.JPEG`). Read whole, and held while parsed.
constexpr uint64_t kMaxListFileBytes = uint64_t{1} << 30;

enum class EntryKind { kRegular, kDirectory, kSymlink, kOther };

struct TreeEntry {
  std::string name;
  EntryKind kind = EntryKind::kOther;  // of the entry itself (links are not followed)
};

// What stat(2) (following links) says about a path; `exists` is false for broken links.
struct FollowedStat {
  bool exists = false;
  EntryKind kind = EntryKind::kOther;  // kRegular, kDirectory or kOther when it exists
};

class FileTree {
 public:
  virtual ~FileTree() = default;
  // Lists `dir` without "." and "..", in no particular order.
  virtual Status ListDir(const std::string& dir, std::vector<TreeEntry>* entries) = 0;
  // stat(2) following links. A missing target (ENOENT, ENOTDIR) or a link loop (ELOOP) is
  // reported as exists = false with errno in `error`; other failures are errors.
  virtual Status StatFollow(const std::string& path, FollowedStat* stat, int* error) = 0;
  // realpath(3): the canonical absolute path with every link resolved.
  virtual Result<std::string> RealPath(const std::string& path) = 0;
  // The whole content of a regular file of at most `max_bytes` bytes, such as a list file.
  // EINVAL for anything but a regular file (EISDIR for a directory), EFBIG for a larger file,
  // each with one message naming the path; other errors carry the errno of the failed call.
  virtual Result<std::string> ReadFile(const std::string& path, uint64_t max_bytes) = 0;
};

// Plain POSIX calls; never destroyed.
FileTree* PosixFileTreeInstance();

}  // namespace clairfs
