// PlanWatcher (see plan_watcher.h).
#include "fs/prefetch/plan_watcher.h"

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>

#include "planner/base/log.h"
#include "planner/file_tree.h"

namespace clairfs {
namespace {

// Searches per epoch's trace that find no plan (or several) before the watcher waits for the next
// epoch: a search follows each reader's first opens only, so a longer trace rarely changes it.
constexpr uint32_t kMaxAttempts = 4;
// Epochs in a row without a plan before the watcher gives up for good.
constexpr uint32_t kMaxEpochsWithoutPlan = 3;
// Layout builds (each walks the dataset) over the watcher's life.
constexpr uint32_t kMaxLayoutBuilds = 6;
constexpr size_t kFirstSearchAt = 16;
// The first search covers torch-distributed seed + epoch below this (docs/PLANNER.md).
constexpr uint64_t kQuickSeedsPlusEpoch = uint64_t{1} << 16;

double ThreadCpuSeconds() {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) / 1e9;
}

uint64_t NowNanos() {
  return static_cast<uint64_t>(std::chrono::duration_cast<std::chrono::nanoseconds>(
                                   std::chrono::steady_clock::now().time_since_epoch())
                                   .count());
}

std::string Parent(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? std::string() : path.substr(0, slash);
}

// The roots to try for a file at `path`, nearest first.
std::vector<std::string> CandidateRoots(const PlanWatcherConfig& config, const std::string& path) {
  if (config.root_given || config.layout.kind != LayoutKind::kImageFolder) {
    return {config.root_given ? config.layout.root : std::string()};
  }
  // ImageFolder: ROOT/CLASS/.../FILE; the nearest candidate is the file's class's parent.
  std::vector<std::string> roots;
  std::string dir = Parent(Parent(path));
  const bool nested = path.find('/') != std::string::npos;
  if (!nested) return {std::string()};
  for (;;) {
    roots.push_back(dir);
    if (dir.empty()) break;
    dir = Parent(dir);
  }
  return roots;
}

}  // namespace

PlanWatcher::PlanWatcher(PlanWatcherConfig config, AdoptFn adopt)
    : config_(std::move(config)), adopt_(std::move(adopt)), reader_processes_(config_.proc_root) {}

PlanWatcher::~PlanWatcher() { Stop(); }

const char* PlanWatcher::StateName(State state) {
  switch (state) {
    case State::kWaiting:
      return "waiting";
    case State::kSearching:
      return "searching";
    case State::kWaitingForEpoch:
      return "waiting_for_epoch";
    case State::kAdopted:
      return "adopted";
    case State::kGaveUp:
      return "gave_up";
  }
  return "?";
}

void PlanWatcher::Start() {
  std::lock_guard<std::mutex> lock(mu_);
  if (thread_.joinable()) return;
  stopping_ = false;
  thread_ = std::thread([this] { Loop(); });
}

void PlanWatcher::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  cancel_.store(true, std::memory_order_relaxed);  // a search may take seconds: end it
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void PlanWatcher::Observe(const std::string& path, Opener opener) {
  if (config_.uid != Opener::kNoUid && opener.uid != config_.uid) return;
  bool first = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++opens_seen_;
    if (state_ == State::kAdopted || state_ == State::kGaveUp) return;
    if (pending_.size() >= config_.max_pending) {
      ++pending_dropped_;
      return;
    }
    first = pending_.empty();
    pending_.push_back(Pending{path, opener});
  }
  // The thread takes the whole queue when it wakes: one wake-up per batch, not per open.
  if (first) cv_.notify_one();
}

void PlanWatcher::Resume(std::vector<std::pair<std::string, uint32_t>> unexplained) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    resume_ = true;
    state_ = State::kWaiting;  // from now on opens are queued again (Observe)
    resume_opens_.clear();
    for (auto& [path, tid] : unexplained) {
      resume_opens_.push_back(Pending{std::move(path), Opener{tid, config_.uid}});
    }
  }
  cv_.notify_one();
}

std::vector<std::pair<std::string, Opener>> PlanWatcher::TakePending() {
  std::vector<Pending> taken;
  {
    std::lock_guard<std::mutex> lock(mu_);
    taken.swap(pending_);
  }
  std::vector<std::pair<std::string, Opener>> out;
  out.reserve(taken.size());
  for (Pending& p : taken) out.emplace_back(std::move(p.path), p.opener);
  return out;
}

