// `clairfs pin` / `clairfs unpin`: keep staged copies from being evicted (or let them go).
#include <cstdio>
#include <memory>

#include "planner/base/name_escape.h"
#include "planner/base/units.h"
#include "tools/admin_paths.h"
#include "tools/cli/cli.h"
#include "tools/cli/control_client.h"
#include "tools/commands.h"

namespace clairfs::cli {
namespace {

struct PinArgs {
  std::string mountpoint;
  std::vector<std::string> paths;
  std::string from_file;
  bool null_list = false;
  bool json = false;
};

int RunPin(const PinArgs& a, bool pin) {
  const char* name = pin ? "pin" : "unpin";
  if (a.null_list && a.from_file.empty()) return UsageError(name, "-0 goes with --from-file");
  if (a.paths.empty() && a.from_file.empty()) return UsageError(name, "give PATHs or --from-file");
  auto paths = UnescapeArguments(a.paths);
  if (!paths.ok()) return Fail(name, paths.status());
  if (!a.from_file.empty()) {
    auto listed = ReadPathList(a.from_file, a.null_list);
    if (!listed.ok()) return Fail(name, listed.status());
    if (listed->empty()) {
      return UsageError(name, "path list " + SanitizeText(a.from_file) + " is empty");
    }
    paths->insert(paths->end(), listed->begin(), listed->end());
  }
  auto client = ControlClient::Connect(a.mountpoint);
  if (!client.ok()) return Fail(name, client.status());
  auto canonical = CanonicalMountpoint(a.mountpoint);
  if (!canonical.ok()) return Fail(name, canonical.status());
  auto reply = client->Call(
      {{"op", name}, {"paths", EscapePaths(ToMountPaths(a.mountpoint, *canonical, *paths))}});
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
                  "Files or directories (recursive), relative to the mount or absolute under it; "
                  "names are escaped (\\\\ for a backslash, \\xHH for any byte; see README "
                  "\"Names with any bytes\"), raw bytes work too");
  cmd->add_option("--from-file", args->from_file,
                  "Also the paths listed in FILE (- for standard input): one escaped name a line, "
                  "or with -0 raw names each ended by a NUL byte")
      ->type_name("FILE");
  cmd->add_flag("-0,--null", args->null_list, "--from-file holds raw names separated by NUL bytes");
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
