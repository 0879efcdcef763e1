// Heat merging, prefix detection and ranking over Darshan logs (see heat.h).
#include "planner/heat.h"

#include <sys/stat.h>

#include <algorithm>
#include <filesystem>
#include <map>

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

Status ExpandInputs(const std::vector<std::string>& inputs, std::vector<std::string>* logs) {
  namespace fs = std::filesystem;
  for (const std::string& input : inputs) {
    std::error_code ec;
    fs::file_status st = fs::status(input, ec);
    if (ec) return Status::FromErrno(ec.value(), input);
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
    if (ec) return Status::FromErrno(ec.value(), "listing " + input);
    std::sort(found.begin(), found.end());
    logs->insert(logs->end(), found.begin(), found.end());
  }
  return Status::Ok();
}

}  // namespace

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
    const double size = static_cast<double>(std::max<int64_t>(counters.max_byte_read, 0)) + 1;
    if (counters.bytes_read > 0) {
      r.rereads = static_cast<double>(counters.bytes_read) / size;
      r.heat_per_byte = (static_cast<double>(counters.bytes_read) +
                         kOpCostBytes * static_cast<double>(counters.reads + counters.opens)) /
                        size;
    }
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

Result<HeatTable> LoadHeat(const std::vector<std::string>& inputs, const HeatOptions& options) {
  std::vector<std::string> logs;
  CLAIRFS_RETURN_IF_ERROR(ExpandInputs(inputs, &logs));
  darshan::ReadOptions read_options;
  read_options.decode_dxt = false;
  std::map<std::string, HeatCounters> by_abs;
  size_t special = 0, unnamed = 0, records = 0, read = 0;
  std::vector<std::string> skipped;
  for (const std::string& path : logs) {
    Result<darshan::DarshanLog> log = darshan::ReadDarshanLogFile(path, read_options);
    if (!log.ok()) {
      if (!options.skip_bad_logs) return log.status();
      skipped.push_back(log.status().message());
    } else {
      ++read;
      records += log->posix.size() + log->stdio.size();
      AccumulateHeat(*log, &by_abs, &special, &unnamed);
    }
    if (options.progress) options.progress(read + skipped.size(), logs.size());
  }

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
  const bool map_paths = !options.strip_prefix.empty() || !options.backing_root.empty();
  if (options.strip_prefix.empty() && exists) {
    std::vector<std::string> paths;
    paths.reserve(by_abs.size());
    for (const auto& entry : by_abs) paths.push_back(entry.first);
    prefix = DetectStripPrefix(paths, exists, options.detection_sample).prefix;
    detected = true;
  }

  std::map<std::string, HeatCounters> by_rel;
  std::vector<std::string> unmatched;
  for (auto& [abs, counters] : by_abs) {
    if (!map_paths) {
      by_rel[abs] = counters;
      continue;
    }
    std::optional<std::string> rel = Below(abs, prefix);
    if (!rel || (exists && !exists(*rel))) {
      unmatched.push_back(abs);
      continue;
    }
    by_rel[*rel] = counters;
  }
  HeatTable table = RankHeat(std::move(by_rel));
  table.prefix = map_paths ? (prefix.empty() ? "/" : prefix) : "";
  table.prefix_detected = detected;
  table.logs = read;
  table.records = records;
  table.special_names = special;
  table.unnamed_records = unnamed;
  table.unmatched_paths = unmatched.size();
  for (size_t i = 0; i < unmatched.size() && i < options.max_unmatched_examples; ++i) {
    table.unmatched_examples.push_back(unmatched[i]);
  }
  table.skipped_logs = std::move(skipped);
  return table;
}

}  // namespace clairfs