bool PlanWatcher::adopted() {
  std::lock_guard<std::mutex> lock(mu_);
  return state_ == State::kAdopted;
}

void PlanWatcher::Loop() {
  // The layout's walk (mostly I/O) runs at the daemon's priority, before the job's first open;
  // the searches run at SCHED_IDLE (MaybeSearch).
  Prebuild();
  std::unique_lock<std::mutex> lock(mu_);
  while (!stopping_) {
    cv_.wait_for(lock, std::chrono::milliseconds(200),
                 [this] { return stopping_ || !pending_.empty() || resume_; });
    if (stopping_) break;
    lock.unlock();
    Step();
    lock.lock();
  }
}

void PlanWatcher::Prebuild() {
  if (prebuilt_tried_) return;
  prebuilt_tried_ = true;
  LayoutSpec spec = config_.layout;
  spec.root = config_.root_given ? config_.layout.root : std::string();
  auto built = BuildLayout(PosixFileTreeInstance(), config_.backing_root, spec);
  if (!built.ok()) return;  // the first open's path decides (EnsureLayout)
  prebuilt_ = std::make_shared<const Layout>(std::move(*built));
  prebuilt_root_ = spec.root;
  prebuilt_index_ = BuildPathIndex(*prebuilt_);
}

void PlanWatcher::UseLayout(std::shared_ptr<const Layout> layout, const std::string& root) {
  index_ = layout == prebuilt_ ? prebuilt_index_ : BuildPathIndex(*layout);
  layout_ = std::move(layout);
  prebuilt_.reset();
  prebuilt_index_.reset();
  seen_.assign(layout_->size(), 0);
  std::lock_guard<std::mutex> lock(mu_);
  layout_root_ = root;
  layout_error_.clear();
  Log(LogLevel::kInfo, "plan auto: watching opens over %llu samples (layout root '%s')",
      static_cast<unsigned long long>(layout_->size()), root.c_str());
}

bool PlanWatcher::Step() {
  std::vector<Pending> batch;
  bool resume = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    batch.swap(pending_);
    resume = resume_;
    resume_ = false;
    if (resume) {
      // The adopted plan was dropped: a new trace starts at the first open it did not explain.
      epochs_without_plan_ = 0;
      batch.insert(batch.begin(), std::make_move_iterator(resume_opens_.begin()),
                   std::make_move_iterator(resume_opens_.end()));
      resume_opens_.clear();
    }
  }
  for (const Pending& p : batch) {
    if (!layout_ && !EnsureLayout(p.path)) continue;
    auto it = index_->find(std::string_view(p.path));
    if (it == index_->end()) continue;  // not a sample of the dataset
    Add(it->second, reader_processes_.ReaderOf(p.opener.thread));
  }
  MaybeSearch();
  return !batch.empty() || resume;
}

bool PlanWatcher::EnsureLayout(const std::string& path) {
  auto holds = [&path](const Layout& layout) {
    for (uint64_t i = 0; i < layout.size(); ++i) {
      if (layout.path(i) == path) return true;
    }
    return false;
  };
  Prebuild();  // tests step without the thread
  const std::vector<std::string> roots = CandidateRoots(config_, path);
  // The layout built before any open, if the opened file's root is its root.
  if (prebuilt_ != nullptr && roots.front() == prebuilt_root_ &&
      prebuilt_index_->count(std::string_view(path)) != 0) {
    std::shared_ptr<const Layout> layout = prebuilt_;
    UseLayout(std::move(layout), prebuilt_root_);
    return true;
  }
  for (const std::string& root : roots) {
    if (layout_attempts_ >= kMaxLayoutBuilds) return false;
    ++layout_attempts_;
    LayoutSpec spec = config_.layout;
    spec.root = root;
    auto built = BuildLayout(PosixFileTreeInstance(), config_.backing_root, spec);
    if (!built.ok()) {
      std::lock_guard<std::mutex> lock(mu_);
      layout_error_ = "layout with root '" + root + "': " + built.status().message();
      continue;
    }
    if (!holds(*built)) {
      std::lock_guard<std::mutex> lock(mu_);
      layout_error_ = "layout with root '" + root + "' does not hold the opened " + path;
      continue;
    }
    UseLayout(std::make_shared<const Layout>(std::move(*built)), root);
    return true;
  }
  return false;
}

