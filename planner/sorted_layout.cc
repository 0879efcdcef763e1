// The sorted layout: every regular file below the layout root (directory links followed, links
// leading outside the backing root left out), relative paths in unsigned byte order. This is our
// own numbering for datasets read through an explicit sorted file list (e.g.
// sorted(glob(...)) over ASCII names), not any library's.
#include <algorithm>

#include "planner/layout.h"

namespace clairfs {

Result<Layout> BuildSortedLayout(const WalkContext& context, const std::string& root_rel,
                                 const std::string& root_real) {
  std::vector<WalkedDir> dirs;
  CLAIRFS_RETURN_IF_ERROR(WalkTree(context, root_rel, root_real, &dirs));
  std::vector<std::string> paths;
  for (const WalkedDir& dir : dirs) {
    for (const WalkedFile& file : dir.files) {
      // Links leading outside the root are left out entirely here: the order is our own, so
      // nothing else's numbering has to be preserved.
      if (!file.regular || file.state != FileState::kInside) continue;
      paths.push_back(JoinRel(dir.rel, file.name));
    }
  }
  if (paths.empty()) {
    return Status::Error(ENOENT, "sorted: no regular file below " +
                                     (root_rel.empty() ? context.backing_root : root_rel));
  }
  std::sort(paths.begin(), paths.end());
  std::vector<FileState> states(paths.size(), FileState::kInside);
  return Layout(std::move(paths), std::move(states), std::move(*context.warnings));
}

}  // namespace clairfs
