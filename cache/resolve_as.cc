// ResolveAs (see resolve_as.h).
#include "cache/resolve_as.h"

#include "planner/base/name_escape.h"

namespace clairfs {

std::string ShownPath(const std::string& rel) { return rel.empty() ? "." : EscapeName(rel); }

Result<ManifestNode> ResolvePath(const Manifest& manifest, const std::string& rel) {
  auto node = manifest.GetByPath(rel);
  if (!node.ok()) return node.status();
  if (!node->has_value()) {
    return Status::Error(ENOENT, ShownPath(rel) + ": no such file or directory in the dataset");
  }
  return **node;
}

Result<ManifestNode> ResolveAs(const Manifest& manifest, const std::string& rel,
                               const Caller& caller) {
  auto root = ResolvePath(manifest, "");
  if (!root.ok()) return root.status();
  ManifestNode node = std::move(*root);
  size_t start = 0;
  while (start < rel.size()) {
    size_t end = rel.find('/', start);
    if (end == std::string::npos) end = rel.size();
    const std::string name = rel.substr(start, end - start);
    if (!node.attr.is_dir()) {
      return Status::Error(ENOTDIR, ShownPath(node.path) + ": not a directory");
    }
    if (!MayAccess(node.attr, caller, X_OK)) {
      return Status::Error(EACCES, ShownPath(rel) +
                                       ": permission denied (no search permission on " +
                                       ShownPath(node.path) + ")");
    }
    auto child = manifest.Lookup(node.attr.ino, name);
    if (!child.ok()) return child.status();
    if (!child->has_value()) {
      return Status::Error(ENOENT, ShownPath(rel) + ": no such file or directory in the dataset");
    }
    node = ManifestNode{rel.substr(0, end), (*child)->attr};
    start = end + 1;
  }
  return node;
}

}  // namespace clairfs
