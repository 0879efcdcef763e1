// WalkTree: os.walk(top, followlinks=True) over a FileTree, with the link rules of DESIGN.md.
//
// Yields every directory reached from `top` (top itself included) with the names of its
// non-directory entries, the way os.walk classifies them: an entry is a directory if stat()
// following links says so; everything else (regular files, broken links, links to files, fifos)
// is a "file". Directory links are followed. Two clairfs rules differ from os.walk on purpose:
//   - A link whose target resolves outside the backing root: a directory link is left out (not
//     walked) with a warning; a file link is kept and marked kEscapes (so sample numbering stays
//     as torchvision's) and the plan does not stage it.
//   - A directory link that leads back to a directory being walked (a cycle) is an error naming
//     the link, where os.walk would recurse until the path is too long.
// Directories are returned in discovery order; callers sort them.
//
// Errors: listing or resolving failures (with the path), cycles (ELOOP). Thread-safety: none
// needed (no shared state); the FileTree must be usable from the calling thread.
#pragma once

#include <string>
#include <vector>

#include "planner/base/status.h"
#include "planner/file_tree.h"

namespace clairfs {

enum class FileState {
  kInside,   // a regular entry or a link resolving inside the backing root
  kEscapes,  // a link resolving outside the backing root: kept in numbering, never staged
  kBroken,   // a link whose target does not exist
};

struct WalkedFile {
  std::string name;
  FileState state = FileState::kInside;
  bool regular = false;  // stat() following links says S_ISREG
};

struct WalkedDir {
  std::string rel;  // path relative to the backing root ("" for the root itself)
  std::vector<WalkedFile> files;
};

struct WalkContext {
  FileTree* tree = nullptr;
  std::string backing_root;       // as given (used to build paths)
  std::string backing_root_real;  // realpath of backing_root
  std::vector<std::string>* warnings = nullptr;
};

// Joins a relative path and a name ("" + "a" = "a", "x" + "a" = "x/a").
std::string JoinRel(const std::string& rel, const std::string& name);
// True if `real` is `root` or lies below it.
bool IsInsideRoot(const std::string& real, const std::string& root);

// Walks the directory `top_rel` (relative to the backing root; its own realpath is
// `top_real`), appending one WalkedDir per directory reached to `out`.
Status WalkTree(const WalkContext& context, const std::string& top_rel, const std::string& top_real,
                std::vector<WalkedDir>* out);

}  // namespace clairfs
