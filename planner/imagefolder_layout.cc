// The imagefolder layout: torchvision 0.14 ImageFolder / DatasetFolder sample order.
//
// find_classes: sorted(entry.name for entry in os.scandir(root) if entry.is_dir()), where is_dir
// follows links. make_dataset: for each class, for dirpath, _, fnames in
// sorted(os.walk(root/cls, followlinks=True)): for fname in sorted(fnames): keep
// dirpath/fname if path.lower().endswith(IMG_EXTENSIONS). sorted(os.walk(...)) orders whole
// dirpath strings, so "c/a" < "c/a b" < "c/a-b" < "c/a.b" < "c/a/c" < "c/a0". All sorting uses
// Python's str order (python_order.h). Classes that end up with no sample are an error, as in
// torchvision ("Found no valid file for the classes ...").
#include <algorithm>

#include "planner/layout.h"
#include "planner/python_order.h"

namespace clairfs {
namespace {

// torchvision.datasets.folder.IMG_EXTENSIONS.
constexpr const char* kImageExtensions[] = {".jpg", ".jpeg", ".png",  ".ppm", ".bmp",
                                            ".pgm", ".tif",  ".tiff", ".webp"};

// path.lower().endswith(IMG_EXTENSIONS). Lower-casing only ASCII is exact here: the extensions
// are ASCII, and the only non-ASCII characters whose str.lower() contains ASCII letters are
// U+212A KELVIN SIGN ('k', in no extension) and U+0130 (which lowers to 'i' + U+0307, never
// the end of an extension).
bool HasImageExtension(std::string_view name) {
  for (const char* extension : kImageExtensions) {
    std::string_view ext(extension);
    if (name.size() < ext.size()) continue;
    std::string_view tail = name.substr(name.size() - ext.size());
    bool match = true;
    for (size_t i = 0; i < ext.size() && match; ++i) {
      char c = tail[i];
      if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
      match = c == ext[i];
    }
    if (match) return true;
  }
  return false;
}

struct ClassDir {
  std::string name;
  std::string real;
};

Result<std::vector<ClassDir>> FindClasses(const WalkContext& context, const std::string& root_rel,
                                          const std::string& root_real) {
  std::string root_full =
      root_rel.empty() ? context.backing_root : context.backing_root + "/" + root_rel;
  std::vector<TreeEntry> entries;
  CLAIRFS_RETURN_IF_ERROR(context.tree->ListDir(root_full, &entries));
  std::vector<ClassDir> classes;
  for (const TreeEntry& entry : entries) {
    if (entry.kind == EntryKind::kDirectory) {
      classes.push_back(
          {entry.name, root_real == "/" ? "/" + entry.name : root_real + "/" + entry.name});
      continue;
    }
    if (entry.kind != EntryKind::kSymlink) continue;
    std::string full = root_full + "/" + entry.name;
    FollowedStat target;
    int error = 0;
    CLAIRFS_RETURN_IF_ERROR(context.tree->StatFollow(full, &target, &error));
    if (!target.exists || target.kind != EntryKind::kDirectory) continue;
    auto real = context.tree->RealPath(full);
    if (!real.ok()) return real.status();
    if (!IsInsideRoot(*real, context.backing_root_real)) {
      context.warnings->push_back("left out class " + JoinRel(root_rel, entry.name) +
                                  ": directory link leads outside the backing root (" + *real +
                                  ")");
      continue;
    }
    classes.push_back({entry.name, *real});
  }
  std::sort(classes.begin(), classes.end(),
            [](const ClassDir& a, const ClassDir& b) { return PythonStrLess(a.name, b.name); });
  return classes;
}

}  // namespace

Result<Layout> BuildImageFolderLayout(const WalkContext& context, const std::string& root_rel,
                                      const std::string& root_real) {
  auto classes = FindClasses(context, root_rel, root_real);
  if (!classes.ok()) return classes.status();
  if (classes->empty()) {
    return Status::Error(ENOENT, "imagefolder: couldn't find any class folder in " +
                                     (root_rel.empty() ? context.backing_root : root_rel));
  }
  std::vector<std::string> paths;
  std::vector<FileState> states;
  std::vector<std::string> empty_classes;
  for (const ClassDir& class_dir : *classes) {
    std::string class_rel = JoinRel(root_rel, class_dir.name);
    std::vector<WalkedDir> dirs;
    CLAIRFS_RETURN_IF_ERROR(WalkTree(context, class_rel, class_dir.real, &dirs));
    // All dirpaths share the class prefix, so comparing the full relative strings orders them
    // exactly as Python orders the full dirpaths.
    std::sort(dirs.begin(), dirs.end(),
              [](const WalkedDir& a, const WalkedDir& b) { return PythonStrLess(a.rel, b.rel); });
    uint64_t before = paths.size();
    for (WalkedDir& dir : dirs) {
      std::sort(dir.files.begin(), dir.files.end(), [](const WalkedFile& a, const WalkedFile& b) {
        return PythonStrLess(a.name, b.name);
      });
      for (const WalkedFile& file : dir.files) {
        if (!HasImageExtension(file.name)) continue;
        paths.push_back(JoinRel(dir.rel, file.name));
        states.push_back(file.state);
      }
    }
    if (paths.size() == before) empty_classes.push_back(class_dir.name);
  }
  if (!empty_classes.empty()) {
    std::string list;
    for (const std::string& name : empty_classes) list += (list.empty() ? "" : ", ") + name;
    return Status::Error(ENOENT, "imagefolder: found no valid file for the classes " + list +
                                     " (supported extensions: .jpg, .jpeg, .png, .ppm, .bmp, .pgm, "
                                     ".tif, .tiff, .webp)");
  }
  return Layout(std::move(paths), std::move(states), std::move(*context.warnings));
}

}  // namespace clairfs
