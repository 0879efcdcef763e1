// Every op of the daemon's control socket, registered on one server in one call: status and stats
// (status_report.h, stats_report.h), plan_set and plan_clear (plan_handlers.h), ls, stage,
// stage_progress, evict, pin and unpin (admin_handlers.h) and the heat import (heat_handlers.h).
// The daemon and the control protocol's fuzz target (control_request_fuzz.cc) both register them
// here, so the fuzzer talks to the handlers the daemon serves.
//
// Lifetimes and thread-safety: as each family's header says; every object the sources point to
// must outlive the server.
#pragma once

#include "fs/control/admin_handlers.h"
#include "fs/control/control_server.h"
#include "fs/control/heat_handlers.h"
#include "fs/control/plan_handlers.h"
#include "fs/control/status_report.h"
#include "fs/prefetch/plan_runtime.h"

namespace clairfs {

struct ControlSources {
  StatusSources status;
  PlanRuntime* plan;
  AdminSources admin;
  HeatSources heat;
};

void RegisterControlHandlers(ControlServer* server, ControlSources sources);

}  // namespace clairfs
