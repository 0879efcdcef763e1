// `clairfs pin` / `clairfs unpin`: keep staged copies from being evicted (or let them go).
#include <cstdio>
#include <memory>

#include "planner/units.h"
#include "tools/admin_paths.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/control_client.h"

namespace clairfs::cli {
namespace {

struct PinArgs {
  std::string mountpoint;
  std::vector<std::string> paths;
  bool json = false;
};

int RunPin(const PinArgs& a, bool pin) {
  const char* name = pin ? "pin" : "unpin";
  auto client = ControlClient::Connect(a.mountpoint);
  if (!client.ok()) return Fail(name, client.status());
  auto canonical = CanonicalMountpoint(a.mountpoint);
  if (!canonical.ok()) return Fail(name, canonical.status());
  auto reply =
      client->Call({{"op", name}, {"paths", ToMountPaths(a.mountpoint, *canonical, a.paths)}});
  if (!reply.ok()) return Fail(name, reply.status());
  reply->erase("ok");
  if (a.json) {
    printf("%s\n", reply->dump(2).c_str());
  } else if (pin) {
    printf("pinned %llu files; %s pinned in all\n",
           static_cast<unsigned long long>(reply->value("pinned", uint64_t{0})),
           FormatBytes(reply->value("pinned_bytes_total", uint64_t{0})).c_str());
  } else {
    printf("unpinned %llu files; %llu not staged\n",
           static_cast<unsigned long long>(reply->value("unpinned", uint64_t{0})),
           static_cast<unsigned long long>(reply->value("not_staged", uint64_t{0})));
  }
  return kExitOk;
}

void Register(CLI::App& app, bool pin) {
  auto args = std::make_shared<PinArgs>();
  CLI::App* cmd =
      AddCommand(&app, pin ? "pin" : "unpin",
                 pin ? "Pin staged files so they are never evicted (files must be staged; the "
                       "pinned total must fit the capacity)"
                     : "Unpin files so eviction may remove them again");
  cmd->add_option("MOUNTPOINT", args->mountpoint, "The mountpoint")->required();
  cmd->add_option("PATH", args->paths,
                  "Files or directories (recursive), relative to the mount or absolute under it")
      ->required();
  cmd->add_flag("--json", args->json,
                pin ? "Print {pinned, pinned_bytes_total}" : "Print {unpinned, not_staged}");
  cmd->callback([args, pin]() { SetExitCode(RunPin(*args, pin)); });
}

}  // namespace

void RegisterPin(CLI::App& app) {
  Register(app, true);
  Register(app, false);
}

}  // namespace clairfs::cli
