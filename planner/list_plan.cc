// ListPlan parsing (see list_plan.h).
#include "planner/list_plan.h"

#include <unordered_map>

#include "planner/layout.h"
#include "planner/plan_spec.h"

namespace clairfs {
namespace {

// "# epoch 12" -> true with *number = 12 when the line is that directive ("epoch"/"rank").
// Returns an error for a directive with a malformed number.
Result<bool> MatchDirective(std::string_view line, std::string_view word, uint64_t max,
                            uint64_t* number) {
  std::string prefix = "# " + std::string(word);
  if (line.substr(0, prefix.size()) != prefix) return false;
  std::string_view rest = line.substr(prefix.size());
  if (rest.empty() || rest[0] != ' ') return false;  // e.g. "# epochs" is a comment
  auto value = ParseDecimalU64(rest.substr(1), max, word);
  if (!value.ok()) return value.status();
  *number = *value;
  return true;
}

}  // namespace

Result<ListPlan> ListPlan::Parse(std::string_view content, std::string_view source) {
  ListPlan plan;
  std::unordered_map<std::string, uint64_t> index_of;
  uint64_t epoch = 0;
  bool epoch_has_ranks = false;
  uint32_t rank = 0;  // paths go to this rank (0 until a '# rank' line)
  uint32_t max_rank = 0;
  bool started_any_epoch = false;
  uint64_t line_number = 0;
  size_t start = 0;
  auto fail = [&](const std::string& message) {
    return Status::Invalid(std::string(source) + ":" + std::to_string(line_number) + ": " +
                           message);
  };
  while (start < content.size()) {
    size_t end = content.find('\n', start);
    if (end == std::string_view::npos) end = content.size();
    std::string_view line = content.substr(start, end - start);
    start = end + 1;
    ++line_number;
    if (line.empty()) continue;
    uint64_t number = 0;
    auto is_epoch = MatchDirective(line, "epoch", UINT64_MAX, &number);
    if (!is_epoch.ok()) return fail(is_epoch.status().message());
    if (*is_epoch) {
      if (started_any_epoch && number <= epoch) {
        return fail("epoch " + std::to_string(number) + " after epoch " + std::to_string(epoch) +
                    " (epochs must increase)");
      }
      if (!started_any_epoch && !plan.epochs_.empty() && number == 0) {
        return fail("epoch 0 given after paths that already belong to epoch 0");
      }
      epoch = number;
      started_any_epoch = true;
      epoch_has_ranks = false;
      rank = 0;
      plan.epochs_[epoch];
      continue;
    }
    auto is_rank = MatchDirective(line, "rank", kMaxListPlanRank, &number);
    if (!is_rank.ok()) return fail(is_rank.status().message());
    if (*is_rank) {
      auto& ranks = plan.epochs_[epoch];
      if (!epoch_has_ranks && ranks.count(0) != 0) {
        return fail("'# rank' after paths that have no rank in epoch " + std::to_string(epoch));
      }
      uint32_t k = static_cast<uint32_t>(number);
      if (ranks.count(k) != 0) {
        return fail("rank " + std::to_string(k) + " appears twice in epoch " +
                    std::to_string(epoch));
      }
      ranks[k];
      epoch_has_ranks = true;
      rank = k;
      if (k > max_rank) max_rank = k;
      continue;
    }
    if (line[0] == '#') continue;  // comment
    Status status = CheckRelativePath(line);
    if (!status.ok()) return fail(status.message());
    std::string path(line);
    auto [it, inserted] = index_of.emplace(path, plan.paths_.size());
    if (inserted) plan.paths_.push_back(path);
    plan.epochs_[epoch][rank].push_back(it->second);
  }
  if (plan.paths_.empty()) {
    return Status::Invalid(std::string(source) + ": the list plan names no file");
  }
  plan.world_ = max_rank + 1;
  return plan;
}

std::vector<uint64_t> ListPlan::epochs() const {
  std::vector<uint64_t> out;
  for (const auto& [epoch, ranks] : epochs_) out.push_back(epoch);
  return out;
}

std::shared_ptr<const EpochOrder> ListPlan::Epoch(uint64_t epoch) const {
  std::vector<IndexVector> per_rank(world_, IndexVector::ForMaxValue(paths_.size()));
  auto it = epochs_.find(epoch);
  if (it != epochs_.end()) {
    for (const auto& [rank, indices] : it->second) {
      for (uint64_t index : indices) per_rank[rank].push_back(index);
    }
  }
  return EpochOrder::Explicit(epoch, std::move(per_rank));
}

}  // namespace clairfs
