// `clairfs evict`: remove staged copies from a mount's cache (the files stay readable from the
// backing store; readers holding a file open keep their bytes).
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

struct EvictArgs {
  std::string mountpoint;
  std::vector<std::string> paths;
  std::string from_file;
  bool null_list = false;
  bool all = false;
  bool force = false;
  bool json = false;
};

int RunEvict(const EvictArgs& a) {
  if (a.null_list && a.from_file.empty()) return UsageError("evict", "-0 goes with --from-file");
  if (a.all == (!a.paths.empty() || !a.from_file.empty())) {
    return UsageError("evict", "give PATHs (or --from-file) or --all, not both");
  }
  auto paths = UnescapeArguments(a.paths);
  if (!paths.ok()) return Fail("evict", paths.status());
  if (!a.from_file.empty()) {
    auto listed = ReadPathList(a.from_file, a.null_list);
    if (!listed.ok()) return Fail("evict", listed.status());
    if (listed->empty()) {
      return UsageError("evict", "path list " + SanitizeText(a.from_file) + " is empty");
    }
    paths->insert(paths->end(), listed->begin(), listed->end());
  }
  auto client = ControlClient::Connect(a.mountpoint);
  if (!client.ok()) return Fail("evict", client.status());
  nlohmann::json request = {{"op", "evict"}, {"force", a.force}};
  if (a.all) {
    request["all"] = true;
  } else {
    auto canonical = CanonicalMountpoint(a.mountpoint);
    if (!canonical.ok()) return Fail("evict", canonical.status());
    request["paths"] = EscapePaths(ToMountPaths(a.mountpoint, *canonical, *paths));
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
  CLI::App* cmd =
      AddCommand(&app, "evict",
                 "Remove staged copies from a mount's cache (pinned ones only with "
                 "--force). Usage: clairfs evict MOUNTPOINT PATH...|--from-file LIST|--all");
  cmd->add_option("MOUNTPOINT", args->mountpoint, "The mountpoint")->required();
  cmd->add_option("PATH", args->paths,
                  "Files or directories (recursive), relative to the mount or absolute under it; "
                  "names are escaped (\\\\ for a backslash, \\xHH for any byte; see README "
                  "\"Names with any bytes\"), raw bytes work too");
  cmd->add_option("--from-file", args->from_file,
                  "Also evict the paths listed in FILE (- for standard input): one escaped name a "
                  "line, or with -0 raw names each ended by a NUL byte")
      ->type_name("FILE");
  cmd->add_flag("-0,--null", args->null_list, "--from-file holds raw names separated by NUL bytes");
  cmd->add_flag("--all", args->all, "Evict every staged copy");
  cmd->add_flag("--force", args->force, "Also evict (and so unpin) pinned copies");
  cmd->add_flag("--json", args->json, "Print {evicted, evicted_bytes, skipped_pinned, not_staged}");
  cmd->callback([args]() { SetExitCode(RunEvict(*args)); });
}

}  // namespace clairfs::cli
