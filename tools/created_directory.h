// CreatedDirectory: a directory a command makes if it does not exist yet, and removes again,
// with everything in it, if the command then fails, so that a failed command leaves no new
// directory behind (`clairfs darshan import --cache NEW`: a new cache it could not fill).
//
// Make(path, mode) creates `path` (its parent must exist) or finds it already there. Only a
// directory this call created is ever removed: Remove() on one that existed before does
// nothing. Removal does not trust the path: the parent's components may be writable by another
// user (a cache under /tmp), who could swap the directory for a link to somewhere else
// meanwhile. So Make keeps a descriptor of the parent and the new directory's identity (device,
// inode), and Remove works below that descriptor only: it opens the entry without following a
// link, checks that it is still the directory made here, and removes its contents without
// following links (a link inside is removed, never its target).
//
// Errors are Status values naming the path. Not thread-safe; one owner.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>

#include "planner/base/status.h"

namespace clairfs {

class CreatedDirectory {
 public:
  ~CreatedDirectory();
  CreatedDirectory(const CreatedDirectory&) = delete;
  CreatedDirectory& operator=(const CreatedDirectory&) = delete;

  // Creates `path` with `mode`, or accepts an existing directory (created() is then false).
  static Result<std::unique_ptr<CreatedDirectory>> Make(const std::string& path, mode_t mode);

  bool created() const { return parent_fd_ >= 0; }

  // Removes the directory and everything below it if Make created it; afterwards created() is
  // false. A directory that is no longer the one made (replaced, moved) is left alone: an error.
  Status Remove();

 private:
  CreatedDirectory(std::string path, int parent_fd, std::string name, dev_t dev, ino_t ino)
      : path_(std::move(path)),
        parent_fd_(parent_fd),
        name_(std::move(name)),
        dev_(dev),
        ino_(ino) {}

  std::string path_;
  int parent_fd_ = -1;  // -1: not created here (or already removed)
  std::string name_;    // the last component of path_, below parent_fd_
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace clairfs
