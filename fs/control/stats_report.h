// The control socket's "stats" report: per-file and total I/O counters of a mount, split by
// source (the local cache or the backing store), as `clairfs stats` prints them and as the
// Darshan log it writes records them.
//
// Request fields: "top" (files to return, hottest by bytes read first; 0 = all). Reply: "files"
// [{path (escaped, planner/name_escape.h), cache: {...}, backing: {...}}], "per_file" (false: the
// rows were withheld), "totals" {cache: {...}, backing: {...}}, "files_with_counters",
// "start_time_ns" (wall clock at mount), "elapsed_seconds", "file_alignment" (bytes), "note".
// Per-file rows go to root and the mount's owner only; other users of an allow_other mount get
// aggregates only (empty "files", "per_file": false), those of a private mount EACCES
// (fs/caller_scope.h).
// Counter objects hold Darshan-style names in lower case: opens, reads, bytes_read,
// max_byte_read, consec_reads, seq_reads, size_read (10 buckets), read_time, read_busy_time,
// max_read_time, max_read_time_size, meta_time, file_not_aligned, access_sizes and strides
// ([[value, count]], see fs/file_stats.h), open_start, open_end, read_start, read_end, close_start,
// close_end (seconds since mount).
#pragma once

#include <nlohmann/json.hpp>

#include "fs/control/control_server.h"
#include "fs/control/reply_writer.h"
#include "fs/file_stats.h"
#include "fs/filesystem.h"

namespace clairfs {

nlohmann::json CountersToJson(const FileIoCounters& c);
// Writes the reply's members: one row at a time, so that a reply of every file costs its text.
void WriteStats(const FileSystem& fs, size_t top, bool per_file, ReplyWriter* out);
void RegisterStatsHandler(ControlServer* server, const FileSystem* fs, uid_t owner_uid,
                          bool allow_other);

}  // namespace clairfs
