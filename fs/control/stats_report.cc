// The "stats" report (see stats_report.h).
#include "fs/control/stats_report.h"

#include <algorithm>

#include "fs/control/caller_scope.h"
#include "planner/base/name_escape.h"

namespace clairfs {

namespace {

nlohmann::json CommonValuesToJson(const CommonValues& v) {
  nlohmann::json list = nlohmann::json::array();
  for (const auto& [value, count] : v.counts) list.push_back({value, count});
  return list;
}

}  // namespace

nlohmann::json CountersToJson(const FileIoCounters& c) {
  return nlohmann::json{{"opens", c.opens},
                        {"reads", c.reads},
                        {"bytes_read", c.bytes_read},
                        {"max_byte_read", c.max_byte_read},
                        {"consec_reads", c.consec_reads},
                        {"seq_reads", c.seq_reads},
                        {"size_read", c.size_read},
                        {"read_time", c.read_time},
                        {"read_busy_time", c.read_busy_time},
                        {"max_read_time", c.max_read_time},
                        {"max_read_time_size", c.max_read_time_size},
                        {"meta_time", c.meta_time},
                        {"file_not_aligned", c.file_not_aligned},
                        {"access_sizes", CommonValuesToJson(c.access_sizes)},
                        {"strides", CommonValuesToJson(c.strides)},
                        {"open_start", c.open_start},
                        {"open_end", c.open_end},
                        {"read_start", c.read_start},
                        {"read_end", c.read_end},
                        {"close_start", c.close_start},
                        {"close_end", c.close_end}};
}

void WriteStats(const FileSystem& fs, size_t top, bool per_file, ReplyWriter* out) {
  std::vector<FileStatsRow> rows = fs.FileStatsSnapshot();
  auto bytes = [](const FileStatsRow& r) {
    return r.by_source[0].bytes_read + r.by_source[1].bytes_read;
  };
  std::sort(rows.begin(), rows.end(), [&](const FileStatsRow& a, const FileStatsRow& b) {
    return bytes(a) != bytes(b) ? bytes(a) > bytes(b) : a.path < b.path;
  });
  std::array<FileIoCounters, kReadSources> totals;
  for (const auto& r : rows) {
    for (int s = 0; s < kReadSources; ++s) totals[s].Merge(r.by_source[s]);
  }
  out->BeginArray("files");
  for (size_t i = 0; per_file && i < rows.size() && (top == 0 || i < top); ++i) {
    nlohmann::json row = {{"path", EscapeName(rows[i].path)}};
    for (int s = 0; s < kReadSources; ++s) {
      row[ReadSourceName(static_cast<ReadSource>(s))] = CountersToJson(rows[i].by_source[s]);
    }
    out->Append(row);
  }
  out->EndArray();
  nlohmann::json total;
  for (int s = 0; s < kReadSources; ++s) {
    total[ReadSourceName(static_cast<ReadSource>(s))] = CountersToJson(totals[s]);
  }
  out->Add("per_file", per_file);
  out->Add("totals", total);
  out->Add("files_with_counters", rows.size());
  out->Add("start_time_ns", fs.start_realtime_ns());
  out->Add("elapsed_seconds", fs.Elapsed());
  out->Add("file_alignment", kFileAlignment);
  out->Add("note",
           "counters count requests that reached the clairfs daemon, merged when a file is "
           "closed; reads served by the kernel page cache are not seen");
}

void RegisterStatsHandler(ControlServer* server, const FileSystem* fs, uid_t owner_uid,
                          bool allow_other) {
  server->AddTextHandler(
      "stats", ControlAccess::kAnyone, {"top"},
      [fs, owner_uid, allow_other](const nlohmann::json& request, const PeerCredentials& peer,
                                   ReplyWriter* reply) {
        const CallerScope scope = ScopeOf(peer, owner_uid, allow_other);
        if (scope == CallerScope::kNothing) return PrivateMountError(owner_uid);
        size_t top = 0;
        if (auto it = request.find("top"); it != request.end()) {
          if (!it->is_number_unsigned()) {
            return Status::Invalid("\"top\" must be a non-negative integer");
          }
          top = it->get<size_t>();
        }
        // Which files were read how often is root's and the owner's to know: others get totals.
        WriteStats(*fs, top, scope == CallerScope::kEverything, reply);
        return Status::Ok();
      });
}

}  // namespace clairfs
