// Path arguments of the admin subcommands (see admin_paths.h).
#include "tools/admin_paths.h"

#include <cerrno>
#include <fstream>

namespace clairfs::cli {
namespace {

std::string StripTrailingSlashes(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

// The part of `path` under `root`, or nullopt-like false.
bool Under(const std::string& path, const std::string& root, std::string* rel) {
  if (root.empty() || root[0] != '/') return false;
  std::string r = StripTrailingSlashes(root);
  if (path == r) {
    *rel = ".";
    return true;
  }
  std::string prefix = r == "/" ? r : r + "/";
  if (path.rfind(prefix, 0) != 0) return false;
  *rel = path.substr(prefix.size());
  if (rel->empty()) *rel = ".";
  return true;
}

}  // namespace

std::vector<std::string> ToMountPaths(const std::string& mount_arg, const std::string& canonical,
                                      const std::vector<std::string>& paths) {
  std::string typed = mount_arg;
  if (!typed.empty() && typed[0] != '/') {
    // A relative mountpoint argument: absolute paths can only match the canonical form.
    typed = canonical;
  }
  std::vector<std::string> out;
  out.reserve(paths.size());
  for (const std::string& p : paths) {
    std::string rel;
    if (!p.empty() && p[0] == '/' && (Under(p, canonical, &rel) || Under(p, typed, &rel))) {
      out.push_back(rel);
    } else {
      out.push_back(p);
    }
  }
  return out;
}

Result<std::vector<std::string>> ReadPathList(const std::string& file) {
  std::ifstream in(file);
  if (!in) return Status::FromErrno(errno ? errno : ENOENT, "path list " + file);
  std::vector<std::string> out;
  std::string line;
  while (std::getline(in, line)) {
    while (!line.empty() && (line.back() == '\r' || line.back() == ' ')) line.pop_back();
    if (line.empty() || line[0] == '#') continue;
    out.push_back(line);
  }
  if (in.bad()) return Status::FromErrno(EIO, "path list " + file);
  return out;
}

}  // namespace clairfs::cli
