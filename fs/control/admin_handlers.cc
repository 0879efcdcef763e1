// Admin ops on the control socket (see admin_handlers.h).
#include "fs/control/admin_handlers.h"

#include <algorithm>
#include <cerrno>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <unordered_set>

#include "cache/resolve_as.h"
#include "fs/control/caller_scope.h"
#include "planner/base/log.h"
#include "planner/base/name_escape.h"
#include "planner/base/units.h"

namespace clairfs {
namespace {

using nlohmann::json;

constexpr size_t kMaxFailedReported = 1000;  // failed paths kept per stage request
constexpr size_t kMaxStageJobs = 256;        // stage requests remembered for stage_progress
constexpr uint64_t kDefaultLsLimit = 100000;
constexpr uint64_t kMaxLsLimit = 1000000;

Status Field(const json& request, const char* name, json::value_t type, bool required,
             const json** out) {
  *out = nullptr;
  auto it = request.find(name);
  if (it == request.end()) {
    if (required) return Status::Invalid(std::string("missing field \"") + name + "\"");
    return Status::Ok();
  }
  bool type_ok = it->type() == type ||
                 (type == json::value_t::number_unsigned &&
                  it->type() == json::value_t::number_integer && it->get<int64_t>() >= 0);
  if (!type_ok) {
    const char* want = type == json::value_t::string            ? "a string"
                       : type == json::value_t::boolean         ? "a boolean"
                       : type == json::value_t::array           ? "an array"
                       : type == json::value_t::number_unsigned ? "a non-negative integer"
                                                                : "another type";
    return Status::Invalid(std::string("field \"") + name + "\" must be " + want);
  }
  *out = &*it;
  return Status::Ok();
}

Result<bool> BoolField(const json& request, const char* name) {
  const json* v;
  CLAIRFS_RETURN_IF_ERROR(Field(request, name, json::value_t::boolean, false, &v));
  return v != nullptr && v->get<bool>();
}

// A path as a request carries it (escaped) -> a dataset-relative path of raw bytes.
Result<std::string> RequestPath(const std::string& mountpoint, const std::string& text) {
  if (text.empty()) {
    return Status::Invalid("an empty path names nothing (\".\" is the whole dataset)");
  }
  auto raw = UnescapeName(text);
  if (!raw.ok()) return raw.status();
  return NormalizeRequestPath(mountpoint, *raw);
}

// The request's "paths", each normalised to a dataset-relative path.
Result<std::vector<std::string>> PathsField(const json& request, const std::string& mountpoint,
                                            bool required) {
  const json* v;
  CLAIRFS_RETURN_IF_ERROR(Field(request, "paths", json::value_t::array, required, &v));
  std::vector<std::string> out;
  if (v == nullptr) return out;
  if (v->empty()) return Status::Invalid("field \"paths\" is empty");
  if (v->size() > kMaxRequestPaths) {
    return Status::Invalid("too many paths in one request (" + std::to_string(v->size()) +
                           ", at most " + std::to_string(kMaxRequestPaths) + ")");
  }
  for (const json& p : *v) {
    if (!p.is_string()) return Status::Invalid("field \"paths\" must hold strings only");
    auto rel = RequestPath(mountpoint, p.get<std::string>());
    if (!rel.ok()) return rel.status();
    out.push_back(*rel);
  }
  return out;
}

// Calls fn for every regular file at or under `node` (depth first, names in byte order). Below
// `node`, a directory is entered only if `descend` (when given) allows it.
Status ForEachFileUnder(const Manifest& manifest, const ManifestNode& node,
                        const std::function<void(const std::string&, const NodeAttr&)>& fn,
                        const std::function<bool(const NodeAttr&)>& descend = nullptr) {
  if (node.attr.is_reg()) {
    fn(node.path, node.attr);
    return Status::Ok();
  }
  if (!node.attr.is_dir()) return Status::Ok();
  std::vector<ManifestNode> stack{node};
  while (!stack.empty()) {
    ManifestNode dir = std::move(stack.back());
    stack.pop_back();
    std::vector<ManifestChild> children;
    CLAIRFS_RETURN_IF_ERROR(manifest.List(dir.attr.ino, &children));
    // Reverse so that the stack pops subdirectories in name order.
    for (auto it = children.rbegin(); it != children.rend(); ++it) {
      std::string path = dir.path.empty() ? it->name : dir.path + "/" + it->name;
      if (it->attr.is_dir() && (!descend || descend(it->attr))) {
        stack.push_back(ManifestNode{path, it->attr});
      }
    }
    for (const ManifestChild& child : children) {
      if (child.attr.is_reg()) {
        fn(dir.path.empty() ? child.name : dir.path + "/" + child.name, child.attr);
      }
    }
  }
  return Status::Ok();
}

struct FileRef {
  std::string path;
  NodeAttr attr;
};

// Expands every named path to its regular files, de-duplicated, in request order.
Result<std::vector<FileRef>> ExpandFiles(const Manifest& manifest,
                                         const std::vector<std::string>& paths) {
  std::vector<FileRef> files;
  std::unordered_set<std::string> seen;
  for (const std::string& rel : paths) {
    auto node = ResolvePath(manifest, rel);
    if (!node.ok()) return node.status();
    CLAIRFS_RETURN_IF_ERROR(
        ForEachFileUnder(manifest, *node, [&](const std::string& path, const NodeAttr& attr) {
          if (seen.insert(path).second) files.push_back(FileRef{path, attr});
        }));
  }
  return files;
}

const char* TypeName(const NodeAttr& attr) {
  return attr.is_reg() ? "file" : attr.is_dir() ? "dir" : attr.is_link() ? "symlink" : "other";
}

// One explicit stage request, updated by stager callbacks.
struct StageJob {
  std::mutex mu;
  bool hot = false;  // no room is a skip, not a failure
  uint64_t files_total = 0, bytes_total = 0;
  uint64_t files_done = 0, bytes_done = 0;
  uint64_t files_failed = 0;
  uint64_t files_skipped = 0;
  uint64_t pending = 0;
  json failed = json::array();
  // Until the request is done and settled: its files, to count which are still staged then.
  std::vector<std::string> paths;
  uint64_t evictions_before = 0;  // the store's eviction count when the request came
  bool settled = false;
  uint64_t files_resident = 0, files_evicted_again = 0, evictions_while_staging = 0;
};

class AdminHandlers {
 public:
  explicit AdminHandlers(AdminSources s) : s_(std::move(s)) {}

