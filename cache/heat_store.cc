// HeatStore: the heat family, its encoding and import semantics (see heat_store.h).
#include "cache/heat_store.h"

#include <cstring>

#include "cache/node_attr.h"
#include "planner/base/log.h"

namespace clairfs {
namespace {

uint64_t CountHot(const HeatMap& heat) {
  uint64_t hot = 0;
  for (const auto& [path, entry] : heat) {
    if (entry.heat_per_byte > 0) ++hot;
  }
  return hot;
}

constexpr uint8_t kHeatVersion = 1;
constexpr size_t kHeatValueSize = 1 + 6 * 8;
constexpr char kLogKeyPrefix[] = "heat-log/";
constexpr char kImportedAtKey[] = "heat-imported-at";

uint64_t DoubleBits(double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  return bits;
}

double BitsDouble(uint64_t bits) {
  double v;
  std::memcpy(&v, &bits, sizeof(v));
  return v;
}

std::string Fixed64(uint64_t v) {
  std::string out;
  PutFixed64(&out, v);
  return out;
}

}  // namespace

std::string EncodeHeatCounters(const HeatCounters& c) {
  std::string out;
  out.push_back(static_cast<char>(kHeatVersion));
  PutFixed64(&out, c.bytes_read);
  PutFixed64(&out, c.reads);
  PutFixed64(&out, c.opens);
  PutFixed64(&out, static_cast<uint64_t>(c.max_byte_read));
  PutFixed64(&out, DoubleBits(c.read_time));
  PutFixed64(&out, c.records);
  return out;
}

Result<HeatCounters> DecodeHeatCounters(std::string_view b) {
  if (b.size() != kHeatValueSize || static_cast<uint8_t>(b[0]) != kHeatVersion) {
    return Status::Error(EUCLEAN, "corrupt heat entry");
  }
  const char* p = b.data() + 1;
  HeatCounters c;
  c.bytes_read = GetFixed64(p);
  c.reads = GetFixed64(p + 8);
  c.opens = GetFixed64(p + 16);
  c.max_byte_read = static_cast<int64_t>(GetFixed64(p + 24));
  c.read_time = BitsDouble(GetFixed64(p + 32));
  c.records = GetFixed64(p + 40);
  if (c.max_byte_read < -1 || !(c.read_time >= 0)) {
    return Status::Error(EUCLEAN, "corrupt heat entry");
  }
  return c;
}

Result<std::unique_ptr<HeatStore>> HeatStore::Open(IndexDb* index, Env* env) {
  auto store = std::unique_ptr<HeatStore>(new HeatStore(index, env));
  CLAIRFS_RETURN_IF_ERROR(store->Load());
  return store;
}

Status HeatStore::Load() {
  auto heat = std::make_shared<HeatMap>();
  rocksdb::WriteBatch drops;
  auto it = index_->NewIterator(IndexDb::kHeat);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string path(it->key().data(), it->key().size());
    auto counters = DecodeHeatCounters(std::string_view(it->value().data(), it->value().size()));
    if (!counters.ok()) {
      drops.Delete(index_->handle(IndexDb::kHeat), path);
      continue;
    }
    (*heat)[path] = HeatEntry{*counters, HeatPerByte(*counters)};
  }
  CLAIRFS_RETURN_IF_ERROR(IndexDb::FromRocks(it->status(), "read heat"));
  it.reset();
  if (drops.Count() > 0) {
    Log(LogLevel::kWarn, "dropped %u heat entries that do not decode", drops.Count());
    CLAIRFS_RETURN_IF_ERROR(index_->Write(&drops, true));
  }
  std::set<std::string> logs;
  auto meta = index_->NewIterator(IndexDb::kMeta);
  for (meta->Seek(kLogKeyPrefix); meta->Valid(); meta->Next()) {
    std::string_view key(meta->key().data(), meta->key().size());
    if (key.rfind(kLogKeyPrefix, 0) != 0) break;
    logs.insert(std::string(key.substr(sizeof(kLogKeyPrefix) - 1)));
  }
  CLAIRFS_RETURN_IF_ERROR(IndexDb::FromRocks(meta->status(), "read heat logs"));
  meta.reset();
  auto at = index_->Get(IndexDb::kMeta, kImportedAtKey);
  if (!at.ok()) return at.status();
  const uint64_t hot = CountHot(*heat);
  std::lock_guard<std::mutex> lock(state_mu_);
  heat_ = std::move(heat);
  files_hot_ = hot;
  logs_ = std::move(logs);
  imported_at_ns_ = at->has_value() && (*at)->size() == 8 ? GetFixed64((*at)->data()) : 0;
  return Status::Ok();
}

