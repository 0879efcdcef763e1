// DatasetWriter: scan the target, remove stale files, keep good ones, write the rest.
#include "tools/bench/dataset_writer.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <map>
#include <set>
#include <thread>

#include "fs/daemon/mount_options.h"
#include "planner/synthetic_content.h"

namespace clairfs {
namespace {

namespace fsys = std::filesystem;

constexpr size_t kWriteChunk = 1 << 20;
constexpr size_t kReuseCheckBytes = kSyntheticHeaderBytes + 4096;

// A file descriptor closed on scope exit.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  // Closes now and reports the error of close(2) (which can carry a delayed write error).
  Status Close(const std::string& path) {
    int fd = fd_;
    fd_ = -1;
    if (close(fd) != 0) return Status::FromErrno(errno, "close " + path);
    return Status::Ok();
  }

 private:
  int fd_;
};

// Reads up to `len` bytes from the start of `path`.
Result<std::string> ReadPrefix(const std::string& path, size_t len) {
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (fd.get() < 0) return Status::FromErrno(errno, "open " + path);
  std::string data(len, '\0');
  size_t got = 0;
  while (got < len) {
    ssize_t n = pread(fd.get(), data.data() + got, len - got, static_cast<off_t>(got));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Status::FromErrno(errno, "read " + path);
    if (n == 0) break;
    got += static_cast<size_t>(n);
  }
  data.resize(got);
  return data;
}

struct ExistingTree {
  std::map<std::string, uint64_t> synthetic;  // relpath -> size, files written by this tool
  std::vector<std::string> foreign;           // relpaths of anything else (not directories)
};

Result<ExistingTree> ScanExisting(const std::string& dir) {
  ExistingTree tree;
  std::error_code ec;
  fsys::recursive_directory_iterator it(dir, fsys::directory_options::none, ec);
  if (ec) return Status::FromErrno(ec.value(), "list " + dir);
  for (; it != fsys::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) return Status::FromErrno(ec.value(), "list " + dir);
    const fsys::path& path = it->path();
    std::string rel = fsys::relative(path, dir, ec).generic_string();
    if (ec) return Status::FromErrno(ec.value(), "relative path of " + path.string());
    fsys::file_status st = it->symlink_status(ec);
    if (ec) return Status::FromErrno(ec.value(), "stat " + path.string());
    if (fsys::is_directory(st)) continue;
    if (fsys::is_regular_file(st) && LooksLikeSyntheticFile(path.string())) {
      tree.synthetic[rel] = it->file_size(ec);
      if (ec) return Status::FromErrno(ec.value(), "stat " + path.string());
    } else {
      tree.foreign.push_back(rel);
    }
  }
  std::sort(tree.foreign.begin(), tree.foreign.end());
  return tree;
}

Status MakeParents(const std::string& dir, const std::string& relpath,
                   std::set<std::string>* made) {
  size_t slash = relpath.rfind('/');
  if (slash == std::string::npos) return Status::Ok();
  std::string parent = relpath.substr(0, slash);
  if (made->count(parent)) return Status::Ok();
  std::error_code ec;
  fsys::create_directories(dir + "/" + parent, ec);
  if (ec) return Status::FromErrno(ec.value(), "mkdir " + dir + "/" + parent);
  made->insert(parent);
  return Status::Ok();
}

Status WriteOneFile(const std::string& path, const SyntheticFile& file, std::vector<char>* buf) {
  Fd fd(open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644));
  if (fd.get() < 0) return Status::FromErrno(errno, "create " + path);
  uint64_t offset = 0;
  while (offset < file.size) {
    size_t n = static_cast<size_t>(std::min<uint64_t>(buf->size(), file.size - offset));
    FillSyntheticBytes(file.relpath, file.size, offset, buf->data(), n);
    size_t done = 0;
    while (done < n) {
      ssize_t w = write(fd.get(), buf->data() + done, n - done);
      if (w < 0 && errno == EINTR) continue;
      if (w < 0) return Status::FromErrno(errno, "write " + path);
      done += static_cast<size_t>(w);
    }
    offset += n;
  }
  return fd.Close(path);
}

