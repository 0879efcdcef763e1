// Reads a Darshan log (formats 3.00, 3.10, 3.20, 3.21, 3.41; zlib, bzip2 or uncompressed;
// either byte order) into a DarshanLog: header, job record (with metadata, command line and
// mount table), name map, and the POSIX, STDIO and DXT_POSIX modules. Other modules are listed
// in DarshanLog::modules and, unless ReadOptions::keep_raw_modules, not decompressed. Partial
// modules (out of record memory at runtime) are flagged, and the records they hold are
// returned.
//
// Input is untrusted. Every failure is an EINVAL Status whose message starts with the region
// it concerns ("header: ...", "job region: ...", "name map: ...", "POSIX region: ..."):
// truncation, offsets or lengths past the end of the file, bad compressed data, records that
// do not fit. Decompressed sizes are capped (ReadOptions), so memory stays bounded whatever the
// input. Reading never crashes on bad input; the fuzz target planner/darshan/darshan_reader_fuzz.cc
// checks that.
//
// Thread-safety: pure functions.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "planner/base/status.h"
#include "planner/darshan/darshan_log.h"

namespace clairfs::darshan {

struct ReadOptions {
  // No decompressed region may exceed this many bytes...
  size_t max_region_bytes = size_t{1} << 30;
  // ...nor this multiple of its compressed length plus 1 MiB (zlib cannot legitimately expand
  // more than about 1032:1; bzip2 can, but Darshan's runtime writes zlib).
  size_t max_expansion = 4096;
  // Decode DXT_POSIX traces (they can dominate the log; heat does not need them).
  bool decode_dxt = true;
  // Keep the decompressed bytes of every module not decoded (MPI-IO, LUSTRE, HEATMAP, ...) in
  // DarshanLog::raw_modules, so that the log can be written back whole (`darshan reencode`).
  // They are inflated under the same caps, so a corrupt one is an error naming its region.
  bool keep_raw_modules = false;
  // Log files larger than this are refused by ReadDarshanLogFile.
  size_t max_file_bytes = size_t{1} << 30;
};

Result<DarshanLog> ParseDarshanLog(std::string_view bytes, const ReadOptions& options = {});

// Reads and parses the file at `path`; errors are prefixed with the path (escaped as
// EscapeName does, so that a message stays one line of UTF-8).
Result<DarshanLog> ReadDarshanLogFile(const std::string& path, const ReadOptions& options = {});

}  // namespace clairfs::darshan
