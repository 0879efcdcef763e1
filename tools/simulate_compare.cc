// SimulateCompare (see simulate_compare.h).
#include "tools/simulate_compare.h"

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <string>
#include <tuple>

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

const char* BenchModeOf(ClusterPlacement placement) {
  switch (placement) {
    case ClusterPlacement::kNone:
      return "baseline";
    case ClusterPlacement::kClairfs:
      return "peers";
    case ClusterPlacement::kNoPfs:
      return "baseline";  // no agents to wait for: the baseline's setup
  }
  return nullptr;
}

// The placement a bench mode maps onto (baseline -> none, peers -> clairfs) and its simulated run,
// or null when the mode maps onto none or that placement was not simulated.
const ClusterRunResult* RunOfMode(const nlohmann::json& mode,
                                  const std::vector<ClusterRunResult>& runs,
                                  const char** placement) {
  const std::string name = mode.is_object() ? mode.value("mode", std::string()) : "";
  *placement = name == "baseline" ? "none" : name == "peers" ? "clairfs" : nullptr;
  if (*placement == nullptr) return nullptr;
  const ClusterRunResult* run = nullptr;
  for (const ClusterRunResult& r : runs) {
    if (ClusterPlacementName(r.placement) == std::string(*placement)) run = &r;
  }
  return run;
}

// The epoch of a bench phase named "1", "2", ...; 0 for "setup", "end" and anything else.
uint64_t EpochOfPhase(const nlohmann::json& phase) {
  const std::string label = phase.is_object() ? phase.value("phase", std::string()) : "";
  if (label.empty() || label.size() > 9 ||
      label.find_first_not_of("0123456789") != std::string::npos) {
    return 0;
  }
  return std::stoull(label);
}

// One bench run's rows (measured and model figures; not yet judged).
Result<std::vector<CompareRow>> RowsOfOneBench(const nlohmann::json& bench,
                                               const std::vector<ClusterRunResult>& runs,
                                               uint32_t nodes, uint64_t files,
                                               uint64_t dataset_bytes) {
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
    const char* placement = nullptr;
    const ClusterRunResult* run = RunOfMode(mode, runs, &placement);
    if (run == nullptr) continue;
    const std::string name = mode.value("mode", std::string());
    uint64_t epoch = 0;
    for (const nlohmann::json& phase : mode.value("phases", nlohmann::json::array())) {
      // Epoch phases are named "1", "2", ...; "setup" and "end" have no reads to compare.
      const uint64_t phase_epoch = EpochOfPhase(phase);
      if (phase_epoch == 0) continue;
      epoch = phase_epoch;
      if (epoch > run->epochs.size()) {
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
        rows.push_back(CompareRow{placement, epoch, what[i], measured[i], measured[i], measured[i],
                                  model[i], false});
      }
    }
    if (epoch == 0) return Status::Invalid("--compare: the bench's " + name + " has no epochs");
  }
  if (rows.empty()) {
    return Status::Invalid("--compare: no mode of the bench matches a placement run");
  }
  return rows;
}

}  // namespace

double MedianOf(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

Result<std::vector<CompareRow>> CompareWithBench(const std::vector<nlohmann::json>& benches,
                                                 const std::vector<ClusterRunResult>& runs,
                                                 uint32_t nodes, uint64_t files,
                                                 uint64_t dataset_bytes, double tolerance) {
  if (benches.empty()) return Status::Invalid("--compare: no bench run given");
  std::vector<std::vector<CompareRow>> per_bench;
  for (const nlohmann::json& bench : benches) {
    auto rows = RowsOfOneBench(bench, runs, nodes, files, dataset_bytes);
    if (!rows.ok()) return rows.status();
    per_bench.push_back(std::move(*rows));
  }
  std::vector<CompareRow> rows = per_bench.front();
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<double> values;
    for (const std::vector<CompareRow>& other : per_bench) {
      if (other.size() != rows.size() || other[i].placement != rows[i].placement ||
          other[i].epoch != rows[i].epoch || other[i].what != rows[i].what) {
        return Status::Invalid("--compare: the bench runs differ in their modes or epochs");
      }
      values.push_back(other[i].measured);
    }
    CompareRow& row = rows[i];
    row.measured = MedianOf(values);
    row.measured_low = *std::min_element(values.begin(), values.end());
    row.measured_high = *std::max_element(values.begin(), values.end());
    row.within = Within(row.measured, row.model, tolerance);
  }
  return rows;
}

