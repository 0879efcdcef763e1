// WalkTree (see tree_walk.h).
#include "planner/tree_walk.h"

#include <algorithm>

namespace clairfs {
namespace {

std::string FullPath(const WalkContext& context, const std::string& rel) {
  return rel.empty() ? context.backing_root : context.backing_root + "/" + rel;
}

// `ancestors` holds the real paths of the directories on the current walk path.
Status WalkOne(const WalkContext& context, const std::string& rel, const std::string& real,
               std::vector<std::string>* ancestors, std::vector<WalkedDir>* out) {
  std::vector<TreeEntry> entries;
  CLAIRFS_RETURN_IF_ERROR(context.tree->ListDir(FullPath(context, rel), &entries));
  WalkedDir dir;
  dir.rel = rel;
  struct Subdir {
    std::string rel;
    std::string real;
  };
  std::vector<Subdir> subdirs;
  for (const TreeEntry& entry : entries) {
    std::string child_rel = JoinRel(rel, entry.name);
    switch (entry.kind) {
      case EntryKind::kDirectory:
        subdirs.push_back({child_rel, real == "/" ? "/" + entry.name : real + "/" + entry.name});
        break;
      case EntryKind::kRegular:
        dir.files.push_back({entry.name, FileState::kInside, true});
        break;
      case EntryKind::kOther:
        dir.files.push_back({entry.name, FileState::kInside, false});
        break;
      case EntryKind::kSymlink: {
        std::string full = FullPath(context, child_rel);
        FollowedStat target;
        int error = 0;
        CLAIRFS_RETURN_IF_ERROR(context.tree->StatFollow(full, &target, &error));
        if (!target.exists) {
          if (error == ELOOP) {
            return Status::Error(ELOOP, "link cycle: " + child_rel + " resolves in a loop (ELOOP)");
          }
          dir.files.push_back({entry.name, FileState::kBroken, false});
          break;
        }
        auto target_real = context.tree->RealPath(full);
        if (!target_real.ok()) return target_real.status();
        bool inside = IsInsideRoot(*target_real, context.backing_root_real);
        if (target.kind == EntryKind::kDirectory) {
          if (!inside) {
            context.warnings->push_back("left out " + child_rel +
                                        ": directory link leads outside the backing root (" +
                                        *target_real + ")");
            break;
          }
          if (std::find(ancestors->begin(), ancestors->end(), *target_real) != ancestors->end()) {
            return Status::Error(ELOOP, "link cycle: " + child_rel + " -> " + *target_real +
                                            " leads back into a directory that contains it");
          }
          subdirs.push_back({child_rel, *target_real});
          break;
        }
        if (!inside) {
          context.warnings->push_back("not staging " + child_rel +
                                      ": link leads outside the backing root (" + *target_real +
                                      ")");
        }
        dir.files.push_back({entry.name, inside ? FileState::kInside : FileState::kEscapes,
                             target.kind == EntryKind::kRegular});
        break;
      }
    }
  }
  out->push_back(std::move(dir));
  for (const Subdir& subdir : subdirs) {
    ancestors->push_back(subdir.real);
    Status status = WalkOne(context, subdir.rel, subdir.real, ancestors, out);
    ancestors->pop_back();
    CLAIRFS_RETURN_IF_ERROR(status);
  }
  return Status::Ok();
}

}  // namespace

std::string JoinRel(const std::string& rel, const std::string& name) {
  return rel.empty() ? name : rel + "/" + name;
}

bool IsInsideRoot(const std::string& real, const std::string& root) {
  if (root == "/") return true;
  return real == root || (real.size() > root.size() && real.compare(0, root.size(), root) == 0 &&
                          real[root.size()] == '/');
}

Status WalkTree(const WalkContext& context, const std::string& top_rel, const std::string& top_real,
                std::vector<WalkedDir>* out) {
  std::vector<std::string> ancestors = {context.backing_root_real};
  if (top_real != context.backing_root_real) ancestors.push_back(top_real);
  return WalkOne(context, top_rel, top_real, &ancestors, out);
}

}  // namespace clairfs
