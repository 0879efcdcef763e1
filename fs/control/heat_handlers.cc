// Heat ops on the control socket (see heat_handlers.h).
#include "fs/control/heat_handlers.h"

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <set>

#include "planner/base/log.h"
#include "planner/base/name_escape.h"
#include "planner/heat.h"

namespace clairfs {
namespace {

using nlohmann::json;
using Clock = std::chrono::steady_clock;

struct ImportSession {
  bool replace = false;
  std::string strip_prefix;
  std::map<std::string, HeatCounters> by_path;  // absolute logged path -> merged counters
  std::set<std::string> new_logs;
  Clock::time_point last_used = Clock::now();
};

Result<uint64_t> SessionField(const json& request) {
  auto it = request.find("session");
  if (it == request.end()) return Status::Invalid("missing field \"session\"");
  if (!it->is_number_unsigned()) {
    return Status::Invalid("field \"session\" must be a non-negative integer");
  }
  return it->get<uint64_t>();
}

Result<bool> OptionalBool(const json& request, const char* name) {
  auto it = request.find(name);
  if (it == request.end()) return false;
  if (!it->is_boolean())
    return Status::Invalid(std::string("field \"") + name + "\" must be a boolean");
  return it->get<bool>();
}

Result<std::vector<std::string>> LogIds(const json& request, const char* name) {
  std::vector<std::string> ids;
  auto it = request.find(name);
  if (it == request.end()) return ids;
  if (!it->is_array())
    return Status::Invalid(std::string("field \"") + name + "\" must be an array");
  for (const json& id : *it) {
    if (!id.is_string() || id.get<std::string>().empty() || id.get<std::string>().size() > 200) {
      return Status::Invalid(std::string("field \"") + name +
                             "\" must hold log ids (strings of 1-200 bytes)");
    }
    ids.push_back(id.get<std::string>());
  }
  return ids;
}

Result<std::string> OptionalString(const json& request, const char* name) {
  auto it = request.find(name);
  if (it == request.end()) return std::string();
  if (!it->is_string())
    return Status::Invalid(std::string("field \"") + name + "\" must be a string");
  return it->get<std::string>();
}

// One uploaded file: [path, bytes_read, reads, opens, max_byte_read, read_time, records].
Status ParseFileRow(const json& row, std::string* path, HeatCounters* counters) {
  if (!row.is_array() || row.size() != 7 || !row[0].is_string()) {
    return Status::Invalid(
        "each entry of \"files\" must be [path, bytes_read, reads, opens, max_byte_read, "
        "read_time, records]");
  }
  // Paths travel escaped (planner/name_escape.h); heat is keyed by the raw bytes.
  const std::string shown = row[0].get<std::string>();
  auto raw = UnescapeName(shown);
  if (!raw.ok()) return raw.status().WithContext("logged path \"" + SanitizeText(shown) + "\"");
  *path = std::move(*raw);
  if (path->empty() || (*path)[0] != '/' || path->find('\0') != std::string::npos) {
    return Status::Invalid("logged paths must be absolute: \"" + EscapeName(*path) + "\"");
  }
  for (size_t i : {1, 2, 3, 6}) {
    if (!row[i].is_number_unsigned()) {
      return Status::Invalid("counter " + std::to_string(i) + " of " + EscapeName(*path) +
                             " must be a non-negative integer");
    }
  }
  if (!row[4].is_number_integer() || row[4].get<int64_t>() < -1) {
    return Status::Invalid("max_byte_read of " + EscapeName(*path) + " must be an integer >= -1");
  }
  if (!row[5].is_number() || !(row[5].get<double>() >= 0)) {
    return Status::Invalid("read_time of " + EscapeName(*path) + " must be a number >= 0");
  }
  counters->bytes_read = row[1].get<uint64_t>();
  counters->reads = row[2].get<uint64_t>();
  counters->opens = row[3].get<uint64_t>();
  counters->max_byte_read = row[4].get<int64_t>();
  counters->read_time = row[5].get<double>();
  counters->records = row[6].get<uint64_t>();
  return Status::Ok();
}

class HeatHandlers {
 public:
  explicit HeatHandlers(HeatSources s) : s_(std::move(s)) {}