  Status Ls(const json& req, const PeerCredentials& peer, ReplyWriter* reply) {
    const CallerScope scope = ScopeOf(peer, s_.owner_uid, s_.allow_other);
    if (scope == CallerScope::kNothing) return PrivateMountError(s_.owner_uid);
    const Caller caller = CallerOf(peer);
    const bool everything = scope == CallerScope::kEverything;
    // Listing a directory takes read and search on it; a file's state, read on the file.
    auto may_list = [&](const NodeAttr& a) {
      return everything || MayAccess(a, caller, R_OK | X_OK);
    };
    auto may_read = [&](const NodeAttr& a) { return everything || MayAccess(a, caller, R_OK); };
    const json* path_field;
    CLAIRFS_RETURN_IF_ERROR(Field(req, "path", json::value_t::string, false, &path_field));
    auto recursive = BoolField(req, "recursive");
    if (!recursive.ok()) return recursive.status();
    const json* filter_field;
    CLAIRFS_RETURN_IF_ERROR(Field(req, "filter", json::value_t::string, false, &filter_field));
    std::string filter = filter_field ? filter_field->get<std::string>() : "all";
    if (filter != "all" && filter != "staged" && filter != "unstaged") {
      return Status::Invalid("field \"filter\" must be all, staged or unstaged");
    }
    const json* limit_field;
    CLAIRFS_RETURN_IF_ERROR(
        Field(req, "limit", json::value_t::number_unsigned, false, &limit_field));
    uint64_t limit = limit_field ? limit_field->get<uint64_t>() : kDefaultLsLimit;
    if (limit == 0 || limit > kMaxLsLimit) {
      return Status::Invalid("field \"limit\" must be 1.." + std::to_string(kMaxLsLimit));
    }
    const std::string text = path_field ? path_field->get<std::string>() : std::string(".");
    auto rel = RequestPath(s_.mountpoint, text.empty() ? std::string(".") : text);
    if (!rel.ok()) return rel.status();
    auto node =
        everything ? ResolvePath(*s_.manifest, *rel) : ResolveAs(*s_.manifest, *rel, caller);
    if (!node.ok()) return node.status();
    if (node->attr.is_dir() && !may_list(node->attr)) {
      return Status::Error(EACCES, ShownPath(*rel) +
                                       ": permission denied (listing needs read and "
                                       "search permission on it)");
    }

    // Written entry by entry: a listing of the whole dataset costs its text (reply_writer.h).
    reply->BeginArray("entries");
    bool truncated = false;
    std::shared_ptr<const HeatMap> heat = s_.heat ? s_.heat->snapshot() : nullptr;
    auto add = [&](const std::string& path, const NodeAttr& attr) {
      if (reply->elements() >= limit) {
        truncated = true;
        return;
      }
      const bool known = !attr.is_reg() || may_read(attr);
      bool staged = false, pinned = false;
      if (attr.is_reg() && known) {
        auto copy = s_.store->Find(path, /*touch=*/false);
        staged = copy.has_value();
        pinned = staged && copy->pinned;
      }
      if (filter == "staged" && (!attr.is_reg() || !known || !staged)) return;
      if (filter == "unstaged" && (!attr.is_reg() || !known || staged)) return;
      json heat_per_byte = nullptr;
      if (heat && attr.is_reg() && known) {
        auto it = heat->find(path);
        if (it != heat->end()) heat_per_byte = it->second.heat_per_byte;
      }
      reply->Append({{"path", ShownPath(path)},
                     {"type", TypeName(attr)},
                     {"size", attr.size},
                     {"staged", known ? json(staged) : json(nullptr)},
                     {"pinned", known ? json(pinned) : json(nullptr)},
                     {"heat_per_byte", heat_per_byte}});
    };
    if (*recursive || !node->attr.is_dir()) {
      CLAIRFS_RETURN_IF_ERROR(ForEachFileUnder(*s_.manifest, *node, add, may_list));
      if (!node->attr.is_dir() && !node->attr.is_reg()) add(node->path, node->attr);
    } else {
      std::vector<ManifestChild> children;
      CLAIRFS_RETURN_IF_ERROR(s_.manifest->List(node->attr.ino, &children));
      for (const ManifestChild& c : children) {
        add(node->path.empty() ? c.name : node->path + "/" + c.name, c.attr);
      }
    }
    reply->EndArray();
    reply->Add("truncated", truncated);
    return Status::Ok();
  }

