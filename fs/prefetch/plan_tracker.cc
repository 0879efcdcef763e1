// PlanTracker (see plan_tracker.h).
#include "fs/prefetch/plan_tracker.h"

#include <algorithm>

#include "planner/base/log.h"
#include "planner/file_tree.h"

namespace clairfs {

Result<PlanTrackerConfig> ParsePlanTrackerConfig(std::string_view spec, std::string_view layout,
                                                 std::string_view layout_root) {
  PlanTrackerConfig config;
  auto parsed_spec = ParsePlanSpec(spec);
  if (!parsed_spec.ok()) return parsed_spec.status().WithContext("--plan");
  config.spec = std::move(*parsed_spec);
  auto parsed_layout = ParseLayoutSpec(layout, layout_root);
  if (!parsed_layout.ok()) return parsed_layout.status().WithContext("--layout");
  config.layout = std::move(*parsed_layout);
  return config;
}

std::shared_ptr<const PathIndex> BuildPathIndex(const Layout& layout) {
  auto index = std::make_shared<PathIndex>();
  index->reserve(layout.size());
  for (uint64_t i = 0; i < layout.size(); ++i) {
    index->emplace(std::string_view(layout.path(i)), static_cast<uint32_t>(i));
  }
  return index;
}

Result<std::shared_ptr<PlanTracker>> PlanTracker::Create(const PlanTrackerConfig& config,
                                                         std::shared_ptr<const Layout> layout,
                                                         std::shared_ptr<const PathIndex> index) {
  const PlanSpec* spec = &config.spec;
  std::shared_ptr<PlanTracker> t(new PlanTracker());
  t->config_ = config;
  FileTree* tree = PosixFileTreeInstance();
  const bool layout_given = layout != nullptr;
  if (spec->kind == SamplerKind::kList) {
    auto plan = Plan::CreateFromList(*spec, tree);
    if (!plan.ok()) return plan.status();
    t->plan_ = std::move(*plan);
    t->list_paths_ = t->plan_->list_paths();
    t->num_files_ = t->list_paths_->size();
  } else {
    if (layout == nullptr) {
      auto built = BuildLayout(tree, config.backing_root, config.layout);
      if (!built.ok()) return built.status();
      layout = std::make_shared<const Layout>(std::move(*built));
    }
    t->layout_ = std::move(layout);
    auto plan = Plan::Create(*spec, t->layout_->size());
    if (!plan.ok()) return plan.status();
    t->plan_ = std::move(*plan);
    t->num_files_ = t->layout_->size();
  }
  if (t->num_files_ >= UINT32_MAX) return Status::Error(EOVERFLOW, "too many files for a plan");
  if (t->list_paths_ == nullptr) {
    // The caller's index is over the same layout's strings.
    t->index_ = index != nullptr && layout_given ? std::move(index) : BuildPathIndex(*t->layout_);
  } else {
    auto built = std::make_shared<PathIndex>();  // over the list's own strings
    built->reserve(t->num_files_);
    for (uint32_t f = 0; f < t->num_files_; ++f) built->emplace((*t->list_paths_)[f], f);
    t->index_ = std::move(built);
  }

  const uint64_t first = spec->start_epoch;
  auto current = BuildEpochUses(t->plan_.get(), first, t->num_files_);
  if (!current.ok()) return current.status();
  std::shared_ptr<const EpochUses> next;
  if (spec->CoversEpoch(first + 1)) {
    auto built = BuildEpochUses(t->plan_.get(), first + 1, t->num_files_);
    if (!built.ok()) return built.status();
    next = *built;
  }
  t->schedule_ = std::make_unique<PlanSchedule>(*current, next);
  const EpochUses& uses = t->schedule_->current();
  t->ranks_.resize(uses.ranks);
  for (uint32_t r = 0; r < uses.ranks; ++r) {
    RankState& rank = t->ranks_[r];
    rank.epoch = first;
    rank.consumed[first & 1].assign(uses.order->RankSize(uses.first_rank + r), 0);
    if (next) rank.consumed[(first + 1) & 1].assign(next->order->RankSize(uses.first_rank + r), 0);
  }
  t->last_match_.assign(t->num_files_, 0);
  const uint64_t per_epoch = uses.rank_length * uses.ranks;
  t->recent_.assign(std::max<uint64_t>(config.mismatch_min, per_epoch / 50), 0);
  t->recent_file_.assign(t->recent_.size(), 0);
  t->recent_thread_.assign(t->recent_.size(), 0);
  return t;
}

const EpochUses* PlanTracker::UsesForLocked(uint64_t epoch) const {
  if (schedule_->current().epoch == epoch) return &schedule_->current();
  const EpochUses* next = schedule_->next();
  return next != nullptr && next->epoch == epoch ? next : nullptr;
}

uint64_t PlanTracker::TimeOfLocked(uint64_t epoch, uint64_t position) const {
  return schedule_->TimeOf(epoch != schedule_->current().epoch, position);
}

bool PlanTracker::MatchLocked(uint32_t file) {
  for (int which = 0; which < 2; ++which) {
    const EpochUses* uses = which == 0 ? &schedule_->current() : schedule_->next();
    if (uses == nullptr) continue;
    for (uint32_t i = uses->offsets[file]; i < uses->offsets[file + 1]; ++i) {
      const uint32_t slot = uses->slots[i];
      const uint64_t p = slot / uses->ranks;
      RankState& rank = ranks_[slot % uses->ranks];
      if (rank.epoch + 1 == uses->epoch && which == 1) {
        // A rank whose matches reached the last quarter window of its epoch may go on to the next
        // epoch's first quarter window, while the reader follows the plan (under a quarter of
        // the recent opens mismatched): a reader whose last files of an epoch never reach the
        // daemon (served from the kernel's page cache on a no-open mount, or skipped) still moves
        // on, and the rest of its epoch is given up. A reader of another order matches with
        // probability (positions open to it) / epoch; on a dataset not much larger than the
        // window it is the window's shrinking at the epoch's end that exposes it, so it is never
        // moved on this way.
        const uint64_t quarter = std::max<uint64_t>(1, config_.window / 4);
        const uint64_t size = rank.consumed[rank.epoch & 1].size();
        if (size - rank.furthest >= quarter || p >= quarter ||
            recent_mismatches_ * 4 >= recent_.size()) {
          continue;
        }
        rank.cursor = size;
        MoveFinishedRanksLocked();
      }
      if (rank.epoch != uses->epoch || p < rank.cursor || p >= rank.cursor + config_.window) {
        continue;
      }
      std::vector<uint8_t>& consumed = rank.consumed[uses->epoch & 1];
      if (consumed[p]) continue;
      consumed[p] = 1;
      rank.furthest = std::max(rank.furthest, p + 1);
      last_match_[file] = TimeOfLocked(uses->epoch, p) + 1;
      // A reader that skipped positions (an epoch broken off, a sample filtered out) must not
      // pin the cursor: positions more than half a window behind a match are given up.
      if (p >= rank.cursor + config_.window * 3 / 4) rank.cursor = p - config_.window / 2;
      while (rank.cursor < consumed.size() && consumed[rank.cursor]) ++rank.cursor;
      if (rank.cursor == consumed.size()) MoveFinishedRanksLocked();
      return true;
    }
  }
  return false;
}

void PlanTracker::MoveFinishedRanksLocked() {
  const EpochUses* next = schedule_->next();
  if (next == nullptr) return;
  for (RankState& rank : ranks_) {
    if (rank.epoch == schedule_->current().epoch &&
        rank.cursor >= rank.consumed[rank.epoch & 1].size()) {
      rank.epoch = next->epoch;
      rank.cursor = 0;
      rank.furthest = 0;
      const std::vector<uint8_t>& consumed = rank.consumed[rank.epoch & 1];
      while (rank.cursor < consumed.size() && consumed[rank.cursor]) ++rank.cursor;
    }
  }
}

std::optional<uint32_t> PlanTracker::IndexOf(std::string_view path) const {
  auto it = index_->find(path);  // immutable after Create: no lock
  if (it == index_->end()) return std::nullopt;
  return it->second;
}

bool PlanTracker::Finished() {
  std::lock_guard<std::mutex> lock(mu_);
  if (dropped_) return true;
  const std::optional<uint64_t>& end = config_.spec.end_epoch;
  if (!end || *end == 0) return false;
  for (const RankState& rank : ranks_) {
    if (rank.epoch + 1 < *end || rank.cursor < rank.consumed[rank.epoch & 1].size()) return false;
  }
  return true;
}

bool PlanTracker::OnOpen(const std::string& path, Opener opener) {
  if (config_.uid != Opener::kNoUid && opener.uid != config_.uid) return false;
  auto it = index_->find(std::string_view(path));
  if (it == index_->end()) return false;  // not a dataset file: unplanned, ignored
  std::lock_guard<std::mutex> lock(mu_);
  if (dropped_) return false;
  ++dataset_opens_;
  const bool matched = MatchLocked(it->second);
  const uint8_t miss = matched ? 0 : 1;
  if (!matched) ++mismatches_;
  recent_mismatches_ += miss;
  recent_mismatches_ -= recent_[recent_next_];
  recent_[recent_next_] = miss;
  recent_file_[recent_next_] = it->second;
  recent_thread_[recent_next_] = opener.thread;
  recent_next_ = (recent_next_ + 1) % recent_.size();
  if (dataset_opens_ >= recent_.size() && recent_mismatches_ * 2 > recent_.size()) {
    DropLocked("the reader does not follow the plan: " + std::to_string(recent_mismatches_) +
               " of the last " + std::to_string(recent_.size()) +
               " dataset opens were outside every rank's window");
    return false;
  }
  return true;
}

void PlanTracker::DropLocked(const std::string& reason) {
  if (dropped_) return;
  dropped_ = true;
  dropped_reason_ = reason;
  Log(LogLevel::kWarn, "plan %s dropped: %s; falling back to read-through",
      config_.spec.text.c_str(), reason.c_str());
}

std::vector<std::pair<std::string, uint32_t>> PlanTracker::RecentMismatches() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::pair<std::string, uint32_t>> out;
  const size_t filled = std::min<uint64_t>(dataset_opens_, recent_.size());
  for (size_t i = 0; i < filled; ++i) {
    const size_t slot = (recent_next_ + recent_.size() - filled + i) % recent_.size();
    if (recent_[slot]) out.emplace_back(PathOf(recent_file_[slot]), recent_thread_[slot]);
  }
  return out;
}

