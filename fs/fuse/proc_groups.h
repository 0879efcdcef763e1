// The supplementary groups of a process, read from /proc/PID/task/PID/status.
//
// The kernel sends a FUSE request's uid and gid but not the sender's supplementary groups, so the
// checks the daemon makes itself (ACLs, a changed file's new mode) read them from procfs. This is
// ours rather than libfuse's fuse_req_getgroups, which runs strstr over the bytes it read without
// ending them with a NUL (a heap over-read that ASan reports on every such check).
#pragma once

#include <sys/types.h>

#include <string_view>
#include <vector>

namespace clairfs {

// The groups on the "Groups:" line of a /proc status text; empty if there is none.
std::vector<gid_t> ParseStatusGroups(std::string_view status);

// The groups of thread `tid` (a FUSE request's pid is the sending thread); empty if it is gone.
std::vector<gid_t> GroupsOfThread(pid_t tid);

}  // namespace clairfs
