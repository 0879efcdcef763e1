// The CPU scheduling policy of the daemon's request-serving threads (`clairfs mount --sched
// batch|normal`): libfuse's workers, the io_uring ring threads and the control server's.
//
// Why batch is offered: every FUSE request wakes a daemon thread while the reader waits or goes
// on. Under SCHED_OTHER a woken daemon thread preempts the running reader at once; the
// asynchronous RELEASE after each close() then costs two extra context switches per file, and a
// context switch is the dominant cost of a small-file open on virtual machines (docs/
// BENCHMARKS.md, "FUSE over io_uring and the scheduling policy"). SCHED_BATCH threads get the same
// CPU share but never preempt on wake-up: a RELEASE waits until the reader blocks on its next OPEN,
// and one switch serves both. A reader waiting for its OPEN leaves its CPU idle, so there the
// daemon thread still runs at once. Cost: a request queued while its CPU runs another busy task
// waits for that task's time slice (a few ms) instead of preempting it.
//
// Why normal is the default: when the job keeps every CPU busy (PyTorch loader processes
// decoding), a SCHED_BATCH request thread waits for a time slice before serving an OPEN or a
// RELEASE, and a planned mount at half capacity then missed its prefetch: in
// tests/pytorch_e2e_test.cc run beside another PyTorch test, 730-845 hits of 852 opens in 5 of 6
// runs with batch (3 with every daemon thread batch, 3 with only the request threads), 852 of
// 852 in all 6 runs with normal. (Our reading: delayed RELEASEs keep consumed copies open, so
// the prefetcher cannot make room in time; not measured.) Staging threads always stay
// SCHED_OTHER.
//
// ApplySchedPolicy sets the calling thread's policy; threads it creates afterwards inherit it,
// so the daemon calls it on its main thread after starting the staging threads and before the
// request-serving ones. Needs no privilege (both are non-real-time policies at nice 0).
#pragma once

#include <string>

#include "planner/base/status.h"

namespace clairfs {

enum class SchedPolicy { kBatch, kNormal };

// "batch" or "normal".
Result<SchedPolicy> ParseSchedPolicy(const std::string& text);
Status ApplySchedPolicy(SchedPolicy policy);
// The calling thread's policy as status reports it: "batch", "normal", "idle", "fifo", "rr",
// "deadline" or "unknown".
std::string CurrentSchedPolicyName();
// Names the calling thread and lowers it to nice 10, below the request-serving threads: for the
// mount's background warm-ups (held_copy_warmup.h, list_ahead.h), which must never make a job's
// own request wait.
void BecomeWarmUpThread(const char* name);

}  // namespace clairfs
