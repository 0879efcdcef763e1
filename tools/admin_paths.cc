// Path arguments of the admin subcommands (see admin_paths.h).
#include "tools/admin_paths.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

#include "planner/base/name_escape.h"

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

Status ReadAll(int fd, const std::string& shown, std::string* out) {
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n > 0) {
      out->append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return Status::Ok();
    if (errno == EINTR) continue;
    return Status::FromErrno(errno, "path list " + shown);
  }
}

}  // namespace

Result<std::vector<std::string>> UnescapeArguments(const std::vector<std::string>& args) {
  std::vector<std::string> out;
  out.reserve(args.size());
  for (const std::string& arg : args) {
    if (arg.empty()) {
      return Status::Invalid("an empty PATH names nothing (\".\" is the whole dataset)");
    }
    auto raw = UnescapeName(arg);
    if (!raw.ok()) return Status::Invalid("PATH " + raw.status().message());
    out.push_back(std::move(*raw));
  }
  return out;
}

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

std::vector<std::string> EscapePaths(const std::vector<std::string>& raw) {
  std::vector<std::string> out;
  out.reserve(raw.size());
  for (const std::string& p : raw) out.push_back(EscapeName(p));
  return out;
}

Result<std::vector<std::string>> ReadPathList(const std::string& file, bool nul) {
  const bool from_stdin = file == "-";
  const std::string shown = from_stdin ? "(standard input)" : SanitizeText(file);
  int fd = from_stdin ? STDIN_FILENO : open(file.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "path list " + shown);
  std::string data;
  struct stat st;
  Status read_status;
  if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
    read_status = Status::Invalid("path list " + shown +
                                  " is a directory: --from-file takes a file that lists paths "
                                  "(or - for standard input)");
  } else {
    read_status = ReadAll(fd, shown, &data);
  }
  if (!from_stdin) close(fd);
  if (!read_status.ok()) return read_status;
  std::vector<std::string> out;
  const char separator = nul ? '\0' : '\n';
  size_t start = 0, line = 0;
  while (start < data.size()) {
    size_t end = data.find(separator, start);
    if (end == std::string::npos) end = data.size();
    std::string item = data.substr(start, end - start);
    start = end + 1;
    ++line;
    if (nul) {
      if (!item.empty()) out.push_back(std::move(item));
      continue;
    }
    if (!item.empty() && item.back() == '\r') item.pop_back();
    if (item.empty() || item[0] == '#') continue;
    auto raw = UnescapeName(item);
    if (!raw.ok()) {
      return Status::Invalid("path list " + shown + " line " + std::to_string(line) + ": " +
                             raw.status().message());
    }
    out.push_back(std::move(*raw));
  }
  return out;
}

}  // namespace clairfs::cli