uint64_t PlanTracker::dataset_opens() {
  std::lock_guard<std::mutex> lock(mu_);
  return dataset_opens_;
}

uint64_t PlanTracker::FirstEpochEndOfPartialWorld() {
  const PlanSpec& spec = config_.spec;
  if (spec.first_rank == 0 && spec.last_rank + 1 >= spec.world) return kNoPlannedUse;
  std::lock_guard<std::mutex> lock(mu_);
  if (schedule_->current().epoch != spec.start_epoch || schedule_->next() == nullptr) {
    return kNoPlannedUse;
  }
  return schedule_->TimeOf(/*next=*/true, 0);
}

void PlanTracker::Drop(const std::string& reason) {
  std::lock_guard<std::mutex> lock(mu_);
  DropLocked(reason);
}

bool PlanTracker::dropped() {
  std::lock_guard<std::mutex> lock(mu_);
  return dropped_;
}

bool PlanTracker::PlanActive() {
  std::lock_guard<std::mutex> lock(mu_);
  return !dropped_;
}

uint64_t PlanTracker::SlowestTimeLocked() const {
  uint64_t slowest = UINT64_MAX;
  for (const RankState& rank : ranks_) {
    slowest = std::min(slowest, TimeOfLocked(rank.epoch, rank.cursor));
  }
  return slowest;
}

