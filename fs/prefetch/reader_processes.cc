// ReaderProcesses (see reader_processes.h).
#include "fs/prefetch/reader_processes.h"

#include <fcntl.h>
#include <unistd.h>

#include <charconv>
#include <string_view>

namespace clairfs {
namespace {

constexpr size_t kMaxCached = 65536;
constexpr int kMaxHops = 8;  // worker of a worker (forkserver) at most a few levels deep

// Reads a small /proc file whole (at most `limit` bytes).
std::optional<std::string> ReadSmallFile(const std::string& path, size_t limit) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string out;
  char buf[4096];
  while (out.size() < limit) {
    const ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return out;
}

std::optional<pid_t> FieldOf(std::string_view status, std::string_view key) {
  size_t at = status.rfind(key, 0) == 0 ? 0 : status.find("\n" + std::string(key));
  if (at == std::string_view::npos) return std::nullopt;
  at += status[at] == '\n' ? key.size() + 1 : key.size();
  while (at < status.size() && (status[at] == ' ' || status[at] == '\t')) ++at;
  pid_t value = 0;
  auto [next, error] = std::from_chars(status.data() + at, status.data() + status.size(), value);
  if (error != std::errc() || next == status.data() + at) return std::nullopt;
  return value;
}

}  // namespace

std::optional<std::pair<pid_t, pid_t>> ParseTgidAndParent(std::string_view status) {
  auto tgid = FieldOf(status, "Tgid:");
  auto ppid = FieldOf(status, "PPid:");
  if (!tgid || !ppid) return std::nullopt;
  return std::make_pair(*tgid, *ppid);
}

std::optional<ReaderProcesses::Process> ReaderProcesses::StatusOf(pid_t pid) const {
  auto text = ReadSmallFile(proc_root_ + "/" + std::to_string(pid) + "/status", 16384);
  if (!text) return std::nullopt;
  auto parsed = ParseTgidAndParent(*text);
  if (!parsed) return std::nullopt;
  return Process{parsed->first, parsed->second};
}

std::optional<std::string> ReaderProcesses::CommandLineOf(pid_t pid) const {
  return ReadSmallFile(proc_root_ + "/" + std::to_string(pid) + "/cmdline", 65536);
}

bool ReaderProcesses::IsWorkerOf(pid_t child, pid_t parent) const {
  auto mine = CommandLineOf(child);
  if (!mine || mine->empty()) return false;
  // Spawned or forkserver workers run Python with these entry points on their command line.
  if (mine->find("multiprocessing.spawn") != std::string::npos ||
      mine->find("multiprocessing.forkserver") != std::string::npos) {
    return true;
  }
  auto theirs = CommandLineOf(parent);
  return theirs && *theirs == *mine;  // forked without exec
}

uint64_t ReaderProcesses::ReaderOf(uint32_t tid) {
  if (tid == 0) return 0;
  auto it = cache_.find(tid);
  if (it != cache_.end()) return it->second;
  uint64_t reader = tid;
  if (auto self = StatusOf(static_cast<pid_t>(tid))) {
    pid_t process = self->tgid;
    auto status = process == static_cast<pid_t>(tid) ? self : StatusOf(process);
    for (int hop = 0; status && hop < kMaxHops; ++hop) {
      const pid_t parent = status->ppid;
      if (parent <= 1 || !IsWorkerOf(process, parent)) break;
      process = parent;
      status = StatusOf(process);
    }
    reader = static_cast<uint64_t>(process);
  }
  if (cache_.size() >= kMaxCached) cache_.clear();
  cache_.emplace(tid, reader);
  return reader;
}

}  // namespace clairfs
