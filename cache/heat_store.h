// HeatStore: per-file heat imported from Darshan logs, kept in the index's "heat" family and
// mirrored in memory for the eviction policy, `clairfs stage --hot` and `clairfs ls`.
//
//   heat family   manifest path -> counters (bytes read, reads, opens, max byte, read time,
//                 records merged); heat_per_byte is recomputed from them (planner/heat.h)
//   default       "heat-log/<id>" -> import time, one per imported log (HeatLogId), and
//                 "heat-imported-at" -> time of the last import
//
// Import semantics. Merge (the default): the counters of each path are added to what is stored,
// as if the new logs had been merged with the old ones by one `darshan top`; a log whose id is
// already stored is refused (EALREADY), so callers skip known logs first (KnownLogs) and
// importing a directory again adds only its new logs. Replace: everything stored (heat and log
// ids) is dropped and this import's heat stands alone. Either way one synced write batch, so a
// crash leaves the old heat or the new, never a mix.
//
// Thread-safety: all methods are thread-safe. Readers take a snapshot (an immutable map shared
// by pointer); Import builds a new map and swaps it in, so readers never wait for an import.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <unordered_map>
#include <vector>

#include "cache/env.h"
#include "cache/index_db.h"
#include "planner/base/status.h"
#include "planner/heat.h"

namespace clairfs {

struct HeatEntry {
  HeatCounters counters;
  double heat_per_byte = 0;
};
using HeatMap = std::unordered_map<std::string, HeatEntry>;

struct HeatImportResult {
  uint64_t files_new = 0;      // paths that had no heat before
  uint64_t files_merged = 0;   // paths whose stored counters were added to
  uint64_t files_total = 0;    // paths with heat after the import
  uint64_t logs_total = 0;     // log ids stored after the import
  uint64_t files_dropped = 0;  // with replace: paths whose old heat was dropped
};

struct HeatSummary {
  uint64_t files = 0;
  uint64_t files_hot = 0;  // heat_per_byte > 0
  uint64_t logs = 0;
  uint64_t imported_at_ns = 0;  // wall clock of the last import; 0 = never
};

class HeatStore {
 public:
  // Loads the stored heat. Entries that do not decode are dropped from the index (logged).
  static Result<std::unique_ptr<HeatStore>> Open(IndexDb* index, Env* env);

  std::shared_ptr<const HeatMap> snapshot() const;
  HeatSummary summary() const;
  // The ids among `ids` that are already stored.
  std::vector<std::string> KnownLogs(const std::vector<std::string>& ids) const;
  // Stores `by_path` (manifest paths) imported from the logs `log_ids` (see the file comment).
  Result<HeatImportResult> Import(const std::map<std::string, HeatCounters>& by_path,
                                  const std::vector<std::string>& log_ids, bool replace);

 private:
  HeatStore(IndexDb* index, Env* env) : index_(index), env_(env) {}
  Status Load();

  IndexDb* index_;
  Env* env_;
  std::mutex import_mu_;         // serialises Import (held across its index write)
  mutable std::mutex state_mu_;  // guards the fields below (held briefly)
  std::shared_ptr<const HeatMap> heat_;
  std::set<std::string> logs_;
  uint64_t files_hot_ = 0;  // entries of heat_ with heat_per_byte > 0
  uint64_t imported_at_ns_ = 0;
};

// Encoding of one heat-family value.
std::string EncodeHeatCounters(const HeatCounters& counters);
Result<HeatCounters> DecodeHeatCounters(std::string_view bytes);

}  // namespace clairfs
