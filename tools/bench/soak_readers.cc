// The soak's verifying readers (see soak_readers.h).
#include "tools/bench/soak_readers.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "planner/synthetic_content.h"
#include "tools/bench/bench_support.h"

namespace clairfs {
namespace {

constexpr size_t kBufBytes = 1 << 20;

uint64_t DifferingBytes(const char* a, const char* b, size_t n) {
  uint64_t differing = 0;
  for (size_t i = 0; i < n; ++i) differing += a[i] != b[i];
  return differing;
}

}  // namespace

SoakReaders::SoakReaders(std::string root, std::vector<SyntheticFile> files,
                         SoakReaderOptions options)
    : root_(std::move(root)), files_(std::move(files)), options_(options) {}

SoakReaders::~SoakReaders() {
  Stop();
  Join();
}

void SoakReaders::Start() {
  running_ = std::max(1, options_.readers);
  for (int r = 0; r < std::max(1, options_.readers); ++r) {
    threads_.emplace_back([this, r] { Run(r); });
  }
}

void SoakReaders::Join() {
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
}

std::vector<std::string> SoakReaders::errors() const {
  std::lock_guard<std::mutex> lock(errors_mu_);
  return errors_;
}

void SoakReaders::Failed(const std::string& message) {
  failed_opens_.fetch_add(1, std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(errors_mu_);
  if (errors_.size() < kMaxErrors) errors_.push_back(message);
}

void SoakReaders::Run(int reader) {
  std::vector<char> buf(kBufBytes), expected(kBufBytes);
  std::vector<size_t> order(files_.size());
  for (uint64_t pass = 0; !files_.empty(); ++pass) {
    for (size_t i = 0; i < order.size(); ++i) order[i] = i;
    SeededShuffle(&order, options_.seed ^ (static_cast<uint64_t>(reader) << 32) ^ pass);
    for (size_t index : order) {
      if (stop_.load(std::memory_order_relaxed) ||
          opens_claimed_.fetch_add(1, std::memory_order_relaxed) >= options_.total_opens) {
        --running_;
        return;
      }
      uint64_t n = ReadAndCheck(files_[index], &buf, &expected);
      bytes_.fetch_add(n, std::memory_order_relaxed);
      opens_done_.fetch_add(1, std::memory_order_relaxed);
    }
  }
  --running_;
}

uint64_t SoakReaders::ReadAndCheck(const SyntheticFile& file, std::vector<char>* buf,
                                   std::vector<char>* expected) {
  const std::string path = root_ + "/" + file.relpath;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    Failed("open " + path + ": " + strerror(errno));
    return 0;
  }
  uint64_t offset = 0, wrong = 0;
  for (;;) {
    ssize_t n = read(fd, buf->data(), buf->size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      Failed("read " + path + " at " + std::to_string(offset) + ": " + strerror(errno));
      break;
    }
    if (n == 0) {
      if (offset < file.size) wrong += file.size - offset;  // short: the rest never came
      break;
    }
    const uint64_t got = static_cast<uint64_t>(n);
    // Bytes past the expected size are all wrong; those within it are compared.
    const uint64_t within = offset >= file.size ? 0 : std::min(got, file.size - offset);
    FillSyntheticBytes(file.relpath, file.size, offset, expected->data(), within);
    wrong += DifferingBytes(buf->data(), expected->data(), within) + (got - within);
    offset += got;
  }
  if (options_.drop_pages) (void)posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  close(fd);
  if (wrong > 0) {
    wrong_bytes_.fetch_add(wrong, std::memory_order_relaxed);
    std::lock_guard<std::mutex> lock(errors_mu_);
    if (errors_.size() < kMaxErrors) {
      errors_.push_back(path + ": " + std::to_string(wrong) + " wrong bytes (read " +
                        std::to_string(offset) + ", expected " + std::to_string(file.size) + ")");
    }
  }
  return offset;
}

}  // namespace clairfs
