// darshan-parser-compatible text for a DarshanLog.
//
// FormatParserText prints what `darshan-parser --show-incomplete` prints for the POSIX and STDIO
// modules: the job summary ("# darshan log version: ...", exe, uid, times, metadata), the table
// of log regions, the mount table, then one section per module with its record lines: eight
// tab-separated columns <module> <rank> <record id> <counter> <value> <file name> <mount pt>
// <fs type>, counters in record order, integers as %lld (POSIX_RENAMED_FROM as %llu), floats as
// %f. Those lines are byte-for-byte darshan-parser's. The descriptive comment blocks
// darshan-parser adds are replaced by clairfs's own short notes; other modules are listed in the
// region table only. Times are shown in UTC (darshan-parser uses the local time zone).
// Pure functions; thread-safe.
#pragma once

#include <string>

#include "planner/darshan/darshan_log.h"

namespace clairfs::darshan {

std::string FormatParserText(const DarshanLog& log);

// Only the record lines of one record (no trailing header), for callers that stream.
void AppendPosixRecordLines(const DarshanLog& log, const PosixRecord& r, std::string* out);
void AppendStdioRecordLines(const DarshanLog& log, const StdioRecord& r, std::string* out);

}  // namespace clairfs::darshan
