// Layout spec parsing, dispatch and list layouts (see layout.h).
#include "planner/layout.h"

#include <algorithm>
#include <utility>

#include "planner/base/name_escape.h"

namespace clairfs {

Status CheckRelativePath(std::string_view path) {
  if (path.empty()) return Status::Invalid("empty path");
  if (path.find('\0') != std::string_view::npos) {
    return Status::Invalid("'" + SanitizeText(path) + "' holds a NUL byte (no file name does)");
  }
  if (path[0] == '/') return Status::Invalid("'" + std::string(path) + "' is absolute");
  size_t start = 0;
  while (start <= path.size()) {
    size_t end = path.find('/', start);
    if (end == std::string_view::npos) end = path.size();
    std::string_view part = path.substr(start, end - start);
    if (part.empty() || part == "." || part == "..") {
      return Status::Invalid("'" + std::string(path) +
                             "' has an empty, '.' or '..' component (paths must be plain and "
                             "relative to the root)");
    }
    start = end + 1;
  }
  return Status::Ok();
}

Result<LayoutSpec> ParseLayoutSpec(std::string_view text, std::string_view root) {
  LayoutSpec spec;
  if (text == "imagefolder") {
    spec.kind = LayoutKind::kImageFolder;
  } else if (text == "sorted") {
    spec.kind = LayoutKind::kSorted;
  } else if (text.substr(0, 5) == "list:" && text.size() > 5) {
    spec.kind = LayoutKind::kList;
    spec.list_file = std::string(text.substr(5));
  } else {
    return Status::Invalid("layout '" + std::string(text) +
                           "': expected imagefolder, sorted or list:FILE");
  }
  while (!root.empty() && root.back() == '/') root.remove_suffix(1);
  if (!root.empty()) {
    Status status = CheckRelativePath(root);
    if (!status.ok()) return status.WithContext("--layout-root");
  }
  spec.root = std::string(root);
  return spec;
}

Result<std::vector<std::string>> ParsePathList(std::string_view content, std::string_view source) {
  std::vector<std::string> paths;
  paths.reserve(static_cast<size_t>(std::count(content.begin(), content.end(), '\n')) + 1);
  size_t start = 0;
  uint64_t line_number = 0;
  while (start < content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string_view::npos) end = content.size();
    ++line_number;
    std::string_view line = content.substr(start, end - start);
    Status status = CheckRelativePath(line);
    if (!status.ok()) {
      return status.WithContext(std::string(source) + ":" + std::to_string(line_number));
    }
    paths.emplace_back(line);
    start = end + 1;
  }
  return paths;
}

Result<Layout> BuildLayout(FileTree* tree, const std::string& backing_root,
                           const LayoutSpec& spec) {
  if (spec.kind == LayoutKind::kList) {
    auto content = tree->ReadFile(spec.list_file, kMaxListFileBytes);
    // The file is part of the layout spec: failing to read it is bad input (EINVAL).
    if (!content.ok()) return Status::Invalid("layout list: " + content.status().message());
    auto lines = ParsePathList(*content, spec.list_file);
    if (!lines.ok()) return lines.status();
    if (lines->empty()) return Status::Invalid("layout list " + spec.list_file + " is empty");
    std::vector<std::string> paths = std::move(*lines);
    if (!spec.root.empty()) {
      for (std::string& path : paths) path = JoinRel(spec.root, path);
    }
    std::vector<FileState> states(paths.size(), FileState::kInside);
    return Layout(std::move(paths), std::move(states), {});
  }
  auto backing_real = tree->RealPath(backing_root);
  if (!backing_real.ok()) return backing_real.status().WithContext("backing root");
  std::vector<std::string> warnings;
  WalkContext context{tree, backing_root, *backing_real, &warnings};
  std::string root_full = spec.root.empty() ? backing_root : backing_root + "/" + spec.root;
  auto root_real = tree->RealPath(root_full);
  if (!root_real.ok()) return root_real.status().WithContext("layout root");
  if (!IsInsideRoot(*root_real, *backing_real)) {
    return Status::Invalid("layout root " + spec.root + " leads outside the backing root (" +
                           *root_real + ")");
  }
  FollowedStat root_stat;
  int error = 0;
  CLAIRFS_RETURN_IF_ERROR(tree->StatFollow(root_full, &root_stat, &error));
  if (!root_stat.exists || root_stat.kind != EntryKind::kDirectory) {
    return Status::Error(ENOTDIR, "layout root " + root_full + " is not a directory");
  }
  if (spec.kind == LayoutKind::kImageFolder) {
    return BuildImageFolderLayout(context, spec.root, *root_real);
  }
  return BuildSortedLayout(context, spec.root, *root_real);
}

}  // namespace clairfs