  Status Begin(const json& req, json* reply) {
    auto replace = OptionalBool(req, "replace");
    if (!replace.ok()) return replace.status();
    auto shown_prefix = OptionalString(req, "strip_prefix");
    if (!shown_prefix.ok()) return shown_prefix.status();
    auto prefix = UnescapeName(*shown_prefix);  // escaped, as paths are
    if (!prefix.ok()) return prefix.status().WithContext("strip_prefix");
    if (!prefix->empty() && (*prefix)[0] != '/') {
      return Status::Invalid("strip_prefix must be an absolute path");
    }
    auto session = std::make_shared<ImportSession>();
    session->replace = *replace;
    session->strip_prefix = *prefix;
    std::lock_guard<std::mutex> lock(mu_);
    ExpireLocked();
    while (sessions_.size() >= kMaxHeatSessions) sessions_.erase(sessions_.begin());
    const uint64_t id = next_id_++;
    sessions_[id] = std::move(session);
    (*reply)["session"] = id;
    return Status::Ok();
  }

  Status Add(const json& req, json* reply) {
    auto id = SessionField(req);
    if (!id.ok()) return id.status();
    auto session = Find(*id);
    if (!session.ok()) return session.status();
    ImportSession& s = **session;
    auto check = LogIds(req, "check_logs");
    if (!check.ok()) return check.status();
    auto logs = LogIds(req, "logs");
    if (!logs.ok()) return logs.status();
    std::vector<std::pair<std::string, HeatCounters>> rows;
    if (auto it = req.find("files"); it != req.end()) {
      if (!it->is_array()) return Status::Invalid("field \"files\" must be an array");
      rows.reserve(it->size());
      for (const json& row : *it) {
        std::string path;
        HeatCounters counters;
        CLAIRFS_RETURN_IF_ERROR(ParseFileRow(row, &path, &counters));
        rows.emplace_back(std::move(path), counters);
      }
    }
    // Validated first: a refused request changes nothing in the session.
    std::vector<std::string> asked = *check;
    asked.insert(asked.end(), logs->begin(), logs->end());
    std::vector<std::string> known =
        s.replace ? std::vector<std::string>() : s_.heat->KnownLogs(asked);
    std::set<std::string> known_set(known.begin(), known.end());
    std::lock_guard<std::mutex> lock(mu_);
    if (s.by_path.size() + rows.size() > kMaxHeatSessionFiles) {
      return Status::Error(
          E2BIG, "more than " + std::to_string(kMaxHeatSessionFiles) + " paths in one import");
    }
    for (const std::string& log : *logs) {
      if (!known_set.count(log)) s.new_logs.insert(log);
    }
    for (auto& [path, counters] : rows) MergeHeatCounters(&s.by_path[path], counters);
    s.last_used = Clock::now();
    (*reply)["known_logs"] = known;
    return Status::Ok();
  }

