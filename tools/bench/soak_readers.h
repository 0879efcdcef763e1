// SoakReaders: the readers of `clairfs bench soak`. N threads open, read whole and close the
// files of a synthetic dataset (synthetic_content.h) below a root until a total count of opens is
// reached, and check every byte read against the content its path must have.
//
// Each reader goes over the whole file list pass after pass, each pass in its own order (a
// SplitMix64 Fisher-Yates shuffle seeded by the reader and the pass), so the readers open
// different files at the same moment and every file is opened about equally often. An open is
// counted when its file was read to the end (or failed). Every byte is compared with the expected
// one: wrong_bytes counts bytes that differ, plus the bytes missing from a short file and the
// bytes past the expected size of a long one. A failed open or read is counted in failed_opens
// (the first few messages kept) and the reader goes on with its next file. With `drop_pages`
// each reader asks the kernel to drop the file's cached pages (POSIX_FADV_DONTNEED) before it
// closes it, so the next open's reads reach the daemon again instead of the page cache.
//
// Thread-safety: Start once, then any thread may call the getters; Stop and Join from the owner.
// Errors: counted, never thrown.
#pragma once

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "planner/synthetic_dataset.h"

namespace clairfs {

struct SoakReaderOptions {
  int readers = 8;
  uint64_t total_opens = 0;
  bool drop_pages = false;
  uint64_t seed = 1;
};

class SoakReaders {
 public:
  static constexpr size_t kMaxErrors = 20;

  SoakReaders(std::string root, std::vector<SyntheticFile> files, SoakReaderOptions options);
  ~SoakReaders();  // stops and joins
  SoakReaders(const SoakReaders&) = delete;
  SoakReaders& operator=(const SoakReaders&) = delete;

  void Start();
  // Asks the readers to stop after their current file.
  void Stop() { stop_.store(true); }
  void Join();
  // True once every reader has returned.
  bool Done() const { return running_.load() == 0; }

  uint64_t opens() const { return opens_done_.load(std::memory_order_relaxed); }
  uint64_t bytes() const { return bytes_.load(std::memory_order_relaxed); }
  uint64_t wrong_bytes() const { return wrong_bytes_.load(std::memory_order_relaxed); }
  uint64_t failed_opens() const { return failed_opens_.load(std::memory_order_relaxed); }
  std::vector<std::string> errors() const;

 private:
  void Run(int reader);
  // Opens, reads and checks one file; returns the bytes read.
  uint64_t ReadAndCheck(const SyntheticFile& file, std::vector<char>* buf,
                        std::vector<char>* expected);
  void Failed(const std::string& message);

  const std::string root_;
  const std::vector<SyntheticFile> files_;
  const SoakReaderOptions options_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> opens_claimed_{0};
  std::atomic<uint64_t> opens_done_{0};
  std::atomic<uint64_t> bytes_{0};
  std::atomic<uint64_t> wrong_bytes_{0};
  std::atomic<uint64_t> failed_opens_{0};
  std::atomic<int> running_{0};
  std::atomic<bool> stop_{false};
  mutable std::mutex errors_mu_;  // guards errors_
  std::vector<std::string> errors_;
};

}  // namespace clairfs
