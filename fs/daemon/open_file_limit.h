// RaiseOpenFileLimit: lifts this process's soft RLIMIT_NOFILE to its hard limit.
//
// The daemon holds an fd per open file of the mount, per staged copy it keeps open for the kernel
// and per file in flight in the stager; the default soft limit of 1024 would turn a busy job's
// opens into EMFILE long before any bound of ours. Called once at start, before threads exist;
// the result says what the limit was and is, so the caller can log it.
#pragma once

#include <cstdint>
#include <string>

namespace clairfs {

struct OpenFileLimit {
  uint64_t before = 0;  // soft limit found (RLIM_INFINITY as UINT64_MAX)
  uint64_t after = 0;   // soft limit now
  std::string error;    // why it could not be read or raised; empty on success
};

OpenFileLimit RaiseOpenFileLimit();

}  // namespace clairfs
