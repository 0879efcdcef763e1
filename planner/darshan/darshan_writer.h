// Writes real Darshan logs (format 3.41) that Darshan's own darshan-parser reads.
//
// Two levels:
//  - EncodeDarshanLog turns a DarshanLog (as the reader returns it) into log bytes: the 3.41
//    header, the job region (struct darshan_job, command line, mount table), the name map, the
//    POSIX (record version 4), STDIO (2) and DXT_POSIX modules (the version the traces were
//    read with: Darshan 3.4.x writes and reads only version 1, without pthread ids), and every
//    raw module (MPI-IO, LUSTRE, ...: their bytes and version as read), each region one
//    compressed stream (zlib by default, as Darshan writes), with the partial flags. Record ids
//    are kept as given, so re-encoding a log keeps its ids. Either byte order, except that raw
//    modules can only be written in the byte order they were read in (clairfs does not know
//    their layout, so it cannot swap them). Nothing is dropped silently: a log that lists a
//    region whose data it does not hold (read without ReadOptions::keep_raw_modules, or without
//    DXT) is refused, naming the modules; DarshanLog::DropModulesNotDecoded drops them on
//    purpose.
//  - BuildPosixLog makes that DarshanLog from a job description and per-file POSIX counters
//    named as darshan-parser names them; record ids are lookup8 hashes of the cleaned paths, as
//    Darshan computes them. Counters not given are 0.
//
// Limits the format imposes are errors, not silent losses: metadata must fit in 1023 bytes,
// and the command line plus mount table in the 4096-byte job record (Darshan reads no more).
// Note for callers recording a FUSE daemon's traffic: counters seen there come after the page
// cache and are split at max_read; say so in the metadata.
//
// Pure functions except WriteDarshanLogFile; thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "planner/base/status.h"
#include "planner/darshan/darshan_log.h"

namespace clairfs::darshan {

struct WriteOptions {
  Compression compression = Compression::kZlib;  // kZlib or kBzip2
  ByteOrder byte_order = ByteOrder::kLittle;
};

Result<std::string> EncodeDarshanLog(const DarshanLog& log, const WriteOptions& options = {});

// Encodes and writes to `path`, which must not exist yet (as Darshan never overwrites a log).
// On error nothing is left at `path`.
Status WriteDarshanLogFile(const std::string& path, const DarshanLog& log,
                           const WriteOptions& options = {});

struct JobDescription {
  int64_t uid = 0;
  int64_t jobid = 0;
  int64_t nprocs = 1;
  int64_t start_time_sec = 0;
  int64_t start_time_nsec = 0;
  int64_t end_time_sec = 0;
  int64_t end_time_nsec = 0;
  // Keys may not contain '=' or newlines, values no newlines.
  std::vector<std::pair<std::string, std::string>> metadata;
  std::string exe;  // command line; newlines become spaces
  // Darshan's reader shows no command line for a log without mount entries: give at least one.
  std::vector<MountEntry> mounts;
};

struct FileCounters {
  std::string path;                         // absolute, or a special name such as <STDIN>
  int64_t rank = -1;                        // -1: shared by all ranks
  std::map<std::string, int64_t> counters;  // e.g. {"POSIX_READS", 12}
  std::map<std::string, double> fcounters;  // e.g. {"POSIX_F_READ_TIME", 0.25}
};

// Errors (EINVAL) name the offending file and counter: unknown names, relative paths, the same
// path and rank twice, and job fields that cannot be stored.
Result<DarshanLog> BuildPosixLog(const JobDescription& job, const std::vector<FileCounters>& files);

}  // namespace clairfs::darshan
