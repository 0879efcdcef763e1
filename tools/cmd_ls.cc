// `clairfs ls`: per-file cache state of a mount's dataset (staged or not, size, pinned, and the
// imported Darshan heat per byte, "-" for none). Names are shown escaped (planner/name_escape.h);
// -0 prints only the raw paths, each ended by a NUL byte, for scripts. Other users see what the
// daemon lets them see (fs/caller_scope.h): a state they may not know shows as "?".
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

struct LsArgs {
  std::string mountpoint;
  std::string path = ".";
  bool recursive = false;
  bool staged = false;
  bool unstaged = false;
  bool json = false;
  bool null = false;
  uint64_t limit = 100000;
};

int RunLs(const LsArgs& a) {
  if (a.staged && a.unstaged) return UsageError("ls", "--staged and --unstaged exclude each other");
  if (a.null && a.json) return UsageError("ls", "-0 and --json exclude each other");
  auto raw = UnescapeArguments({a.path});
  if (!raw.ok()) return Fail("ls", raw.status());
  auto client = ControlClient::Connect(a.mountpoint);
  if (!client.ok()) return Fail("ls", client.status());
  auto canonical = CanonicalMountpoint(a.mountpoint);
  if (!canonical.ok()) return Fail("ls", canonical.status());
  std::string path = EscapeName(ToMountPaths(a.mountpoint, *canonical, *raw)[0]);
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
    printf("%s\n", reply->dump(2, ' ', false, nlohmann::json::error_handler_t::replace).c_str());
  } else if (a.null) {
    for (const auto& e : (*reply)["entries"]) {
      auto entry_path = UnescapeName(e.value("path", ""));
      if (!entry_path.ok()) {
        return Fail("ls", Status::Error(EPROTO, "the daemon sent a malformed name: " +
                                                    entry_path.status().message()));
      }
      fwrite(entry_path->data(), 1, entry_path->size(), stdout);
      fputc('\0', stdout);
    }
  } else {
    for (const auto& e : (*reply)["entries"]) {
      std::string type = e.value("type", "");
      const nlohmann::json staged = e.value("staged", nlohmann::json(false));
      const nlohmann::json pinned = e.value("pinned", nlohmann::json(false));
      const char* state = type != "file"                              ? "-"
                          : staged.is_null()                          ? "?"
                          : pinned.is_boolean() && pinned.get<bool>() ? "pinned"
                          : staged.is_boolean() && staged.get<bool>() ? "staged"
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
                  "File or directory relative to the mount or absolute under it (default: root); "
                  "an escaped name (\\\\ for a backslash, \\xHH for any byte; see README "
                  "\"Names with any bytes\"), raw bytes work too");
  cmd->add_flag("-r,--recursive", args->recursive, "List every file under PATH");
  cmd->add_flag("--staged", args->staged, "Only staged files (implies -r)");
  cmd->add_flag("--unstaged", args->unstaged, "Only files not staged (implies -r)");
  cmd->add_option("--limit", args->limit, "At most N entries (default 100000)")
      ->check(CLI::Range(uint64_t{1}, uint64_t{1000000}));
  cmd->add_flag("--json", args->json,
                "Print {entries: [{path, type, size, staged, pinned, heat_per_byte}], truncated} "
                "(paths escaped; staged and pinned are null where you may not read the file)");
  cmd->add_flag("-0,--null", args->null,
                "Print only the raw paths, each ended by a NUL byte (for xargs -0 and --from-file "
                "LIST -0)");
  cmd->callback([args]() { SetExitCode(RunLs(*args)); });
}

}  // namespace clairfs::cli
