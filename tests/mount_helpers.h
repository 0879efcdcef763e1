// Helpers for integration tests that mount clairfs for real: start a mount through the CLI,
// query its status, wait for staging to settle, and always unmount (the guard's destructor runs
// even when an assertion fails).
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace clairfs::testing {

class ClairfsMount {
 public:
  ClairfsMount(std::string backing, std::string mountpoint, std::string cache)
      : backing_(std::move(backing)),
        mountpoint_(std::move(mountpoint)),
        cache_(std::move(cache)),
        guard_(mountpoint_) {}
  // Runs `clairfs mount BACKING MOUNTPOINT --cache CACHE <extra>`; returns the command result.
  // Unless `extra` sets --stage-settle or KeepDefaultSettle() was called, it adds
  // `--stage-settle 100ms`: tests stage files they have just written, and the default settle
  // (2 s, docs/CACHE.md "The settle rule") would make each wait that long for its copies.
  CommandResult Mount(const std::vector<std::string>& extra = {});
  // Mounts with the product's default --stage-settle (the backing-store reliability row).
  void KeepDefaultSettle() { default_settle_ = true; }
  // What `clairfs status --json` prints, asked in this process through the CLI's control client
  // (an empty object if it failed).
  nlohmann::json Status();
  // One counter of Status() (0 if absent).
  uint64_t Counter(const char* key) { return Status().value(key, uint64_t{0}); }
  // Waits until nothing is queued or in flight for staging (or the timeout passes).
  bool WaitStagingIdle(int timeout_seconds = 60);
  // `clairfs umount`; returns its result.
  CommandResult Umount();
  pid_t pid() const { return pid_; }
  const std::string& mountpoint() const { return mountpoint_; }

 private:
  std::string backing_, mountpoint_, cache_;
  MountGuard guard_;
  pid_t pid_ = -1;
  bool default_settle_ = false;
};

// Fixture of most mount tests: a temporary directory with an empty backing/ and mnt/, and the
// path of a cache (created by the mount).
class MountDirsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backing_ = dir_ / "backing";
    mnt_ = dir_ / "mnt";
    cache_ = dir_ / "cache";
    MakeDirs(backing_);
    MakeDirs(mnt_);
  }
  TempDir dir_;
  std::string backing_, mnt_, cache_;
};

// `count` files of 1..max_size random bytes (deterministic for `seed`) in three directories
// d0..d2 under `root`; returns relative path -> content.
std::map<std::string, std::string> MakeFiles(const std::string& root, int count, size_t max_size,
                                             uint64_t seed);

// Reads `path` whole and then drops its pages from the page cache (POSIX_FADV_DONTNEED), so the
// next read of it reaches the filesystem, as for a dataset larger than memory on a no-open mount
// ("<open failed>" if it cannot be opened).
std::string ReadFileAndDropPages(const std::string& path);

// Every regular file under `root` as relative paths (sorted).
std::vector<std::string> ListFilesRecursive(const std::string& root);

}  // namespace clairfs::testing
