// Heat merging, prefix detection and ranking over Darshan logs (see heat.h).
#include "planner/heat.h"
#include "planner/base/fnv1a.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <filesystem>
#include <map>

#include "planner/base/name_escape.h"

namespace clairfs {
namespace {

uint64_t Monitored(int64_t v) { return v > 0 ? static_cast<uint64_t>(v) : 0; }
double Monitored(double v) { return v > 0 ? v : 0; }

void Add(HeatCounters* h, int64_t bytes_read, int64_t reads, int64_t opens, int64_t max_byte,
         double read_time) {
  h->bytes_read += Monitored(bytes_read);
  h->reads += Monitored(reads);
  h->opens += Monitored(opens);
  h->max_byte_read = std::max(h->max_byte_read, max_byte);
  h->read_time += Monitored(read_time);
  h->records += 1;
}

// "/a/b/c" -> "/a/b"; "/a" -> "".
std::string Parent(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos || slash == 0 ? "" : path.substr(0, slash);
}

// The part of `path` below `prefix` ("" = "/"), or nullopt if it is not below it.
std::optional<std::string> Below(const std::string& path, const std::string& prefix) {
  if (path.size() <= prefix.size() + 1) return std::nullopt;
  if (path.compare(0, prefix.size(), prefix) != 0 || path[prefix.size()] != '/') {
    return std::nullopt;
  }
  return path.substr(prefix.size() + 1);
}

Status ExpandInputsInto(const std::vector<std::string>& inputs, std::vector<std::string>* logs) {
  namespace fs = std::filesystem;
  for (const std::string& input : inputs) {
    std::error_code ec;
    fs::file_status st = fs::status(input, ec);
    if (ec) return Status::FromErrno(ec.value(), EscapeName(input));
    if (!fs::is_directory(st)) {
      logs->push_back(input);
      continue;
    }
    std::vector<std::string> found;
    fs::recursive_directory_iterator it(input, fs::directory_options::skip_permission_denied, ec);
    for (; !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (it->path().extension() == ".darshan" && it->is_regular_file(ec)) {
        found.push_back(it->path().string());
      }
    }
    if (ec) return Status::FromErrno(ec.value(), "listing " + EscapeName(input));
    std::sort(found.begin(), found.end());
    logs->insert(logs->end(), found.begin(), found.end());
  }
  return Status::Ok();
}

}  // namespace

void MergeHeatCounters(HeatCounters* into, const HeatCounters& from) {
  into->bytes_read += from.bytes_read;
  into->reads += from.reads;
  into->opens += from.opens;
  into->max_byte_read = std::max(into->max_byte_read, from.max_byte_read);
  into->read_time += from.read_time;
  into->records += from.records;
}

double HeatRereads(const HeatCounters& c) {
  if (c.bytes_read == 0) return 0;
  const double size = static_cast<double>(std::max<int64_t>(c.max_byte_read, 0)) + 1;
  return static_cast<double>(c.bytes_read) / size;
}

double HeatPerByte(const HeatCounters& c) {
  if (c.bytes_read == 0) return 0;
  const double size = static_cast<double>(std::max<int64_t>(c.max_byte_read, 0)) + 1;
  return (static_cast<double>(c.bytes_read) +
          kOpCostBytes * static_cast<double>(c.reads + c.opens)) /
         size;
}

void AccumulateHeat(const darshan::DarshanLog& log, std::map<std::string, HeatCounters>* by_path,
                    size_t* special_names, size_t* unnamed_records) {
  using namespace darshan;
  auto target = [&](uint64_t id) -> HeatCounters* {
    const std::string* name = log.FindName(id);
    if (name == nullptr) {
      ++*unnamed_records;
      return nullptr;
    }
    if (name->empty() || (*name)[0] != '/') {
      ++*special_names;
      return nullptr;
    }
    return &(*by_path)[*name];
  };
  for (const PosixRecord& r : log.posix) {
    if (HeatCounters* h = target(r.id)) {
      Add(h, r.counters[POSIX_BYTES_READ], r.counters[POSIX_READS], r.counters[POSIX_OPENS],
          r.counters[POSIX_MAX_BYTE_READ], r.fcounters[POSIX_F_READ_TIME]);
    }
  }
  for (const StdioRecord& r : log.stdio) {
    if (HeatCounters* h = target(r.id)) {
      Add(h, r.counters[STDIO_BYTES_READ], r.counters[STDIO_READS], r.counters[STDIO_OPENS],
          r.counters[STDIO_MAX_BYTE_READ], r.fcounters[STDIO_F_READ_TIME]);
    }
  }
}

PrefixGuess DetectStripPrefix(const std::vector<std::string>& paths,
                              const std::function<bool(const std::string&)>& exists,
                              size_t sample) {
  PrefixGuess guess;
  if (paths.empty() || sample == 0) return guess;
  // An even, deterministic spread over the (sorted) paths.
  std::vector<std::string> sorted = paths;
  std::sort(sorted.begin(), sorted.end());
  const size_t step = std::max<size_t>(1, sorted.size() / sample);
  std::map<std::string, size_t> score;
  for (size_t i = 0; i < sorted.size() && guess.sampled < sample; i += step) {
    const std::string& path = sorted[i];
    ++guess.sampled;
    int depth = 0;
    for (std::string prefix = Parent(path);; prefix = Parent(prefix)) {
      std::optional<std::string> rel = Below(path, prefix);
      if (rel && exists(*rel)) ++score[prefix];
      if (prefix.empty() || ++depth > 64) break;
    }
  }
  for (const auto& [prefix, matches] : score) {
    const bool better = matches > guess.matches ||
                        (matches == guess.matches && prefix.size() < guess.prefix.size());
    if (better) {
      guess.prefix = prefix;
      guess.matches = matches;
    }
  }
  return guess;
}

HeatTable RankHeat(std::map<std::string, HeatCounters> by_path) {
  HeatTable table;
  table.files.reserve(by_path.size());
  for (auto& [path, counters] : by_path) {
    HeatRecord r;
    r.path = path;
    r.counters = counters;
    r.rereads = HeatRereads(counters);
    r.heat_per_byte = HeatPerByte(counters);
    table.files.push_back(std::move(r));
  }
  std::sort(table.files.begin(), table.files.end(), [](const HeatRecord& a, const HeatRecord& b) {
    if (a.heat_per_byte != b.heat_per_byte) return a.heat_per_byte > b.heat_per_byte;
    if (a.counters.bytes_read != b.counters.bytes_read) {
      return a.counters.bytes_read > b.counters.bytes_read;
    }
    return a.path < b.path;
  });
  return table;
}

Result<std::vector<std::string>> ExpandHeatInputs(const std::vector<std::string>& inputs) {
  std::vector<std::string> logs;
  CLAIRFS_RETURN_IF_ERROR(ExpandInputsInto(inputs, &logs));
  return logs;
}

Result<RawHeat> ReadHeatLogs(const std::vector<std::string>& log_files,
                             const HeatOptions& options) {
  darshan::ReadOptions read_options;
  read_options.decode_dxt = false;
  RawHeat raw;
  for (const std::string& path : log_files) {
    Result<darshan::DarshanLog> log = darshan::ReadDarshanLogFile(path, read_options);
    if (!log.ok()) {
      if (!options.skip_bad_logs) return log.status();
      raw.skipped_logs.push_back(log.status().message());
    } else {
      ++raw.logs;
      raw.records += log->posix.size() + log->stdio.size();
      AccumulateHeat(*log, &raw.by_path, &raw.special_names, &raw.unnamed_records);
    }
    if (options.progress) options.progress(raw.logs + raw.skipped_logs.size(), log_files.size());
  }
  return raw;
}

HeatTable MapHeat(RawHeat raw, const HeatOptions& options) {
  std::function<bool(const std::string&)> exists = options.exists;
  if (!exists && !options.backing_root.empty()) {
    exists = [root = options.backing_root](const std::string& rel) {
      struct stat st;
      return stat((root + "/" + rel).c_str(), &st) == 0 && S_ISREG(st.st_mode);
    };
  }
  std::string prefix = options.strip_prefix;
  while (prefix.size() > 1 && prefix.back() == '/') prefix.pop_back();
  if (prefix == "/") prefix.clear();
  bool detected = false;
  const bool map_paths =
      !options.strip_prefix.empty() || !options.backing_root.empty() || options.exists;
  if (options.strip_prefix.empty() && exists) {
    std::vector<std::string> paths;
    paths.reserve(raw.by_path.size());
    for (const auto& entry : raw.by_path) paths.push_back(entry.first);
    prefix = DetectStripPrefix(paths, exists, options.detection_sample).prefix;
    detected = true;
  }

  std::map<std::string, HeatCounters> by_rel;
  std::vector<std::string> unmatched;
  for (auto& [abs, counters] : raw.by_path) {
    if (!map_paths) {
      by_rel[abs] = counters;
      continue;
    }
    std::optional<std::string> rel = Below(abs, prefix);
    if (!rel || (exists && !exists(*rel))) {
      unmatched.push_back(abs);
      continue;
    }
    // Two logged spellings of one file ("/a//b", "/a/b") land on one relative path.
    MergeHeatCounters(&by_rel[*rel], counters);
  }
  HeatTable table = RankHeat(std::move(by_rel));
  table.prefix = map_paths ? (prefix.empty() ? "/" : prefix) : "";
  table.prefix_detected = detected;
  table.logs = raw.logs;
  table.records = raw.records;
  table.special_names = raw.special_names;
  table.unnamed_records = raw.unnamed_records;
  table.unmatched_paths = unmatched.size();
  for (size_t i = 0; i < unmatched.size() && i < options.max_unmatched_examples; ++i) {
    table.unmatched_examples.push_back(unmatched[i]);
  }
  table.skipped_logs = std::move(raw.skipped_logs);
  return table;
}

Result<HeatTable> LoadHeat(const std::vector<std::string>& inputs, const HeatOptions& options) {
  auto logs = ExpandHeatInputs(inputs);
  if (!logs.ok()) return logs.status();
  auto raw = ReadHeatLogs(*logs, options);
  if (!raw.ok()) return raw.status();
  return MapHeat(std::move(*raw), options);
}

Result<std::string> HeatLogId(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, EscapeName(path));
  uint64_t hash = kFnv1a64Basis;
  uint64_t size = 0;
  char buf[1 << 16];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Status st = Status::FromErrno(errno, "reading " + EscapeName(path));
      close(fd);
      return st;
    }
    if (n == 0) break;
    hash = Fnv1a64(std::string_view(buf, static_cast<size_t>(n)), hash);
    size += static_cast<uint64_t>(n);
  }
  close(fd);
  char id[64];
  snprintf(id, sizeof(id), "%016llx-%llu", static_cast<unsigned long long>(hash),
           static_cast<unsigned long long>(size));
  return std::string(id);
}

}  // namespace clairfs
