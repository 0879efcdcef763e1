// libFuzzer target for list files (the `list:FILE` plan and layout forms: planner/list_plan.h and
// planner/layout.h ParsePathList), built with -DCLAIRFS_FUZZ=ON and run by .ci/fuzz. The input is
// the content of FILE, read through a FileTree that serves it from memory, so the plan and the
// layout are built as the daemon builds them. Properties:
//   - a refused file gets EINVAL with a message that starts with the file's name and a line;
//   - an accepted list plan names plain relative paths (no NUL: no file has one) once each, a world
//   of at most
//     kMaxListPlanRank + 1 ranks, and written out again (`# epoch`, `# rank`, paths) parses to the
//     same epochs, world and per-rank paths; Plan::CreateFromList gives the same orders;
//   - an accepted list layout is its lines (below --layout-root when given), each a plain
//     relative path, and its lines joined again parse to the same paths.
#include <cerrno>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "planner/layout.h"
#include "planner/list_plan.h"
#include "planner/plan.h"
#include "planner/tree_walk.h"

namespace {

using namespace clairfs;

constexpr char kListName[] = "fuzz.list";
// Epochs whose orders are compared: a file may name many, each with up to 65536 ranks.
constexpr size_t kEpochsChecked = 8;

// A tree holding one file, kListName, with the fuzzer's input; nothing else exists.
class OneFileTree : public FileTree {
 public:
  explicit OneFileTree(std::string_view content) : content_(content) {}
  Status ListDir(const std::string& dir, std::vector<TreeEntry>*) override {
    return Status::Error(ENOENT, dir);
  }
  Status StatFollow(const std::string&, FollowedStat* stat, int* error) override {
    stat->exists = false;
    *error = ENOENT;
    return Status::Ok();
  }
  Result<std::string> RealPath(const std::string& path) override {
    return Status::Error(ENOENT, path);
  }
  Result<std::string> ReadFile(const std::string& path, uint64_t max_bytes) override {
    if (path != kListName) return Status::Error(ENOENT, path);
    if (content_.size() > max_bytes) return Status::Error(EFBIG, path);
    return std::string(content_);
  }

 private:
  std::string_view content_;
};

bool IsLineError(const Status& status) {
  return status.code() == EINVAL && status.message().rfind(kListName, 0) != std::string::npos;
}

using RankPaths = std::map<uint32_t, std::vector<std::string>>;  // non-empty ranks only

// The paths each rank of `epoch` reads, by name.
RankPaths PathsOf(const ListPlan& plan, uint64_t epoch) {
  RankPaths out;
  auto order = plan.Epoch(epoch);
  if (order->world() != plan.world()) __builtin_trap();
  for (uint32_t rank = 0; rank < plan.world(); ++rank) {
    for (uint64_t index : order->RankIndices(rank)) {
      if (index >= plan.paths().size()) __builtin_trap();
      out[rank].push_back(plan.paths()[index]);
    }
  }
  return out;
}

// `plan` written out as a list file: every epoch, its non-empty ranks, and the highest rank of
// the world once (so that the world is the same).
std::string WriteOut(const ListPlan& plan) {
  std::string out;
  bool top_rank_written = false;
  for (uint64_t epoch : plan.epochs()) {
    out += "# epoch " + std::to_string(epoch) + "\n";
    RankPaths ranks = PathsOf(plan, epoch);
    if (!top_rank_written) ranks[plan.world() - 1];  // empty unless it reads something
    top_rank_written = true;
    for (const auto& [rank, paths] : ranks) {
      out += "# rank " + std::to_string(rank) + "\n";
      for (const std::string& path : paths) out += path + "\n";
    }
  }
  return out;
}

void CheckListPlan(std::string_view content) {
  Result<ListPlan> plan = ListPlan::Parse(content, kListName);
  if (!plan.ok()) {
    if (!IsLineError(plan.status())) __builtin_trap();
    return;
  }
  if (plan->paths().empty() || plan->world() == 0 || plan->world() > kMaxListPlanRank + 1) {
    __builtin_trap();
  }
  std::set<std::string> unique;
  for (const std::string& path : plan->paths()) {
    if (!CheckRelativePath(path).ok() || path.find('\0') != std::string::npos ||
        !unique.insert(path).second) {
      __builtin_trap();
    }
  }
  const std::string written = WriteOut(*plan);
  Result<ListPlan> again = ListPlan::Parse(written, kListName);
  if (!again.ok() || again->world() != plan->world() || again->epochs() != plan->epochs()) {
    __builtin_trap();
  }
  OneFileTree tree(content);
  PlanSpec spec;
  spec.kind = SamplerKind::kList;
  spec.list_file = kListName;
  Result<std::unique_ptr<Plan>> from_spec = Plan::CreateFromList(spec, &tree);
  if (!from_spec.ok() || (*from_spec)->world() != plan->world() ||
      *(*from_spec)->list_paths() != plan->paths()) {
    __builtin_trap();
  }
  size_t checked = 0;
  for (uint64_t epoch : plan->epochs()) {
    if (checked++ == kEpochsChecked) break;
    if (PathsOf(*again, epoch) != PathsOf(*plan, epoch)) __builtin_trap();
    auto order = plan->Epoch(epoch);
    for (uint32_t rank = 0; rank < plan->world() && rank < 64; ++rank) {
      auto indices = (*from_spec)->RankIndices(epoch, rank);
      if (!indices.ok() || *indices != order->RankIndices(rank)) __builtin_trap();
    }
  }
}

void CheckListLayout(std::string_view content) {
  Result<std::vector<std::string>> lines = ParsePathList(content, kListName);
  OneFileTree tree(content);
  for (const char* root : {"", "train"}) {
    Result<LayoutSpec> spec = ParseLayoutSpec(std::string("list:") + kListName, root);
    if (!spec.ok()) __builtin_trap();
    Result<Layout> layout = BuildLayout(&tree, "/backing", *spec);
    if (!lines.ok() || lines->empty()) {
      if (layout.ok() || layout.status().code() != EINVAL) __builtin_trap();
      continue;
    }
    if (!layout.ok() || layout->size() != lines->size()) __builtin_trap();
    for (uint64_t i = 0; i < layout->size(); ++i) {
      const std::string expected = *root == '\0' ? (*lines)[i] : JoinRel(root, (*lines)[i]);
      if (layout->path(i) != expected || !layout->stageable(i)) __builtin_trap();
    }
  }
  if (!lines.ok()) {
    if (!IsLineError(lines.status())) __builtin_trap();
    return;
  }
  std::string joined;
  for (const std::string& line : *lines) {
    if (!CheckRelativePath(line).ok() || line.find('\n') != std::string::npos ||
        line.find('\0') != std::string::npos) {
      __builtin_trap();
    }
    joined += line + "\n";
  }
  Result<std::vector<std::string>> again = ParsePathList(joined, kListName);
  if (!again.ok() || *again != *lines) __builtin_trap();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view content(reinterpret_cast<const char*>(data), size);
  CheckListPlan(content);
  CheckListLayout(content);
  return 0;
}
