// Read workloads (see read_workload.h).
#include "tools/bench/read_workload.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <filesystem>
#include <functional>
#include <latch>
#include <memory>
#include <mutex>
#include <thread>

#include "planner/synthetic_content.h"

namespace clairfs {

Status ReadSyntheticFile(const std::string& path, const SyntheticFile& file, bool verify,
                         bool drop_pages, char* buf, size_t buf_size, uint64_t* bytes) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  SyntheticVerifier verifier(file.relpath);
  uint64_t total = 0;
  Status status;
  for (;;) {
    ssize_t n = read(fd, buf, buf_size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      status = Status::FromErrno(errno, "read " + path);
      break;
    }
    if (n == 0) break;
    total += static_cast<uint64_t>(n);
    if (verify) {
      status = verifier.Update(buf, static_cast<size_t>(n));
      if (!status.ok()) break;
    }
  }
  if (drop_pages) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  CLAIRFS_RETURN_IF_ERROR(status);
  if (verify) {
    CLAIRFS_RETURN_IF_ERROR(verifier.Finish());
    if (total != file.size) {
      return Status::Error(EILSEQ, path + ": read " + std::to_string(total) + " bytes, expected " +
                                       std::to_string(file.size));
    }
  }
  *bytes += total;
  return Status::Ok();
}

namespace {

using Clock = std::chrono::steady_clock;

// The reader pool behind ReadFiles and CheckFiles. With `stop_on_error` the other threads stop
// at their next file after the first failure.
ReadResult RunReaders(const std::string& root, const std::vector<SyntheticFile>& files, int threads,
                      bool verify, bool stop_on_error,
                      const std::function<void(uint64_t, uint64_t)>& progress,
                      Status* first_error) {
  threads = std::max(1, threads);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  std::mutex mutex;  // guards result.files, result.bytes, failed_files, errors and progress calls
  ReadResult result;
  auto worker = [&] {
    constexpr size_t kBufSize = 1 << 20;
    std::unique_ptr<char[]> buf(new char[kBufSize]);
    for (size_t i = next++; i < files.size() && !stop.load(); i = next++) {
      uint64_t bytes = 0;
      Status s = ReadSyntheticFile(root + "/" + files[i].relpath, files[i], verify, false,
                                   buf.get(), kBufSize, &bytes);
      std::lock_guard<std::mutex> lock(mutex);
      ++result.files;
      result.bytes += bytes;
      if (!s.ok()) {
        ++result.failed_files;
        if (first_error != nullptr && first_error->ok()) *first_error = s;
        if (result.errors.size() < ReadResult::kMaxErrors) result.errors.push_back(s.message());
        if (stop_on_error) stop = true;
      }
      if (progress) progress(result.files, result.bytes);
    }
  };
  auto start = Clock::now();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(worker);
  for (auto& t : pool) t.join();
  result.seconds = std::chrono::duration<double>(Clock::now() - start).count();
  return result;
}

}  // namespace

Result<ReadResult> ReadFiles(const std::string& root, const std::vector<SyntheticFile>& files,
                             int threads, bool verify) {
  Status first_error;
  ReadResult result =
      RunReaders(root, files, threads, verify, /*stop_on_error=*/true, nullptr, &first_error);
  if (!first_error.ok()) return first_error;
  return result;
}

ReadResult CheckFiles(const std::string& root, const std::vector<SyntheticFile>& files, int threads,
                      const std::function<void(uint64_t, uint64_t)>& progress) {
  return RunReaders(root, files, threads, /*verify=*/true, /*stop_on_error=*/false, progress,
                    nullptr);
}

Result<uint64_t> ListTree(const std::string& root) {
  std::error_code ec;
  uint64_t entries = 0;
  for (std::filesystem::recursive_directory_iterator it(root, ec), end; !ec && it != end;
       it.increment(ec)) {
    ++entries;
  }
  if (ec) return Status::Error(ec.value(), "list " + root + ": " + ec.message());
  return entries;
}

Result<OpenBurstResult> TimeConcurrentOpens(const std::vector<std::string>& paths) {
  const size_t n = paths.size();
  std::vector<int> fds(n, -1);
  std::vector<int> errors(n, 0);
  std::vector<Clock::time_point> starts(n), ends(n);
  std::latch ready(static_cast<std::ptrdiff_t>(n) + 1);
  std::vector<std::thread> pool;
  pool.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    pool.emplace_back([&, i] {
      ready.arrive_and_wait();
      starts[i] = Clock::now();
      fds[i] = open(paths[i].c_str(), O_RDONLY | O_CLOEXEC);
      ends[i] = Clock::now();
      if (fds[i] < 0) errors[i] = errno;
    });
  }
  ready.arrive_and_wait();
  for (auto& t : pool) t.join();
  OpenBurstResult result;
  Status error;
  for (size_t i = 0; i < n; ++i) {
    if (fds[i] >= 0) close(fds[i]);
    if (errors[i] != 0 && error.ok()) error = Status::FromErrno(errors[i], "open " + paths[i]);
    result.slowest_seconds = std::max(result.slowest_seconds,
                                      std::chrono::duration<double>(ends[i] - starts[i]).count());
  }
  CLAIRFS_RETURN_IF_ERROR(error);
  if (n > 0) {
    auto first = *std::min_element(starts.begin(), starts.end());
    auto last = *std::max_element(ends.begin(), ends.end());
    result.wall_seconds = std::chrono::duration<double>(last - first).count();
  }
  return result;
}

}  // namespace clairfs
