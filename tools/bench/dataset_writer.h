// DatasetWriter: writes a planned synthetic dataset (synthetic_dataset.h) into a directory.
//
// The target directory may be missing or empty, or hold a dataset this tool wrote before (every
// regular file in it carries a synthetic header whose size equals the file's size, and it holds
// nothing else but directories; files under 8 bytes cannot show the magic and count as foreign).
// Anything else is refused with a message naming the first foreign entry, unless `force` is set, in
// which case foreign entries are left alone. Files of a previous dataset that the new plan does not
// contain are removed (and directories that become empty); planned files already present with the
// right size and a correct first block (header and first 4 KiB of content) are kept ("reused"), the
// others are (re)written. So re-running the same command is cheap, and a different spec turns the
// tree into exactly the new dataset. Files are written with plain write(2) and not fsynced: this is
// benchmark input that can be regenerated, and a torn file fails the size/content check on the next
// run.
//
// Thread-safety: WriteSyntheticDataset is a plain function; it calls `progress` on the calling
// thread. Errors: a Status naming the path (errno from the failing call); files written before
// the error stay.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "planner/base/status.h"
#include "planner/synthetic_dataset.h"

namespace clairfs {

struct DatasetWriteOptions {
  bool force = false;  // write into a directory holding foreign entries
  // Called after each planned file with the running totals (files and bytes done, kept or
  // written).
  std::function<void(uint64_t files_done, uint64_t bytes_done)> progress;
  // Return only once the files written are older than a mount's default --stage-settle, as a
  // dataset on a PFS is: a mount over files written moments ago puts off staging them, which a
  // bench would measure as slowness of the mount (docs/CACHE.md, "The settle rule").
  bool wait_settled = false;
};

// The options of a dataset a mount serves next (wait_settled).
inline DatasetWriteOptions SettledForMount() {
  DatasetWriteOptions options;
  options.wait_settled = true;
  return options;
}

struct DatasetWriteStats {
  uint64_t written_files = 0;
  uint64_t written_bytes = 0;
  uint64_t reused_files = 0;
  uint64_t removed_files = 0;    // stale files of a previous dataset
  uint64_t foreign_entries = 0;  // left alone (only with force)
};

Result<DatasetWriteStats> WriteSyntheticDataset(const std::string& dir,
                                                const std::vector<SyntheticFile>& files,
                                                const DatasetWriteOptions& options);

// True if the regular file at `path` has the synthetic header and its size matches the header
// (the test for "written by this tool", used for existing entries).
bool LooksLikeSyntheticFile(const std::string& path);

}  // namespace clairfs
