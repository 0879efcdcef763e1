// Path arguments of the admin subcommands (stage, evict, pin, unpin, ls).
//
// The daemon takes paths relative to the mount or absolute under its canonical mountpoint. Users
// may name the mount through a symlink or a relative path, so an absolute argument under the
// mountpoint as typed is rewritten relative to the mount here; anything else is sent as typed and
// checked by the daemon. --from-file lists hold one path per line (blank lines and lines starting
// with '#' ignored). Pure functions, thread-safe; errors name the file and the errno text.
#pragma once

#include <string>
#include <vector>

#include "planner/status.h"

namespace clairfs::cli {

std::vector<std::string> ToMountPaths(const std::string& mount_arg, const std::string& canonical,
                                      const std::vector<std::string>& paths);

Result<std::vector<std::string>> ReadPathList(const std::string& file);

}  // namespace clairfs::cli