  Status Stage(const json& req, json* reply) {
    auto paths = PathsField(req, s_.mountpoint, /*required=*/true);
    if (!paths.ok()) return paths.status();
    const json* prio_field;
    CLAIRFS_RETURN_IF_ERROR(Field(req, "priority", json::value_t::string, false, &prio_field));
    StagePriority priority = StagePriority::kHigh;  // explicit requests go before read-through
    if (prio_field) {
      std::string p = prio_field->get<std::string>();
      if (p == "high") {
        priority = StagePriority::kHigh;
      } else if (p == "normal") {
        priority = StagePriority::kNormal;
      } else if (p == "low") {
        priority = StagePriority::kLow;
      } else {
        return Status::Invalid("field \"priority\" must be high, normal or low");
      }
    }
    auto hot = BoolField(req, "hot");
    if (!hot.ok()) return hot.status();
    auto fit = BoolField(req, "fit");
    if (!fit.ok()) return fit.status();
    if (*fit && !*hot) return Status::Invalid("\"fit\" goes with \"hot\"");
    auto files = ExpandFiles(*s_.manifest, *paths);
    if (!files.ok()) return files.status();
    if (*hot) {
      auto selected = SelectHot(std::move(*files), *fit, reply);
      if (!selected.ok()) return selected.status();
      files = std::move(*selected);
    }

    auto job = std::make_shared<StageJob>();
    job->hot = *hot;
    job->evictions_before = s_.store->stats().evictions;
    job->paths.reserve(files->size());
    uint64_t already = 0;
    for (const FileRef& f : *files) {
      job->files_total++;
      job->bytes_total += f.attr.size;
      job->paths.push_back(f.path);
      if (s_.store->Contains(f.path)) ++already;
    }
    job->pending = job->files_total;
    uint64_t id = RememberJob(job);
    // No job lock here: the stager may run the callback inside Enqueue (already staged).
    for (const FileRef& f : *files) {
      uint64_t size = f.attr.size;
      s_.stager->Enqueue(
          f.path, f.attr.identity(), priority,
          [job, size](const StageOutcome& outcome) {
            std::lock_guard<std::mutex> lock(job->mu);
            if (job->pending > 0) --job->pending;
            if (outcome.status.ok()) {
              job->files_done++;
              job->bytes_done += size;
            } else if (job->hot &&
                       (outcome.status.code() == ENOSPC || outcome.status.code() == EFBIG)) {
              job->files_skipped++;  // no room without evicting hotter copies: by design
            } else {
              job->files_failed++;
              if (job->failed.size() < kMaxFailedReported) {
                job->failed.push_back({{"path", ShownPath(outcome.path)},
                                       {"errno", outcome.status.code()},
                                       {"error", SanitizeText(outcome.status.message())}});
              }
            }
          },
          /*may_evict=*/!*fit);
    }
    Log(LogLevel::kInfo, "stage request %llu: %llu files (%s), %llu already staged",
        static_cast<unsigned long long>(id), static_cast<unsigned long long>(job->files_total),
        FormatBytes(job->bytes_total).c_str(), static_cast<unsigned long long>(already));
    (*reply)["id"] = id;
    (*reply)["files"] = job->files_total;
    (*reply)["bytes"] = job->bytes_total;
    (*reply)["already_staged"] = already;
    return Status::Ok();
  }

