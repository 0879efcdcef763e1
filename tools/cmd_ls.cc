// `clairfs ls`: per-file cache state of a mount's dataset (staged or not, size, pinned, and the
// imported Darshan heat per byte, "-" for none).
#include <cstdio>
#include <memory>

#include "planner/units.h"
#include "tools/admin_paths.h"
#include "tools/cli.h"
#include "tools/commands.h"
#include "tools/control_client.h"

namespace clairfs::cli {
namespace {

struct LsArgs {
  std::string mountpoint;
  std::string path = ".";
  bool recursive = false;
  bool staged = false;
  bool unstaged = false;
  bool json = false;
  uint64_t limit = 100000;
};

int RunLs(const LsArgs& a) {
  if (a.staged && a.unstaged) return UsageError("ls", "--staged and --unstaged exclude each other");
  auto client = ControlClient::Connect(a.mountpoint);
  if (!client.ok()) return Fail("ls", client.status());
  auto canonical = CanonicalMountpoint(a.mountpoint);
  if (!canonical.ok()) return Fail("ls", canonical.status());
  std::string path = ToMountPaths(a.mountpoint, *canonical, {a.path})[0];
  // A state filter only makes sense over files: it implies a recursive listing.
  bool recursive = a.recursive || a.staged || a.unstaged;
  auto reply = client->Call({{"op", "ls"},
                             {"path", path},
                             {"recursive", recursive},
                             {"filter", a.staged     ? "staged"
                                        : a.unstaged ? "unstaged"
                                                     : "all"},
                             {"limit", a.limit}});
  if (!reply.ok()) return Fail("ls", reply.status());
  reply->erase("ok");
  if (a.json) {
    printf("%s\n", reply->dump(2).c_str());
  } else {
    for (const auto& e : (*reply)["entries"]) {
      std::string type = e.value("type", "");
      const char* state = type != "file"             ? "-"
                          : e.value("pinned", false) ? "pinned"
                          : e.value("staged", false) ? "staged"
                                                     : "unstaged";
      char heat[32] = "-";
      if (e.contains("heat_per_byte") && e["heat_per_byte"].is_number()) {
        snprintf(heat, sizeof(heat), "%.2f", e["heat_per_byte"].get<double>());
      }
      printf("%-8s %10s %9s  %s%s\n", state,
             type == "dir" ? "-" : FormatBytes(e.value("size", uint64_t{0})).c_str(), heat,
             e.value("path", "").c_str(), type == "dir" ? "/" : "");
    }
  }
  if (reply->value("truncated", false)) {
    fprintf(stderr, "clairfs ls: listing truncated at %llu entries (use --limit)\n",
            static_cast<unsigned long long>(a.limit));
  }
  return kExitOk;
}

}  // namespace

void RegisterLs(CLI::App& app) {
  auto args = std::make_shared<LsArgs>();
  CLI::App* cmd = AddCommand(&app, "ls",
                             "List the cache state of a mount's files: staged, unstaged or "
                             "pinned, with sizes and imported heat per byte.");
  cmd->add_option("MOUNTPOINT", args->mountpoint, "The mountpoint")->required();
  cmd->add_option("PATH", args->path,
                  "File or directory relative to the mount or absolute under it (default: root)");
  cmd->add_flag("-r,--recursive", args->recursive, "List every file under PATH");
  cmd->add_flag("--staged", args->staged, "Only staged files (implies -r)");
  cmd->add_flag("--unstaged", args->unstaged, "Only files not staged (implies -r)");
  cmd->add_option("--limit", args->limit, "At most N entries (default 100000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000000}));
  cmd->add_flag("--json", args->json,
                "Print {entries: [{path, type, size, staged, pinned, heat_per_byte}], truncated}");
  cmd->callback([args]() { SetExitCode(RunLs(*args)); });
}

}  // namespace clairfs::cli
