// MetricsWriter: the mount's status counters as a Prometheus text file (--metrics-file).
//
// A daemon thread rewrites the file every `interval` from a status snapshot (the same JSON object
// as the "status" op): numeric and boolean fields become clairfs_<field> (nested objects joined
// with '_', e.g. clairfs_staging_queued), monotonically growing counts are TYPE counter and get
// the suffix _total, everything else is a gauge; every sample carries mountpoint="..." (the
// escaped name, planner/name_escape.h, then escaped for the exposition format). Each
// rewrite writes PATH.tmp, fsyncs nothing (metrics are not worth a flush) and renames it over
// PATH, so a reader (node_exporter's textfile collector) never sees a partial file. Stop() ends
// the thread and removes PATH: an unmounted mount exports nothing, rather than frozen values.
//
// Thread-safety: Start/Stop from one thread; `snapshot` is called on the writer thread and must
// be thread-safe. Write errors are logged once per kind and retried at the next interval.
#pragma once

#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

#include "planner/base/status.h"

namespace clairfs {

class MetricsWriter {
 public:
  MetricsWriter(std::string path, std::string mountpoint, std::function<nlohmann::json()> snapshot,
                std::chrono::milliseconds interval = std::chrono::seconds(5));
  ~MetricsWriter();
  MetricsWriter(const MetricsWriter&) = delete;
  MetricsWriter& operator=(const MetricsWriter&) = delete;

  // Writes the file once (failing if that fails: a bad path is reported at mount) and starts the
  // thread.
  Status Start();
  void Stop();

  // The Prometheus text for one status object (exposed for tests).
  static std::string Render(const nlohmann::json& status, const std::string& mountpoint);

 private:
  Status WriteOnce();
  void Loop();

  std::string path_;
  std::string mountpoint_;
  std::function<nlohmann::json()> snapshot_;
  std::chrono::milliseconds interval_;
  std::mutex mu_;  // guards stopping_
  std::condition_variable cv_;
  bool stopping_ = false;
  int last_error_ = 0;
  std::thread thread_;
};

}  // namespace clairfs