  Status StageProgress(const json& req, json* reply) {
    const json* id_field;
    CLAIRFS_RETURN_IF_ERROR(Field(req, "id", json::value_t::number_unsigned, true, &id_field));
    uint64_t id = id_field->get<uint64_t>();
    std::shared_ptr<StageJob> job;
    {
      std::lock_guard<std::mutex> lock(jobs_mu_);
      auto it = jobs_.find(id);
      if (it == jobs_.end()) {
        return Status::Error(ENOENT, "no stage request " + std::to_string(id) +
                                         " (unknown, or forgotten after " +
                                         std::to_string(kMaxStageJobs) + " newer ones)");
      }
      job = it->second;
    }
    std::lock_guard<std::mutex> lock(job->mu);
    (*reply)["id"] = id;
    (*reply)["files_total"] = job->files_total;
    (*reply)["bytes_total"] = job->bytes_total;
    (*reply)["files_done"] = job->files_done;
    (*reply)["bytes_done"] = job->bytes_done;
    (*reply)["files_failed"] = job->files_failed;
    (*reply)["files_skipped"] = job->files_skipped;
    (*reply)["failed"] = job->failed;
    (*reply)["pending"] = job->pending;
    (*reply)["done"] = job->pending == 0;
    if (job->pending == 0) {
      if (!job->settled) {
        // Every callback has run: no one else touches the job's counts any more.
        for (const std::string& path : job->paths) job->files_resident += s_.store->Contains(path);
        job->files_evicted_again =
            job->files_done > job->files_resident ? job->files_done - job->files_resident : 0;
        job->evictions_while_staging = s_.store->stats().evictions - job->evictions_before;
        job->paths.clear();
        job->paths.shrink_to_fit();
        job->settled = true;
      }
      (*reply)["files_resident"] = job->files_resident;
      (*reply)["files_evicted_again"] = job->files_evicted_again;
      (*reply)["evictions_while_staging"] = job->evictions_while_staging;
      (*reply)["capacity_bytes"] = s_.store->stats().capacity;
    }
    return Status::Ok();
  }

  Status Evict(const json& req, json* reply) {
    auto paths = PathsField(req, s_.mountpoint, /*required=*/false);
    if (!paths.ok()) return paths.status();
    auto all = BoolField(req, "all");
    if (!all.ok()) return all.status();
    auto force = BoolField(req, "force");
    if (!force.ok()) return force.status();
    if (*all == !paths->empty()) {
      return Status::Invalid("give either \"paths\" or \"all\": true");
    }
    std::vector<std::string> targets;
    uint64_t not_staged = 0;
    if (*all) {
      targets = s_.store->Paths();
    } else {
      auto files = ExpandFiles(*s_.manifest, *paths);
      if (!files.ok()) return files.status();
      for (const FileRef& f : *files) {
        s_.stager->Cancel(f.path);
        targets.push_back(f.path);
      }
    }
    uint64_t evicted = 0, evicted_bytes = 0, skipped_pinned = 0;
    for (const std::string& path : targets) {
      auto copy = s_.store->Find(path, /*touch=*/false);
      if (!copy) {
        ++not_staged;
        continue;
      }
      Status st = s_.store->Evict(path, *force);
      if (st.ok()) {
        ++evicted;
        evicted_bytes += copy->alloc_bytes;
      } else if (st.code() == EBUSY) {
        ++skipped_pinned;
      } else if (st.code() == ENOENT) {
        ++not_staged;  // evicted meanwhile
      } else {
        return st.WithContext("evicting " + ShownPath(path));
      }
    }
    Log(LogLevel::kInfo, "evict request: %llu evicted (%s), %llu pinned skipped",
        static_cast<unsigned long long>(evicted), FormatBytes(evicted_bytes).c_str(),
        static_cast<unsigned long long>(skipped_pinned));
    (*reply)["evicted"] = evicted;
    (*reply)["evicted_bytes"] = evicted_bytes;
    (*reply)["skipped_pinned"] = skipped_pinned;
    (*reply)["not_staged"] = not_staged;
    return Status::Ok();
  }

