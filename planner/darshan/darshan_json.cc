// JSON form of a DarshanLog (see darshan_json.h).
#include "planner/darshan/darshan_json.h"

#include <cmath>

#include "planner/base/name_escape.h"

namespace clairfs::darshan {
namespace {

using json = nlohmann::ordered_json;

json Number(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json MetadataObject(const std::string& metadata) {
  json object = json::object();
  size_t start = 0;
  while (start < metadata.size()) {
    size_t end = metadata.find('\n', start);
    if (end == std::string::npos) end = metadata.size();
    std::string line = metadata.substr(start, end - start);
    size_t eq = line.find('=');
    if (eq != std::string::npos) {
      object[EscapeName(line.substr(0, eq))] = EscapeName(line.substr(eq + 1));
    }
    start = end + 1;
  }
  return object;
}

json RecordHeader(const DarshanLog& log, std::string_view module, int64_t rank, uint64_t id) {
  json r;
  r["module"] = module;
  r["rank"] = rank;
  r["id"] = id;
  const std::string* name = log.FindName(id);
  const MountEntry* mount = name ? log.MountFor(*name) : nullptr;
  r["name"] = name ? json(EscapeName(*name)) : json(nullptr);
  r["mount"] = mount ? json(EscapeName(mount->path)) : json(nullptr);
  r["fs_type"] = mount ? json(EscapeName(mount->fs_type)) : json(nullptr);
  return r;
}

json Segments(const std::vector<DxtSegment>& segments, bool has_pthread_ids) {
  json list = json::array();
  for (const DxtSegment& s : segments) {
    list.push_back({s.offset, s.length, Number(s.start_time), Number(s.end_time),
                    has_pthread_ids ? json(s.pthread_id) : json(nullptr)});
  }
  return list;
}

}  // namespace

nlohmann::ordered_json ToJson(const DarshanLog& log, bool include_dxt) {
  json root;
  root["version"] = log.version_string;
  root["compression"] = CompressionName(log.compression);
  root["byte_order"] = log.byte_order == ByteOrder::kLittle ? "little" : "big";
  const JobInfo& job = log.job;
  root["job"] = {{"uid", job.uid},
                 {"jobid", job.jobid},
                 {"nprocs", job.nprocs},
                 {"start_time", job.start_time_sec},
                 {"start_time_nsec", job.start_time_nsec},
                 {"end_time", job.end_time_sec},
                 {"end_time_nsec", job.end_time_nsec},
                 {"run_time", Number(log.RunTimeSeconds())},
                 {"exe", EscapeName(job.exe)},
                 {"metadata", MetadataObject(job.metadata)}};
  json mounts = json::array();
  for (const MountEntry& m : log.mounts)
    mounts.push_back({{"path", EscapeName(m.path)}, {"fs_type", EscapeName(m.fs_type)}});
  root["mounts"] = mounts;
  json modules = json::array();
  for (const ModuleRegion& m : log.modules) {
    modules.push_back({{"module", ModuleName(m.module_id)},
                       {"id", m.module_id},
                       {"length", m.length},
                       {"version", m.version},
                       {"partial", m.partial}});
  }
  root["regions"] = {
      {"job", log.job_region_length}, {"name_map", log.name_map_length}, {"modules", modules}};

  json records = json::array();
  for (const PosixRecord& r : log.posix) {
    json rec = RecordHeader(log, "POSIX", r.rank, r.id);
    json counters = json::object();
    for (int i = 0; i < kPosixCounters; ++i) {
      if (i == POSIX_RENAMED_FROM) {
        counters[std::string(kPosixCounterNames[i])] = static_cast<uint64_t>(r.counters[i]);
      } else {
        counters[std::string(kPosixCounterNames[i])] = r.counters[i];
      }
    }
    for (int i = 0; i < kPosixFCounters; ++i) {
      counters[std::string(kPosixFCounterNames[i])] = Number(r.fcounters[i]);
    }
    rec["counters"] = std::move(counters);
    records.push_back(std::move(rec));
  }
  for (const StdioRecord& r : log.stdio) {
    json rec = RecordHeader(log, "STDIO", r.rank, r.id);
    json counters = json::object();
    for (int i = 0; i < kStdioCounters; ++i) {
      counters[std::string(kStdioCounterNames[i])] = r.counters[i];
    }
    for (int i = 0; i < kStdioFCounters; ++i) {
      counters[std::string(kStdioFCounterNames[i])] = Number(r.fcounters[i]);
    }
    rec["counters"] = std::move(counters);
    records.push_back(std::move(rec));
  }
  root["records"] = std::move(records);
  root["dropped_posix_v1_records"] = log.dropped_posix_v1_records;

  if (include_dxt) {
    const bool has_pthread_ids = log.dxt_posix_version >= 2;
    root["dxt_posix_version"] = log.dxt_posix_version;
    json dxt = json::array();
    for (const DxtRecord& r : log.dxt_posix) {
      json rec = RecordHeader(log, "DXT_POSIX", r.rank, r.id);
      rec.erase("module");
      rec["hostname"] = EscapeName(r.hostname);
      rec["writes"] = Segments(r.writes, has_pthread_ids);
      rec["reads"] = Segments(r.reads, has_pthread_ids);
      dxt.push_back(std::move(rec));
    }
    root["dxt_posix"] = std::move(dxt);
  }
  return root;
}

}  // namespace clairfs::darshan
