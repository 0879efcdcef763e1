// The read-path accounting, timed in process (see counter_cost.h).
#include "tools/bench/counter_cost.h"

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <latch>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cache/env.h"
#include "fs/filesystem.h"

namespace clairfs {
namespace {

double ThreadCpuNs() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1e9 + static_cast<double>(ts.tv_nsec);
}

std::unique_ptr<OpenFile> StagedOpen(std::string path, uint64_t size) {
  auto file = std::make_unique<OpenFile>();
  file->from_cache = true;
  file->size = size;
  file->path = std::move(path);
  return file;
}

// What the adapter's OnRead and FileSystem::Read account per READ, `calls` times over one open
// read front to back. Returns this thread's CPU time in ns.
double AccountReads(FileSystem& fs, OpenFile& file, uint64_t calls, uint64_t bytes) {
  const double start = ThreadCpuNs();
  uint64_t offset = 0;
  for (uint64_t i = 0; i < calls; ++i) {
    fs.counters().read_requests.Add(1);
    const double read_start = fs.Elapsed();
    fs.NoteRead(file, offset, bytes, read_start);
    offset += bytes;
  }
  return ThreadCpuNs() - start;
}

// Per-READ CPU ns with `threads` readers, each of its own file, started together.
double ReadNsPerCall(FileSystem& fs, int threads, const CounterCostOptions& o) {
  std::vector<double> cpu_ns(static_cast<size_t>(threads), 0);
  std::latch start(threads);
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      auto file = StagedOpen("reader_" + std::to_string(t), o.read_calls * o.read_bytes);
      start.arrive_and_wait();
      cpu_ns[static_cast<size_t>(t)] = AccountReads(fs, *file, o.read_calls, o.read_bytes);
      fs.Release(std::move(file));
    });
  }
  for (auto& t : pool) t.join();
  double sum = 0;
  for (double ns : cpu_ns) sum += ns;
  return sum / threads / static_cast<double>(o.read_calls);
}

// CPU ns of one Elapsed() call, over `calls` calls.
double ElapsedNsPerCall(const FileSystem& fs, uint64_t calls) {
  double sink = 0;
  const double start = ThreadCpuNs();
  for (uint64_t i = 0; i < calls; ++i) sink += fs.Elapsed();
  const double ns = (ThreadCpuNs() - start) / static_cast<double>(calls);
  return sink >= 0 ? ns : 0;  // uses `sink`, so the calls are not optimised away
}

}  // namespace

Result<CounterCost> MeasureCounterCost(const CounterCostOptions& o) {
  if (o.read_calls == 0 || o.open_calls == 0 || o.distinct_files == 0) {
    return Status::Invalid("counter cost: call and file counts must be positive");
  }
  CounterCost cost;
  FileSystemConfig config;
  {
    FileSystem fs(config, nullptr, nullptr, nullptr, Env::Default());
    cost.read_ns_1_thread = ReadNsPerCall(fs, 1, o);
    cost.read_ns_2_threads = ReadNsPerCall(fs, 2, o);
    cost.elapsed_ns = ElapsedNsPerCall(fs, o.read_calls);
    const uint64_t expected = 3 * o.read_calls;
    if (fs.counters().reads.Get() != expected || fs.counters().read_requests.Get() != expected) {
      return Status::Error(EIO, "counter cost: the counters show " +
                                    std::to_string(fs.counters().reads.Get()) + " reads, " +
                                    std::to_string(expected) + " were accounted");
    }
  }

  FileSystem fs(config, nullptr, nullptr, nullptr, Env::Default());
  std::vector<std::string> paths;
  paths.reserve(o.distinct_files);
  for (uint64_t i = 0; i < o.distinct_files; ++i) {
    char name[64];
    snprintf(name, sizeof(name), "class_%04llu/img_%08llu.jpg",
             static_cast<unsigned long long>(i / 100), static_cast<unsigned long long>(i));
    paths.emplace_back(name);
  }
  // The OpenFiles are made outside the timed loops, in batches to bound memory.
  constexpr uint64_t kBatch = 10000;
  double open_ns = 0, release_ns = 0;
  for (uint64_t done = 0; done < o.open_calls;) {
    const uint64_t batch = std::min(kBatch, o.open_calls - done);
    std::vector<std::unique_ptr<OpenFile>> files;
    files.reserve(batch);
    for (uint64_t i = 0; i < batch; ++i) {
      files.push_back(StagedOpen(paths[(done + i) % o.distinct_files], o.file_size));
    }
    const double t0 = ThreadCpuNs();
    for (auto& f : files) fs.NotePassthroughOpen(*f);
    const double t1 = ThreadCpuNs();
    for (auto& f : files) fs.Release(std::move(f));
    const double t2 = ThreadCpuNs();
    open_ns += t1 - t0;
    release_ns += t2 - t1;
    done += batch;
  }
  const size_t rows = fs.file_stats().Snapshot().size();
  if (fs.counters().passthrough_opens.Get() != o.open_calls ||
      rows != std::min(o.open_calls, o.distinct_files)) {
    return Status::Error(EIO, "counter cost: the counters show " +
                                  std::to_string(fs.counters().passthrough_opens.Get()) +
                                  " passthrough opens and " + std::to_string(rows) +
                                  " files, after " + std::to_string(o.open_calls) + " opens");
  }
  cost.passthrough_open_ns = open_ns / static_cast<double>(o.open_calls);
  cost.release_ns = release_ns / static_cast<double>(o.open_calls);
  return cost;
}

}  // namespace clairfs