uint64_t PlanTracker::NextUse(const std::string& path) {
  auto it = index_->find(std::string_view(path));
  if (it == index_->end()) return kNoPlannedUse;
  std::lock_guard<std::mutex> lock(mu_);
  return schedule_->NextUse(it->second, std::max(SlowestTimeLocked(), last_match_[it->second]));
}

uint64_t PlanTracker::ProtectUntil() {
  std::lock_guard<std::mutex> lock(mu_);
  return protect_until_;
}

void PlanTracker::SetProtectUntil(uint64_t time) {
  std::lock_guard<std::mutex> lock(mu_);
  protect_until_ = time;
}

void PlanTracker::SetLead(uint64_t files, uint64_t prefetched_total) {
  std::lock_guard<std::mutex> lock(mu_);
  lead_files_ = files;
  prefetched_files_ = prefetched_total;
}

bool PlanTracker::NeedsAdvance() {
  std::lock_guard<std::mutex> lock(mu_);
  const EpochUses* next = schedule_->next();
  if (next == nullptr) return false;
  for (const RankState& rank : ranks_) {
    if (rank.epoch != next->epoch) return false;
  }
  return true;
}

Status PlanTracker::AdvanceEpoch() {
  std::lock_guard<std::mutex> plan_lock(plan_mu_);
  uint64_t after_epoch;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (schedule_->next() == nullptr) return Status::Ok();
    after_epoch = schedule_->next()->epoch + 1;
  }
  // Generated without the tracker's lock: opens keep matching meanwhile.
  std::shared_ptr<const EpochUses> after;
  if (plan_->spec().CoversEpoch(after_epoch)) {
    auto built = BuildEpochUses(plan_.get(), after_epoch, num_files_);
    if (!built.ok()) return built.status();
    after = *built;
  }
  std::lock_guard<std::mutex> lock(mu_);
  schedule_->Advance(after);
  const EpochUses& current = schedule_->current();
  for (uint32_t r = 0; r < ranks_.size(); ++r) {
    std::vector<uint8_t>& consumed = ranks_[r].consumed[after_epoch & 1];
    consumed.assign(after ? after->order->RankSize(current.first_rank + r) : 0, 0);
  }
  MoveFinishedRanksLocked();
  return Status::Ok();
}

