// `clairfs simulate --nodes N` (see cmd_simulate_cluster.h and docs/SIMULATOR.md).
#include "tools/cmd_simulate_cluster.h"

#include <sys/stat.h>

#include <charconv>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <sstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/base/units.h"
#include "planner/cluster/cluster_model.h"
#include "planner/cluster/cluster_simulator.h"
#include "planner/file_tree.h"
#include "planner/layout.h"
#include "planner/plan.h"
#include "planner/plan_spec.h"
#include "planner/synthetic_dataset.h"
#include "tools/cli/cli.h"
#include "tools/cli/progress_meter.h"
#include "tools/simulate_compare.h"

namespace clairfs::cli {
namespace {

constexpr uint64_t kClusterBlock = 4096;
constexpr uint64_t kClusterDefaultEpochs = 3;
const char* const kSimulateClusterCommand = "simulate";

// A non-negative decimal number ("12", "0.5"), nothing else.
Result<double> ParseDecimal(const std::string& text, const std::string& flag) {
  double value = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, value, std::chars_format::fixed);
  if (text.empty() || ec != std::errc() || ptr != end || !(value >= 0) || std::isinf(value)) {
    return Status::Invalid(flag + " '" + text + "': expected a non-negative decimal number");
  }
  return value;
}

// MB/s (decimal) as bytes/s; "unlimited" or 0 is unlimited (as the PFS emulator's 0).
Result<double> ParseRate(const std::string& text, const std::string& flag, double unit) {
  if (text == "unlimited") return kUnlimited;
  auto value = ParseDecimal(text, flag);
  if (!value.ok()) return value.status();
  return *value == 0 ? kUnlimited : *value * unit;
}

// "800G" per node, or "P%" of the dataset's bytes per node.
Result<uint64_t> ParseNodeCapacity(const std::string& text, uint64_t dataset_bytes) {
  if (!text.empty() && text.back() == '%') {
    auto percent = ParseDecimal(text.substr(0, text.size() - 1), "--node-capacity");
    if (!percent.ok()) return percent.status();
    return static_cast<uint64_t>(
        std::llround(*percent / 100.0 * static_cast<double>(dataset_bytes)));
  }
  auto size = ParseSize(text);
  if (!size.ok()) return size.status().WithContext("--node-capacity");
  return *size;
}

struct Dataset {
  std::vector<uint64_t> sizes;  // by file index, in 4 KiB blocks
  uint64_t bytes = 0;
  std::unique_ptr<Plan> plan;
};

// The sizes (no names kept: 8 bytes per file) and the global plan, as `simulate` builds them.
Result<Dataset> LoadDataset(const ClusterSimulateArgs& a, const PlanSpec& spec) {
  Dataset d;
  FileTree* tree = PosixFileTreeInstance();
  auto stat_size = [&](const std::string& rel) -> uint64_t {
    struct stat st;
    if (stat((a.backing + "/" + rel).c_str(), &st) != 0) return 0;
    return static_cast<uint64_t>(st.st_size);
  };
  if (spec.kind == SamplerKind::kList) {
    if (a.backing.empty()) return Status::Invalid("list: plans need --backing");
    auto created = Plan::CreateFromList(spec, tree);
    if (!created.ok()) return created.status();
    d.plan = std::move(*created);
    for (const std::string& path : *d.plan->list_paths()) d.sizes.push_back(stat_size(path));
  } else if (!a.backing.empty()) {
    auto layout_spec = ParseLayoutSpec(a.layout, a.layout_root);
    if (!layout_spec.ok()) return layout_spec.status();
    auto layout = BuildLayout(tree, a.backing, *layout_spec);
    if (!layout.ok()) return layout.status();
    for (uint64_t i = 0; i < layout->size(); ++i) d.sizes.push_back(stat_size(layout->path(i)));
  } else {
    if (a.sizes.empty()) return Status::Invalid("--files needs --sizes SPEC");
    auto model = ParseSyntheticSizes(a.sizes);
    if (!model.ok()) return model.status().WithContext("--sizes");
    const uint64_t count =
        model->kind == SyntheticSizes::Kind::kShards ? model->shard_count : a.files;
    d.sizes.resize(count);
    for (uint64_t i = 0; i < count; ++i) d.sizes[i] = SyntheticSizeOf(*model, a.seed, i);
  }
  if (d.sizes.size() >= UINT32_MAX) return Status::Invalid("too many files to simulate");
  if (!d.plan) {
    auto created = Plan::Create(spec, d.sizes.size());
    if (!created.ok()) return created.status();
    d.plan = std::move(*created);
  }
  for (uint64_t& s : d.sizes) {
    s = (s + kClusterBlock - 1) / kClusterBlock * kClusterBlock;
    d.bytes += s;
  }
  return d;
}

nlohmann::json EpochJson(const ClusterEpochResult& e, uint64_t dataset_bytes) {
  nlohmann::json row = {{"reads", e.reads},
                        {"local_hits", e.local_hits},
                        {"peer_reads", e.peer_reads},
                        {"pfs_reads", e.pfs_reads},
                        {"local_hit_ratio", e.LocalHitRatio()},
                        {"local_bytes", e.local_bytes},
                        {"pfs_bytes", e.pfs_bytes},
                        {"pfs_opens", e.pfs_opens},
                        {"pfs_bytes_of_dataset",
                         dataset_bytes ? static_cast<double>(e.pfs_bytes) / dataset_bytes : 0.0},
                        {"peer_bytes", e.peer_bytes},
                        {"staged_files", e.staged_files},
                        {"late_transfers", e.late_transfers},
                        {"late_copies", e.late_copies},
                        {"time_s", e.time},
                        {"stall_s", e.stall}};
  if (e.refused_wants > 0) row["refused_wants"] = e.refused_wants;  // only with --refusal-ms
  // The local misses by cause, named as a live mount's status names them (docs/ADMIN.md).
  const ClusterEpochResult::MissCauses c = e.MissesByCause();
  row["miss_causes"] = {{"copy_in_flight", c.copy_in_flight},
                        {"copy_queued", c.copy_queued},
                        {"left_to_reader", c.left_to_reader},
                        {"not_staged_ahead", c.not_staged_ahead}};
  return row;
}

void PrintRow(const char* placement, const std::string& epoch, const ClusterEpochResult& e,
              uint64_t dataset_bytes) {
  auto share = [&](uint64_t part) {
    return e.reads ? 100.0 * static_cast<double>(part) / static_cast<double>(e.reads) : 0.0;
  };
  printf("%-8s %5s %11llu %6.1f%% %6.1f%% %6.1f%% %11s %7.1f%% %11s %10.2f %10.2f\n", placement,
         epoch.c_str(), static_cast<unsigned long long>(e.reads), share(e.local_hits),
         share(e.peer_reads), share(e.pfs_reads), FormatBytes(e.pfs_bytes).c_str(),
         dataset_bytes ? 100.0 * static_cast<double>(e.pfs_bytes) / dataset_bytes : 0.0,
         FormatBytes(e.peer_bytes).c_str(), e.time, e.stall);
}

// The bench's JSON from `path` (at most 64 MiB).
Result<nlohmann::json> ReadBenchJson(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::Invalid("--compare " + path + ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  if (text.str().size() > (size_t{64} << 20)) {
    return Status::Invalid("--compare " + path + ": larger than 64 MiB");
  }
  nlohmann::json bench = nlohmann::json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
  if (bench.is_discarded()) return Status::Invalid("--compare " + path + ": not JSON");
  return bench;
}

std::string RateText(double bytes_per_second, double unit, const char* what) {
  if (std::isinf(bytes_per_second)) return "unlimited";
  char buf[64];
  snprintf(buf, sizeof(buf), "%g %s", bytes_per_second / unit, what);
  return buf;
}

}  // namespace

int RunSimulateCluster(const ClusterSimulateArgs& a) {
  if (!a.capacity.empty()) {
    return UsageError(
        kSimulateClusterCommand,
        "with --nodes the capacity is per node: give --node-capacity, not --capacity");
  }
  if (a.heat)
    return UsageError(kSimulateClusterCommand,
                      "--heat goes with the single-node simulate (no --nodes)");
  if (!a.policy.empty() && a.policy != "plan") {
    return UsageError(kSimulateClusterCommand,
                      "with --nodes the eviction inside a node is the mount's plan "
                      "policy: --policy plan (got '" +
                          a.policy + "')");
  }
  if (a.nodes == 0) return UsageError(kSimulateClusterCommand, "--nodes must be at least 1");
  if (a.backing.empty() == (a.files == 0)) {
    return UsageError(kSimulateClusterCommand,
                      "give either --backing DIR or --files N --sizes SPEC");
  }
  if (a.node_capacity.empty())
    return UsageError(kSimulateClusterCommand, "--nodes needs --node-capacity SIZE");
  if (a.pfs_bandwidth.empty())
    return UsageError(kSimulateClusterCommand, "--nodes needs --pfs-bandwidth MB/s");
  std::vector<ClusterPlacement> placements;
  if (a.placement == "all") {
    placements = {ClusterPlacement::kNone, ClusterPlacement::kNoPfs, ClusterPlacement::kClairfs};
  } else {
    auto one = ParseClusterPlacement(a.placement);
    if (!one.ok()) return Fail(kSimulateClusterCommand, one.status());
    placements = {*one};
  }
  ClusterModel model;
  model.nodes = a.nodes;
  struct RateFlag {
    const std::string* text;
    const char* flag;
    double unit;
    double* into;
  };
  for (const RateFlag& r :
       {RateFlag{&a.pfs_bandwidth, "--pfs-bandwidth", 1e6, &model.pfs_bandwidth},
        RateFlag{&a.pfs_metadata_ops, "--pfs-metadata-ops", 1, &model.pfs_metadata_ops},
        RateFlag{&a.net_bandwidth, "--net-bandwidth", 1e6, &model.net_bandwidth},
        RateFlag{&a.nvme_bandwidth, "--nvme-bandwidth", 1e6, &model.nvme_bandwidth}}) {
    auto value = ParseRate(*r.text, r.flag, r.unit);
    if (!value.ok()) return Fail(kSimulateClusterCommand, value.status());
    *r.into = *value;
  }
  auto latency = ParseDecimal(a.pfs_open_latency, "--pfs-open-latency");
  if (!latency.ok()) return Fail(kSimulateClusterCommand, latency.status());
  model.pfs_open_latency = *latency / 1000.0;
  auto work = ParseDecimal(a.work_ms, "--work-ms");
  if (!work.ok()) return Fail(kSimulateClusterCommand, work.status());
  model.work = *work / 1000.0;
  auto copy = ParseDecimal(a.copy_ms, "--copy-ms");
  if (!copy.ok()) return Fail(kSimulateClusterCommand, copy.status());
  model.copy_time = *copy / 1000.0;
  auto cores = ParseRate(a.cores, "--cores", 1);
  if (!cores.ok()) return Fail(kSimulateClusterCommand, cores.status());
  model.cores = *cores;
  auto reader_share = ParseDecimal(a.reader_share, "--reader-share");
  if (!reader_share.ok()) return Fail(kSimulateClusterCommand, reader_share.status());
  model.reader_share = *reader_share;
  struct MsFlag {
    const std::string* text;
    const char* flag;
    double* into;
  };
  for (const MsFlag& f :
       {MsFlag{&a.open_cpu_ms, "--open-cpu-ms", &model.open_cpu},
        MsFlag{&a.copy_cpu_ms, "--copy-cpu-ms", &model.copy_cpu},
        MsFlag{&a.digest_cpu_ms, "--digest-cpu-ms", &model.digest_cpu},
        MsFlag{&a.transfer_cpu_ms, "--transfer-cpu-ms", &model.transfer_cpu},
        MsFlag{&a.transfer_ms, "--transfer-ms", &model.transfer_time},
        MsFlag{&a.transfer_slot_ms, "--transfer-slot-ms", &model.transfer_slot_time},
        MsFlag{&a.refusal_ms, "--refusal-ms", &model.refusal_time},
        MsFlag{&a.agent_call_ms, "--agent-call-ms", &model.agent_call_time},
        MsFlag{&a.pfs_copy_ms, "--pfs-copy-ms", &model.pfs_copy_time},
        MsFlag{&a.leave_to_reader_ms, "--leave-to-reader-ms", &model.leave_to_reader}}) {
    if (f.into == &model.leave_to_reader && *f.text == "measured") {
      model.leave_as_measured = true;
      continue;
    }
    auto value = ParseDecimal(*f.text, f.flag);
    if (!value.ok()) return Fail(kSimulateClusterCommand, value.status());
    *f.into = *value / 1000.0;
  }
  model.transfers_in_flight = a.transfers_in_flight;
  model.peer_window = a.peer_window;
  model.queued_wants = a.queued_wants;
  auto sync = ParseClusterSync(a.sync);
  if (!sync.ok()) return Fail(kSimulateClusterCommand, sync.status());
  model.sync = *sync;
  model.reader_threads = a.reader_threads;
  const bool setup_from_bench = a.setup_s == "bench";
  if (setup_from_bench && a.compare.empty()) {
    return UsageError(kSimulateClusterCommand,
                      "--setup-s bench takes the setup phases of --compare's runs");
  }
  if (!setup_from_bench) {
    auto setup = ParseDecimal(a.setup_s, "--setup-s");
    if (!setup.ok()) return Fail(kSimulateClusterCommand, setup.status());
    model.setup_time = *setup;
  }
  std::vector<nlohmann::json> benches;
  for (const std::string& path : a.compare) {
    auto bench = ReadBenchJson(path);
    if (!bench.ok()) return Fail(kSimulateClusterCommand, bench.status());
    benches.push_back(std::move(*bench));
  }
  if (a.mount_s == "bench") {
    // The baseline's setup is its mounts alone, one after another (no agents to wait for).
    if (benches.empty())
      return UsageError(kSimulateClusterCommand, "--mount-s bench needs --compare BENCH.json");
    auto mounts = BenchSetupSeconds(benches, ClusterPlacement::kNone);
    if (!mounts.ok()) return Fail(kSimulateClusterCommand, mounts.status());
    model.mount_time = *mounts / model.nodes;
  } else {
    auto mount = ParseDecimal(a.mount_s, "--mount-s");
    if (!mount.ok()) return Fail(kSimulateClusterCommand, mount.status());
    model.mount_time = *mount;
  }

  auto spec = ParsePlanSpec(a.plan);
  if (!spec.ok()) return Fail(kSimulateClusterCommand, spec.status());
  uint64_t epochs = a.epochs;
  if (epochs == 0)
    epochs = spec->end_epoch ? *spec->end_epoch - spec->start_epoch : kClusterDefaultEpochs;
  if (spec->end_epoch && spec->start_epoch + epochs > *spec->end_epoch) {
    return UsageError(kSimulateClusterCommand, "--epochs " + std::to_string(epochs) +
                                                   " goes past the plan's " +
                                                   "epochs=" + std::to_string(*spec->end_epoch));
  }
  // The world is known from the spec; check the shape before any dataset is read.
  model.ranks_per_node = a.ranks_per_node;
  if (model.ranks_per_node == 0) {
    if (spec->world % a.nodes != 0) {
      return UsageError(kSimulateClusterCommand,
                        "the plan's world is " + std::to_string(spec->world) +
                            ", not a multiple of --nodes " + std::to_string(a.nodes));
    }
    model.ranks_per_node = spec->world / a.nodes;
  }
  if (uint64_t{model.nodes} * model.ranks_per_node != spec->world) {
    return UsageError(kSimulateClusterCommand,
                      "the plan's world is " + std::to_string(spec->world) + ", not --nodes " +
                          std::to_string(model.nodes) + " x --ranks-per-node " +
                          std::to_string(model.ranks_per_node) + " = " +
                          std::to_string(uint64_t{model.nodes} * model.ranks_per_node));
  }

  auto dataset = LoadDataset(a, *spec);
  if (!dataset.ok()) return Fail(kSimulateClusterCommand, dataset.status());
  auto capacity = ParseNodeCapacity(a.node_capacity, dataset->bytes);
  if (!capacity.ok()) return Fail(kSimulateClusterCommand, capacity.status());
  model.node_capacity = *capacity;
  if (Status s = CheckClusterModel(model); !s.ok()) return Fail(kSimulateClusterCommand, s);
  if (Status s = CheckClusterPlan(*dataset->plan, model); !s.ok())
    return Fail(kSimulateClusterCommand, s);

  nlohmann::json out;
  out["plan"] = a.plan;
  out["nodes"] = model.nodes;
  out["ranks_per_node"] = model.ranks_per_node;
  out["node_capacity_bytes"] = model.node_capacity;
  out["dataset_files"] = dataset->sizes.size();
  out["dataset_bytes"] = dataset->bytes;
  auto rate_json = [](double v) {
    return std::isinf(v) ? nlohmann::json("unlimited") : nlohmann::json(v);
  };
  out["model"] = {
      {"pfs_bandwidth_bytes_per_s", rate_json(model.pfs_bandwidth)},
      {"pfs_open_latency_s", model.pfs_open_latency},
      {"pfs_metadata_ops_per_s", rate_json(model.pfs_metadata_ops)},
      {"net_bandwidth_bytes_per_s", rate_json(model.net_bandwidth)},
      {"nvme_bandwidth_bytes_per_s", rate_json(model.nvme_bandwidth)},
      {"work_s", model.work},
      {"copy_s", model.copy_time},
      {"setup_s", setup_from_bench ? nlohmann::json("bench") : nlohmann::json(model.setup_time)},
      {"mount_s", model.mount_time},
      {"cores", rate_json(model.cores)},
      {"reader_share", model.reader_share},
      {"open_cpu_s", model.open_cpu},
      {"copy_cpu_s", model.copy_cpu},
      {"digest_cpu_s", model.digest_cpu},
      {"peer_window", model.peer_window},
      {"queued_wants", model.queued_wants},
      {"sync", ClusterSyncName(model.sync)},
      {"reader_threads", model.reader_threads},
      {"transfer_cpu_s", model.transfer_cpu},
      {"transfer_s", model.transfer_time},
      {"transfers_in_flight", model.transfers_in_flight},
      {"leave_to_reader_s", model.leave_as_measured ? nlohmann::json("measured")
                                                    : nlohmann::json(model.leave_to_reader)}};
  // The wants queue's figures only when given, so that the JSON without them is as before.
  if (model.transfer_slot_time > 0) out["model"]["transfer_slot_s"] = model.transfer_slot_time;
  if (model.refusal_time > 0) out["model"]["refusal_s"] = model.refusal_time;
  if (model.agent_call_time > 0) out["model"]["agent_call_s"] = model.agent_call_time;
  if (model.pfs_copy_time > 0) out["model"]["pfs_copy_s"] = model.pfs_copy_time;
  std::vector<ClusterRunResult> runs;
  for (ClusterPlacement placement : placements) {
    // The meter counts the readers' simulated reads and their bytes.
    const uint64_t job_reads = dataset->sizes.size() * epochs;
    const uint64_t job_bytes = dataset->bytes * epochs;
    ProgressMeter meter(std::string("simulate ") + ClusterPlacementName(placement), job_reads,
                        job_bytes, !a.json && StderrIsTerminal());
    ClusterModel run_model = model;
    if (setup_from_bench) {
      auto setup = BenchSetupSeconds(benches, placement);
      if (!setup.ok()) return Fail(kSimulateClusterCommand, setup.status());
      run_model.setup_time = *setup;
    }
    auto run = SimulateCluster(dataset->plan.get(), spec->start_epoch, epochs, dataset->sizes,
                               run_model, placement, [&](uint64_t done, uint64_t total) {
                                 const double part = static_cast<double>(done) / total;
                                 meter.Update(static_cast<uint64_t>(part * job_reads),
                                              static_cast<uint64_t>(part * job_bytes));
                               });
    meter.Finish();
    if (!run.ok()) return Fail(kSimulateClusterCommand, run.status());
    runs.push_back(std::move(*run));
  }
  nlohmann::json results = nlohmann::json::object();
  for (const ClusterRunResult& run : runs) {
    nlohmann::json rows = nlohmann::json::array();
    for (const ClusterEpochResult& e : run.epochs) {
      nlohmann::json row = EpochJson(e, dataset->bytes);
      row["epoch"] = e.epoch;
      rows.push_back(row);
    }
    nlohmann::json setup = EpochJson(run.setup, dataset->bytes);
    setup["epoch"] = "setup";
    results[ClusterPlacementName(run.placement)] = {
        {"setup", setup},
        {"epochs", rows},
        {"total", EpochJson(run.Total(), dataset->bytes)},
        {"held_files", run.held_files},
        {"held_bytes", run.held_bytes},
        {"held_copies_at_end", run.held_copies_at_end},
        {"files_with_held_copy", run.files_with_held_copy},
        {"max_node_bytes", run.max_node_bytes}};
  }
  out["placements"] = results;
  constexpr double kTolerance = 0.10;  // issue 20's calibration criterion
  std::vector<CompareRow> compare;
  std::vector<CauseRow> causes;
  if (!benches.empty()) {
    auto rows = CompareWithBench(benches, runs, model.nodes, dataset->sizes.size(), dataset->bytes,
                                 kTolerance);
    if (!rows.ok()) return Fail(kSimulateClusterCommand, rows.status());
    compare = std::move(*rows);
    nlohmann::json list = nlohmann::json::array();
    for (const CompareRow& r : compare) {
      list.push_back({{"placement", r.placement},
                      {"bench_epoch", r.epoch},
                      {"what", r.what},
                      {"measured", r.measured},
                      {"measured_low", r.measured_low},
                      {"measured_high", r.measured_high},
                      {"runs", benches.size()},
                      {"model", r.model},
                      {"within_10_percent", r.within}});
    }
    out["compare"] = list;
    causes = CompareMissCauses(benches, runs);
    nlohmann::json cause_list = nlohmann::json::array();
    for (const CauseRow& r : causes) {
      cause_list.push_back({{"placement", r.placement},
                            {"bench_epoch", r.epoch},
                            {"cause", r.cause},
                            {"measured", r.measured},
                            {"measured_low", r.measured_low},
                            {"measured_high", r.measured_high},
                            {"model", r.model}});
    }
    out["compare_miss_causes"] = cause_list;
  }
  if (a.json) {
    printf("%s\n", out.dump(2).c_str());
    return kExitOk;
  }
  printf(
      "plan %s over %zu files (%s) on %u nodes x %u ranks, %s per node (%.1f%% of the dataset, "
      "%.0f%% over all nodes)\n",
      a.plan.c_str(), dataset->sizes.size(), FormatBytes(dataset->bytes).c_str(), model.nodes,
      model.ranks_per_node, FormatBytes(model.node_capacity).c_str(),
      dataset->bytes ? 100.0 * static_cast<double>(model.node_capacity) / dataset->bytes : 0.0,
      dataset->bytes
          ? 100.0 * static_cast<double>(model.node_capacity) * model.nodes / dataset->bytes
          : 0.0);
  printf(
      "PFS %s, %s opens, %g ms per open (%u in flight per reader); links %s; NVMe %s; work %g ms "
      "per sample; %g ms per copy staged; %s\n",
      RateText(model.pfs_bandwidth, 1e6, "MB/s").c_str(),
      RateText(model.pfs_metadata_ops, 1, "/s").c_str(), model.pfs_open_latency * 1000,
      model.reader_threads, RateText(model.net_bandwidth, 1e6, "MB/s").c_str(),
      RateText(model.nvme_bandwidth, 1e6, "MB/s").c_str(), model.work * 1000,
      model.copy_time * 1000,
      model.sync == ClusterSync::kStep ? "nodes in lockstep"
                                       : "each node at its own pace, together at epoch ends");
  if (setup_from_bench || model.setup_time > 0 || !std::isinf(model.cores) ||
      model.transfer_time > 0 || model.leave_to_reader > 0 || model.leave_as_measured ||
      model.peer_window) {
    char setup[32];
    snprintf(setup, sizeof(setup), "%g s", model.setup_time);
    char cores[32];
    snprintf(cores, sizeof(cores), "%g", model.cores);
    char leave_ms[32];
    snprintf(leave_ms, sizeof(leave_ms), "%g ms", model.leave_to_reader * 1000);
    const std::string leave =
        model.leave_as_measured ? "twice the copy time each stager measures" : leave_ms;
    printf(
        "setup %s, %g s per mount; %s cores shared (readers' share %g), CPU ms per open %g, "
        "per PFS copy %g (+%g with a peer key), per peer copy %g; peer copies take %g ms, %s in "
        "flight per node, peer window %s; PFS copies the reader reaches within %s left to it\n",
        setup_from_bench ? "the bench's" : setup, model.mount_time,
        std::isinf(model.cores) ? "unlimited" : cores, model.reader_share, model.open_cpu * 1000,
        model.copy_cpu * 1000, model.digest_cpu * 1000, model.transfer_cpu * 1000,
        model.transfer_time * 1000,
        model.transfers_in_flight ? std::to_string(model.transfers_in_flight).c_str() : "unlimited",
        model.peer_window ? "on" : "off", leave.c_str());
  }
  if (model.transfer_slot_time > 0 || model.refusal_time > 0) {
    printf(
        "wants queue: a transfer holds its slot %g ms; a home without a copy refuses after %g "
        "ms%s; %s\n",
        (model.transfer_slot_time > 0 ? model.transfer_slot_time : model.transfer_time) * 1000,
        model.refusal_time * 1000, model.refusal_time > 0 ? "" : " (off: it stages the file)",
        model.queued_wants ? "wants the agent cannot take yet wait while PFS copies go on"
                           : "the stager stops at a want the agent cannot take yet");
  }
  if (model.agent_call_time > 0) {
    printf("agents: one daemon call at a time, %g ms each\n", model.agent_call_time * 1000);
  }
  if (model.pfs_copy_time > 0) {
    printf("PFS copies: %g ms from start to publish; a reader that comes first misses\n",
           model.pfs_copy_time * 1000);
  }
  printf("%-8s %5s %11s %7s %7s %7s %11s %8s %11s %10s %10s\n", "placement", "epoch", "reads",
         "local", "peer", "pfs", "PFS bytes", "of data", "peer bytes", "time s", "stall s");
  for (const ClusterRunResult& run : runs) {
    for (const ClusterEpochResult& e : run.epochs) {
      PrintRow(ClusterPlacementName(run.placement), std::to_string(e.epoch), e, dataset->bytes);
    }
    if (run.setup.time > 0) {
      PrintRow(ClusterPlacementName(run.placement), "setup", run.setup, dataset->bytes);
    }
    PrintRow(ClusterPlacementName(run.placement), "job", run.Total(), dataset->bytes);
  }
  printf(
      "a model, not a measurement (docs/SIMULATOR.md): local/peer/pfs are shares of reads; PFS "
      "and peer bytes include staging\n");
  if (!compare.empty()) {
    size_t within = 0;
    printf(
        "\nbeside %zu bench run%s (their median; low-high the runs' spread; bench epoch k = "
        "simulated epoch k-1; PFS bytes as shares of each side's dataset)\n",
        benches.size(), benches.size() == 1 ? "" : "s");
    printf("%-8s %5s %-10s %10s %17s %10s %8s\n", "placement", "epoch", "figure", "measured",
           "low-high", "model", "within");
    for (const CompareRow& r : compare) {
      within += r.within;
      printf("%-8s %5llu %-10s %10.3f %8.3f-%-8.3f %10.3f %8s\n", r.placement.c_str(),
             static_cast<unsigned long long>(r.epoch), r.what.c_str(), r.measured, r.measured_low,
             r.measured_high, r.model, r.within ? "10%" : "no");
    }
    printf("%zu of %zu figures within 10%%\n", within, compare.size());
  }
  if (!causes.empty()) {
    printf(
        "\nmisses by cause, all nodes (the bench's median, low-high; not judged: the figures above "
        "are the calibration's)\n");
    printf("%-8s %5s %-16s %10s %17s %10s\n", "placement", "epoch", "cause", "measured", "low-high",
           "model");
    for (const CauseRow& r : causes) {
      printf("%-8s %5llu %-16s %10.0f %8.0f-%-8.0f %10.0f\n", r.placement.c_str(),
             static_cast<unsigned long long>(r.epoch), r.cause.c_str(), r.measured, r.measured_low,
             r.measured_high, r.model);
    }
  }
  return kExitOk;
}

}  // namespace clairfs::cli
