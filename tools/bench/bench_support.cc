// Helpers shared by the bench instruments (see bench_support.h).
#include "tools/bench/bench_support.h"

#include <dirent.h>
#include <stdlib.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "tools/cli/interrupt_cleanup.h"

namespace clairfs {

BenchWorkDir::~BenchWorkDir() {
  if (remove_) {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
    UnregisterDirectoryForCleanup(path_);
  }
}

Status BenchWorkDir::Init(const std::string& requested, const std::string& name, bool keep) {
  if (!requested.empty()) {
    path_ = requested;
    std::error_code ec;
    std::filesystem::create_directories(path_, ec);
    if (ec) return Status::FromErrno(ec.value(), "mkdir " + path_);
    return Status::Ok();
  }
  const char* base = getenv("TMPDIR");
  std::string templ =
      std::string(base && *base ? base : "/tmp") + "/clairfs-bench-" + name + "-XXXXXX";
  if (mkdtemp(templ.data()) == nullptr) return Status::FromErrno(errno, "mkdtemp " + templ);
  path_ = templ;
  remove_ = !keep;
  if (remove_) RegisterDirectoryForCleanup(path_);  // also removed when interrupted
  return Status::Ok();
}

Result<std::string> BenchWorkDir::Subdir(const std::string& name) const {
  std::string dir = path_ + "/" + name;
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) return Status::FromErrno(ec.value(), "mkdir " + dir);
  return dir;
}

uint64_t SplitMix64Next(uint64_t* state) {
  uint64_t z = (*state += 0x9E3779B97F4A7C15ULL);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

std::string LoadAverage() {
  std::ifstream in("/proc/loadavg");
  std::string one, five, fifteen;
  in >> one >> five >> fifteen;
  return one + " " + five + " " + fifteen;
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

Result<std::vector<SyntheticFile>> ListRegularFiles(const std::string& root) {
  std::vector<SyntheticFile> files;
  std::error_code ec;
  std::filesystem::recursive_directory_iterator it(root, ec), end;
  if (ec) return Status::FromErrno(ec.value(), "listing " + root);
  for (; it != end; it.increment(ec)) {
    if (ec) return Status::FromErrno(ec.value(), "listing " + root);
    if (!it->is_regular_file(ec)) continue;
    SyntheticFile f;
    f.relpath = std::filesystem::relative(it->path(), root, ec).string();
    f.size = it->file_size(ec);
    if (ec) return Status::FromErrno(ec.value(), "stat " + it->path().string());
    files.push_back(std::move(f));
  }
  std::sort(files.begin(), files.end(),
            [](const SyntheticFile& a, const SyntheticFile& b) { return a.relpath < b.relpath; });
  return files;
}

Result<ProcessStats> ReadProcessStats(pid_t pid) {
  ProcessStats stats;
  const std::string proc = "/proc/" + std::to_string(pid);
  std::ifstream status(proc + "/status");
  if (!status) return Status::Error(ENOENT, "cannot read " + proc + "/status");
  // "Name:   value [kB]" lines; the sizes are in KiB.
  const std::pair<const char*, uint64_t*> fields[] = {{"VmRSS:", &stats.rss_bytes},
                                                      {"RssAnon:", &stats.rss_anon_bytes},
                                                      {"RssFile:", &stats.rss_file_bytes},
                                                      {"Threads:", &stats.threads}};
  std::string line;
  bool found = false;
  while (std::getline(status, line)) {
    for (const auto& [name, value] : fields) {
      const size_t len = strlen(name);
      if (line.compare(0, len, name) != 0) continue;
      std::istringstream in(line.substr(len));
      in >> *value;
      if (value != &stats.threads) *value *= 1024;
      found = found || value == &stats.rss_bytes;
    }
  }
  if (!found) return Status::Error(ENOENT, "no VmRSS in " + proc + "/status");
  DIR* dir = opendir((proc + "/fd").c_str());
  if (dir == nullptr) return Status::FromErrno(errno, "opendir " + proc + "/fd");
  while (dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') ++stats.open_fds;
  }
  closedir(dir);
  return stats;
}

Result<std::vector<int>> ParseIntList(const std::string& text, const std::string& what) {
  std::vector<int> out;
  std::stringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    long v = strtol(item.c_str(), &end, 10);
    if (item.empty() || *end != '\0' || v < 1 || v > 100000) {
      return Status::Invalid(
          what + ": expected a comma-separated list of positive integers, got '" + text + "'");
    }
    out.push_back(static_cast<int>(v));
  }
  if (out.empty()) return Status::Invalid(what + ": empty list");
  return out;
}

std::string FuseUringLabel(const std::string& fuse_uring) {
  return fuse_uring == "on" ? "/ring" : fuse_uring == "off" ? "/dev" : "/auto";
}

const char kFuseUringListHelp[] =
    "FUSE transports to measure, as mount --fuse-uring: auto (default), or a list such as off,on "
    "to compare /dev/fuse with io_uring in one run (on needs the fuse module parameter "
    "enable_uring=Y)";

Result<std::vector<std::string>> ParseChoiceList(const std::string& what, const std::string& text,
                                                 const std::vector<std::string>& choices) {
  std::vector<std::string> out;
  std::stringstream in(text);
  // getline drops a trailing empty item: "on," must fail like "on,,off".
  const bool trailing_comma = !text.empty() && text.back() == ',';
  for (std::string item; std::getline(in, item, ',');) {
    if (trailing_comma || std::find(choices.begin(), choices.end(), item) == choices.end()) {
      std::string expected;
      for (const auto& c : choices) expected += (expected.empty() ? "" : ", ") + c;
      return Status::Invalid(what + ": expected a comma-separated list of " + expected + ", got '" +
                             text + "'");
    }
    out.push_back(item);
  }
  if (out.empty()) return Status::Invalid(what + ": empty list");
  return out;
}

}  // namespace clairfs
