// SoakChurn: the admin churn of `clairfs bench soak`. One thread sends a mount's daemon, over its
// control socket (one new connection per request, as each `clairfs` command makes), the requests
// an admin and a job's prolog and epilog send while readers run, in a fixed cycle:
//
//   stage CLASS (one class directory, priority high), then stage_progress until it is done
//   pin CLASS          (refused with ENODATA when a copy was evicted meanwhile: counted apart)
//   evict              a random twentieth of the files
//   plan_set           torch-distributed:seed=CYCLE,world=8 over the imagefolder layout
//   ls                 recursively (the whole dataset, in one reply)
//   stats              every file's counters (as `clairfs stats --darshan` asks at a job's end)
//   status
//   unpin CLASS
//   plan_clear
//   evict all          (pinned copies are kept; read-through stages the files again)
//
// with `interval_ms` between requests; CLASS goes round the dataset's top-level directories and
// the random choices come from a SplitMix64 stream of `seed`. Each request's outcome is counted
// per op: ok, refused (the expected refusal above) or failed (anything else, the first messages
// kept).
//
// Thread-safety: Start once; the getters may be called from any thread; Stop joins.
// Errors: counted, never thrown.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/base/status.h"
#include "planner/synthetic_dataset.h"

namespace clairfs {

class SoakChurn {
 public:
  static constexpr size_t kMaxErrors = 20;

  SoakChurn(std::string mountpoint, const std::vector<SyntheticFile>& files, int interval_ms,
            uint64_t seed);
  ~SoakChurn();  // stops
  SoakChurn(const SoakChurn&) = delete;
  SoakChurn& operator=(const SoakChurn&) = delete;

  void Start();
  // Ends the request in flight, then the thread.
  void Stop();

  uint64_t cycles() const { return cycles_.load(); }
  uint64_t requests() const;
  uint64_t failed() const;
  // {"stage": {"ok": N, "refused": N, "failed": N}, ...}, "cycles", "errors".
  nlohmann::json Json() const;

 private:
  struct OpCounts {
    uint64_t ok = 0, refused = 0, failed = 0;
  };
  void Run();
  // One cycle; false once stopping.
  bool Cycle(uint64_t cycle);
  // Sends `request` on a new connection and counts its outcome under its op; an errno in
  // `refusal` counts as refused.
  Result<nlohmann::json> Send(const nlohmann::json& request, int refusal = 0);
  // Waits `interval_ms_`; false once stopping.
  bool Pause();

  const std::string mountpoint_;
  std::vector<std::string> classes_;  // top-level directories of the dataset, in name order
  std::vector<std::string> paths_;    // every file
  const int interval_ms_;
  uint64_t rng_state_;
  std::thread thread_;
  std::atomic<uint64_t> cycles_{0};

  std::mutex mu_;  // guards stopping_ (with wake_)
  std::condition_variable wake_;
  bool stopping_ = false;

  mutable std::mutex counts_mu_;  // guards counts_ and errors_
  std::map<std::string, OpCounts> counts_;
  std::vector<std::string> errors_;
};

}  // namespace clairfs
