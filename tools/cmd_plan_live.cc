// `clairfs plan set MOUNTPOINT --plan SPEC|auto [--layout L] [--layout-root D] [--uid USER]` and
// `clairfs plan clear MOUNTPOINT`: change a running mount's access plan through its control
// socket (ops plan_set / plan_clear, owner only).
//
// The spec and layout are parsed once, by the daemon (a relative list:FILE is made the caller's
// first). Exit codes: 0 done, 1 the mount could not be reached or failed, 2 bad arguments
// (including a spec or layout the daemon rejects as invalid, reported with its reason).
#include <cstdio>
#include <memory>
#include <optional>

#include "fs/daemon/mount_options.h"
#include "planner/base/name_escape.h"
#include "tools/cli/cli.h"
#include "tools/cli/control_client.h"

namespace clairfs::cli {
namespace {

struct PlanSetArgs {
  std::string mountpoint;
  std::string plan;
  std::string layout = "imagefolder";
  std::string layout_root;
  uint64_t window = 0;
  std::string user;  // --uid: a name or uid; "" for every user
};

int RunPlanSet(const PlanSetArgs& a) {
  auto layout_root = UnescapeName(a.layout_root);
  if (!layout_root.ok())
    return UsageError("plan set", "--layout-root " + layout_root.status().message());
  if (!IsValidUtf8(a.plan) || !IsValidUtf8(a.layout)) {
    return UsageError("plan set", "--plan and --layout must be UTF-8 text");
  }
  std::optional<uint32_t> uid;
  if (!a.user.empty()) {
    auto parsed = ParseUserId(a.user);
    if (!parsed.ok()) return UsageError("plan set", "--uid: " + parsed.status().message());
    uid = *parsed;
  }
  // Walking a large dataset on a PFS takes a while: allow it.
  auto client = ControlClient::Connect(a.mountpoint, 30 * 60 * 1000);
  if (!client.ok()) return Fail("plan set", client.status());
  nlohmann::json request = {{"op", "plan_set"},
                            {"spec", WithAbsoluteListFile(a.plan)},
                            {"layout", WithAbsoluteListFile(a.layout)},
                            {"layout_root", EscapeName(*layout_root)}};
  if (a.window > 0) request["window"] = a.window;
  if (uid) request["uid"] = *uid;
  auto reply = client->Call(request);
  if (!reply.ok()) return Fail("plan set", reply.status());
  const nlohmann::json& plan = (*reply)["plan"];
  if (a.plan == "auto") {
    printf(
        "plan auto set on %s: the plan is inferred from the next opens (clairfs status "
        "shows the search)\n",
        SanitizeText(a.mountpoint).c_str());
    return kExitOk;
  }
  printf("plan %s set on %s: %llu files\n", SanitizeText(a.plan).c_str(),
         SanitizeText(a.mountpoint).c_str(),
         static_cast<unsigned long long>(plan.value("files", uint64_t{0})));
  return kExitOk;
}

int RunPlanClear(const std::string& mountpoint) {
  auto client = ControlClient::Connect(mountpoint);
  if (!client.ok()) return Fail("plan clear", client.status());
  auto reply = client->Call({{"op", "plan_clear"}});
  if (!reply.ok()) return Fail("plan clear", reply.status());
  printf("plan cleared on %s: read-through\n", mountpoint.c_str());
  return kExitOk;
}

}  // namespace

void RegisterPlanLive(CLI::App* plan) {
  auto set_args = std::make_shared<PlanSetArgs>();
  CLI::App* set = AddCommand(plan, "set",
                             "Give a running mount an access plan: it stages ahead in plan order "
                             "and evicts by next planned use (replaces any current plan).");
  set->add_option("MOUNTPOINT", set_args->mountpoint, "The mountpoint")->required();
  set->add_option("--plan", set_args->plan,
                  "Plan spec (see clairfs plan show --help), or auto: inferred from the next "
                  "opens (see clairfs mount --help)")
      ->type_name("SPEC")
      ->required();
  set->add_option("--layout", set_args->layout,
                  "Sample numbering: imagefolder (default), sorted or list:FILE")
      ->type_name("LAYOUT");
  set->add_option("--layout-root", set_args->layout_root,
                  "Dataset directory below the backing root (e.g. train), an escaped name (README "
                  "\"Names with any bytes\")")
      ->type_name("SUBDIR");
  set->add_option("--window", set_args->window,
                  "Planned positions per rank an open may run ahead (default 256)")
      ->type_name("N");
  set->add_option("--uid", set_args->user,
                  "The user (name or uid) whose opens the plan follows (and auto watches); "
                  "other users' opens cannot steer or drop it (default: every user's)")
      ->type_name("USER");
  set->callback([set_args] { SetExitCode(RunPlanSet(*set_args)); });

  auto mountpoint = std::make_shared<std::string>();
  CLI::App* clear = AddCommand(plan, "clear", "Drop a running mount's plan: back to read-through.");
  clear->add_option("MOUNTPOINT", *mountpoint, "The mountpoint")->required();
  clear->callback([mountpoint] { SetExitCode(RunPlanClear(*mountpoint)); });
}

}  // namespace clairfs::cli
