// BackingTree: the backing store as clairfs reaches it, a root directory held open from the start
// and every entry beneath it resolved without following a link.
//
// clairfs runs as root over a tree other users can write. A path string such as
// "BACKING/d/shadow" is resolved anew at every use, so a user who swaps the directory `d` for a
// link to /etc between the listing and an open would have root read /etc/shadow for them. Here
// every entry is reached from the root's descriptor, opened once (the admin's path to the root is
// trusted, links in it included), with Env::OpenBeneath: a link in any component is refused, and
// nothing outside the root can be reached. Links in the tree are still shown (the manifest lists
// them, the kernel resolves them inside the mount); clairfs itself never follows one.
//
// An entry opened for its bytes is also checked to be the one that was listed: a regular file
// with the listed identity (size, mtime, ctime, backing inode number). Another file under that
// name (replaced, or reached through a directory swapped since) is ESTALE, logged, and never
// served. The inode number and ctime are what no user can forge: a file made to look like the
// listed one gets a ctime of its own. Opens never block on a FIFO or a device put in a file's
// place (O_NONBLOCK until the type is checked).
//
// Thread-safety: immutable after Open; every method may run on any thread. Errors name the
// relative path and carry the errno of the failing call.
#pragma once

#include <fcntl.h>
#include <sys/stat.h>

#include <memory>
#include <string>

#include "cache/env.h"
#include "cache/node_attr.h"
#include "planner/base/status.h"

namespace clairfs {

class BackingTree {
 public:
  // Opens `root` (a directory; links in its own path are followed).
  static Result<std::shared_ptr<const BackingTree>> Open(const std::string& root, Env* env);
  ~BackingTree();
  BackingTree(const BackingTree&) = delete;
  BackingTree& operator=(const BackingTree&) = delete;

  // The root as opened, for messages and records (never to build paths from).
  const std::string& root() const { return root_; }
  // The root's descriptor, for io_uring's openat2 (owned by this object).
  int root_fd() const { return root_fd_; }
  Env* env() const { return env_; }

  // Opens the regular file `rel` for reading and checks that it is the listed version
  // (`expected`). ESTALE if another file is there; ELOOP/ENOTDIR if a link is on the way. With
  // `st` the file's stat is returned too.
  Result<int> OpenListedFile(const std::string& rel, const FileIdentity& expected,
                             struct stat* st = nullptr) const;
  // Opens the directory `rel` for listing ("" is the root), refusing links on the way.
  Result<int> OpenDir(const std::string& rel) const;
  // lstat(2) of `rel` beneath the root: the entry itself, a link included, but no link on the
  // way to it.
  Status Lstat(const std::string& rel, struct stat* st) const;

  // The flags and resolve bits OpenListedFile passes, for io_uring's openat2 (same contract:
  // the caller checks the type and identity with a stat of the opened descriptor and then
  // clears O_NONBLOCK with ClearNonBlocking).
  static constexpr int kFileOpenFlags = O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC;
  static uint64_t ResolveFlags();
  static Status ClearNonBlocking(int fd);

 private:
  BackingTree(std::string root, int root_fd, Env* env)
      : root_(std::move(root)), root_fd_(root_fd), env_(env) {}
  std::string root_;
  int root_fd_;
  Env* env_;
};

// The identity check shared by the engines: OK if `st` is a regular file of identity `expected`,
// else ESTALE (or EINVAL for a non-regular file) with a message naming `rel`.
Status CheckListedIdentity(const std::string& rel, const struct stat& st,
                           const FileIdentity& expected);

}  // namespace clairfs
