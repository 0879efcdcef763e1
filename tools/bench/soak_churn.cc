// The soak's admin churn (see soak_churn.h).
#include "tools/bench/soak_churn.h"

#include <cerrno>
#include <chrono>
#include <set>

#include "tools/bench/bench_support.h"
#include "tools/cli/control_client.h"

namespace clairfs {
namespace {

constexpr int kEvictShare = 20;         // evict one file in this many
constexpr int kMaxProgressPolls = 600;  // stage_progress polls of one stage request
constexpr char kLayout[] = "imagefolder";

}  // namespace

SoakChurn::SoakChurn(std::string mountpoint, const std::vector<SyntheticFile>& files,
                     int interval_ms, uint64_t seed)
    : mountpoint_(std::move(mountpoint)), interval_ms_(interval_ms), rng_state_(seed) {
  std::set<std::string> classes;
  for (const SyntheticFile& f : files) {
    paths_.push_back(f.relpath);
    const size_t slash = f.relpath.find('/');
    classes.insert(slash == std::string::npos ? f.relpath : f.relpath.substr(0, slash));
  }
  classes_.assign(classes.begin(), classes.end());
}

SoakChurn::~SoakChurn() { Stop(); }

void SoakChurn::Start() {
  thread_ = std::thread([this] { Run(); });
}

void SoakChurn::Stop() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stopping_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

bool SoakChurn::Pause() {
  std::unique_lock<std::mutex> lock(mu_);
  return !wake_.wait_for(lock, std::chrono::milliseconds(interval_ms_),
                         [this] { return stopping_; });
}

void SoakChurn::Run() {
  for (uint64_t cycle = 0; Cycle(cycle); ++cycle) cycles_.fetch_add(1);
}

Result<nlohmann::json> SoakChurn::Send(const nlohmann::json& request, int refusal) {
  const std::string op = request["op"];
  auto client = cli::ControlClient::Connect(mountpoint_);
  Result<nlohmann::json> reply =
      client.ok() ? client->Call(request) : Result<nlohmann::json>(client.status());
  std::lock_guard<std::mutex> lock(counts_mu_);
  OpCounts& counts = counts_[op];
  if (reply.ok()) {
    ++counts.ok;
  } else if (refusal != 0 && reply.status().code() == refusal) {
    ++counts.refused;
  } else {
    ++counts.failed;
    if (errors_.size() < kMaxErrors) errors_.push_back(op + ": " + reply.status().message());
  }
  return reply;
}

bool SoakChurn::Cycle(uint64_t cycle) {
  using Json = nlohmann::json;
  const Json klass = Json::array({classes_[cycle % classes_.size()]});
  auto staged = Send({{"op", "stage"}, {"paths", klass}, {"priority", "high"}});
  if (staged.ok()) {
    const uint64_t id = (*staged)["id"];
    for (int poll = 0; poll < kMaxProgressPolls; ++poll) {
      if (!Pause()) return false;
      auto progress = Send({{"op", "stage_progress"}, {"id", id}});
      if (!progress.ok() || progress->value("done", false)) break;
    }
  }
  if (!Pause()) return false;
  (void)Send({{"op", "pin"}, {"paths", klass}}, /*refusal=*/ENODATA);
  if (!Pause()) return false;
  Json victims = Json::array();
  for (size_t i = 0; i < paths_.size() / kEvictShare; ++i) {
    victims.push_back(paths_[SplitMix64Next(&rng_state_) % paths_.size()]);
  }
  if (!victims.empty()) (void)Send({{"op", "evict"}, {"paths", victims}});
  if (!Pause()) return false;
  (void)Send({{"op", "plan_set"},
              {"spec", "torch-distributed:seed=" + std::to_string(cycle) + ",world=8"},
              {"layout", kLayout}});
  const Json rest[] = {{{"op", "ls"}, {"recursive", true}},
                       {{"op", "stats"}},
                       {{"op", "status"}},
                       {{"op", "unpin"}, {"paths", klass}},
                       {{"op", "plan_clear"}},
                       {{"op", "evict"}, {"all", true}}};
  for (const Json& request : rest) {
    if (!Pause()) return false;
    (void)Send(request);
  }
  return Pause();
}

uint64_t SoakChurn::requests() const {
  std::lock_guard<std::mutex> lock(counts_mu_);
  uint64_t n = 0;
  for (const auto& [op, c] : counts_) n += c.ok + c.refused + c.failed;
  return n;
}

uint64_t SoakChurn::failed() const {
  std::lock_guard<std::mutex> lock(counts_mu_);
  uint64_t n = 0;
  for (const auto& [op, c] : counts_) n += c.failed;
  return n;
}

nlohmann::json SoakChurn::Json() const {
  std::lock_guard<std::mutex> lock(counts_mu_);
  nlohmann::json ops = nlohmann::json::object();
  for (const auto& [op, c] : counts_) {
    ops[op] = {{"ok", c.ok}, {"refused", c.refused}, {"failed", c.failed}};
  }
  return {{"cycles", cycles_.load()}, {"ops", ops}, {"errors", errors_}};
}

}  // namespace clairfs