  Status Commit(const json& req, json* reply) {
    auto id = SessionField(req);
    if (!id.ok()) return id.status();
    ImportSession session;
    {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = sessions_.find(*id);
      if (it == sessions_.end()) return UnknownSession(*id);
      session = std::move(*it->second);  // an Add racing with the commit finds no session
      sessions_.erase(it);               // one commit per session, even if it fails
    }
    HeatOptions options;
    options.strip_prefix = session.strip_prefix;
    Manifest* manifest = s_.manifest;
    options.exists = [manifest](const std::string& rel) {
      auto node = manifest->GetByPath(rel);
      return node.ok() && node->has_value() && (*node)->attr.is_reg();
    };
    RawHeat raw;
    raw.by_path = std::move(session.by_path);
    const size_t uploaded = raw.by_path.size();
    if (uploaded == 0 && session.new_logs.empty() && !session.replace) {
      const HeatSummary now = s_.heat->summary();
      *reply = {{"prefix", ""},
                {"prefix_detected", false},
                {"files_matched", 0},
                {"unmatched", {{"count", 0}, {"examples", json::array()}}},
                {"files_new", 0},
                {"files_merged", 0},
                {"files_total", now.files},
                {"files_dropped", 0},
                {"logs_new", 0},
                {"logs_total", now.logs},
                {"replace", false}};
      return Status::Ok();
    }
    HeatTable table = MapHeat(std::move(raw), options);
    if (table.files.empty() && uploaded > 0) {
      std::string examples;
      for (const std::string& e : table.unmatched_examples) {
        if (examples.size() > 300) break;
        examples += (examples.empty() ? "" : ", ") + EscapeName(e);
      }
      return Status::Error(ENOENT, "none of the " + std::to_string(uploaded) +
                                       " logged paths is a file of this dataset under the prefix " +
                                       EscapeName(table.prefix) +
                                       (table.prefix_detected ? " (detected)" : " (given)") +
                                       "; give --strip-prefix (e.g.: " + examples + ")");
    }
    std::map<std::string, HeatCounters> by_path;
    for (const HeatRecord& r : table.files) by_path.emplace(r.path, r.counters);
    std::vector<std::string> logs(session.new_logs.begin(), session.new_logs.end());
    auto result = s_.heat->Import(by_path, logs, session.replace);
    if (!result.ok()) {
      if (result.status().code() == EALREADY) {
        return Status::Error(EALREADY, result.status().message() +
                                           " (by another import meanwhile); run the import again");
      }
      return result.status();
    }
    if (s_.on_import) s_.on_import();
    Log(LogLevel::kInfo,
        "heat import%s: %zu logs, %zu files matched (%llu new, %llu merged), %zu unmatched; "
        "%llu files with heat",
        session.replace ? " (replace)" : "", logs.size(), table.files.size(),
        static_cast<unsigned long long>(result->files_new),
        static_cast<unsigned long long>(result->files_merged), table.unmatched_paths,
        static_cast<unsigned long long>(result->files_total));
    (*reply)["prefix"] = EscapeName(table.prefix);
    (*reply)["prefix_detected"] = table.prefix_detected;
    (*reply)["files_matched"] = table.files.size();
    json examples = json::array();
    for (const std::string& e : table.unmatched_examples) examples.push_back(EscapeName(e));
    (*reply)["unmatched"] = {{"count", table.unmatched_paths}, {"examples", examples}};
    (*reply)["files_new"] = result->files_new;
    (*reply)["files_merged"] = result->files_merged;
    (*reply)["files_total"] = result->files_total;
    (*reply)["files_dropped"] = result->files_dropped;
    (*reply)["logs_new"] = logs.size();
    (*reply)["logs_total"] = result->logs_total;
    (*reply)["replace"] = session.replace;
    return Status::Ok();
  }

  Status HeatStatus(json* reply) {
    HeatSummary s = s_.heat->summary();
    (*reply)["files"] = s.files;
    (*reply)["files_hot"] = s.files_hot;
    (*reply)["logs"] = s.logs;
    (*reply)["imported_at_ns"] = s.imported_at_ns;
    return Status::Ok();
  }

 private:
  static Status UnknownSession(uint64_t id) {
    return Status::Error(ENOENT, "no heat import session " + std::to_string(id) +
                                     " (committed, expired after " +
                                     std::to_string(kHeatSessionIdleSeconds) +
                                     " s idle, or displaced by newer imports)");
  }

  Result<std::shared_ptr<ImportSession>> Find(uint64_t id) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return UnknownSession(id);
    it->second->last_used = Clock::now();
    return it->second;
  }

  void ExpireLocked() {
    const auto limit = Clock::now() - std::chrono::seconds(kHeatSessionIdleSeconds);
    for (auto it = sessions_.begin(); it != sessions_.end();) {
      it = it->second->last_used < limit ? sessions_.erase(it) : std::next(it);
    }
  }

  HeatSources s_;
  std::mutex mu_;  // guards sessions_, next_id_ and the contents of every session
  std::map<uint64_t, std::shared_ptr<ImportSession>> sessions_;
  uint64_t next_id_ = 1;
};

}  // namespace

void RegisterHeatHandlers(ControlServer* server, HeatSources sources) {
  auto h = std::make_shared<HeatHandlers>(std::move(sources));
  server->AddHandler(
      "heat_import_begin", ControlAccess::kOwner, {"replace", "strip_prefix"},
      [h](const json& r, const PeerCredentials&, json* out) { return h->Begin(r, out); });
  server->AddHandler(
      "heat_import_add", ControlAccess::kOwner, {"session", "check_logs", "logs", "files"},
      [h](const json& r, const PeerCredentials&, json* out) { return h->Add(r, out); });
  server->AddHandler(
      "heat_import_commit", ControlAccess::kOwner, {"session"},
      [h](const json& r, const PeerCredentials&, json* out) { return h->Commit(r, out); });
  server->AddHandler(
      "heat_status", ControlAccess::kAnyone, {},
      [h](const json&, const PeerCredentials&, json* out) { return h->HeatStatus(out); });
}

}  // namespace clairfs
