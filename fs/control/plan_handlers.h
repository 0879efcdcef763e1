// Control ops that change the mount's access plan:
//   plan_set   {spec, layout?, layout_root?, window?}  owner only; builds the plan from the
//              backing tree (may take as long as the walk) and makes it current
//   plan_clear {}                                      owner only; back to read-through
// layout_root is an escaped name (planner/name_escape.h). Replies: plan_set answers the new "plan"
// status object (strings sanitised); errors are the spec, layout or walk
// error (EINVAL for a bad spec or field). Thread-safety: handlers run on control client threads;
// PlanRuntime is thread-safe.
#pragma once

#include "fs/control/control_server.h"
#include "fs/prefetch/plan_runtime.h"

namespace clairfs {

void RegisterPlanHandlers(ControlServer* server, PlanRuntime* runtime);

}  // namespace clairfs
