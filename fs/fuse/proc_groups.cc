// Supplementary groups from procfs (see proc_groups.h).
#include "fs/fuse/proc_groups.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstdio>
#include <string>

namespace clairfs {

std::vector<gid_t> ParseStatusGroups(std::string_view status) {
  std::vector<gid_t> groups;
  constexpr std::string_view kKey = "Groups:";
  size_t at = status.rfind(kKey, 0) == 0 ? 0 : status.find("\nGroups:");
  if (at == std::string_view::npos) return groups;
  at += status[at] == '\n' ? kKey.size() + 1 : kKey.size();
  const size_t end = std::min(status.find('\n', at), status.size());
  const char* p = status.data() + at;
  const char* const last = status.data() + end;
  while (p < last) {
    while (p < last && (*p == ' ' || *p == '\t')) ++p;
    if (p == last) break;
    gid_t gid = 0;
    auto [next, error] = std::from_chars(p, last, gid);
    if (error != std::errc() || next == p) break;  // not a number: the line is not what we know
    groups.push_back(gid);
    p = next;
  }
  return groups;
}

std::vector<gid_t> GroupsOfThread(pid_t tid) {
  char path[64];
  snprintf(path, sizeof(path), "/proc/%d/task/%d/status", static_cast<int>(tid),
           static_cast<int>(tid));
  const int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  std::string text;
  char buffer[4096];
  for (;;) {
    const ssize_t n = read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    text.append(buffer, static_cast<size_t>(n));
  }
  close(fd);
  return ParseStatusGroups(text);
}

}  // namespace clairfs