// True if the existing file can stay: right size (checked by the scan) and a correct first block.
bool CanReuse(const std::string& path, const SyntheticFile& file) {
  auto prefix =
      ReadPrefix(path, static_cast<size_t>(std::min<uint64_t>(file.size, kReuseCheckBytes)));
  if (!prefix.ok()) return false;
  SyntheticVerifier verifier(file.relpath);
  if (!verifier.Update(prefix->data(), prefix->size()).ok()) return false;
  if (file.size <= kReuseCheckBytes) return verifier.Finish().ok();
  return true;
}

}  // namespace

bool LooksLikeSyntheticFile(const std::string& path) {
  struct stat st;
  if (lstat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return false;
  auto head = ReadPrefix(path, kSyntheticHeaderBytes);
  if (!head.ok()) return false;
  if (head->size() < kSyntheticHeaderBytes) {
    // A short file has a truncated header: accept it only if it is exactly that header, and at
    // least the whole magic, so that an empty or tiny foreign file is never taken for ours.
    if (head->size() < 8) return false;
    SyntheticVerifier verifier("");  // the header does not depend on the path
    return verifier.Update(head->data(), head->size()).ok() && verifier.Finish().ok();
  }
  auto size = SyntheticSizeFromHeader(*head);
  return size.ok() && *size == static_cast<uint64_t>(st.st_size);
}

Result<DatasetWriteStats> WriteSyntheticDataset(const std::string& dir,
                                                const std::vector<SyntheticFile>& files,
                                                const DatasetWriteOptions& options) {
  struct stat st;
  if (stat(dir.c_str(), &st) == 0) {  // a symlink to a directory is fine as the root
    if (!S_ISDIR(st.st_mode)) return Status::Error(ENOTDIR, dir + " exists and is not a directory");
  } else if (errno == ENOENT) {
    std::error_code ec;
    fsys::create_directories(dir, ec);
    if (ec) return Status::FromErrno(ec.value(), "mkdir " + dir);
  } else {
    return Status::FromErrno(errno, "stat " + dir);
  }

  auto existing = ScanExisting(dir);
  if (!existing.ok()) return existing.status();
  DatasetWriteStats stats;
  stats.foreign_entries = existing->foreign.size();
  if (!existing->foreign.empty() && !options.force) {
    return Status::Error(ENOTEMPTY, dir +
                                        " is not empty and is not a dataset made by `clairfs bench "
                                        "make-dataset` (e.g. '" +
                                        existing->foreign.front() + "', " +
                                        std::to_string(existing->foreign.size()) +
                                        " foreign entries); use --force to write into it anyway");
  }

  // Remove the previous dataset's files that the new plan does not have.
  std::set<std::string> planned;
  for (const auto& f : files) planned.insert(f.relpath);
  std::set<std::string, std::greater<>> emptied_dirs;  // deepest first
  for (const auto& [rel, size] : existing->synthetic) {
    if (planned.count(rel)) continue;
    std::string path = dir + "/" + rel;
    if (unlink(path.c_str()) != 0) return Status::FromErrno(errno, "remove stale " + path);
    ++stats.removed_files;
    for (size_t slash = rel.rfind('/'); slash != std::string::npos && slash > 0;
         slash = rel.rfind('/', slash - 1)) {
      emptied_dirs.insert(rel.substr(0, slash));
    }
  }
  for (const auto& rel : emptied_dirs) rmdir((dir + "/" + rel).c_str());  // fails if not empty

  std::vector<char> buf(kWriteChunk);
  std::set<std::string> made_dirs;
  uint64_t files_done = 0, bytes_done = 0;
  for (const auto& file : files) {
    std::string path = dir + "/" + file.relpath;
    auto old = existing->synthetic.find(file.relpath);
    if (old != existing->synthetic.end() && old->second == file.size && CanReuse(path, file)) {
      ++stats.reused_files;
    } else {
      CLAIRFS_RETURN_IF_ERROR(MakeParents(dir, file.relpath, &made_dirs));
      CLAIRFS_RETURN_IF_ERROR(WriteOneFile(path, file, &buf));
      ++stats.written_files;
      stats.written_bytes += file.size;
    }
    ++files_done;
    bytes_done += file.size;
    if (options.progress) options.progress(files_done, bytes_done);
  }
  if (options.wait_settled && stats.written_files > 0) {
    // The last write set its file's ctime now.
    std::this_thread::sleep_for(std::chrono::nanoseconds(MountOptions{}.stage_settle_ns) +
                                std::chrono::milliseconds(100));
  }
  return stats;
}

}  // namespace clairfs
