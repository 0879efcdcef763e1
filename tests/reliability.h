// Support for the reliability matrix's integration tests (docs/RELIABILITY.md): how many trials
// a row runs and with which seed, readers that verify every byte they get and time every call,
// and the row's one-line summary. The devices a row builds are in tests/devices.h.
//
// Trials: CLAIRFS_RELIABILITY_TRIALS unset runs a row's CI form; "full" its full form; a number
// that many trials. Seed: CLAIRFS_RELIABILITY_SEED replays a run; otherwise a fresh one, printed
// in the summary line, so any failure can be replayed.
//
// Thread-safety: VerifyingReaders is driven from one thread (Start, Stop, figures); its reader
// threads are its own. The rest are values.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "tests/test_util.h"

namespace clairfs::testing {

// CLAIRFS_RELIABILITY_TRIALS: unset -> ci_default, "full" -> full, "least" -> least (the fewest
// that still run each scenario once: the sanitizer stages, whose subject is memory and undefined
// behaviour on the paths, not how often a race shows), N -> N.
int ReliabilityTrials(int ci_default, int full, int least = 1);
// CLAIRFS_RELIABILITY_SEED, or a fresh one.
uint64_t ReliabilitySeed();
// Whether a row runs its scenario `name`: CLAIRFS_RELIABILITY_SCENARIOS unset or empty runs every
// scenario, else a comma-separated list names those to run (to replay one scenario many times).
bool ReliabilityScenarioRuns(const std::string& name);

// What the threads of a stuck run are waiting on, for a row to print before it unsticks them:
// the kernel stack of every thread of each named process (e.g. {"daemon", pid}) and of this
// process, identical stacks counted once (comm and the stack's frames), and each FUSE
// connection's waiting requests. A row whose readers hang prints it, so that a hang too rare to
// replay explains itself where it happened.
std::string StuckReport(const std::vector<std::pair<std::string, pid_t>>& processes);

// Seconds since `start`.
double SecondsSince(std::chrono::steady_clock::time_point start);
// Median and maximum of `values` (0 for none).
double Median(std::vector<double> values);
double Max(const std::vector<double>& values);

// The row's figures, printed as one parseable line on stdout:
//   RELIABILITY row=NAME seed=S key=value key=value ...
// in the order they were first set.
class ReliabilitySummary {
 public:
  ReliabilitySummary(std::string row, uint64_t seed) : row_(std::move(row)), seed_(seed) {}
  void Set(const std::string& key, const std::string& value);
  void Set(const std::string& key, uint64_t value) { Set(key, std::to_string(value)); }
  void Set(const std::string& key, int value) { Set(key, std::to_string(value)); }
  void SetMs(const std::string& key, double seconds);  // milliseconds, one decimal
  std::string Line() const;
  void Print() const;  // the line on stdout, and as the test's "reliability" property

 private:
  std::string row_;
  uint64_t seed_;
  std::vector<std::pair<std::string, std::string>> figures_;
};

// What one whole-file read (or a range of it) returned.
struct ReadOutcome {
  std::string rel;
  size_t offset = 0;         // where the read began
  size_t length = SIZE_MAX;  // bytes asked for (SIZE_MAX: to EOF)
  std::string data;          // the bytes returned (up to the error, if any)
  int error = 0;             // errno of the open or read that failed, else 0
  std::chrono::steady_clock::time_point opened, closed;  // before open, after close
};

// Wrong bytes of an outcome whose file has exactly `want`: bytes that differ, bytes past its
// end, and bytes missing before EOF (a short file without an error).
uint64_t WrongBytesAgainst(const ReadOutcome& outcome, const std::string& want);

// Reader threads that read random files of a mount over and over until stopped, and judge each
// outcome. Every open and read call is timed; a call still running `bound_seconds` after it began
// is a hung reader.
class VerifyingReaders {
 public:
  // Wrong bytes of one outcome (0 when acceptable); by default exact content, any error accepted.
  using Judge = std::function<uint64_t(const ReadOutcome&)>;
  struct Options {
    int threads = 4;
    double bound_seconds = 5;
    uint64_t seed = 1;
    // Files read, relative to the mountpoint; chosen uniformly.
    std::vector<std::string> files;
    // Pause between reads of one thread (0: none).
    std::chrono::microseconds pause{0};
  };

  VerifyingReaders(std::string mountpoint, Options options, Judge judge);
  ~VerifyingReaders();  // stops (and frees) the readers
  VerifyingReaders(const VerifyingReaders&) = delete;
  VerifyingReaders& operator=(const VerifyingReaders&) = delete;

  void Start();
  // Stops the readers. A reader whose call is still running `bound_seconds` after it began counts
  // as hung; `unstick` (e.g. killing the daemon) is then run so it returns, and it is joined.
  void Stop(const std::function<void()>& unstick = {});

  uint64_t reads() const { return reads_.load(); }
  uint64_t wrong_bytes() const { return wrong_bytes_.load(); }
  uint64_t wrong_reads() const { return wrong_reads_.load(); }
  uint64_t errors() const { return errors_.load(); }
  uint64_t bytes() const { return bytes_.load(); }
  int hung() const { return hung_; }
  double max_call_seconds() const;
  // errno -> count of failed reads.
  std::map<int, uint64_t> errors_by_errno() const;
  // "ENOENT:3,EIO:12" (or "none").
  std::string ErrorsText() const;
  // The first wrong outcome, described (empty if none).
  std::string first_wrong() const;

  // A judge for files that never change: exact bytes of `files` (rel -> content); errors accepted.
  static Judge Exact(const std::map<std::string, std::string>* files);

 private:
  void Loop(int index);
  ReadOutcome ReadOne(std::mt19937_64& rng, int index);
  void CallBegins(int index);
  void CallEnds(int index);

  std::string mountpoint_;
  Options options_;
  Judge judge_;
  std::vector<std::thread> threads_;
  std::atomic<bool> stop_{false};
  // Per reader: when its current call began (steady-clock ns, 0 when none), and whether the loop
  // has returned.
  std::unique_ptr<std::atomic<int64_t>[]> call_start_ns_;
  std::unique_ptr<std::atomic<bool>[]> finished_;
  std::atomic<uint64_t> reads_{0}, wrong_bytes_{0}, wrong_reads_{0}, errors_{0}, bytes_{0};
  std::atomic<int64_t> max_call_ns_{0};
  mutable std::mutex mu_;  // guards errors_by_errno_ and first_wrong_
  std::map<int, uint64_t> errors_by_errno_;
  std::string first_wrong_;
  int hung_ = 0;
};

// What `clairfs fsck --cache CACHE --verify --backing BACKING --json` found.
struct FsckVerdict {
  bool ran = false;         // it printed its report
  uint64_t findings = 0;    // copies mismatched, missing or unreadable
  uint64_t mismatched = 0;  // copies that differ from their backing file
  uint64_t repairs = 0;     // temp copies, entries and orphans its recovery removed
  std::string output;       // what it printed, for failure messages
};
FsckVerdict FsckVerify(const std::string& cache, const std::string& backing);

// Reads every file of `files` through `mountpoint` once, in one thread; returns the wrong bytes
// (errors count as all of the file's bytes wrong: nothing may fail here) and describes the first
// problem in *first_problem.
uint64_t VerifyEveryByte(const std::string& mountpoint,
                         const std::map<std::string, std::string>& files,
                         std::string* first_problem);

}  // namespace clairfs::testing
