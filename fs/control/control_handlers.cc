// Registration of every control op (see control_handlers.h).
#include "fs/control/control_handlers.h"

#include <utility>

namespace clairfs {

void RegisterControlHandlers(ControlServer* server, ControlSources sources) {
  RegisterStatusHandlers(server, std::move(sources.status));
  RegisterPlanHandlers(server, sources.plan);
  RegisterAdminHandlers(server, std::move(sources.admin));
  RegisterHeatHandlers(server, std::move(sources.heat));
}

}  // namespace clairfs