std::vector<PlannedFile> PlanTracker::Upcoming(size_t limit) {
  std::vector<PlannedFile> out;
  std::lock_guard<std::mutex> lock(mu_);
  if (dropped_) return out;
  for (int which = 0; which < 2 && out.size() < limit; ++which) {
    const EpochUses* uses = which == 0 ? &schedule_->current() : schedule_->next();
    if (uses == nullptr) break;
    uint64_t start = UINT64_MAX;
    for (const RankState& rank : ranks_) {
      if (rank.epoch == uses->epoch) start = std::min(start, rank.cursor);
      if (rank.epoch < uses->epoch) start = 0;
    }
    if (start == UINT64_MAX) continue;  // every rank is past this epoch
    for (uint64_t p = start; p < uses->rank_length && out.size() < limit; ++p) {
      for (uint32_t r = 0; r < uses->ranks && out.size() < limit; ++r) {
        const RankState& rank = ranks_[r];
        if (rank.epoch > uses->epoch || (rank.epoch == uses->epoch && p < rank.cursor)) continue;
        const std::vector<uint8_t>& consumed = rank.consumed[uses->epoch & 1];
        if (p < consumed.size() && consumed[p]) continue;
        uint64_t f = uses->FileAt(uses->first_rank + r, p);
        if (f >= num_files_) continue;
        out.push_back(PlannedFile{TimeOfLocked(uses->epoch, p), static_cast<uint32_t>(f)});
      }
    }
  }
  return out;
}

nlohmann::json PlanTracker::StatusJson() {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json j;
  j["spec"] = config_.spec.text;
  j["active"] = !dropped_;
  j["dropped"] = dropped_;
  j["dropped_reason"] = dropped_reason_;
  uint64_t epoch = UINT64_MAX;
  nlohmann::json ranks = nlohmann::json::array();
  const uint32_t first_rank = schedule_->current().first_rank;
  for (uint32_t r = 0; r < ranks_.size(); ++r) {
    epoch = std::min(epoch, ranks_[r].epoch);
    ranks.push_back(
        {{"rank", first_rank + r}, {"cursor", ranks_[r].cursor}, {"epoch", ranks_[r].epoch}});
  }
  j["epoch"] = epoch;
  j["ranks"] = ranks;
  j["lead_files"] = lead_files_;
  j["mismatches"] = mismatches_;
  j["dataset_opens"] = dataset_opens_;
  j["prefetched_files"] = prefetched_files_;
  j["window"] = config_.window;
  j["uid"] = config_.uid == Opener::kNoUid ? nlohmann::json() : nlohmann::json(config_.uid);
  j["files"] = num_files_;
  return j;
}

uint64_t PlanTracker::MemoryBytes() {
  std::lock_guard<std::mutex> lock(mu_);
  uint64_t bytes = schedule_->MemoryBytes() + last_match_.capacity() * sizeof(uint64_t) +
                   recent_.capacity() +
                   (recent_file_.capacity() + recent_thread_.capacity()) * sizeof(uint32_t);
  for (const RankState& rank : ranks_) {
    bytes += rank.consumed[0].capacity() + rank.consumed[1].capacity();
  }
  // Hash map: one node (key view, value, next pointer, cached hash) per file plus the buckets.
  bytes += index_->size() * (sizeof(std::string_view) + sizeof(uint32_t) + 2 * sizeof(void*)) +
           index_->bucket_count() * sizeof(void*);
  return bytes;
}

std::pair<uint64_t, uint64_t> PlanTracker::Cursor(uint32_t rank) {
  std::lock_guard<std::mutex> lock(mu_);
  const RankState& r = ranks_[rank - schedule_->current().first_rank];
  return {r.epoch, r.cursor};
}

}  // namespace clairfs
