// Support for the reliability matrix's integration tests (see reliability.h).
#include "tests/reliability.h"

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

namespace clairfs::testing {
namespace {

using Clock = std::chrono::steady_clock;

int64_t NowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now().time_since_epoch())
      .count();
}

std::string ErrnoText(int error) {
  const char* name = strerrorname_np(error);
  return name != nullptr ? name : std::to_string(error);
}

}  // namespace

int ReliabilityTrials(int ci_default, int full, int least) {
  const char* text = getenv("CLAIRFS_RELIABILITY_TRIALS");
  if (text == nullptr || *text == '\0') return ci_default;
  if (std::string(text) == "full") return full;
  if (std::string(text) == "least") return least;
  const int n = atoi(text);
  return n > 0 ? n : ci_default;
}

uint64_t ReliabilitySeed() {
  const char* text = getenv("CLAIRFS_RELIABILITY_SEED");
  if (text != nullptr && *text != '\0') return strtoull(text, nullptr, 10);
  return std::random_device{}() % 1000000;
}

bool ReliabilityScenarioRuns(const std::string& name) {
  const char* text = getenv("CLAIRFS_RELIABILITY_SCENARIOS");
  if (text == nullptr || *text == '\0') return true;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    if (item == name) return true;
  }
  return false;
}

namespace {

// The names of the entries of directory `path` (none if it cannot be read).
std::vector<std::string> EntriesOf(const std::string& path) {
  std::vector<std::string> names;
  DIR* dir = opendir(path.c_str());
  if (dir == nullptr) return names;
  while (const dirent* e = readdir(dir)) {
    if (e->d_name[0] != '.') names.emplace_back(e->d_name);
  }
  closedir(dir);
  return names;
}

// Each thread of `pid` as "comm | kernel stack", identical ones counted.
std::string ThreadStacks(const std::string& pid) {
  std::map<std::string, int> seen;
  for (const std::string& tid : EntriesOf("/proc/" + pid + "/task")) {
    const std::string task = "/proc/" + pid + "/task/" + tid;
    std::string comm = ReadFile(task + "/comm");
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    std::string frames;
    std::stringstream stack(ReadFile(task + "/stack"));
    std::string line;
    while (std::getline(stack, line)) {
      const size_t name = line.find("] ");  // "[<0>] fuse_dev_do_read+0x..."
      frames += (frames.empty() ? "" : " < ") +
                (name == std::string::npos ? line : line.substr(name + 2));
    }
    ++seen[comm + " | " + (frames.empty() ? "(running or unreadable)" : frames)];
  }
  std::string out;
  for (const auto& [stack, count] : seen) out += "  " + std::to_string(count) + "x " + stack + "\n";
  return out;
}

}  // namespace

std::string StuckReport(const std::vector<std::pair<std::string, pid_t>>& processes) {
  std::string out;
  for (const auto& [name, pid] : processes) {
    out += name + " " + std::to_string(pid) + " threads:\n" + ThreadStacks(std::to_string(pid));
  }
  out += "this process's threads:\n" + ThreadStacks(std::to_string(getpid())) +
         "FUSE connections (waiting):";
  const std::vector<std::string> connections = EntriesOf("/sys/fs/fuse/connections");
  if (connections.empty()) out += " none listed (fusectl is not mounted)";
  for (const std::string& c : connections) {
    std::string waiting = ReadFile("/sys/fs/fuse/connections/" + c + "/waiting");
    if (!waiting.empty() && waiting.back() == '\n') waiting.pop_back();
    out += " " + c + ":" + waiting;
  }
  return out + "\n";
}

double SecondsSince(Clock::time_point start) {
  return std::chrono::duration<double>(Clock::now() - start).count();
}

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t mid = values.size() / 2;
  return values.size() % 2 ? values[mid] : (values[mid - 1] + values[mid]) / 2;
}

double Max(const std::vector<double>& values) {
  return values.empty() ? 0 : *std::max_element(values.begin(), values.end());
}

void ReliabilitySummary::Set(const std::string& key, const std::string& value) {
  for (auto& [k, v] : figures_) {
    if (k == key) {
      v = value;
      return;
    }
  }
  figures_.emplace_back(key, value);
}

void ReliabilitySummary::SetMs(const std::string& key, double seconds) {
  char text[32];
  snprintf(text, sizeof(text), "%.1f", seconds * 1000);
  Set(key, std::string(text));
}

