// Compression of Darshan log regions (zlib, bzip2 or none), with bounded output.
//
// Each MPI rank of a Darshan job compresses its own buffer, so one region is several complete
// streams back to back: InflateRegion decodes stream after stream until the region's bytes are
// used up, and fails if the last stream is cut short or garbage follows it. Output is bounded by
// `max_output` so that a hostile region (a "zip bomb") cannot use unbounded memory: beyond the
// limit InflateRegion fails, or, with LimitMode::kTruncate, stops there and returns what it has
// (the job region is defined as its first 4096 decompressed bytes).
//
// Errors are EINVAL Statuses whose messages say what is wrong but not which region; callers add
// the region name. Pure functions; thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

#include "planner/base/status.h"
#include "planner/darshan/darshan_format.h"

namespace clairfs::darshan {

enum class LimitMode { kFail, kTruncate };

Result<std::string> InflateRegion(std::string_view compressed, Compression method,
                                  size_t max_output, LimitMode mode = LimitMode::kFail);

// One complete stream (zlib: default level, as Darshan writes; bzip2: block size 9). Empty
// input gives empty output: Darshan writes no bytes for an empty region.
Result<std::string> DeflateRegion(std::string_view raw, Compression method);

}  // namespace clairfs::darshan
