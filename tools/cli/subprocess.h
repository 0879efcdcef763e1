// Running another program and waiting for it, for instruments that drive `clairfs` itself
// (e.g. the benchmark mounts the PFS emulator) or fusermount3.
//
// Thread-safety: safe to call from any thread (posix_spawn, no fork of a threaded image's
// state beyond exec). Errors: spawn failures are Status values; the program's own failure is
// its exit code in the result, with its stderr captured when asked.
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "planner/base/status.h"

namespace clairfs {

struct SubprocessResult {
  int exit_code = -1;  // exit status, or 128 + signal
  std::string err;     // captured stderr (if requested)
};

// Runs argv[0] (searched in PATH) with stdin and stdout on /dev/null; stderr is captured if
// `capture_stderr`, else inherited.
Result<SubprocessResult> RunProgram(const std::vector<std::string>& argv, bool capture_stderr);

// The path of the running executable (/proc/self/exe).
Result<std::string> SelfExecutable();

// True while `pid` runs. A zombie (exited, not yet reaped by its parent, e.g. a daemon started
// in the foreground by a test or a supervisor that reaps late) counts as exited.
bool ProcessRunning(pid_t pid);

}  // namespace clairfs
