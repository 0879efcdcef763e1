// `clairfs simulate`: replays a plan against a cache of a given capacity under each eviction
// policy, without mounting, and prints per-epoch hits, misses and backing-store bytes (the tool
// for sizing node-local storage). The dataset is a backing tree (its layout and file sizes) or a
// synthetic imagefolder dataset (--files N --sizes SPEC, as `clairfs bench make-dataset`).
//
// Contract: reads the backing tree (walk + one stat per file) or nothing; writes only stdout.
// Sizes are rounded up to 4 KiB blocks, as the cache counts allocated blocks. The heat policy
// needs Darshan logs (--heat), read and mapped onto the dataset's paths as `clairfs darshan
// import` maps them. Exit codes: 0 ok, 1 the tree or a log could not be read, 2 bad arguments.
#include <sys/stat.h>

#include <cstdio>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/base/units.h"
#include "planner/cache_simulator.h"
#include "planner/file_tree.h"
#include "planner/heat.h"
#include "planner/layout.h"
#include "planner/plan.h"
#include "planner/plan_spec.h"
#include "planner/synthetic_dataset.h"
#include "tools/cli/cli.h"
#include "tools/cmd_simulate_cluster.h"
#include "tools/commands.h"

namespace clairfs::cli {
namespace {

constexpr uint64_t kBlock = 4096;
constexpr uint64_t kDefaultEpochs = 3;

struct SimulateArgs : SimulateDatasetArgs {
  std::string policy = "all";
  std::vector<std::string> heat_inputs;
  std::string heat_strip_prefix;
  bool stage_hot = false;
};

// Node order of one epoch: for each position, each served rank.
std::vector<uint32_t> NodeOrder(const EpochOrder& order, uint32_t first_rank, uint32_t last_rank) {
  std::vector<uint32_t> out;
  uint64_t longest = 0;
  for (uint32_t r = first_rank; r <= last_rank; ++r) longest = std::max(longest, order.RankSize(r));
  for (uint64_t p = 0; p < longest; ++p) {
    for (uint32_t r = first_rank; r <= last_rank; ++r) {
      if (p < order.RankSize(r)) out.push_back(static_cast<uint32_t>(order.At(r, p)));
    }
  }
  return out;
}

// One policy's per-epoch results as JSON rows.
nlohmann::json RowsJson(const std::vector<SimEpochResult>& results) {
  nlohmann::json rows = nlohmann::json::array();
  for (const SimEpochResult& r : results) {
    rows.push_back({{"epoch", r.epoch},
                    {"accesses", r.accesses},
                    {"hits", r.hits},
                    {"misses", r.misses},
                    {"backing_bytes", r.backing_bytes}});
  }
  return rows;
}

// Reads the Darshan logs of --heat, maps their paths onto the dataset's (as `clairfs darshan
// import` does: --strip-prefix, or the detected prefix) and fills heat per byte by file index.
// Returns a summary for the report.
Result<nlohmann::json> LoadSimHeat(const SimulateArgs& a, const std::vector<std::string>& paths,
                                   SimHeat* sim_heat) {
  std::unordered_map<std::string, uint32_t> index_of;
  index_of.reserve(paths.size());
  for (uint32_t i = 0; i < paths.size(); ++i) index_of.emplace(paths[i], i);
  HeatOptions options;
  options.strip_prefix = a.heat_strip_prefix;
  // The dataset's own paths decide what matches (and the detected prefix), with no stat: a
  // synthetic dataset has no tree, and the layout may leave out files that exist.
  options.exists = [&](const std::string& rel) { return index_of.count(rel) != 0; };
  auto table = LoadHeat(a.heat_inputs, options);
  if (!table.ok()) return table.status().WithContext("--heat");
  sim_heat->heat_per_byte.assign(paths.size(), 0.0);
  sim_heat->stage_hot = a.stage_hot;
  size_t with_heat = 0;
  for (const HeatRecord& r : table->files) {
    auto it = index_of.find(r.path);
    if (it == index_of.end() || !(r.heat_per_byte > 0)) continue;
    sim_heat->heat_per_byte[it->second] = r.heat_per_byte;
    ++with_heat;
  }
  return nlohmann::json{{"logs", table->logs},
                        {"files_with_heat", with_heat},
                        {"unmatched_paths", table->unmatched_paths},
                        {"prefix", table->prefix},
                        {"stage_hot", a.stage_hot}};
}

int RunSimulate(const SimulateArgs& a) {
  const std::string command = "simulate";
  if (a.backing.empty() == (a.files == 0)) {
    return UsageError(command, "give either --backing DIR or --files N --sizes SPEC");
  }
  auto spec = ParsePlanSpec(a.plan);
  if (!spec.ok()) return Fail(command, spec.status());
  if (a.capacity.empty()) {
    return UsageError(command, "--capacity SIZE is required (or --nodes N --node-capacity SIZE)");
  }
  auto capacity = ParseSize(a.capacity);
  if (!capacity.ok()) return Fail(command, capacity.status().WithContext("--capacity"));
  std::vector<SimPolicy> policies;
  bool heat = false;
  if (a.policy == "all") {
    policies = {SimPolicy::kLru, SimPolicy::kPlan, SimPolicy::kBelady};
    heat = !a.heat_inputs.empty();
  } else if (a.policy == "lru") {
    policies = {SimPolicy::kLru};
  } else if (a.policy == "plan") {
    policies = {SimPolicy::kPlan};
  } else if (a.policy == "belady") {
    policies = {SimPolicy::kBelady};
  } else if (a.policy == "heat") {
    if (a.heat_inputs.empty()) {
      return UsageError(command, "--policy heat needs Darshan logs: --heat LOG|DIR...");
    }
    heat = true;
  } else {
    return UsageError(command,
                      "--policy '" + a.policy + "': expected lru, plan, belady, heat or all");
  }
  uint64_t epochs = a.epochs;
  if (epochs == 0) epochs = spec->end_epoch ? *spec->end_epoch - spec->start_epoch : kDefaultEpochs;
  if (spec->end_epoch && spec->start_epoch + epochs > *spec->end_epoch) {
    return UsageError(command, "--epochs " + std::to_string(epochs) + " goes past the plan's " +
                                   "epochs=" + std::to_string(*spec->end_epoch));
  }

  // File sizes by file index, and the plan.
  std::vector<uint64_t> sizes;
  std::vector<std::string> paths;  // by file index, relative to the dataset root
  std::unique_ptr<Plan> plan;
  FileTree* tree = PosixFileTreeInstance();
  auto stat_size = [&](const std::string& rel) -> uint64_t {
    struct stat st;
    if (stat((a.backing + "/" + rel).c_str(), &st) != 0) return 0;
    return static_cast<uint64_t>(st.st_size);
  };
  if (spec->kind == SamplerKind::kList) {
    if (a.backing.empty()) return UsageError(command, "list: plans need --backing");
    auto created = Plan::CreateFromList(*spec, tree);
    if (!created.ok()) return Fail(command, created.status());
    plan = std::move(*created);
    for (const std::string& path : *plan->list_paths()) {
      sizes.push_back(stat_size(path));
      paths.push_back(path);
    }
  } else if (!a.backing.empty()) {
    auto layout_spec = ParseLayoutSpec(a.layout, a.layout_root);
    if (!layout_spec.ok()) return Fail(command, layout_spec.status());
    auto layout = BuildLayout(tree, a.backing, *layout_spec);
    if (!layout.ok()) return Fail(command, layout.status());
    for (uint64_t i = 0; i < layout->size(); ++i) {
      sizes.push_back(stat_size(layout->path(i)));
      paths.push_back(layout->path(i));
    }
    auto created = Plan::Create(*spec, layout->size());
    if (!created.ok()) return Fail(command, created.status());
    plan = std::move(*created);
  } else {
    if (a.sizes.empty()) return UsageError(command, "--files needs --sizes SPEC");
    auto model = ParseSyntheticSizes(a.sizes);
    if (!model.ok()) return Fail(command, model.status().WithContext("--sizes"));
    SyntheticSpec synthetic;
    synthetic.layout = model->kind == SyntheticSizes::Kind::kShards ? SyntheticLayout::kShards
                                                                    : SyntheticLayout::kImageFolder;
    synthetic.files = a.files;
    synthetic.sizes = *model;
    synthetic.seed = a.seed;
    auto files = PlanSyntheticDataset(synthetic);
    if (!files.ok()) return Fail(command, files.status());
    // Synthetic names sort in index order, so ImageFolder (and sorted) number them 0..N-1.
    for (const SyntheticFile& f : *files) {
      sizes.push_back(f.size);
      paths.push_back(f.relpath);
    }
    auto created = Plan::Create(*spec, sizes.size());
    if (!created.ok()) return Fail(command, created.status());
    plan = std::move(*created);
  }
  if (sizes.size() >= UINT32_MAX) return UsageError(command, "too many files to simulate");
  if (a.stage_hot && !heat) return UsageError(command, "--stage-hot goes with --heat");
  uint64_t dataset_bytes = 0;
  for (uint64_t& s : sizes) {
    s = (s + kBlock - 1) / kBlock * kBlock;
    dataset_bytes += s;
  }

  SimTrace trace;
  for (uint64_t e = spec->start_epoch; e < spec->start_epoch + epochs; ++e) {
    auto order = plan->Epoch(e);
    if (!order.ok()) return Fail(command, order.status());
    trace.epochs.push_back(e);
    trace.accesses.push_back(NodeOrder(**order, plan->first_rank(), plan->last_rank()));
  }

  SimHeat sim_heat;
  nlohmann::json heat_report;
  if (heat) {
    auto loaded = LoadSimHeat(a, paths, &sim_heat);
    if (!loaded.ok()) return Fail(command, loaded.status());
    heat_report = *loaded;
  }

  nlohmann::json out;
  out["plan"] = a.plan;
  out["capacity_bytes"] = *capacity;
  out["dataset_files"] = sizes.size();
  out["dataset_bytes"] = dataset_bytes;
  out["ranks"] = {plan->first_rank(), plan->last_rank()};
  nlohmann::json results = nlohmann::json::object();
  for (SimPolicy policy : policies) {
    results[SimPolicyName(policy)] = RowsJson(SimulateCache(trace, sizes, *capacity, policy));
  }
  if (heat) {
    results["heat"] = RowsJson(SimulateHeatCache(trace, sizes, *capacity, sim_heat));
    out["heat"] = heat_report;
  }
  out["policies"] = results;

  if (a.json) {
    printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  printf("plan %s over %zu files (%s), cache %s (%.0f%% of the dataset), sizes in 4 KiB blocks\n",
         a.plan.c_str(), sizes.size(), FormatBytes(dataset_bytes).c_str(),
         FormatBytes(*capacity).c_str(),
         dataset_bytes ? 100.0 * static_cast<double>(*capacity) / dataset_bytes : 0.0);
  printf("%-7s %6s %10s %10s %10s %7s %12s\n", "policy", "epoch", "accesses", "hits", "misses",
         "hit%", "backing");
  for (auto& [name, rows] : results.items()) {
    for (const auto& r : rows) {
      uint64_t accesses = r["accesses"], hits = r["hits"];
      printf("%-7s %6llu %10llu %10llu %10llu %6.1f%% %12s\n", name.c_str(),
             static_cast<unsigned long long>(r["epoch"].get<uint64_t>()),
             static_cast<unsigned long long>(accesses), static_cast<unsigned long long>(hits),
             static_cast<unsigned long long>(r["misses"].get<uint64_t>()),
             accesses ? 100.0 * static_cast<double>(hits) / static_cast<double>(accesses) : 0.0,
             FormatBytes(r["backing_bytes"].get<uint64_t>()).c_str());
    }
  }
  if (heat) {
    const std::string prefix = heat_report["prefix"].get<std::string>();
    printf("heat: %zu logs, %zu dataset files with heat, %zu paths not in the dataset%s%s\n",
           heat_report["logs"].get<size_t>(), heat_report["files_with_heat"].get<size_t>(),
           heat_report["unmatched_paths"].get<size_t>(),
           prefix.empty() ? "" : (", prefix " + prefix).c_str(),
           a.stage_hot ? "; stage --hot --fit before the first epoch (in its backing bytes)" : "");
  }
  printf(
      "plan assumes staging keeps up with the reader (its misses are a lower bound); belady is "
      "demand-paging MIN without prefetch\n");
  return kExitOk;
}

}  // namespace

void RegisterSimulate(CLI::App& app) {
  auto a = std::make_shared<SimulateArgs>();
  auto cluster = std::make_shared<ClusterSimulateArgs>();
  CLI::App* cmd = AddCommand(
      &app, "simulate",
      "Replay an access plan against a cache of a given capacity, without mounting: per-epoch "
      "hits, misses and backing-store bytes for lru (read-through), plan (prefetch + evict by "
      "next planned use), belady (demand-paging MIN, the reference) and, given Darshan logs of "
      "earlier runs (--heat), heat (the mount's policy without a plan: keep the hottest files "
      "per byte).\n\n"
      "With --nodes N it simulates a whole job instead (docs/SIMULATOR.md): N nodes, each serving "
      "--ranks-per-node ranks of the plan with a cache of --node-capacity, over one PFS whose "
      "bandwidth and opens per second they share, and prints per epoch and placement (--placement: "
      "none = each node alone, nopfs = NoPFS's, clairfs = the peer tier's) the bytes from the "
      "PFS, from peers and from local copies, hit ratios and the readers' stall time. There, "
      "--node-capacity replaces --capacity (it is per node), the eviction inside each node is the "
      "mount's plan policy (--policy plan, the only one), and --placement is the choice across "
      "nodes.\n\n"
      "Example:\n"
      "  clairfs simulate --files 100000 --sizes imagenet \\\n"
      "      --plan torch-distributed:seed=42,world=8 --capacity 5G --epochs 3\n"
      "  clairfs simulate --backing /lustre/imagenet --plan torch-distributed:seed=42,world=8 \\\n"
      "      --capacity 800G --heat /lustre/darshan-logs/2026/11 --stage-hot\n"
      "  clairfs simulate --nodes 1024 --files 14200000 --sizes imagenet22k \\\n"
      "      --plan torch-distributed:seed=42,world=8192 --node-capacity 1.5G \\\n"
      "      --pfs-bandwidth 100000 --epochs 4");
  cmd->add_option("--backing", a->backing, "Backing root of the dataset")->type_name("DIR");
  cmd->add_option("--files", a->files, "Synthetic imagefolder dataset of N files")
      ->type_name("N")
      ->transform(Count(1, kMaxSyntheticFiles));
  cmd->add_option("--sizes", a->sizes,
                  "Synthetic size model: imagenet (ImageNet-1k-like, mean ~144 KB), imagenet22k "
                  "(mean ~92 KB), fixed:SIZE or shards:COUNTxSIZE")
      ->type_name("SPEC");
  cmd->add_option("--seed", a->seed, "Seed of the synthetic sizes (default 0)")
      ->type_name("S")
      ->transform(Count(0, UINT64_MAX));
  cmd->add_option("--layout", a->layout,
                  "imagefolder (default), sorted or list:FILE (a regular file of at most 1 GiB)")
      ->type_name("LAYOUT");
  cmd->add_option("--layout-root", a->layout_root, "Dataset directory below the backing root")
      ->type_name("SUBDIR");
  cmd->add_option("--plan", a->plan, "Plan spec (see clairfs plan show --help)")
      ->type_name("SPEC")
      ->required();
  cmd->add_option("--capacity", a->capacity,
                  "Cache capacity of the one node (e.g. 800G); required without --nodes, refused "
                  "with it (use --node-capacity)")
      ->type_name("SIZE");
  CLI::Option* policy =
      cmd->add_option("--policy", a->policy,
                      "Eviction inside the node: lru, plan, belady, heat or all (default); with "
                      "--nodes only plan, the mount's (the default there)")
          ->type_name("POLICY");
  cmd->add_option("--epochs", a->epochs,
                  "Epochs to replay from start_epoch (default: the plan's, else 3)")
      ->type_name("E")
      ->transform(Count(1, 1'000'000));
  cmd->add_option("--heat", a->heat_inputs,
                  "Darshan logs of earlier runs, or directories of *.darshan files, for the heat "
                  "policy (included in --policy all when given)")
      ->type_name("LOG|DIR");
  cmd->add_option("--strip-prefix", a->heat_strip_prefix,
                  "With --heat: the PFS prefix of the logs' paths above the dataset root "
                  "(default: detected)")
      ->type_name("PREFIX");
  cmd->add_flag("--stage-hot", a->stage_hot,
                "With --heat: run `clairfs stage --hot --fit` before the first epoch");
  cmd->add_flag("--json", a->json, "Print one JSON object");
  // The cluster model (docs/SIMULATOR.md).
  CLI::Option* nodes =
      cmd->add_option("--nodes", cluster->nodes,
                      "Simulate a job of N nodes (the cluster model) instead of one node's cache")
          ->type_name("N")
          ->transform(Count(0, 1'000'000));
  cmd->add_option(
         "--ranks-per-node", cluster->ranks_per_node,
         "With --nodes: ranks each node serves, rank r on node r / G; the plan's world must "
         "be N x G (default: world / N)")
      ->type_name("G")
      ->transform(Count(1, 1'000'000));
  cmd->add_option("--node-capacity", cluster->node_capacity,
                  "With --nodes (required): cache capacity of each node, a size (800G) or a share "
                  "of the dataset's bytes per node (30%)")
      ->type_name("SIZE|P%");
  cmd->add_option("--pfs-bandwidth", cluster->pfs_bandwidth,
                  "With --nodes (required): PFS bandwidth shared by all nodes, MB/s (decimal; 0 or "
                  "unlimited: no limit)")
      ->type_name("MB/s");
  cmd->add_option("--pfs-open-latency", cluster->pfs_open_latency,
                  "With --nodes: ms a reader waits per open at the PFS (default 1)")
      ->type_name("MS");
  cmd->add_option("--pfs-metadata-ops", cluster->pfs_metadata_ops,
                  "With --nodes: opens per second the PFS's metadata servers serve, all nodes "
                  "together (default 100000; 0 or unlimited: no limit)")
      ->type_name("N");
  cmd->add_option("--net-bandwidth", cluster->net_bandwidth,
                  "With --nodes: network bandwidth into each node, MB/s (default 12500, 100 Gb/s; "
                  "0 or unlimited: no limit)")
      ->type_name("MB/s");
  cmd->add_option("--nvme-bandwidth", cluster->nvme_bandwidth,
                  "With --nodes: local read bandwidth of each node's cache, MB/s (default 3000; 0 "
                  "or unlimited: no limit)")
      ->type_name("MB/s");
  cmd->add_option("--work-ms", cluster->work_ms,
                  "With --nodes: compute per sample, ms; reads overlap it (default 0)")
      ->type_name("W");
  cmd->add_option("--copy-ms", cluster->copy_ms,
                  "With --nodes: ms a node's stager spends per copy it publishes (write, fsync, "
                  "rename, index), one copy at a time (default 0: no per-copy cost)")
      ->type_name("MS");
  cmd->add_option("--setup-s", cluster->setup_s,
                  "With --nodes: seconds the nodes stage before the first read, from the PFS "
                  "alone (a mount stages from the moment it is mounted); 'bench': each bench "
                  "mode's measured setup phase, median over --compare's runs (default 0)")
      ->type_name("S|bench");
  cmd->add_option("--mount-s", cluster->mount_s,
                  "With --nodes and --setup-s: seconds each node's mount takes, one after another "
                  "(as the bench mounts its nodes): node i stages from (i+1) x this into the "
                  "setup; 'bench': the bench baseline's setup (mounts only) / nodes, median over "
                  "--compare's runs (default 0: every node stages from the start)")
      ->type_name("S|bench");
  cmd->add_option("--cores", cluster->cores,
                  "With --nodes: CPU cores all nodes share (the live bench's one machine); the "
                  "readers' opens take them first (see --reader-share), the stagers what is left "
                  "(default unlimited: CPU costs no time)")
      ->type_name("N");
  cmd->add_option("--reader-share", cluster->reader_share,
                  "With --nodes and --cores: the share of the cores the readers get while "
                  "stagers wait for CPU, as a fair scheduler splits them (default 1: the readers "
                  "first)")
      ->type_name("F");
  cmd->add_option("--open-cpu-ms", cluster->open_cpu_ms,
                  "With --nodes and --cores: CPU ms per reader open, hit or miss (default 0)")
      ->type_name("MS");
  cmd->add_option("--copy-cpu-ms", cluster->copy_cpu_ms,
                  "With --nodes and --cores: CPU ms per copy staged from the PFS (default 0)")
      ->type_name("MS");
  cmd->add_option("--transfer-cpu-ms", cluster->transfer_cpu_ms,
                  "With --nodes and --cores: CPU ms per copy pulled from a peer, both agents and "
                  "the publish (default 0)")
      ->type_name("MS");
  cmd->add_option("--digest-cpu-ms", cluster->digest_cpu_ms,
                  "With --nodes and --cores: CPU ms more per PFS copy on the clairfs placement's "
                  "mounts, which have a peer key (SHA-256 digest and HMAC; default 0)")
      ->type_name("MS");
  cmd->add_flag("--peer-window", cluster->peer_window,
                "With --nodes: clairfs's copies from peers may go beyond the prefetch depth, "
                "evicting copies of later use, as the live peer window lets them (default off)");
  cmd->add_option("--reader-threads", cluster->reader_threads,
                  "With --nodes: files each rank's reader has in flight at once (a DataLoader's "
                  "workers; `clairfs bench peers --threads`, 2 by default): the PFS open "
                  "latency of its misses overlaps, each costing the latency / K (default 1)")
      ->type_name("K");
  cmd->add_option("--sync", cluster->sync,
                  "With --nodes: how the nodes' readers keep pace. step (the default): every rank "
                  "reads its next file together, a step as long as the slowest node's, as "
                  "synchronous training's iterations; epoch: each node reads at its own pace, "
                  "the nodes still reading sharing the PFS and the cores, and all wait for the "
                  "last at an epoch's end, as `clairfs bench peers` reads")
      ->type_name("step|epoch");
  cmd->add_flag("--queued-wants", cluster->queued_wants,
                "With --nodes: a want the agent cannot take yet (its transfers in flight or its "
                "daemon calls spent) waits in the node's queue while the stager goes on to the "
                "PFS copies behind it, as the live prefetcher queues its whole window (default "
                "off: the stager stops at it)");
  cmd->add_option("--transfer-ms", cluster->transfer_ms,
                  "With --nodes: ms from asking a peer for a copy to its publish; a reader that "
                  "comes first misses and reads the PFS (default 0: at once)")
      ->type_name("MS");
  cmd->add_option("--transfers-in-flight", cluster->transfers_in_flight,
                  "With --nodes and --transfer-ms: peer transfers a node has in flight at once "
                  "(the live agent: 8 per peer; default 0: unlimited)")
      ->type_name("N");
  cmd->add_option("--transfer-slot-ms", cluster->transfer_slot_ms,
                  "With --nodes and --transfer-ms: ms a transfer holds its in-flight slot, as "
                  "the live agent frees it when the bytes are in, before the publish (at most "
                  "--transfer-ms; default 0: until the copy arrives)")
      ->type_name("MS");
  cmd->add_option("--refusal-ms", cluster->refusal_ms,
                  "With --nodes and --transfer-ms: clairfs asks the home for every file of "
                  "another home; a home with no copy refuses after this many ms, holding a slot, "
                  "and the asker stages the file from the PFS (measured live: wants."
                  "failure_ms_mean in `clairfs status --json`; default 0: the home stages it for "
                  "the asker)")
      ->type_name("MS");
  cmd->add_option("--agent-call-ms", cluster->agent_call_ms,
                  "With --nodes: clairfs's agent makes its daemon calls one at a time, each "
                  "taking this many ms; a transfer costs its asker's agent 2 calls and its home's "
                  "1, a refusal 1 each, and an agent still busy with them takes no want "
                  "(measured live: the agent's daemon_call_ms over its calls in `clairfs status "
                  "--json`; default 0: calls take no time)")
      ->type_name("MS");
  cmd->add_option("--pfs-copy-ms", cluster->pfs_copy_ms,
                  "With --nodes: ms from a stager starting a PFS copy to its publish; a reader "
                  "that reaches the file first misses and reads the PFS while the copy goes on, "
                  "as a live copy that loses the race does (default 0: a copy is there at once)")
      ->type_name("MS");
  cmd->add_option("--leave-to-reader-ms", cluster->leave_to_reader_ms,
                  "With --nodes: a PFS copy the reader would reach within this many ms (at its "
                  "pace so far) is left to it, as the live prefetcher leaves what it reaches "
                  "within twice a copy's time (default 0: none); `measured`: twice the copy "
                  "time each node's stager measures, as live: --pfs-copy-ms while it has PFS "
                  "copies in flight, halved for each 50 ms with none")
      ->type_name("MS");
  cmd->add_option("--placement", cluster->placement,
                  "With --nodes: what nodes keep for each other: none, nopfs, clairfs or all "
                  "(default)")
      ->type_name("PLACEMENT");
  cmd->add_option(
         "--compare", cluster->compare,
         "With --nodes: the JSON of `clairfs bench peers --json` runs of the same job (one "
         "or more), their median printed beside the model epoch by epoch with the runs' "
         "spread (baseline beside none, peers beside clairfs)")
      ->type_name("BENCH.json");
  cmd->callback([a, cluster, nodes, policy] {
    if (nodes->count() == 0) {
      SetExitCode(RunSimulate(*a));
      return;
    }
    ClusterSimulateArgs c = *cluster;
    static_cast<SimulateDatasetArgs&>(c) = *a;
    c.policy = policy->count() ? a->policy : "";
    c.heat = !a->heat_inputs.empty() || a->stage_hot;
    SetExitCode(RunSimulateCluster(c));
  });
}

}  // namespace clairfs::cli
