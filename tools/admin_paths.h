// Path arguments of the admin subcommands (stage, evict, pin, unpin, ls).
//
// Names of any bytes (README "Names with any bytes"): PATH arguments and the lines of a
// --from-file list are escaped names (planner/name_escape.h: "\\" a backslash, "\xHH" any byte);
// raw bytes typed in a shell ($'\xff') are accepted too, but a backslash that starts neither
// escape is an error that says how to write one. They are unescaped to raw bytes here, mapped onto
// the mount, and escaped again for the request. A --from-file list read with -0 holds raw names
// separated by NUL bytes and is taken as is (no escapes, no comments).
//
// The daemon takes paths relative to the mount or absolute under its canonical mountpoint. Users
// may name the mount through a symlink or a relative path, so an absolute argument under the
// mountpoint as typed is rewritten relative to the mount here; anything else is sent as typed and
// checked by the daemon. Pure functions, thread-safe; errors name the argument, or the file and
// line.
#pragma once

#include <string>
#include <vector>

#include "planner/base/status.h"

namespace clairfs::cli {

// Raw paths from PATH arguments as typed. An empty argument (it would name nothing: "." is the
// whole dataset) or a bad escape is an EINVAL error naming it.
Result<std::vector<std::string>> UnescapeArguments(const std::vector<std::string>& args);

// Raw paths -> raw paths relative to the mount where they are absolute under it.
std::vector<std::string> ToMountPaths(const std::string& mount_arg, const std::string& canonical,
                                      const std::vector<std::string>& paths);

// Raw paths -> the escaped form requests carry.
std::vector<std::string> EscapePaths(const std::vector<std::string>& raw);

// A --from-file list as raw paths. Text (nul false): one escaped name per line, a trailing "\r"
// dropped (a CR inside a name is written \x0d), blank lines and lines starting with '#' skipped (a
// name starting with '#' is written \x23...); anything else, spaces included, is part of the name.
// nul true: raw names each ended by a NUL byte, empty ones skipped. "-" reads standard input. A
// directory, an unreadable file or a bad escape is an error (EINVAL for what the user can fix).
Result<std::vector<std::string>> ReadPathList(const std::string& file, bool nul);

}  // namespace clairfs::cli
