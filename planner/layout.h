// Layout: a dataset's sample numbering, i.e. sample index -> file path relative to the backing
// root, exactly as the training code's Dataset numbers its samples.
//
// Kinds (see docs/PLANNER.md):
//   imagefolder  torchvision ImageFolder: classes = sorted subdirectories of the layout root
//                (links followed); per class, sorted(os.walk(class, followlinks=True)) by whole
//                dirpath, sorted file names, kept if the lower-cased path ends in an image
//                extension. An empty class is an error, as in torchvision.
//   sorted       every regular file below the layout root (links followed), paths in byte order.
//   list:FILE    index i = line i of FILE (paths relative to the layout root).
// The layout root is the backing root or `--layout-root SUBDIR` below it. Links leaving the
// backing root and link cycles follow DESIGN.md "Links" (see tree_walk.h); warnings are kept in
// warnings() for the caller to show.
//
// Memory: one std::string per sample plus one byte of state.
// Errors: Status with EINVAL for bad specs (including an unreadable list file), the errno of a
// failed listing, ELOOP for cycles, ENOENT for an empty class or dataset. Thread-safety: an
// immutable value once built.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "planner/base/status.h"
#include "planner/file_tree.h"
#include "planner/tree_walk.h"

namespace clairfs {

enum class LayoutKind { kImageFolder, kSorted, kList };

struct LayoutSpec {
  LayoutKind kind = LayoutKind::kImageFolder;
  std::string list_file;  // list:FILE
  std::string root;       // --layout-root, relative to the backing root ("" = backing root)
};

// "imagefolder", "sorted" or "list:FILE".
Result<LayoutSpec> ParseLayoutSpec(std::string_view text, std::string_view root);

class Layout {
 public:
  Layout() = default;
  Layout(std::vector<std::string> paths, std::vector<FileState> states,
         std::vector<std::string> warnings)
      : paths_(std::move(paths)), states_(std::move(states)), warnings_(std::move(warnings)) {}

  uint64_t size() const { return paths_.size(); }
  // Path of sample `index` relative to the backing root.
  const std::string& path(uint64_t index) const { return paths_[index]; }
  FileState state(uint64_t index) const { return states_[index]; }
  // True if clairfs may stage the sample (it does not lead outside the backing root).
  bool stageable(uint64_t index) const { return states_[index] != FileState::kEscapes; }
  const std::vector<std::string>& warnings() const { return warnings_; }

 private:
  std::vector<std::string> paths_;
  std::vector<FileState> states_;
  std::vector<std::string> warnings_;
};

// Builds the layout of `backing_root` through `tree`.
Result<Layout> BuildLayout(FileTree* tree, const std::string& backing_root, const LayoutSpec& spec);

// The individual builders (layout.cc dispatches). `root_rel` is the layout root relative to the
// backing root, `root_real` its realpath.
Result<Layout> BuildImageFolderLayout(const WalkContext& context, const std::string& root_rel,
                                      const std::string& root_real);
Result<Layout> BuildSortedLayout(const WalkContext& context, const std::string& root_rel,
                                 const std::string& root_real);
// Parses list content: one relative path per line (no empty lines, no absolute paths, no "." or
// ".." components, no NUL bytes; a final newline is optional). Errors name the file `source`.
Result<std::vector<std::string>> ParsePathList(std::string_view content, std::string_view source);
// Checks that `path` is a relative path with no empty, "." or ".." components and no NUL byte.
Status CheckRelativePath(std::string_view path);

}  // namespace clairfs