  Status Pin(const json& req, bool pin, json* reply) {
    auto paths = PathsField(req, s_.mountpoint, /*required=*/true);
    if (!paths.ok()) return paths.status();
    auto files = ExpandFiles(*s_.manifest, *paths);
    if (!files.ok()) return files.status();
    std::lock_guard<std::mutex> lock(pin_mu_);
    if (!pin) {
      uint64_t unpinned = 0, not_staged = 0;
      for (const FileRef& f : *files) {
        Status st = s_.store->SetPinned(f.path, false);
        if (st.ok()) {
          ++unpinned;
        } else if (st.code() == ENOENT) {
          ++not_staged;
        } else {
          return st;
        }
      }
      (*reply)["unpinned"] = unpinned;
      (*reply)["not_staged"] = not_staged;
      return Status::Ok();
    }
    // Check everything first: a refused request pins nothing. The capacity check counts every
    // named file (unstaged ones at their size rounded to blocks), so a request that could never
    // fit is refused as such rather than as "not staged".
    uint64_t new_bytes = 0;
    std::vector<std::string> to_pin, unstaged;
    for (const FileRef& f : *files) {
      auto copy = s_.store->Find(f.path, /*touch=*/false);
      if (!copy) {
        new_bytes += (f.attr.size + 4095) / 4096 * 4096;
        unstaged.push_back(f.path);
      } else if (!copy->pinned) {
        new_bytes += copy->alloc_bytes;
        to_pin.push_back(f.path);
      }
    }
    uint64_t pinned_bytes = 0;
    for (const std::string& path : s_.store->Paths()) {
      auto copy = s_.store->Find(path, /*touch=*/false);
      if (copy && copy->pinned) pinned_bytes += copy->alloc_bytes;
    }
    uint64_t capacity = s_.store->stats().capacity;
    if (capacity > 0 && pinned_bytes + new_bytes > capacity) {
      return Status::Error(ENOSPC, "pinning " + FormatBytes(new_bytes) + " more (" +
                                       FormatBytes(pinned_bytes) +
                                       " already pinned) would exceed the cache capacity of " +
                                       FormatBytes(capacity));
    }
    if (!unstaged.empty()) {
      return Status::Error(
          ENODATA, ShownPath(unstaged.front()) +
                       (unstaged.size() > 1
                            ? " and " + std::to_string(unstaged.size() - 1) + " more files are"
                            : " is") +
                       " not staged: stage first (clairfs stage --wait), then pin");
    }
    for (const std::string& path : to_pin) {
      Status st = s_.store->SetPinned(path, true);
      if (!st.ok()) return st.WithContext("pinning " + ShownPath(path));
    }
    (*reply)["pinned"] = to_pin.size();
    (*reply)["pinned_bytes_total"] = pinned_bytes + new_bytes;
    return Status::Ok();
  }