void PlanWatcher::StartTrace() {
  trace_.clear();
  trace_readers_.clear();
  seen_.assign(layout_->size(), 0);
  trace_start_ns_ = NowNanos();
  next_search_at_ = kFirstSearchAt;
  attempts_ = 0;
}

void PlanWatcher::Add(uint32_t index, uint64_t reader) {
  State state;
  {
    std::lock_guard<std::mutex> lock(mu_);
    state = state_;
  }
  switch (state) {
    case State::kAdopted:
    case State::kGaveUp:
      return;
    case State::kWaiting:
      StartTrace();
      break;
    case State::kWaitingForEpoch:
      if (!seen_[index]) {
        seen_[index] = 1;
        return;
      }
      StartTrace();  // a file opened again: the next epoch begins here
      break;
    case State::kSearching:
      if (trace_.size() >= config_.max_trace) {
        std::lock_guard<std::mutex> lock(mu_);
        state_ = State::kWaitingForEpoch;  // give this epoch up; `seen_` marks what it read
        return;
      }
      // A file opened again after the searches on this trace found nothing: the next epoch.
      if (seen_[index] && attempts_ > 0) StartTrace();
      break;
  }
  seen_[index] = 1;
  trace_.push_back(Observation{index, reader});
  trace_readers_[reader] = true;
  std::lock_guard<std::mutex> lock(mu_);
  state_ = State::kSearching;
  trace_size_ = trace_.size();
  readers_ = trace_readers_.size();
}

