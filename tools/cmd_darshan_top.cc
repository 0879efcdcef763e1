// `clairfs darshan top LOG|DIR... [--backing DIR] [--strip-prefix P] [--limit N] [--sort KEY]
// [--json] [--skip-bad]`: files ranked by read heat, merged over any number of Darshan logs
// (a DIR means every *.darshan below it). See planner/heat.h for what heat means and how PFS
// paths are mapped onto the backing root. Paths are printed, in text and JSON, as EscapeName
// of the raw bytes the logs store (planner/name_escape.h), so a name that is not UTF-8 or holds
// a newline stays one valid line.
#include <cinttypes>
#include <cstdio>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "planner/base/name_escape.h"
#include "planner/base/units.h"
#include "planner/heat.h"
#include "tools/cli/cli.h"
#include "tools/cmd_darshan.h"

namespace clairfs::cli {
namespace {

struct TopArgs {
  std::vector<std::string> inputs;
  std::string backing;
  std::string strip_prefix;
  size_t limit = 20;
  std::string sort = "heat";
  bool json = false;
  bool skip_bad = false;
};

void SortTable(const std::string& key, std::vector<HeatRecord>* files) {
  auto value = [&key](const HeatRecord& r) -> double {
    if (key == "bytes") return static_cast<double>(r.counters.bytes_read);
    if (key == "reads") return static_cast<double>(r.counters.reads);
    if (key == "opens") return static_cast<double>(r.counters.opens);
    if (key == "rereads") return r.rereads;
    if (key == "time") return r.counters.read_time;
    return r.heat_per_byte;
  };
  std::stable_sort(files->begin(), files->end(),
                   [&](const HeatRecord& a, const HeatRecord& b) { return value(a) > value(b); });
}

std::string PrefixNote(const HeatTable& t) {
  if (t.prefix.empty()) return "paths as logged (no --backing or --strip-prefix)";
  return "prefix " + EscapeName(t.prefix) + (t.prefix_detected ? " (detected)" : " (given)");
}

std::string Text(const HeatTable& t, size_t limit, const std::string& backing) {
  std::string out;
  char line[512];
  out += "# " + std::to_string(t.logs) + " logs, " + std::to_string(t.records) + " records, " +
         std::to_string(t.files.size()) + " files; " + PrefixNote(t) + "\n";
  snprintf(line, sizeof(line), "%10s %9s %12s %9s %7s %10s  %s\n", "HEAT/B", "REREADS",
           "BYTES_READ", "READS", "OPENS", "READ_TIME", "PATH");
  out += line;
  size_t shown = 0;
  for (const HeatRecord& r : t.files) {
    if (limit != 0 && shown++ >= limit) break;
    snprintf(line, sizeof(line), "%10.2f %9.2f %12s %9" PRIu64 " %7" PRIu64 " %10.3f  ",
             r.heat_per_byte, r.rereads, FormatBytes(r.counters.bytes_read).c_str(),
             r.counters.reads, r.counters.opens, r.counters.read_time);
    out += line + EscapeName(r.path) + "\n";
  }
  if (t.unmatched_paths > 0) {
    out += "# " + std::to_string(t.unmatched_paths) + " paths matched no file" +
           (backing.empty() ? std::string(" below the prefix") : " under " + EscapeName(backing)) +
           ", e.g.:\n";
    for (const std::string& p : t.unmatched_examples) out += "#   " + EscapeName(p) + "\n";
  }
  if (t.special_names + t.unnamed_records > 0) {
    out += "# skipped " + std::to_string(t.special_names) + " records of special names (<STDIN>" +
           " and such) and " + std::to_string(t.unnamed_records) + " records without a name\n";
  }
  // Already one line: the reader's messages escape the path they start with.
  for (const std::string& s : t.skipped_logs) {
    out += "# skipped unreadable log: " + SanitizeText(s) + "\n";
  }
  return out;
}

nlohmann::ordered_json Json(const HeatTable& t, size_t limit) {
  nlohmann::ordered_json files = nlohmann::ordered_json::array();
  size_t shown = 0;
  for (const HeatRecord& r : t.files) {
    if (limit != 0 && shown++ >= limit) break;
    files.push_back({{"path", EscapeName(r.path)},
                     {"heat_per_byte", r.heat_per_byte},
                     {"rereads", r.rereads},
                     {"bytes_read", r.counters.bytes_read},
                     {"reads", r.counters.reads},
                     {"opens", r.counters.opens},
                     {"max_byte_read", r.counters.max_byte_read},
                     {"read_time", r.counters.read_time},
                     {"records", r.counters.records}});
  }
  nlohmann::ordered_json examples = nlohmann::ordered_json::array();
  for (const std::string& p : t.unmatched_examples) examples.push_back(EscapeName(p));
  nlohmann::ordered_json skipped = nlohmann::ordered_json::array();
  for (const std::string& s : t.skipped_logs) skipped.push_back(SanitizeText(s));
  return {{"logs", t.logs},
          {"records", t.records},
          {"prefix", EscapeName(t.prefix)},
          {"prefix_detected", t.prefix_detected},
          {"file_count", t.files.size()},
          {"files", files},
          {"unmatched", {{"count", t.unmatched_paths}, {"examples", examples}}},
          {"special_names", t.special_names},
          {"unnamed_records", t.unnamed_records},
          {"skipped_logs", skipped}};
}

int RunTop(const TopArgs& args) {
  HeatOptions options;
  options.backing_root = args.backing;
  options.strip_prefix = args.strip_prefix;
  options.skip_bad_logs = args.skip_bad;
  const bool show_progress = StderrIsTerminal() && !args.json;
  if (show_progress) {
    options.progress = [](size_t done, size_t total) {
      fprintf(stderr, "\r  reading logs: %zu/%zu", done, total);
      if (done == total) fprintf(stderr, "\r\033[K");
    };
  }
  Result<HeatTable> table = LoadHeat(args.inputs, options);
  if (!table.ok()) {
    fprintf(stderr, "clairfs darshan top: %s\n", SanitizeText(table.status().message()).c_str());
    return kExitFailed;
  }
  SortTable(args.sort, &table->files);
  std::string out =
      args.json
          ? Json(*table, args.limit).dump(2, ' ', false, nlohmann::json::error_handler_t::replace) +
                "\n"
          : Text(*table, args.limit, args.backing);
  if (fwrite(out.data(), 1, out.size(), stdout) != out.size() || fflush(stdout) != 0) {
    return Fail("darshan top", Status::FromErrno(errno, "writing to stdout"));
  }
  return kExitOk;
}

}  // namespace

void RegisterDarshanTop(CLI::App* darshan) {
  auto args = std::make_shared<TopArgs>();
  CLI::App* top = AddCommand(
      darshan, "top",
      "Rank files by read heat (bytes read, reads, opens, re-reads, read time) over Darshan "
      "logs");
  top->add_option("LOG", args->inputs, "Darshan logs, or directories of *.darshan files")
      ->required()
      ->expected(1, -1);
  top->add_option("--backing", args->backing,
                  "Backing root: map PFS paths onto files under it (prefix detected unless "
                  "--strip-prefix)")
      ->check(CLI::ExistingDirectory);
  top->add_option("--strip-prefix", args->strip_prefix,
                  "Remove this prefix from logged paths (e.g. /lus/grand/projects/x/data)");
  top->add_option("--limit", args->limit, "Show the N hottest files (0: all)")
      ->capture_default_str();
  top->add_option("--sort", args->sort, "Order by heat, bytes, reads, opens, rereads or time")
      ->check(CLI::IsMember({"heat", "bytes", "reads", "opens", "rereads", "time"}))
      ->capture_default_str();
  top->add_flag("--json", args->json, "Structured output");
  top->add_flag("--skip-bad", args->skip_bad, "Skip unreadable logs (listed) instead of failing");
  top->callback([args] { SetExitCode(RunTop(*args)); });
}

}  // namespace clairfs::cli
