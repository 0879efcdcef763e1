// The CPU scheduling policy of the daemon's threads (`clairfs mount --sched batch|normal`).
//
// Why batch by default: every FUSE request wakes a daemon thread while the reader waits or goes
// on. Under SCHED_OTHER a woken daemon thread preempts the running reader at once; the
// asynchronous RELEASE after each close() then costs two extra context switches per file, and a
// context switch is the dominant cost of a small-file open on virtual machines (docs/
// BENCHMARKS.md, "FUSE over io_uring and the scheduling policy"). SCHED_BATCH threads get the same
// CPU share but never preempt on wake-up: a RELEASE waits until the reader blocks on its next OPEN,
// and one switch serves both. A reader waiting for its OPEN leaves its CPU idle, so there the
// daemon thread still runs at once. Cost: a request queued while its CPU runs another busy task
// waits for that task's time slice (a few ms) instead of preempting it.
//
// ApplySchedPolicy sets the calling thread's policy; threads it creates afterwards inherit it,
// so the daemon calls it before starting any thread. Needs no privilege (both are non-real-time
// policies at nice 0).
#pragma once

#include <string>

#include "planner/status.h"

namespace clairfs {

enum class SchedPolicy { kBatch, kNormal };

// "batch" or "normal".
Result<SchedPolicy> ParseSchedPolicy(const std::string& text);
Status ApplySchedPolicy(SchedPolicy policy);
// The calling thread's policy as status reports it: "batch", "normal", "idle", "fifo", "rr",
// "deadline" or "unknown".
std::string CurrentSchedPolicyName();

}  // namespace clairfs