void PlanWatcher::MaybeSearch() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (state_ != State::kSearching) return;
  }
  if (trace_.size() < next_search_at_ || attempts_ >= kMaxAttempts) return;
  InferenceOptions options = config_.inference;
  options.cancel = &cancel_;
  options.threads = config_.search_threads > 0 ? config_.search_threads : DefaultSearchThreads();
  options.window = static_cast<uint32_t>(std::min<uint64_t>(config_.window, UINT32_MAX));
  // The search takes only CPU nobody else wants.
  struct sched_param param = {};
  (void)sched_setscheduler(0, SCHED_IDLE, &param);
  const double cpu_start = ThreadCpuSeconds();
  double helper_cpu = 0;  // the search's other threads
  InferenceResult r;
  if (options.torch_distributed && options.max_seed_plus_epoch > kQuickSeedsPlusEpoch) {
    // Most jobs' seed + epoch is small: search below 2^16 first (a tenth of the time), judged
    // under the whole space's bound so that what it adopts is as safe as the full search.
    InferenceOptions quick = options;
    quick.max_seed_plus_epoch = kQuickSeedsPlusEpoch;
    quick.threshold_candidates = InferenceCandidates(options, layout_->size());
    r = InferPlan(trace_, layout_->size(), quick);
    helper_cpu = r.helper_cpu_seconds;
    if (r.outcome == InferenceOutcome::kNoCandidate ||
        r.outcome == InferenceOutcome::kSeveralCandidates) {
      r = InferPlan(trace_, layout_->size(), options);
      helper_cpu += r.helper_cpu_seconds;
    }
  } else {
    r = InferPlan(trace_, layout_->size(), options);
    helper_cpu = r.helper_cpu_seconds;
  }
  const double cpu = ThreadCpuSeconds() - cpu_start + helper_cpu;
  (void)sched_setscheduler(0, SCHED_OTHER, &param);
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++searches_;
    search_seconds_ += cpu;
    last_outcome_ = InferenceOutcomeName(r.outcome);
    last_reason_ = r.reason;
  }
  switch (r.outcome) {
    case InferenceOutcome::kAdopted:
      break;
    case InferenceOutcome::kCancelled:
      return;  // stopping
    case InferenceOutcome::kTooFewObservations:
      next_search_at_ = trace_.size() + 8;  // cheap: decided before any candidate is generated
      return;
    case InferenceOutcome::kDatasetTooSmall: {
      std::lock_guard<std::mutex> lock(mu_);
      state_ = State::kGaveUp;
      Log(LogLevel::kInfo, "plan auto: %s; no plan will be inferred", r.reason.c_str());
      return;
    }
    case InferenceOutcome::kNoCandidate:
    case InferenceOutcome::kSeveralCandidates: {
      ++attempts_;
      next_search_at_ = trace_.size() * 2;
      if (attempts_ < kMaxAttempts) return;
      std::lock_guard<std::mutex> lock(mu_);
      state_ = ++epochs_without_plan_ >= kMaxEpochsWithoutPlan ? State::kGaveUp
                                                               : State::kWaitingForEpoch;
      Log(LogLevel::kInfo, "plan auto: no plan from %llu opens (%s); %s",
          static_cast<unsigned long long>(trace_.size()), r.reason.c_str(),
          state_ == State::kGaveUp ? "giving up" : "trying again at the next epoch");
      return;
    }
  }

  auto spec = ParsePlanSpec(r.spec);
  if (!spec.ok()) {  // inference prints what the parser reads back: a bug if not
    std::lock_guard<std::mutex> lock(mu_);
    last_reason_ = "the inferred spec does not parse: " + spec.status().message();
    state_ = State::kGaveUp;
    return;
  }
  std::string note;
  const std::string seed_key = std::string(SamplerKindName(spec->kind)) + ":" +
                               FormatSeedInteger(spec->seed) + "/" + std::to_string(spec->world);
  if (spec->kind == SamplerKind::kTorchDistributed) {
    if (seed_key == last_adopted_seed_key_) {
      // The same seed + epoch one epoch later: the job never calls set_epoch.
      spec->set_epoch = false;
      note = "seed + epoch; no set_epoch: every epoch repeats it";
    } else {
      note = "seed + epoch; set_epoch continues it";
    }
  } else {
    note = "its first epoch";
  }
  spec->text = FormatPlanSpec(*spec);
  const double seconds = static_cast<double>(NowNanos() - trace_start_ns_) / 1e9;
  char summary[512];
  snprintf(summary, sizeof summary, "inferred %s (%s) from %llu opens in %.1f s",
           spec->text.c_str(), note.c_str(), static_cast<unsigned long long>(trace_.size()),
           seconds);
  InferredPlan plan;
  plan.config.spec = *spec;
  plan.config.layout = config_.layout;
  {
    std::lock_guard<std::mutex> lock(mu_);
    plan.config.layout.root = layout_root_;
  }
  plan.config.backing_root = config_.backing_root;
  plan.config.window = config_.window;
  plan.config.uid = config_.uid;
  plan.layout = layout_;
  plan.index = index_;
  plan.replay.reserve(trace_.size());
  for (const Observation& o : trace_) plan.replay.push_back(layout_->path(o.index));
  plan.summary = summary;
  const std::string text = spec->text;
  Status adopted = adopt_(std::move(plan));
  std::lock_guard<std::mutex> lock(mu_);
  if (!adopted.ok()) {
    last_reason_ = "adopting " + text + " failed: " + adopted.message();
    state_ = State::kWaitingForEpoch;
    Log(LogLevel::kWarn, "plan auto: %s", last_reason_.c_str());
    return;
  }
  state_ = State::kAdopted;
  ++adoptions_;
  adopted_spec_ = text;
  adopted_summary_ = summary;
  last_adopted_seed_key_ = seed_key;
  epochs_without_plan_ = 0;
  pending_.clear();
  Log(LogLevel::kInfo, "plan auto: %s", summary);
}

nlohmann::json PlanWatcher::StatusJson() {
  std::lock_guard<std::mutex> lock(mu_);
  nlohmann::json j;
  j["state"] = StateName(state_);
  j["opens_seen"] = opens_seen_;
  j["trace_opens"] = trace_size_;
  j["readers"] = readers_;
  j["uid"] = config_.uid == Opener::kNoUid ? nlohmann::json() : nlohmann::json(config_.uid);
  j["searches"] = searches_;
  j["search_cpu_seconds"] = search_seconds_;
  j["last_outcome"] = last_outcome_;
  j["last_reason"] = last_reason_;
  j["adoptions"] = adoptions_;
  j["adopted"] = adopted_spec_.empty() ? nlohmann::json() : nlohmann::json(adopted_spec_);
  j["summary"] = adopted_summary_;
  j["layout_root"] = layout_root_;
  j["layout_error"] = layout_error_;
  j["dropped_opens"] = pending_dropped_;
  return j;
}

}  // namespace clairfs
