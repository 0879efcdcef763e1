// BackingTree: opens beneath the held root and identity checks (see backing_tree.h).
#include "cache/backing_tree.h"

#include <fcntl.h>
#include <linux/openat2.h>
#include <unistd.h>

#include "planner/base/log.h"

namespace clairfs {

Result<std::shared_ptr<const BackingTree>> BackingTree::Open(const std::string& root, Env* env) {
  auto fd = env->Open(root, O_RDONLY | O_DIRECTORY);
  if (!fd.ok()) return fd.status().WithContext("backing root");
  return std::shared_ptr<const BackingTree>(new BackingTree(root, *fd, env));
}

BackingTree::~BackingTree() { (void)env_->Close(root_fd_); }

uint64_t BackingTree::ResolveFlags() {
  return RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;
}

Status BackingTree::ClearNonBlocking(int fd) {
  int flags = fcntl(fd, F_GETFL);
  if (flags < 0 || fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
    return Status::FromErrno(errno, "fcntl");
  }
  return Status::Ok();
}

Status CheckListedIdentity(const std::string& rel, const struct stat& st,
                           const FileIdentity& expected) {
  if (!S_ISREG(st.st_mode)) {
    Log(LogLevel::kWarn, "%s in the backing store is no longer a regular file: not served",
        rel.c_str());
    return Status::Error(ESTALE, rel + ": no longer a regular file in the backing store");
  }
  const FileIdentity found = IdentityOf(st);
  if (found != expected) {
    Log(LogLevel::kWarn,
        "%s in the backing store is not the file that was listed (listed: %s; found: %s): not "
        "served",
        rel.c_str(), expected.ToString().c_str(), found.ToString().c_str());
    return Status::Error(ESTALE, rel + ": not the file that was listed (changed or replaced)");
  }
  return Status::Ok();
}

namespace {

// A link met on the way (ELOOP), a directory turned into something else (ENOTDIR) or a path that
// would leave the root (EXDEV): the listed entry is not reachable as listed any more.
Status NotAsListed(const std::string& rel, const Status& st) {
  const int code = st.code();
  if (code != ELOOP && code != ENOTDIR && code != EXDEV) return st;
  Log(LogLevel::kWarn,
      "%s: a link or another file is on its path in the backing store since it was listed "
      "(%s): not followed, not served",
      rel.c_str(), st.message().c_str());
  return Status::Error(ESTALE, rel +
                                   ": its path in the backing store changed since it was "
                                   "listed (a link is not followed)");
}

}  // namespace

Result<int> BackingTree::OpenListedFile(const std::string& rel, const FileIdentity& expected,
                                        struct stat* st_out) const {
  auto fd = env_->OpenBeneath(root_fd_, rel, kFileOpenFlags);
  if (!fd.ok()) return NotAsListed(rel, fd.status());
  struct stat st;
  Status checked = env_->Fstat(*fd, &st);
  if (checked.ok()) checked = CheckListedIdentity(rel, st, expected);
  if (checked.ok()) checked = ClearNonBlocking(*fd);
  if (!checked.ok()) {
    (void)env_->Close(*fd);
    return checked;
  }
  if (st_out != nullptr) *st_out = st;
  return fd;
}

Result<int> BackingTree::OpenDir(const std::string& rel) const {
  return env_->OpenBeneath(root_fd_, rel, O_RDONLY | O_DIRECTORY | O_NONBLOCK);
}

Status BackingTree::Lstat(const std::string& rel, struct stat* st) const {
  auto fd = env_->OpenBeneath(root_fd_, rel, O_PATH | O_NOFOLLOW);
  if (!fd.ok()) return NotAsListed(rel, fd.status());
  Status s = env_->Fstat(*fd, st);
  (void)env_->Close(*fd);
  return s;
}

}  // namespace clairfs
