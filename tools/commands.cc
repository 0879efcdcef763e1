// The subcommand table: one line per top-level `clairfs` subcommand, in help order.
#include "tools/commands.h"

namespace clairfs::cli {

void RegisterAllCommands(CLI::App& app) {
  // clang-format off
  static const RegisterFn kCommands[] = {
      RegisterMount,
      RegisterUmount,
      RegisterStatus,
      RegisterStage,
      RegisterLs,
      RegisterEvict,
      RegisterPin,
      RegisterStats,
      RegisterFsck,
      RegisterPlan,
      RegisterDarshan,
      RegisterBench,
      RegisterPfsEmu,
      RegisterDemo,
      RegisterSimulate,
      RegisterPeer,
  };
  // clang-format on
  for (RegisterFn fn : kCommands) fn(app);
}

}  // namespace clairfs::cli
