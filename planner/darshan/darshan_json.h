// The structured (JSON) form of a DarshanLog, for `clairfs darshan dump --json` and for scripts.
//
// {"version", "compression", "byte_order",
//  "job": {uid, jobid, nprocs, start_time, start_time_nsec, end_time, end_time_nsec, run_time,
//          exe, metadata: {key: value}},
//  "mounts": [{path, fs_type}],
//  "regions": {job, name_map, modules: [{module, id, length, version, partial}]},
//  "records": [{module, rank, id, name, mount, fs_type, counters: {NAME: value}}],
//  "dropped_posix_v1_records": N,
//  "dxt_posix_version": N,
//  "dxt_posix": [{rank, id, name, hostname,
//                 writes: [[offset, length, start, end, pthread_id]], reads}]}
// Counters are named as darshan-parser names them, integers as JSON integers, floats as JSON
// numbers (NaN and infinities as null). A record whose id the name map lacks has name null.
// pthread_id is null in DXT version-1 traces, which have none (darshan-dxt-parser prints N/A).
// Every string taken from the log (names, mount points and types, command line, metadata,
// hostnames) is given as EscapeName (planner/name_escape.h) of its raw bytes: logs store any
// bytes, JSON takes UTF-8, and UnescapeName gives the raw bytes back.
// Pure function; thread-safe.
#pragma once

#include <nlohmann/json.hpp>

#include "planner/darshan/darshan_log.h"

namespace clairfs::darshan {

// `include_dxt`: add the DXT_POSIX segments (they can be large).
nlohmann::ordered_json ToJson(const DarshanLog& log, bool include_dxt = true);

}  // namespace clairfs::darshan