std::string ReliabilitySummary::Line() const {
  std::string line = "RELIABILITY row=" + row_ + " seed=" + std::to_string(seed_);
  for (const auto& [k, v] : figures_) line += " " + k + "=" + v;
  return line;
}

void ReliabilitySummary::Print() const {
  const std::string line = Line();
  printf("%s\n", line.c_str());
  fflush(stdout);
  ::testing::Test::RecordProperty("reliability", line);
}

uint64_t WrongBytesAgainst(const ReadOutcome& outcome, const std::string& want) {
  const size_t offset = std::min(outcome.offset, want.size());
  const size_t available = want.size() - offset;
  const size_t expected = std::min(outcome.length, available);
  uint64_t wrong = 0;
  const size_t common = std::min(outcome.data.size(), expected);
  for (size_t i = 0; i < common; ++i) {
    if (outcome.data[i] != want[offset + i]) ++wrong;
  }
  if (outcome.data.size() > expected) wrong += outcome.data.size() - expected;
  if (outcome.error == 0 && outcome.data.size() < expected) wrong += expected - outcome.data.size();
  return wrong;
}

VerifyingReaders::VerifyingReaders(std::string mountpoint, Options options, Judge judge)
    : mountpoint_(std::move(mountpoint)), options_(std::move(options)), judge_(std::move(judge)) {
  call_start_ns_ = std::make_unique<std::atomic<int64_t>[]>(options_.threads);
  finished_ = std::make_unique<std::atomic<bool>[]>(options_.threads);
  for (int i = 0; i < options_.threads; ++i) {
    call_start_ns_[i] = 0;
    finished_[i] = false;
  }
}

VerifyingReaders::~VerifyingReaders() { Stop(); }

VerifyingReaders::Judge VerifyingReaders::Exact(const std::map<std::string, std::string>* files) {
  return
      [files](const ReadOutcome& o) -> uint64_t { return WrongBytesAgainst(o, files->at(o.rel)); };
}

void VerifyingReaders::Start() {
  for (int i = 0; i < options_.threads; ++i) threads_.emplace_back([this, i] { Loop(i); });
}

void VerifyingReaders::CallBegins(int index) { call_start_ns_[index] = NowNs(); }

void VerifyingReaders::CallEnds(int index) {
  const int64_t took = NowNs() - call_start_ns_[index].load();
  call_start_ns_[index] = 0;
  int64_t seen = max_call_ns_.load();
  while (took > seen && !max_call_ns_.compare_exchange_weak(seen, took)) {
  }
  if (took > static_cast<int64_t>(options_.bound_seconds * 1e9)) {
    std::lock_guard<std::mutex> lock(mu_);
    ++hung_;
  }
}

ReadOutcome VerifyingReaders::ReadOne(std::mt19937_64& rng, int index) {
  ReadOutcome o;
  o.rel = options_.files[rng() % options_.files.size()];
  if (rng() % 4 == 0) {  // a range somewhere in (or past) the file
    o.offset = rng() % (256 * 1024);
    o.length = 1 + rng() % (128 * 1024);
  }
  const std::string path = mountpoint_ + "/" + o.rel;
  o.opened = Clock::now();
  CallBegins(index);
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  const int open_errno = errno;
  CallEnds(index);
  if (fd < 0) {
    o.error = open_errno;
    o.closed = Clock::now();
    return o;
  }
  char buf[64 * 1024];
  size_t at = o.offset;
  while (o.data.size() < o.length) {
    const size_t want = std::min(sizeof(buf), o.length - o.data.size());
    CallBegins(index);
    const ssize_t n = pread(fd, buf, want, static_cast<off_t>(at));
    const int read_errno = errno;
    CallEnds(index);
    if (n < 0) {
      if (read_errno == EINTR) continue;
      o.error = read_errno;
      break;
    }
    if (n == 0) break;
    o.data.append(buf, static_cast<size_t>(n));
    at += static_cast<size_t>(n);
  }
  CallBegins(index);
  close(fd);
  CallEnds(index);
  o.closed = Clock::now();
  return o;
}

