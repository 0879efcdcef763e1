// The daemon threads' scheduling policy (see sched_policy.h).
#include "fs/fuse/sched_policy.h"

#include <pthread.h>
#include <sched.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

namespace clairfs {

Result<SchedPolicy> ParseSchedPolicy(const std::string& text) {
  if (text == "batch") return SchedPolicy::kBatch;
  if (text == "normal") return SchedPolicy::kNormal;
  return Status::Invalid("sched=" + text + ": expected batch or normal");
}

Status ApplySchedPolicy(SchedPolicy policy) {
  struct sched_param param {};
  param.sched_priority = 0;
  const int which = policy == SchedPolicy::kBatch ? SCHED_BATCH : SCHED_OTHER;
  if (sched_setscheduler(0, which, &param) != 0) {
    return Status::FromErrno(errno, policy == SchedPolicy::kBatch
                                        ? "sched_setscheduler(SCHED_BATCH)"
                                        : "sched_setscheduler(SCHED_OTHER)");
  }
  return Status::Ok();
}

std::string CurrentSchedPolicyName() {
  switch (sched_getscheduler(0)) {
    case SCHED_BATCH:
      return "batch";
    case SCHED_OTHER:
      return "normal";
    case SCHED_IDLE:
      return "idle";
    case SCHED_FIFO:
      return "fifo";
    case SCHED_RR:
      return "rr";
#ifdef SCHED_DEADLINE
    case SCHED_DEADLINE:
      return "deadline";
#endif
    default:
      return "unknown";
  }
}

void BecomeWarmUpThread(const char* name) {
  pthread_setname_np(pthread_self(), name);
  (void)setpriority(PRIO_PROCESS, static_cast<id_t>(gettid()), 10);
}

}  // namespace clairfs
