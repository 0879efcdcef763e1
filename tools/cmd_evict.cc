// `clairfs evict`: remove staged copies from a mount's cache (the files stay readable from the
// backing store; readers holding a file open keep their bytes).
#include <cstdio>
#include <memory>

#include "planner/units.h"
#include "tools/admin_paths.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/control_client.h"

namespace clairfs::cli {
namespace {

struct EvictArgs {
  std::string mountpoint;
  std::vector<std::string> paths;
  bool all = false;
  bool force = false;
  bool json = false;
};

int RunEvict(const EvictArgs& a) {
  if (a.all == !a.paths.empty()) return UsageError("evict", "give PATHs or --all (not both)");
  auto client = ControlClient::Connect(a.mountpoint);
  if (!client.ok()) return Fail("evict", client.status());
  nlohmann::json request = {{"op", "evict"}, {"force", a.force}};
  if (a.all) {
    request["all"] = true;
  } else {
    auto canonical = CanonicalMountpoint(a.mountpoint);
    if (!canonical.ok()) return Fail("evict", canonical.status());
    request["paths"] = ToMountPaths(a.mountpoint, *canonical, a.paths);
  }
  auto reply = client->Call(request);
  if (!reply.ok()) return Fail("evict", reply.status());
  reply->erase("ok");
  if (a.json) {
    printf("%s\n", reply->dump(2).c_str());
  } else {
    printf("evicted %llu files (%s); %llu pinned skipped, %llu not staged\n",
           static_cast<unsigned long long>(reply->value("evicted", uint64_t{0})),
           FormatBytes(reply->value("evicted_bytes", uint64_t{0})).c_str(),
           static_cast<unsigned long long>(reply->value("skipped_pinned", uint64_t{0})),
           static_cast<unsigned long long>(reply->value("not_staged", uint64_t{0})));
  }
  return kExitOk;
}

}  // namespace

void RegisterEvict(CLI::App& app) {
  auto args = std::make_shared<EvictArgs>();
  CLI::App* cmd = AddCommand(&app, "evict",
                             "Remove staged copies from a mount's cache (pinned ones only with "
                             "--force). Usage: clairfs evict MOUNTPOINT PATH...|--all");
  cmd->add_option("MOUNTPOINT", args->mountpoint, "The mountpoint")->required();
  cmd->add_option("PATH", args->paths,
                  "Files or directories (recursive), relative to the mount or absolute under it");
  cmd->add_flag("--all", args->all, "Evict every staged copy");
  cmd->add_flag("--force", args->force, "Also evict (and so unpin) pinned copies");
  cmd->add_flag("--json", args->json, "Print {evicted, evicted_bytes, skipped_pinned, not_staged}");
  cmd->callback([args]() { SetExitCode(RunEvict(*args)); });
}

}  // namespace clairfs::cli
