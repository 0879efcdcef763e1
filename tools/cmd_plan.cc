// `clairfs plan`: access plans computed from sampler seeds. `plan show` prints what one rank
// reads in one epoch, in order, as paths relative to the backing root or as sample indices.
//
// Contract: reads the backing tree (to build the layout) or the list file, never anything else;
// writes the order on stdout and warnings (links left out) on stderr. Paths are printed as escaped
// names (planner/name_escape.h), one a line, so any name survives a list file; with -0 they are
// printed raw, each ended by a NUL byte. Exit codes: 0 printed,
// 1 the backing tree could not be read (or a link cycle), 2 bad arguments or spec, including an
// unreadable list file (EINVAL).
#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/base/log.h"
#include "planner/base/name_escape.h"
#include "planner/file_tree.h"
#include "planner/layout.h"
#include "planner/plan.h"
#include "planner/plan_spec.h"
#include "tools/cli/cli.h"
#include "tools/commands.h"

namespace clairfs::cli {
namespace {

constexpr size_t kMaxWarningsShown = 20;

struct PlanShowOptions {
  std::string backing;
  std::string layout = "imagefolder";
  std::string layout_root;
  std::string plan;
  std::string epoch;
  std::string rank;
  std::string limit;
  std::string format = "paths";
  bool json = false;
  bool null = false;  // -0: raw entries, each ended by NUL
};

void ShowWarnings(const std::vector<std::string>& warnings) {
  for (size_t i = 0; i < warnings.size() && i < kMaxWarningsShown; ++i) {
    CLAIRFS_LOG_WARN("%s", warnings[i].c_str());
  }
  if (warnings.size() > kMaxWarningsShown) {
    CLAIRFS_LOG_WARN("... and %zu more links left out", warnings.size() - kMaxWarningsShown);
  }
}

int RunPlanShow(const PlanShowOptions& options) {
  const std::string command = "plan show";
  auto spec = ParsePlanSpec(options.plan);
  if (!spec.ok()) return Fail(command, spec.status());
  auto epoch = ParseDecimalU64(options.epoch, UINT64_MAX, "--epoch");
  if (!epoch.ok()) return Fail(command, epoch.status());
  uint64_t limit = UINT64_MAX;
  if (!options.limit.empty()) {
    auto parsed = ParseDecimalU64(options.limit, UINT64_MAX, "--limit");
    if (!parsed.ok()) return Fail(command, parsed.status());
    limit = *parsed;
  }
  if (options.format != "paths" && options.format != "indices") {
    return UsageError(command, "--format '" + options.format + "': expected paths or indices");
  }
  if (options.null && options.json) return UsageError(command, "-0 and --json exclude each other");

  uint32_t rank = Plan::DefaultRank(*spec);
  if (!options.rank.empty()) {
    auto parsed = ParseDecimalU64(options.rank, UINT32_MAX, "--rank");
    if (!parsed.ok()) return Fail(command, parsed.status());
    rank = static_cast<uint32_t>(*parsed);
  }

  FileTree* tree = PosixFileTreeInstance();
  std::unique_ptr<Plan> plan;
  std::optional<Layout> layout;
  if (spec->kind == SamplerKind::kList) {
    auto created = Plan::CreateFromList(*spec, tree);
    if (!created.ok()) return Fail(command, created.status());
    plan = std::move(*created);
  } else {
    if (options.backing.empty()) {
      return UsageError(command, "--backing DIR is required for " +
                                     std::string(SamplerKindName(spec->kind)) + " plans");
    }
    // Refuse a bad epoch or rank before walking the tree, which can take minutes on a PFS.
    Status bounds = Plan::CheckSamplerBounds(*spec, *epoch, rank);
    if (!bounds.ok()) return Fail(command, bounds);
    auto layout_spec = ParseLayoutSpec(options.layout, options.layout_root);
    if (!layout_spec.ok()) return Fail(command, layout_spec.status());
    auto built = BuildLayout(tree, options.backing, *layout_spec);
    if (!built.ok()) return Fail(command, built.status());
    layout = std::move(*built);
    ShowWarnings(layout->warnings());
    auto created = Plan::Create(*spec, layout->size());
    if (!created.ok()) return Fail(command, created.status());
    plan = std::move(*created);
  }

  auto indices = plan->RankIndices(*epoch, rank, limit);
  if (!indices.ok()) return Fail(command, indices.status());

  const std::vector<std::string>* list_paths = plan->list_paths();
  auto path_of = [&](uint64_t index) -> const std::string& {
    return list_paths ? (*list_paths)[index] : layout->path(index);
  };
  auto stageable = [&](uint64_t index) { return list_paths || layout->stageable(index); };
  const bool as_paths = options.format == "paths";
  uint64_t left_out = 0;

  if (options.json) {
    nlohmann::json out;
    out["plan"] = options.plan;
    out["epoch"] = *epoch;
    out["rank"] = rank;
    out["world"] = plan->world();
    out["num_samples"] = list_paths ? list_paths->size() : layout->size();
    nlohmann::json items = nlohmann::json::array();
    nlohmann::json skipped = nlohmann::json::array();
    for (uint64_t index : *indices) {
      if (!as_paths) {
        items.push_back(index);
      } else if (stageable(index)) {
        items.push_back(EscapeName(path_of(index)));
      } else {
        skipped.push_back(EscapeName(path_of(index)));
      }
    }
    out["count"] = items.size();
    out[as_paths ? "paths" : "indices"] = std::move(items);
    if (as_paths) out["left_out"] = std::move(skipped);
    // Names are escaped above; the replace handler only guards the spec text.
    std::string text = out.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
    printf("%s\n", text.c_str());
    return kExitOk;
  }

  std::string buffer;
  buffer.reserve(1 << 20);
  auto flush = [&] {
    fwrite(buffer.data(), 1, buffer.size(), stdout);
    buffer.clear();
  };
  for (uint64_t index : *indices) {
    if (!as_paths) {
      buffer += std::to_string(index);
    } else if (stageable(index)) {
      buffer += options.null ? path_of(index) : EscapeName(path_of(index));
    } else {
      ++left_out;
      continue;
    }
    buffer += options.null ? '\0' : '\n';
    if (buffer.size() >= (1 << 20)) flush();
  }
  flush();
  if (fflush(stdout) != 0) return Fail(command, Status::FromErrno(errno, "writing stdout"));
  if (left_out > 0) {
    CLAIRFS_LOG_WARN("left out %llu samples whose links lead outside the backing root",
                     static_cast<unsigned long long>(left_out));
  }
  return kExitOk;
}

}  // namespace

void RegisterPlan(CLI::App& app) {
  CLI::App* plan =
      AddCommand(&app, "plan", "Access plans: the exact file order a seeded sampler will read");
  plan->require_subcommand(1);

  auto options = std::make_shared<PlanShowOptions>();
  CLI::App* show = AddCommand(
      plan, "show",
      "Print the files (or sample indices) one rank reads in one epoch, in order.\n"
      "Paths are relative to the backing root, one per line, as escaped names (\\\\ for a\n"
      "backslash, \\xHH for any other byte that is not printable UTF-8; README \"Names with\n"
      "any bytes\"): such a list is what stage --from-file reads. -0 prints raw paths, each\n"
      "ended by a NUL byte.\n\n"
      "Plan specs (epochs are absolute, as passed to set_epoch):\n"
      "  torch-distributed:seed=S,world=R[,ranks=A-B][,drop_last=0|1][,shuffle=0|1]\n"
      "                    [,epochs=E][,start_epoch=F]   DistributedSampler + set_epoch\n"
      "  torch-random:seed=S[,epochs=E][,persistent_workers=0|1]\n"
      "                    DataLoader(shuffle=True, generator=torch.Generator().manual_seed(S))\n"
      "  numpy:seed=S[,epochs=E][,reseed=none|epoch]   RandomState(S).permutation(N) per epoch\n"
      "  numpy-rng:seed=S[,epochs=E]                   default_rng(S).permutation(N) per epoch\n"
      "  sequential[:epochs=E]                         0..N-1 every epoch\n"
      "  list:FILE      explicit order: paths, '# epoch N' and '# rank K' lines\n"
      "                 (FILE: a regular file of at most 1 GiB, read whole)\n"
      "A plan covers epochs start_epoch..epochs-1 (no end without epochs).\n\n"
      "Layouts (sample index -> file):\n"
      "  imagefolder    torchvision ImageFolder order (default)\n"
      "  sorted         every regular file, paths in byte order\n"
      "  list:FILE      line i is sample i (FILE as for list: plans)\n\n"
      "Example:\n"
      "  clairfs plan show --backing /pfs/imagenet --layout-root train \\\n"
      "      --plan torch-distributed:seed=42,world=8 --epoch 3 --rank 5 --limit 10");
  show->add_option("--backing", options->backing,
                   "Backing root of the dataset (not needed for list: plans)")
      ->type_name("DIR");
  show->add_option("--layout", options->layout,
                   "Sample numbering: imagefolder (default), sorted or list:FILE")
      ->type_name("LAYOUT");
  show->add_option("--layout-root", options->layout_root,
                   "Dataset directory below the backing root (e.g. train)")
      ->type_name("SUBDIR");
  show->add_option("--plan", options->plan, "Plan spec (see above)")->type_name("SPEC")->required();
  show->add_option("--epoch", options->epoch, "Absolute epoch number")->type_name("E")->required();
  show->add_option("--rank", options->rank,
                   "Rank to show (default 0, or the first rank of ranks=A-B)")
      ->type_name("K");
  show->add_option("--limit", options->limit, "Print at most N entries")->type_name("N");
  show->add_option("--format", options->format,
                   "paths (default) or indices (sample indices in the layout; for list: plans, "
                   "in the order paths first appear in the file)")
      ->type_name("FORMAT");
  show->add_flag("-0,--null", options->null,
                 "Print raw entries, each ended by a NUL byte (for stage --from-file LIST -0)");
  show->add_flag("--json", options->json,
                 "Print one JSON object: plan, epoch, rank, world, num_samples, count, "
                 "paths|indices, left_out");
  show->callback([options] { SetExitCode(RunPlanShow(*options)); });
  RegisterPlanDetect(plan);
  RegisterPlanLive(plan);
}

}  // namespace clairfs::cli