std::shared_ptr<const HeatMap> HeatStore::snapshot() const {
  std::lock_guard<std::mutex> lock(state_mu_);
  return heat_;
}

HeatSummary HeatStore::summary() const {
  HeatSummary s;
  std::lock_guard<std::mutex> lock(state_mu_);
  s.files = heat_->size();
  s.files_hot = files_hot_;
  s.logs = logs_.size();
  s.imported_at_ns = imported_at_ns_;
  return s;
}

std::vector<std::string> HeatStore::KnownLogs(const std::vector<std::string>& ids) const {
  std::vector<std::string> known;
  std::lock_guard<std::mutex> lock(state_mu_);
  for (const std::string& id : ids) {
    if (logs_.count(id)) known.push_back(id);
  }
  return known;
}

Result<HeatImportResult> HeatStore::Import(const std::map<std::string, HeatCounters>& by_path,
                                           const std::vector<std::string>& log_ids, bool replace) {
  std::lock_guard<std::mutex> import_lock(import_mu_);
  std::shared_ptr<const HeatMap> old;
  std::set<std::string> old_logs;
  {
    std::lock_guard<std::mutex> lock(state_mu_);
    old = heat_;
    old_logs = logs_;
  }
  if (!replace) {
    for (const std::string& id : log_ids) {
      if (old_logs.count(id)) {
        return Status::Error(EALREADY, "log " + id + " is already imported");
      }
    }
  }
  HeatImportResult result;
  auto fresh = replace ? std::make_shared<HeatMap>() : std::make_shared<HeatMap>(*old);
  rocksdb::WriteBatch batch;
  rocksdb::ColumnFamilyHandle* heat_family = index_->handle(IndexDb::kHeat);
  rocksdb::ColumnFamilyHandle* meta_family = index_->handle(IndexDb::kMeta);
  std::set<std::string> logs = replace ? std::set<std::string>() : old_logs;
  if (replace) {
    for (const auto& [path, entry] : *old) {
      if (!by_path.count(path)) {
        batch.Delete(heat_family, path);
        ++result.files_dropped;
      }
    }
    for (const std::string& id : old_logs) batch.Delete(meta_family, kLogKeyPrefix + id);
  }
  for (const auto& [path, counters] : by_path) {
    auto it = fresh->find(path);
    if (it == fresh->end()) {
      it = fresh->emplace(path, HeatEntry{}).first;
      ++result.files_new;
    } else {
      ++result.files_merged;
    }
    MergeHeatCounters(&it->second.counters, counters);
    it->second.heat_per_byte = HeatPerByte(it->second.counters);
    batch.Put(heat_family, path, EncodeHeatCounters(it->second.counters));
  }
  const uint64_t now = env_->NowRealtimeNanos();
  for (const std::string& id : log_ids) {
    batch.Put(meta_family, kLogKeyPrefix + id, Fixed64(now));
    logs.insert(id);
  }
  batch.Put(meta_family, kImportedAtKey, Fixed64(now));
  CLAIRFS_RETURN_IF_ERROR(index_->Write(&batch, /*sync=*/true));
  result.files_total = fresh->size();
  result.logs_total = logs.size();
  const uint64_t hot = CountHot(*fresh);
  std::lock_guard<std::mutex> lock(state_mu_);
  heat_ = std::move(fresh);
  files_hot_ = hot;
  logs_ = std::move(logs);
  imported_at_ns_ = now;
  return result;
}

}  // namespace clairfs
