// DarshanLog: the decoded contents of one Darshan log, as the reader returns it and the writer
// takes it.
//
// Records are in the order they appear in the log (the order darshan-parser prints). POSIX and
// STDIO records always carry the current record versions' counters (POSIX 4, STDIO 2): the
// reader converts older versions, filling counters an old version lacks with -1 (and
// POSIX_RENAMED_FROM with 0), as darshan-util does. A counter value of -1 means "not monitored".
// Names are looked up by record id; ids repeat across ranks and are stored once. Names are raw
// bytes, as the log stores them (any byte but NUL); whoever prints one as text escapes it.
// Modules clairfs does not decode (MPI-IO, LUSTRE, HEATMAP, ...) may be kept as raw bytes
// (ReadOptions::keep_raw_modules), so that writing the log back loses nothing.
// Plain values; copy freely.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "planner/darshan/darshan_format.h"

namespace clairfs::darshan {

struct JobInfo {
  int64_t uid = 0;
  int64_t start_time_sec = 0;
  int64_t start_time_nsec = 0;  // 0 before format 3.41
  int64_t end_time_sec = 0;
  int64_t end_time_nsec = 0;
  int64_t nprocs = 0;
  int64_t jobid = 0;
  // "key=value\n" lines, as stored (at most 1023 bytes).
  std::string metadata;
  // The command line.
  std::string exe;
};

struct MountEntry {
  std::string fs_type;
  std::string path;
};

// Where one module's data sat in the log (compressed bytes) and its record version.
struct ModuleRegion {
  int module_id = 0;  // 3.41 numbering
  uint64_t offset = 0;
  uint64_t length = 0;
  uint32_t version = 0;
  bool partial = false;  // the module ran out of record memory at runtime
  // Its contents are in the DarshanLog (decoded records, or a RawModule), so a writer can
  // write them back; false for a region the reader skipped.
  bool held = false;
};

// A module region clairfs does not decode, kept as its decompressed bytes. They are in the
// byte order of the log they came from (DarshanLog::byte_order): clairfs does not know their
// layout, so it cannot swap them.
struct RawModule {
  int module_id = 0;  // 3.41 numbering
  uint32_t version = 0;
  std::string data;
};

struct PosixRecord {
  uint64_t id = 0;
  int64_t rank = -1;  // -1: shared file, reduced over ranks
  std::array<int64_t, kPosixCounters> counters{};
  std::array<double, kPosixFCounters> fcounters{};
};

struct StdioRecord {
  uint64_t id = 0;
  int64_t rank = -1;
  std::array<int64_t, kStdioCounters> counters{};
  std::array<double, kStdioFCounters> fcounters{};
};

struct DxtSegment {
  int64_t offset = 0;
  int64_t length = 0;
  double start_time = 0;
  double end_time = 0;
  uint64_t pthread_id = 0;  // version 2 only; version 1 records have none (0 here)
};

struct DxtRecord {
  uint64_t id = 0;
  int64_t rank = 0;
  int64_t shared_record = 0;
  std::string hostname;
  std::vector<DxtSegment> writes;
  std::vector<DxtSegment> reads;
};

struct DarshanLog {
  std::string version_string;  // "3.41", as in the header
  FormatVersion version = FormatVersion::k341;
  Compression compression = Compression::kZlib;
  ByteOrder byte_order = ByteOrder::kLittle;

  JobInfo job;
  // As darshan-parser orders them: longest mount path first (a record's mount point is the
  // first entry whose path prefixes the record's name).
  std::vector<MountEntry> mounts;
  std::map<uint64_t, std::string> names;

  // Compressed sizes of the job and name-map regions; every module with data or a partial flag.
  uint64_t job_region_length = 0;
  uint64_t name_map_length = 0;
  std::vector<ModuleRegion> modules;  // by module id

  std::vector<PosixRecord> posix;
  std::vector<StdioRecord> stdio;
  std::vector<DxtRecord> dxt_posix;
  uint32_t dxt_posix_version = 0;      // as read (1 or 2); 0 for a log not read from a file
  std::vector<RawModule> raw_modules;  // by module id
  // POSIX version-1 records that also carry stdio counters; Darshan drops them (they cannot be
  // converted) and so does the reader; counted here.
  size_t dropped_posix_v1_records = 0;

  // The region of `module_id`, or nullptr if the log has none.
  const ModuleRegion* FindModule(int module_id) const;
  // The raw bytes kept of module `module_id`, or nullptr.
  const RawModule* FindRawModule(int module_id) const;
  // The names of the modules whose regions hold data that this DarshanLog does not hold
  // (skipped by the reader), comma-separated; "" when it holds everything it lists.
  std::string ModulesNotHeld() const;
  // Forgets the raw modules and every region whose data is not held, so that the log can be
  // written in either byte order, without them. Writing then drops those modules' data: the
  // caller asks for that loss by calling this.
  void DropModulesNotDecoded();
  // The name of record `id`, or nullptr if the name map lacks it.
  const std::string* FindName(uint64_t id) const;
  // The mount entry darshan-parser attributes to `name` (first prefix match), or nullptr.
  const MountEntry* MountFor(std::string_view name) const;
  // Wall-clock run time as darshan-parser computes it: with nanoseconds for 3.41, else
  // end - start + 1 seconds.
  double RunTimeSeconds() const;
};

}  // namespace clairfs::darshan