std::vector<CauseRow> CompareMissCauses(const std::vector<nlohmann::json>& benches,
                                        const std::vector<ClusterRunResult>& runs) {
  static const char* const kCauses[] = {"copy_in_flight", "copy_queued", "left_to_reader",
                                        "not_staged_ahead"};
  // (placement, epoch, cause) -> the runs' counts, in the first run's order.
  std::vector<CauseRow> rows;
  std::map<std::tuple<std::string, uint64_t, std::string>, std::vector<double>> measured;
  for (size_t b = 0; b < benches.size(); ++b) {
    const nlohmann::json& bench = benches[b];
    if (!bench.is_object()) return {};
    for (const nlohmann::json& mode : bench.value("modes", nlohmann::json::array())) {
      const char* placement = nullptr;
      const ClusterRunResult* run = RunOfMode(mode, runs, &placement);
      if (run == nullptr) continue;
      for (const nlohmann::json& phase : mode.value("phases", nlohmann::json::array())) {
        const uint64_t epoch = EpochOfPhase(phase);
        auto causes = phase.find("miss_causes");
        if (epoch == 0 || epoch > run->epochs.size() || causes == phase.end() ||
            !causes->is_object()) {
          continue;
        }
        const ClusterEpochResult::MissCauses model = run->epochs[epoch - 1].MissesByCause();
        const uint64_t model_counts[] = {model.copy_in_flight, model.copy_queued,
                                         model.left_to_reader, model.not_staged_ahead};
        for (size_t i = 0; i < std::size(kCauses); ++i) {
          auto count = causes->find(kCauses[i]);
          if (count == causes->end() || !count->is_number()) continue;
          auto key = std::make_tuple(std::string(placement), epoch, std::string(kCauses[i]));
          std::vector<double>& values = measured[key];
          if (b == 0) {
            rows.push_back(CauseRow{placement, epoch, kCauses[i], 0, 0, 0,
                                    static_cast<double>(model_counts[i])});
          }
          values.push_back(count->get<double>());
        }
      }
    }
  }
  std::vector<CauseRow> out;
  for (CauseRow& row : rows) {
    const std::vector<double>& values = measured[{row.placement, row.epoch, row.cause}];
    if (values.size() != benches.size()) continue;  // a run without this epoch's causes
    row.measured = MedianOf(values);
    row.measured_low = *std::min_element(values.begin(), values.end());
    row.measured_high = *std::max_element(values.begin(), values.end());
    out.push_back(std::move(row));
  }
  return out;
}

Result<double> BenchSetupSeconds(const std::vector<nlohmann::json>& benches,
                                 ClusterPlacement placement) {
  const char* wanted = BenchModeOf(placement);
  if (wanted == nullptr) {
    return Status::Invalid(std::string("--setup-s bench: the bench has no mode for ") +
                           ClusterPlacementName(placement));
  }
  std::vector<double> seconds;
  for (const nlohmann::json& bench : benches) {
    bool found = false;
    const nlohmann::json modes =
        bench.is_object() ? bench.value("modes", nlohmann::json::array()) : nlohmann::json::array();
    for (const nlohmann::json& mode : modes) {
      if (!mode.is_object() || mode.value("mode", std::string()) != wanted) continue;
      for (const nlohmann::json& phase : mode.value("phases", nlohmann::json::array())) {
        if (phase.is_object() && phase.value("phase", std::string()) == "setup" &&
            phase.contains("seconds") && phase["seconds"].is_number()) {
          seconds.push_back(phase["seconds"].get<double>());
          found = true;
        }
      }
    }
    if (!found) {
      return Status::Invalid(std::string("--setup-s bench: a bench run has no setup phase of ") +
                             wanted);
    }
  }
  if (seconds.empty()) return Status::Invalid("--setup-s bench needs --compare BENCH.json");
  return MedianOf(seconds);
}

}  // namespace clairfs::cli
