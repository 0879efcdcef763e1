// The subcommand table: one line per top-level `clairfs` subcommand, in help order.
#include "tools/commands.h"

namespace clairfs::cli {

void RegisterAllCommands(CLI::App& app) {
  static const RegisterFn kCommands[] = {
      RegisterMount, RegisterUmount,  RegisterStatus, RegisterStage, RegisterLs,
      RegisterEvict, RegisterPin,     RegisterFsck,   RegisterBench, RegisterPfsEmu,
      RegisterDemo,  RegisterDarshan, RegisterPlan,
  };
  for (RegisterFn fn : kCommands) fn(app);
}

}  // namespace clairfs::cli
