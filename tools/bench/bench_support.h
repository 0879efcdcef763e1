// Small helpers shared by the `clairfs bench` instruments: a work directory that is removed
// unless kept, seeded shuffles, medians, the files below a directory, a process's memory and fd
// counts, the machine's load, and a target's verdict in a report.
//
// Thread-safety: values and pure functions; BenchWorkDir belongs to one thread.
// Errors: Status values naming the path.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/base/status.h"
#include "planner/synthetic_dataset.h"

namespace clairfs {

// A work directory: `requested` if given (kept), else a fresh $TMPDIR/clairfs-bench-NAME-XXXXXX
// removed on destruction unless `keep`, or when the command is interrupted
// (tools/interrupt_cleanup.h).
class BenchWorkDir {
 public:
  BenchWorkDir() = default;
  ~BenchWorkDir();
  BenchWorkDir(const BenchWorkDir&) = delete;
  BenchWorkDir& operator=(const BenchWorkDir&) = delete;
  Status Init(const std::string& requested, const std::string& name, bool keep);
  const std::string& path() const { return path_; }
  // Creates path()/name (and parents) and returns it.
  Result<std::string> Subdir(const std::string& name) const;

 private:
  std::string path_;
  bool remove_ = false;
};

// The next value of a SplitMix64 stream whose state is `*state` (the same on every platform).
uint64_t SplitMix64Next(uint64_t* state);

// Shuffles `items` in place: a Fisher-Yates shuffle on a SplitMix64 stream seeded with `seed`,
// so one seed gives one order on any machine and standard library (unlike std::shuffle).
template <typename T>
void SeededShuffle(std::vector<T>* items, uint64_t seed) {
  uint64_t state = seed;
  for (size_t i = items->size(); i > 1; --i) {
    std::swap((*items)[i - 1], (*items)[SplitMix64Next(&state) % i]);
  }
}

// The median (upper middle for an even count); 0 for none.
double Median(std::vector<double> values);

// Every regular file below `root` (recursively), as relpath + size, sorted by relpath.
Result<std::vector<SyntheticFile>> ListRegularFiles(const std::string& root);

struct ProcessStats {
  uint64_t rss_bytes = 0;       // VmRSS of /proc/PID/status
  uint64_t rss_anon_bytes = 0;  // RssAnon: the heap, stacks and other private memory
  uint64_t rss_file_bytes = 0;  // RssFile: mapped files (the binary, libraries)
  uint64_t threads = 0;         // Threads
  uint64_t open_fds = 0;        // entries of /proc/PID/fd
};
Result<ProcessStats> ReadProcessStats(pid_t pid);

// "0.52 0.71 0.80": the 1-, 5- and 15-minute load averages of /proc/loadavg.
std::string LoadAverage();

// How a report prints a target's verdict (its "met" field): "met" or "MISSED".
inline const char* MetText(const nlohmann::json& target) {
  return target["met"] ? "met" : "MISSED";
}

// "1,2,4" -> {1, 2, 4}; EINVAL names `what` for anything else.
Result<std::vector<int>> ParseIntList(const std::string& text, const std::string& what);

// The row-label suffix of a --fuse-uring value in the benches: "/ring" (on), "/dev" (off) or
// "/auto".
std::string FuseUringLabel(const std::string& fuse_uring);
// Help of the benches' --fuse-uring list option.
extern const char kFuseUringListHelp[];

// "on,off" -> {"on", "off"} when every item is one of `choices`; EINVAL names `what` and the
// choices for anything else.
Result<std::vector<std::string>> ParseChoiceList(const std::string& what, const std::string& text,
                                                 const std::vector<std::string>& choices);

}  // namespace clairfs