void VerifyingReaders::Loop(int index) {
  std::mt19937_64 rng(options_.seed * 7919 + static_cast<uint64_t>(index));
  while (!stop_.load()) {
    ReadOutcome o = ReadOne(rng, index);
    ++reads_;
    bytes_ += o.data.size();
    if (o.error != 0) {
      ++errors_;
      std::lock_guard<std::mutex> lock(mu_);
      ++errors_by_errno_[o.error];
    }
    const uint64_t wrong = judge_(o);
    if (wrong > 0) {
      wrong_bytes_ += wrong;
      ++wrong_reads_;
      std::lock_guard<std::mutex> lock(mu_);
      if (first_wrong_.empty()) {
        first_wrong_ = o.rel + " at " + std::to_string(o.offset) + ": " + std::to_string(wrong) +
                       " wrong bytes in " + std::to_string(o.data.size()) + " returned (error " +
                       ErrnoText(o.error) + ")";
      }
    }
    if (options_.pause.count() > 0) std::this_thread::sleep_for(options_.pause);
  }
  finished_[index] = true;
}

void VerifyingReaders::Stop(const std::function<void()>& unstick) {
  stop_ = true;
  if (threads_.empty()) return;
  const int64_t bound_ns = static_cast<int64_t>(options_.bound_seconds * 1e9);
  // Wait while some reader is neither finished nor stuck past the bound in one call.
  for (;;) {
    bool waiting = false;
    for (int i = 0; i < options_.threads; ++i) {
      if (finished_[i]) continue;
      const int64_t began = call_start_ns_[i].load();
      if (began == 0 || NowNs() - began <= bound_ns) waiting = true;
    }
    if (!waiting) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  int stuck = 0;
  for (int i = 0; i < options_.threads; ++i) stuck += finished_[i] ? 0 : 1;
  if (stuck > 0) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      hung_ += stuck;
    }
    if (unstick) unstick();
  }
  for (auto& t : threads_) t.join();
  threads_.clear();
}

double VerifyingReaders::max_call_seconds() const { return max_call_ns_.load() / 1e9; }

std::map<int, uint64_t> VerifyingReaders::errors_by_errno() const {
  std::lock_guard<std::mutex> lock(mu_);
  return errors_by_errno_;
}

std::string VerifyingReaders::ErrorsText() const {
  std::string text;
  for (const auto& [error, count] : errors_by_errno()) {
    text += (text.empty() ? "" : ",") + ErrnoText(error) + ":" + std::to_string(count);
  }
  return text.empty() ? "none" : text;
}

std::string VerifyingReaders::first_wrong() const {
  std::lock_guard<std::mutex> lock(mu_);
  return first_wrong_;
}

FsckVerdict FsckVerify(const std::string& cache, const std::string& backing) {
  FsckVerdict verdict;
  CommandResult fsck = Run(
      {ClairfsBin(), "fsck", "--cache", cache, "--verify", "--backing", backing, "--json"}, 300);
  verdict.output = fsck.out + fsck.err;
  auto report = nlohmann::json::parse(fsck.out, nullptr, false);
  if (report.is_discarded() || !report.contains("verify") || !report.contains("recovery")) {
    return verdict;
  }
  verdict.ran = true;
  const auto& verify = report["verify"];
  verdict.mismatched = verify.value("mismatched", uint64_t{0});
  verdict.findings = verdict.mismatched + verify.value("missing", uint64_t{0}) +
                     verify.value("unreadable", uint64_t{0});
  const auto& recovery = report["recovery"];
  verdict.repairs = recovery.value("temp_removed", uint64_t{0}) +
                    recovery.value("entries_dropped", uint64_t{0}) +
                    recovery.value("orphans_removed", uint64_t{0});
  return verdict;
}

uint64_t VerifyEveryByte(const std::string& mountpoint,
                         const std::map<std::string, std::string>& files,
                         std::string* first_problem) {
  uint64_t wrong = 0;
  for (const auto& [rel, want] : files) {
    ReadOutcome o;
    o.rel = rel;
    const int fd = open((mountpoint + "/" + rel).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      o.error = errno;
    } else {
      char buf[64 * 1024];
      for (;;) {
        const ssize_t n = read(fd, buf, sizeof(buf));
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) o.error = errno;
        if (n <= 0) break;
        o.data.append(buf, static_cast<size_t>(n));
      }
      close(fd);
    }
    const uint64_t bad =
        o.error != 0 ? std::max<uint64_t>(want.size(), 1) : WrongBytesAgainst(o, want);
    if (bad > 0 && first_problem->empty()) {
      *first_problem = rel + ": " + std::to_string(bad) + " wrong bytes (error " +
                       (o.error ? ErrnoText(o.error) : "none") + ")";
    }
    wrong += bad;
  }
  return wrong;
}

}  // namespace clairfs::testing
