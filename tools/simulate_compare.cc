// SimulateCompare (see simulate_compare.h).
#include "tools/simulate_compare.h"

#include <cmath>
#include <string>

namespace clairfs::cli {
namespace {

bool Within(double measured, double model, double tolerance) {
  if (measured == 0) return model == 0;
  return std::fabs(model - measured) <= tolerance * std::fabs(measured);
}

Result<uint64_t> UintField(const nlohmann::json& object, const char* key) {
  auto it = object.find(key);
  if (it == object.end() || !it->is_number_integer() || it->get<int64_t>() < 0) {
    return Status::Invalid(std::string("--compare: the bench's JSON has no \"") + key + "\"");
  }
  return it->get<uint64_t>();
}

}  // namespace

Result<std::vector<CompareRow>> CompareWithBench(const nlohmann::json& bench,
                                                 const std::vector<ClusterRunResult>& runs,
                                                 uint32_t nodes, uint64_t files,
                                                 uint64_t dataset_bytes, double tolerance) {
  if (!bench.is_object()) return Status::Invalid("--compare: not a JSON object");
  auto bench_nodes = UintField(bench, "nodes");
  if (!bench_nodes.ok()) return bench_nodes.status();
  auto bench_files = UintField(bench, "files");
  if (!bench_files.ok()) return bench_files.status();
  auto bench_bytes = UintField(bench, "dataset_bytes");
  if (!bench_bytes.ok()) return bench_bytes.status();
  if (*bench_nodes != nodes || *bench_files != files) {
    return Status::Invalid("--compare: the bench ran " + std::to_string(*bench_nodes) +
                           " nodes over " + std::to_string(*bench_files) + " files, not " +
                           std::to_string(nodes) + " over " + std::to_string(files));
  }
  auto modes = bench.find("modes");
  if (modes == bench.end() || !modes->is_array()) {
    return Status::Invalid("--compare: the bench's JSON has no \"modes\"");
  }
  std::vector<CompareRow> rows;
  for (const nlohmann::json& mode : *modes) {
    const std::string name = mode.value("mode", std::string());
    const char* placement = name == "baseline" ? "none" : name == "peers" ? "clairfs" : nullptr;
    if (placement == nullptr) continue;
    const ClusterRunResult* run = nullptr;
    for (const ClusterRunResult& r : runs) {
      if (ClusterPlacementName(r.placement) == std::string(placement)) run = &r;
    }
    if (run == nullptr) continue;
    uint64_t epoch = 0;
    for (const nlohmann::json& phase : mode.value("phases", nlohmann::json::array())) {
      // Epoch phases are named "1", "2", ...; "setup" and "end" have no counterpart.
      const std::string label = phase.value("phase", std::string());
      if (label.empty() || label.find_first_not_of("0123456789") != std::string::npos ||
          label.size() > 9) {
        continue;
      }
      epoch = std::stoull(label);
      if (epoch == 0 || epoch > run->epochs.size()) {
        return Status::Invalid("--compare: the bench has epoch " + std::to_string(epoch) + " but " +
                               std::to_string(run->epochs.size()) + " epochs were simulated");
      }
      const ClusterEpochResult& e = run->epochs[epoch - 1];
      const double reads = phase.value("files_read", 0.0);
      const double measured[] = {phase.value("pfs_bytes", 0.0) / static_cast<double>(*bench_bytes),
                                 reads > 0 ? phase.value("hits", 0.0) / reads : 0.0,
                                 phase.value("seconds", 0.0)};
      const double model[] = {
          dataset_bytes ? static_cast<double>(e.pfs_bytes) / static_cast<double>(dataset_bytes)
                        : 0.0,
          e.LocalHitRatio(), e.time};
      const char* what[] = {"pfs_share", "hit_ratio", "time_s"};
      for (int i = 0; i < 3; ++i) {
        rows.push_back(CompareRow{placement, epoch, what[i], measured[i], model[i],
                                  Within(measured[i], model[i], tolerance)});
      }
    }
    if (epoch == 0) return Status::Invalid("--compare: the bench's " + name + " has no epochs");
  }
  if (rows.empty())
    return Status::Invalid("--compare: no mode of the bench matches a placement run");
  return rows;
}

}  // namespace clairfs::cli
