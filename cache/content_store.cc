// ContentStore: publish protocol, recovery, capacity and eviction (see content_store.h).
#include "cache/content_store.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "planner/base/fnv1a.h"
#include "planner/base/log.h"
#include "planner/base/units.h"

namespace clairfs {
namespace {

// Version 1: no seal and no origin (read as copies from the backing store without a seal).
// Version 2 adds a flags byte (bit 0: a seal follows; bit 1: the copy came from a peer) and the
// seal's 64 bytes.
constexpr uint8_t kEntryVersion = 2;
constexpr uint8_t kFlagSealed = 1;
constexpr uint8_t kFlagFromPeer = 2;
constexpr uint64_t kBlock = 4096;

uint64_t AllocatedBytes(const struct stat& st) { return static_cast<uint64_t>(st.st_blocks) * 512; }

}  // namespace

// Space a file of `size` bytes is expected to take: its size in whole 4 KiB blocks. That is what
// st_blocks shows for a copy written by either engine on ext4 and tmpfs, including 0 for an empty
// file (measured: docs/CACHE.md, "Capacity"). A copy that gets more (an ext4 extent-tree block for
// a large file written out of order) is topped up at commit, so no block is held back from every
// copy for the rare one that needs it.
uint64_t ContentStore::EstimateAlloc(uint64_t size) {
  return (size + kBlock - 1) / kBlock * kBlock;
}

std::string EncodeCacheEntry(const CacheEntryRecord& r) {
  std::string out;
  out.push_back(static_cast<char>(kEntryVersion));
  PutFixed64(&out, r.identity.size);
  PutFixed64(&out, static_cast<uint64_t>(r.identity.mtime_ns));
  PutFixed64(&out, static_cast<uint64_t>(r.identity.ctime_ns));
  PutFixed64(&out, r.identity.ino);
  PutFixed64(&out, r.alloc_bytes);
  PutFixed64(&out, static_cast<uint64_t>(r.staged_at_ns));
  out.push_back(r.pinned ? 1 : 0);
  uint8_t flags = r.seal ? kFlagSealed : 0;
  if (r.origin == CopyOrigin::kPeer) flags |= kFlagFromPeer;
  out.push_back(static_cast<char>(flags));
  if (r.seal) {
    out.append(reinterpret_cast<const char*>(r.seal->digest.data()), r.seal->digest.size());
    out.append(reinterpret_cast<const char*>(r.seal->auth.data()), r.seal->auth.size());
  }
  PutFixed32(&out, static_cast<uint32_t>(r.data_name.size()));
  out += r.data_name;
  return out;
}

Result<CacheEntryRecord> DecodeCacheEntry(std::string_view b) {
  const uint8_t version = b.empty() ? 0 : static_cast<uint8_t>(b[0]);
  size_t fixed = 1 + 8 * 6 + 1 + 4;
  if (b.size() < fixed || (version != 1 && version != kEntryVersion)) {
    return Status::Error(EUCLEAN, "corrupt cache entry");
  }
  const char* p = b.data() + 1;
  CacheEntryRecord r;
  r.identity.size = GetFixed64(p), p += 8;
  r.identity.mtime_ns = static_cast<int64_t>(GetFixed64(p)), p += 8;
  r.identity.ctime_ns = static_cast<int64_t>(GetFixed64(p)), p += 8;
  r.identity.ino = GetFixed64(p), p += 8;
  r.alloc_bytes = GetFixed64(p), p += 8;
  r.staged_at_ns = static_cast<int64_t>(GetFixed64(p)), p += 8;
  r.pinned = *p++ != 0;
  if (version >= 2) {
    fixed += 1;
    if (b.size() < fixed) return Status::Error(EUCLEAN, "corrupt cache entry");
    const uint8_t flags = static_cast<uint8_t>(*p++);
    if ((flags & ~(kFlagSealed | kFlagFromPeer)) != 0) {
      return Status::Error(EUCLEAN, "corrupt cache entry (flags)");
    }
    r.origin = (flags & kFlagFromPeer) != 0 ? CopyOrigin::kPeer : CopyOrigin::kBackingStore;
    if ((flags & kFlagSealed) != 0) {
      fixed += 64;
      if (b.size() < fixed) return Status::Error(EUCLEAN, "corrupt cache entry");
      CopySeal seal;
      std::memcpy(seal.digest.data(), p, 32);
      std::memcpy(seal.auth.data(), p + 32, 32);
      p += 64;
      r.seal = seal;
    }
  }
  uint32_t len = GetFixed32(p);
  p += 4;
  if (b.size() != fixed + len || len == 0) return Status::Error(EUCLEAN, "corrupt cache entry");
  r.data_name.assign(p, len);
  // "<xx>/<name>" with xx a fan-out directory and name a plain file name: a damaged record must
  // never make recovery keep, or eviction unlink, a file outside CACHE/data.
  const std::string& n = r.data_name;
  if (n.size() < 4 || !isxdigit(static_cast<unsigned char>(n[0])) ||
      !isxdigit(static_cast<unsigned char>(n[1])) || n[2] != '/' ||
      n.find('/', 3) != std::string::npos || n.substr(3) == "." || n.substr(3) == ".." ||
      n.find('\0') != std::string::npos) {
    return Status::Error(EUCLEAN, "corrupt cache entry (data name '" + n + "')");
  }
  return r;
}

ContentStore::ContentStore(CacheDir* dir, IndexDb* index, Env* env,
                           const ContentStoreOptions& options, uint64_t index_reserve,
                           std::unique_ptr<EvictionPolicy> policy)
    : dir_(dir),
      index_(index),
      env_(env),
      options_(options),
      index_reserve_(index_reserve),
      floor_(options.min_free + index_reserve),
      capacity_(options.capacity),
      policy_(std::move(policy)),
      next_generation_(env->NowRealtimeNanos()),
      device_log_(dir->root(), env) {}

ContentStore::~ContentStore() = default;

Result<std::unique_ptr<ContentStore>> ContentStore::Open(CacheDir* dir, IndexDb* index, Env* env,
                                                         const ContentStoreOptions& options,
                                                         std::unique_ptr<EvictionPolicy> policy) {
  struct statvfs vfs;
  CLAIRFS_RETURN_IF_ERROR(env->StatVfs(dir->root(), &vfs));
  const uint64_t device_size = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
  struct stat root_st, index_st;
  CLAIRFS_RETURN_IF_ERROR(env->Lstat(dir->root(), &root_st));
  CLAIRFS_RETURN_IF_ERROR(env->Lstat(index->dir(), &index_st));
  // The index on the cache device: room for its log (see the header).
  const uint64_t index_reserve =
      root_st.st_dev == index_st.st_dev ? std::min(kIndexReserve, device_size / 16) : 0;
  // A floor at or above the device's size leaves no room for any copy: surely a mistyped size
  // (999P), which would otherwise only show as nothing ever being staged.
  if (device_size > 0 && options.min_free >= device_size) {
    return Status::Invalid("the free-space floor (--min-free) " + FormatBytes(options.min_free) +
                           " is not below the size of the cache device of " + dir->root() + " (" +
                           FormatBytes(device_size) + ")");
  }
  if (device_size > 0 && options.capacity > device_size) {
    Log(LogLevel::kWarn,
        "cache %s: capacity %s is more than the cache device (%s): the device's free space "
        "bounds the cache",
        dir->root().c_str(), FormatBytes(options.capacity).c_str(),
        FormatBytes(device_size).c_str());
  }
  auto store = std::unique_ptr<ContentStore>(
      new ContentStore(dir, index, env, options, index_reserve, std::move(policy)));
  CLAIRFS_RETURN_IF_ERROR(store->Recover());
  return store;
}

ContentStore::Shard& ContentStore::ShardFor(const std::string& path) {
  return shards_[Fnv1a64(path) % kShards];
}

std::string ContentStore::NewDataName(const std::string& path) {
  char name[64];
  uint64_t h = Fnv1a64(path);
  snprintf(name, sizeof(name), "%02x/%016llx-%llx", static_cast<unsigned>(h >> 56),
           static_cast<unsigned long long>(h),
           static_cast<unsigned long long>(next_generation_.fetch_add(1)));
  return name;
}

Status ContentStore::Recover() {
  // 1. Copies in flight at the last stop are incomplete by definition.
  std::vector<DirEntry> temps;
  CLAIRFS_RETURN_IF_ERROR(env_->ListDir(dir_->tmp_dir(), &temps));
  for (const auto& t : temps) {
    if (env_->Unlink(dir_->tmp_dir() + "/" + t.name).ok()) ++recovery_.temp_removed;
  }
  // 2. Keep entries whose data file exists with the recorded size; drop the rest.
  std::unordered_set<std::string> referenced;
  std::vector<std::pair<int64_t, std::string>> by_age;  // (staged_at_ns, path) of kept entries
  rocksdb::WriteBatch drops;
  auto it = index_->NewIterator(IndexDb::kEntries);
  for (it->SeekToFirst(); it->Valid(); it->Next()) {
    std::string path(it->key().data(), it->key().size());
    auto rec = DecodeCacheEntry(std::string_view(it->value().data(), it->value().size()));
    struct stat st;
    if (!rec.ok() || !env_->Lstat(dir_->data_dir() + "/" + rec->data_name, &st).ok() ||
        !S_ISREG(st.st_mode) || static_cast<uint64_t>(st.st_size) != rec->identity.size) {
      drops.Delete(index_->handle(IndexDb::kEntries), path);
      ++recovery_.entries_dropped;
      continue;
    }
    referenced.insert(rec->data_name);
    Entry e{rec->data_name, rec->identity, AllocatedBytes(st), rec->staged_at_ns,
            rec->pinned,    rec->seal,     rec->origin};
    used_bytes_ += e.alloc_bytes;
    recovery_.bytes += e.alloc_bytes;
    ++recovery_.entries;
    by_age.emplace_back(e.staged_at_ns, path);
    ShardFor(path).entries.emplace(path, std::move(e));
  }
  // The policy learns the copies oldest first, so that the least recently staged copy is the
  // first victim after a restart (not the first path in key order).
  std::sort(by_age.begin(), by_age.end());
  for (const auto& [staged_at, path] : by_age) {
    policy_->OnInsert(path, ShardFor(path).entries[path].alloc_bytes);
  }
  CLAIRFS_RETURN_IF_ERROR(IndexDb::FromRocks(it->status(), "read cache index"));
  it.reset();
  if (drops.Count() > 0) CLAIRFS_RETURN_IF_ERROR(index_->Write(&drops, true));
  files_ = recovery_.entries;
  // A capacity smaller than at the last run: evict down to it before serving anything.
  while (capacity_ > 0 && used_bytes_ > capacity_) {
    auto victim = policy_->PickVictim([&](const std::string& p) {
      Shard& shard = ShardFor(p);
      std::lock_guard<std::mutex> lock(shard.mu);
      auto it = shard.entries.find(p);
      return it != shard.entries.end() && !it->second.pinned;
    });
    if (!victim) {
      Log(LogLevel::kWarn, "cache %s: pinned copies use %llu bytes, more than the capacity %llu",
          dir_->root().c_str(), static_cast<unsigned long long>(used_bytes_),
          static_cast<unsigned long long>(capacity_));
      break;
    }
    const Entry& entry = ShardFor(*victim).entries[*victim];
    uint64_t alloc = entry.alloc_bytes;
    referenced.erase(entry.data_name);  // its data file is an orphan if the unlink below fails
    CLAIRFS_RETURN_IF_ERROR(RemoveEntry(*victim, /*force=*/false, /*count_eviction=*/false));
    ++recovery_.evicted;
    --recovery_.entries;
    recovery_.bytes -= std::min(recovery_.bytes, alloc);
  }
  // 3. Data files nobody references (published but never indexed, or left by a drop).
  for (int i = 0; i < 256; ++i) {
    char sub[4];
    snprintf(sub, sizeof(sub), "%02x", i);
    std::string subdir = dir_->data_dir() + "/" + sub;
    std::vector<DirEntry> files;
    if (!env_->ListDir(subdir, &files).ok()) continue;
    for (const auto& f : files) {
      std::string name = std::string(sub) + "/" + f.name;
      if (referenced.count(name)) continue;
      if (env_->Unlink(subdir + "/" + f.name).ok()) ++recovery_.orphans_removed;
    }
  }
  return Status::Ok();
}

std::optional<StagedCopy> ContentStore::Find(const std::string& path, bool touch) {
  std::optional<StagedCopy> copy;
  {
    Shard& shard = ShardFor(path);
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.entries.find(path);
    if (it == shard.entries.end()) return std::nullopt;
    copy = StagedCopy{dir_->data_dir() + "/" + it->second.data_name,
                      it->second.identity,
                      it->second.alloc_bytes,
                      it->second.pinned,
                      it->second.seal,
                      it->second.origin};
  }
  if (touch) policy_->OnAccess(path);
  return copy;
}

void ContentStore::Touch(const std::string& path) { policy_->OnAccess(path); }

bool ContentStore::Contains(const std::string& path) {
  Shard& shard = ShardFor(path);
  std::lock_guard<std::mutex> lock(shard.mu);
  return shard.entries.count(path) > 0;
}

bool ContentStore::FitsLocked(uint64_t need, uint64_t device_free) const {
  if (capacity_ > 0 && used_bytes_ + reserved_bytes_ + need > capacity_) return false;
  // Reserved space is not yet allocated on the device, so it still counts against free space.
  if (device_free < reserved_bytes_ + need + floor_) return false;
  return true;
}

Result<uint64_t> ContentStore::RoomWithoutEviction() {
  struct statvfs vfs;
  CLAIRFS_RETURN_IF_ERROR(env_->StatVfs(dir_->root(), &vfs));
  const uint64_t device_free = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
  std::lock_guard<std::mutex> lock(space_mu_);
  const uint64_t floor = reserved_bytes_ + floor_;
  uint64_t room = device_free > floor ? device_free - floor : 0;
  if (capacity_ > 0) {
    const uint64_t occupied = used_bytes_ + reserved_bytes_;
    room = std::min(room, capacity_ > occupied ? capacity_ - occupied : 0);
  }
  return room;
}

std::string ContentStore::FloorText() const {
  std::string text = FormatBytes(floor_) + " (--min-free " + FormatBytes(options_.min_free);
  if (index_reserve_ > 0) text += ", plus " + FormatBytes(index_reserve_) + " for the index";
  return text + ")";
}

Status ContentStore::NoRoom(uint64_t need, const std::string& for_path, bool may_evict,
                            uint64_t device_free) {
  bool device_short = false;
  {
    std::lock_guard<std::mutex> lock(space_mu_);
    device_short = device_free < reserved_bytes_ + need + floor_;
  }
  if (device_short) {
    // Not the capacity but the device: full (of other data, or of copies the policy keeps).
    device_log_.Failed(
        DeviceCondition::kFull,
        Status::Error(ENOSPC, FormatBytes(device_free) + " free, less than " + FormatBytes(need) +
                                  " for a copy above the free-space floor of " + FloorText() +
                                  (may_evict ? " with no copy left to evict" : "")));
  }
  if (!may_evict) {
    return Status::Error(ENOSPC, "no room in the cache for " + for_path + " (" +
                                     std::to_string(need) + " bytes) without evicting");
  }
  return Status::Error(ENOSPC, "no room in the cache for " + for_path + " (" +
                                   std::to_string(need) +
                                   " bytes) and nothing to evict (every copy is pinned, in "
                                   "use, or ranked above it by the eviction policy)");
}

Status ContentStore::MakeRoom(uint64_t need, const std::string& for_path, bool may_evict) {
  for (;;) {
    uint64_t device_free = 0;
    {
      struct statvfs vfs;
      Status st = env_->StatVfs(dir_->root(), &vfs);
      if (!st.ok()) {
        device_log_.Failed(st);
        return st;
      }
      device_free = static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize;
      uint64_t device_size = static_cast<uint64_t>(vfs.f_blocks) * vfs.f_frsize;
      if (device_size > 0 && need + floor_ > device_size) {
        // Hopeless even on an empty device: refuse before evicting anything for it.
        return Status::Error(EFBIG, for_path + " (" + std::to_string(need) +
                                        " bytes) does not fit on the cache device above its "
                                        "free-space floor of " +
                                        FloorText());
      }
      std::lock_guard<std::mutex> lock(space_mu_);
      if (FitsLocked(need, device_free)) {
        reserved_bytes_ += need;
        return Status::Ok();
      }
    }
    if (!may_evict) return NoRoom(need, for_path, may_evict, device_free);
    std::shared_ptr<const std::unordered_set<std::string>> holds;
    {
      std::lock_guard<std::mutex> lock(holds_mu_);
      holds = holds_;
    }
    auto victim = policy_->PickVictimToAdmit(for_path, [&](const std::string& p) {
      if (p == for_path || (holds && holds->count(p) != 0)) return false;
      Shard& shard = ShardFor(p);
      std::lock_guard<std::mutex> lock(shard.mu);
      auto it = shard.entries.find(p);
      return it != shard.entries.end() && !it->second.pinned;
    });
    if (!victim) return NoRoom(need, for_path, may_evict, device_free);
    Status st = RemoveEntry(*victim, /*force=*/false, /*count_eviction=*/true);
    if (!st.ok() && st.code() != ENOENT) return st;
  }
}

Result<StagingSlot> ContentStore::BeginStaging(const std::string& path, uint64_t size,
                                               bool may_evict) {
  uint64_t need = EstimateAlloc(size);
  if (capacity_ > 0 && need > capacity_) {
    return Status::Error(
        EFBIG, path + " (" + std::to_string(size) + " bytes) is larger than the cache capacity");
  }
  {
    Shard& shard = ShardFor(path);
    std::lock_guard<std::mutex> lock(shard.mu);
    if (shard.entries.count(path) || !shard.staging.insert(path).second) {
      return Status::Error(EEXIST, path + " is already staged or staging");
    }
  }
  StagingSlot slot;
  slot.path = path;
  slot.may_evict = may_evict;
  Status st = MakeRoom(need, path, may_evict);
  if (!st.ok()) {
    Shard& shard = ShardFor(path);
    std::lock_guard<std::mutex> lock(shard.mu);
    shard.staging.erase(path);
    return st;
  }
  slot.reserved = need;
  slot.data_name = NewDataName(path);
  slot.temp_path = dir_->tmp_dir() + "/" + slot.data_name.substr(3);
  auto fd = env_->Open(slot.temp_path, O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (!fd.ok()) {
    device_log_.Failed(fd.status());
    Abort(&slot);
    return fd.status();
  }
  slot.fd = *fd;
  return slot;
}

void ContentStore::Abort(StagingSlot* slot) {
  if (slot->fd >= 0) {
    (void)env_->Close(slot->fd);
    slot->fd = -1;
  }
  if (!slot->temp_path.empty()) {
    (void)env_->Unlink(slot->temp_path);
    slot->temp_path.clear();
  }
  if (slot->reserved > 0) {
    std::lock_guard<std::mutex> lock(space_mu_);
    reserved_bytes_ -= slot->reserved;
    slot->reserved = 0;
  }
  if (!slot->path.empty()) {
    Shard& shard = ShardFor(slot->path);
    std::lock_guard<std::mutex> lock(shard.mu);
    shard.staging.erase(slot->path);
    slot->path.clear();
  }
}

Status ContentStore::SyncData(StagingSlot* slot) {
  Status st = env_->Fsync(slot->fd);
  if (!st.ok()) {
    device_log_.Failed(st);
    return st.WithContext("stage " + slot->path);
  }
  slot->data_synced = true;
  return Status::Ok();
}

Status ContentStore::Commit(StagingSlot* slot, const FileIdentity& identity) {
  CommitItem item{slot, identity, std::nullopt, CopyOrigin::kBackingStore, Status::Ok()};
  CommitBatch(std::span<CommitItem>(&item, 1));
  return item.status;
}

void ContentStore::CommitBatch(std::span<CommitItem> items) {
  auto fail = [&](CommitItem* item, Status why) {
    Abort(item->slot);
    item->status = std::move(why);
  };
  // A step on the device failed for this copy (SyncData and MakeRoom count their own).
  auto fail_on_device = [&](CommitItem* item, Status why) {
    device_log_.Failed(why);
    fail(item, std::move(why));
  };
  // 1. Per copy: bytes durable, size as expected, fd closed, room for what was really allocated.
  struct Ready {
    CommitItem* item;
    uint64_t alloc;
    std::string data_path;
  };
  std::vector<Ready> ready;
  ready.reserve(items.size());
  for (CommitItem& item : items) {
    StagingSlot* slot = item.slot;
    item.status = Status::Ok();
    if (!slot->data_synced) {
      Status st = SyncData(slot);
      if (!st.ok()) {
        fail(&item, st);
        continue;
      }
    }
    struct stat sb;
    Status st = env_->Fstat(slot->fd, &sb);
    if (!st.ok()) {
      fail_on_device(&item, st);
      continue;
    }
    if (static_cast<uint64_t>(sb.st_size) != item.identity.size) {
      // The copier's mistake, not the device's: one line for this file.
      Status wrong =
          Status::Error(EIO, "stage " + slot->path + ": copied " + std::to_string(sb.st_size) +
                                 " bytes, expected " + std::to_string(item.identity.size));
      Log(LogLevel::kWarn, "%s (copy dropped)", wrong.message().c_str());
      fail(&item, std::move(wrong));
      continue;
    }
    st = env_->Close(slot->fd);
    slot->fd = -1;
    if (!st.ok()) {
      fail_on_device(&item, st);
      continue;
    }
    if (!item.seal && options_.seal_key) {
      // Sealed from the bytes as written, before they are published (docs/PEERS.md).
      auto seal = SealTempFile(*slot, item.identity);
      if (!seal.ok()) {
        fail_on_device(&item, seal.status());
        continue;
      }
      item.seal = *seal;
    }
    uint64_t alloc = AllocatedBytes(sb);
    if (alloc > slot->reserved) {
      // The filesystem allocated more than estimated: make room for the difference first, so
      // the capacity holds at every instant.
      st = MakeRoom(alloc - slot->reserved, slot->path, slot->may_evict);
      if (!st.ok()) {
        fail(&item, st);
        continue;
      }
      slot->reserved = alloc;
    }
    ready.push_back(Ready{&item, alloc, std::string()});
  }
  if (ready.empty()) return;

  // 2. Renames, all into the first copy's fan-out directory, so that one directory fsync makes
  // the whole batch's renames durable. Data names are recorded in the index, so a copy's
  // directory need not follow from its path; batches still spread over all 256 directories.
  const std::string fanout = ready.front().item->slot->data_name.substr(0, 2);
  const std::string fanout_dir = dir_->data_dir() + "/" + fanout;
  std::vector<Ready> renamed;
  renamed.reserve(ready.size());
  for (Ready& r : ready) {
    StagingSlot* slot = r.item->slot;
    slot->data_name = fanout + slot->data_name.substr(2);
    r.data_path = dir_->data_dir() + "/" + slot->data_name;
    Status st = env_->Rename(slot->temp_path, r.data_path);
    if (!st.ok()) {
      fail_on_device(r.item, st);
      continue;
    }
    slot->temp_path.clear();
    renamed.push_back(std::move(r));
  }
  if (renamed.empty()) return;
  // A shared step failed: none of the batch is published; its data files become unreachable
  // (removed here, or by recovery if this removal does not happen).
  auto fail_all = [&](const Status& why) {
    for (Ready& r : renamed) {
      (void)env_->Unlink(r.data_path);
      fail_on_device(r.item, why);
    }
  };

  // 3. One fsync of the directory makes every rename durable.
  Status st = env_->SyncDir(fanout_dir);
  if (!st.ok()) return fail_all(st);

  // 4. One synced index write for every entry: all of them or none survive a crash.
  rocksdb::WriteBatch batch;
  std::vector<Entry> entries;
  entries.reserve(renamed.size());
  for (Ready& r : renamed) {
    StagingSlot* slot = r.item->slot;
    Entry entry{slot->data_name, r.item->identity,
                r.alloc,         static_cast<int64_t>(env_->NowRealtimeNanos()),
                false,           r.item->seal,
                r.item->origin};
    CacheEntryRecord rec{entry.data_name, entry.identity, entry.alloc_bytes, entry.staged_at_ns,
                         false,           entry.seal,     entry.origin};
    batch.Put(index_->handle(IndexDb::kEntries), slot->path, EncodeCacheEntry(rec));
    entries.push_back(std::move(entry));
  }
  st = index_->Write(&batch, /*sync=*/true);
  if (!st.ok()) return fail_all(st);

  // 5. Served from now on.
  device_log_.Published();
  copies_unreadable_until_ns_.store(0, std::memory_order_relaxed);
  for (size_t i = 0; i < renamed.size(); ++i) {
    StagingSlot* slot = renamed[i].item->slot;
    const uint64_t alloc = renamed[i].alloc;
    {
      std::lock_guard<std::mutex> lock(space_mu_);
      reserved_bytes_ -= slot->reserved;
      used_bytes_ += alloc;
      slot->reserved = 0;
    }
    {
      Shard& shard = ShardFor(slot->path);
      std::lock_guard<std::mutex> lock(shard.mu);
      shard.staging.erase(slot->path);
      shard.entries[slot->path] = std::move(entries[i]);
    }
    files_.fetch_add(1);
    policy_->OnInsert(slot->path, alloc);
    if (publish_listener_) publish_listener_(slot->path);
    slot->path.clear();
  }
}

Status ContentStore::RemoveEntry(const std::string& path, bool force, bool count_eviction) {
  Entry removed;
  {
    Shard& shard = ShardFor(path);
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.entries.find(path);
    if (it == shard.entries.end()) return Status::Error(ENOENT, path + " is not staged");
    if (it->second.pinned && !force) return Status::Error(EBUSY, path + " is pinned");
    removed = std::move(it->second);
    shard.entries.erase(it);
  }
  policy_->OnRemove(path);
  // Index first: a crash between the two leaves an orphan data file, which recovery deletes.
  Status st = index_->Delete(IndexDb::kEntries, path, /*sync=*/false);
  const std::string data_path = dir_->data_dir() + "/" + removed.data_name;
  Status unlink = env_->Unlink(data_path);
  if (removal_listener_) removal_listener_(data_path);
  {
    std::lock_guard<std::mutex> lock(space_mu_);
    used_bytes_ -= std::min(used_bytes_, removed.alloc_bytes);
  }
  files_.fetch_sub(1);
  if (count_eviction) {
    evictions_.fetch_add(1);
    evicted_bytes_.fetch_add(removed.alloc_bytes);
  }
  if (!st.ok()) return st;
  if (!unlink.ok() && unlink.code() != ENOENT) return unlink;
  return Status::Ok();
}

Status ContentStore::Evict(const std::string& path, bool force) {
  return RemoveEntry(path, force, /*count_eviction=*/true);
}

void ContentStore::SetHolds(std::shared_ptr<const std::unordered_set<std::string>> holds) {
  std::lock_guard<std::mutex> lock(holds_mu_);
  holds_ = std::move(holds);
}

bool ContentStore::IsHeld(const std::string& path) {
  std::lock_guard<std::mutex> lock(holds_mu_);
  return holds_ && holds_->count(path) != 0;
}

Result<CopySeal> ContentStore::SealTempFile(const StagingSlot& slot, const FileIdentity& identity) {
  auto fd = env_->Open(slot.temp_path, O_RDONLY);
  if (!fd.ok()) return fd.status();
  uint64_t bytes = 0;
  auto digest = DigestOfFd(*fd, &bytes);
  (void)env_->Close(*fd);
  if (!digest.ok()) return digest.status();
  if (bytes != identity.size) {
    return Status::Error(EIO, "sealing " + slot.path + ": read " + std::to_string(bytes) +
                                  " bytes back, expected " + std::to_string(identity.size));
  }
  CopySeal seal;
  seal.digest = *digest;
  seal.auth = options_.seal_key->Authenticate(slot.path, identity, seal.digest);
  return seal;
}

Status ContentStore::SetPinned(const std::string& path, bool pinned) {
  CacheEntryRecord rec;
  {
    Shard& shard = ShardFor(path);
    std::lock_guard<std::mutex> lock(shard.mu);
    auto it = shard.entries.find(path);
    if (it == shard.entries.end()) return Status::Error(ENOENT, path + " is not staged");
    it->second.pinned = pinned;
    rec = CacheEntryRecord{it->second.data_name,
                           it->second.identity,
                           it->second.alloc_bytes,
                           it->second.staged_at_ns,
                           pinned,
                           it->second.seal,
                           it->second.origin};
  }
  return index_->Put(IndexDb::kEntries, path, EncodeCacheEntry(rec), /*sync=*/true);
}

std::vector<std::string> ContentStore::Paths() {
  std::vector<std::string> paths;
  for (auto& shard : shards_) {
    std::lock_guard<std::mutex> lock(shard.mu);
    for (const auto& [path, entry] : shard.entries) paths.push_back(path);
  }
  return paths;
}

ContentStoreStats ContentStore::stats() {
  ContentStoreStats s;
  {
    std::lock_guard<std::mutex> lock(space_mu_);
    s.used_bytes = used_bytes_;
    s.reserved_bytes = reserved_bytes_;
  }
  s.files = files_.load();
  s.capacity = capacity_;
  s.evictions = evictions_.load();
  s.evicted_bytes = evicted_bytes_.load();
  return s;
}

namespace {
int64_t SteadyNowNanos() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}
}  // namespace

void ContentStore::ReportCopyReadError(const Status& error) {
  device_log_.Failed(DeviceCondition::kLost, error);
  copies_unreadable_until_ns_.store(SteadyNowNanos() + kCopyReadPauseNanos,
                                    std::memory_order_relaxed);
}

bool ContentStore::copies_readable() const {
  const int64_t until = copies_unreadable_until_ns_.load(std::memory_order_relaxed);
  return until == 0 || SteadyNowNanos() >= until;
}

}  // namespace clairfs