 private:
  // The files of a `stage --hot` request: those with heat, hottest per byte first; with `fit`
  // only those that fit in the room left without evicting. Fills reply["hot"].
  Result<std::vector<FileRef>> SelectHot(std::vector<FileRef> files, bool fit, json* reply) {
    if (s_.plan_active && s_.plan_active()) {
      return Status::Error(EBUSY,
                           "a plan is active on this mount: the plan decides what to stage and "
                           "keep (clairfs plan clear first to stage by heat)");
    }
    std::shared_ptr<const HeatMap> heat = s_.heat ? s_.heat->snapshot() : nullptr;
    if (!heat || heat->empty()) {
      return Status::Error(ENODATA,
                           "no heat is stored for this mount: import Darshan logs first "
                           "(clairfs darshan import MOUNTPOINT LOG...)");
    }
    std::vector<std::pair<double, FileRef>> ranked;
    uint64_t not_hot = 0;
    for (FileRef& f : files) {
      auto it = heat->find(f.path);
      if (it == heat->end() || !(it->second.heat_per_byte > 0)) {
        ++not_hot;
        continue;
      }
      ranked.emplace_back(it->second.heat_per_byte, std::move(f));
    }
    std::sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) {
      if (a.first != b.first) return a.first > b.first;
      return a.second.path < b.second.path;
    });
    const uint64_t hot_files = ranked.size();
    uint64_t no_room = 0;
    std::vector<FileRef> selected;
    selected.reserve(ranked.size());
    if (fit) {
      auto room = s_.store->RoomWithoutEviction();
      if (!room.ok()) return room.status();
      uint64_t left = *room;
      for (auto& [h, f] : ranked) {
        if (s_.store->Contains(f.path)) {
          selected.push_back(std::move(f));  // already in: costs no room
          continue;
        }
        const uint64_t need = ContentStore::EstimateAlloc(f.attr.size);
        if (need > left) {
          ++no_room;
          continue;
        }
        left -= need;
        selected.push_back(std::move(f));
      }
    } else {
      for (auto& [h, f] : ranked) selected.push_back(std::move(f));
    }
    (*reply)["hot"] = {{"hot_files", hot_files}, {"not_hot", not_hot}, {"no_room", no_room}};
    return selected;
  }

  uint64_t RememberJob(std::shared_ptr<StageJob> job) {
    std::lock_guard<std::mutex> lock(jobs_mu_);
    uint64_t id = next_id_++;
    jobs_[id] = std::move(job);
    while (jobs_.size() > kMaxStageJobs) jobs_.erase(jobs_.begin());
    return id;
  }

  AdminSources s_;
  std::mutex jobs_mu_;  // guards jobs_, next_id_
  std::map<uint64_t, std::shared_ptr<StageJob>> jobs_;
  uint64_t next_id_ = 1;
  std::mutex pin_mu_;  // serialises pin/unpin so the capacity check holds
};

}  // namespace

Result<std::string> NormalizeRequestPath(const std::string& mountpoint, const std::string& path) {
  if (path.find('\0') != std::string::npos) return Status::Invalid("path contains a NUL byte");
  std::string rest = path;
  if (!path.empty() && path[0] == '/') {
    if (path == mountpoint) {
      rest.clear();
    } else if (mountpoint == "/" || path.rfind(mountpoint + "/", 0) == 0) {
      rest = path.substr(mountpoint == "/" ? 1 : mountpoint.size() + 1);
    } else {
      return Status::Invalid(EscapeName(path) + ": absolute path outside the mount " +
                             EscapeName(mountpoint));
    }
  }
  std::string out;
  size_t start = 0;
  while (start <= rest.size()) {
    size_t end = rest.find('/', start);
    if (end == std::string::npos) end = rest.size();
    std::string part = rest.substr(start, end - start);
    if (part == "..") {
      return Status::Invalid(EscapeName(path) + ": \"..\" is not allowed in paths");
    }
    if (!part.empty() && part != ".") {
      if (!out.empty()) out += '/';
      out += part;
    }
    start = end + 1;
  }
  return out;
}

void RegisterAdminHandlers(ControlServer* server, AdminSources sources) {
  auto h = std::make_shared<AdminHandlers>(std::move(sources));
  server->AddTextHandler("ls", ControlAccess::kAnyone, {"path", "recursive", "filter", "limit"},
                         [h](const json& r, const PeerCredentials& peer, ReplyWriter* out) {
                           return h->Ls(r, peer, out);
                         });
  server->AddHandler(
      "stage", ControlAccess::kOwner, {"paths", "priority", "hot", "fit"},
      [h](const json& r, const PeerCredentials&, json* out) { return h->Stage(r, out); });
  server->AddHandler(
      "stage_progress", ControlAccess::kOwner, {"id"},
      [h](const json& r, const PeerCredentials&, json* out) { return h->StageProgress(r, out); });
  server->AddHandler(
      "evict", ControlAccess::kOwner, {"paths", "all", "force"},
      [h](const json& r, const PeerCredentials&, json* out) { return h->Evict(r, out); });
  server->AddHandler(
      "pin", ControlAccess::kOwner, {"paths"},
      [h](const json& r, const PeerCredentials&, json* out) { return h->Pin(r, true, out); });
  server->AddHandler(
      "unpin", ControlAccess::kOwner, {"paths"},
      [h](const json& r, const PeerCredentials&, json* out) { return h->Pin(r, false, out); });
}

}  // namespace clairfs
