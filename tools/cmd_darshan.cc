// `clairfs darshan ...`: Darshan logs as clairfs reads and writes them.
//
//   clairfs darshan dump LOG [--json]        records as darshan-parser prints them (or JSON)
//   clairfs darshan top LOG|DIR... [...]     files ranked by read heat, merged over logs
//   clairfs darshan reencode IN OUT [...]    rewrite a log as a format-3.41 log, losing nothing
//   clairfs darshan import MOUNTPOINT LOG... store heat in a cache's index (cmd_darshan_import.cc)
//
// `darshan` is a parent command: other children (e.g. `import`) register themselves on it in
// their own files. Exit codes: 0 done, 1 failed (unreadable or corrupt log), 2 usage.
// Names: the text of `dump` is darshan-parser's, line for line, so it prints names raw (as the
// log stores them); everything else prints EscapeName of them (planner/name_escape.h): JSON,
// `top`, and every error message.
#include <cstdio>
#include <string>
#include <vector>

#include "planner/base/name_escape.h"
#include "planner/darshan/darshan_json.h"
#include "planner/darshan/darshan_reader.h"
#include "planner/darshan/darshan_text.h"
#include "planner/darshan/darshan_writer.h"
#include "tools/cli/cli.h"
#include "tools/cmd_darshan.h"
#include "tools/commands.h"

namespace clairfs::cli {
namespace {

// A corrupt log, or one the 3.41 format cannot hold, is a failed operation (exit 1), not a usage
// error, although the reader and writer report it as EINVAL.
int FailLog(const std::string& command, const Status& status) {
  // The reader and writer escape the names they quote; this keeps any other byte off the line.
  fprintf(stderr, "clairfs %s: %s\n", command.c_str(), SanitizeText(status.message()).c_str());
  return kExitFailed;
}

bool WriteStdout(const std::string& text) {
  return fwrite(text.data(), 1, text.size(), stdout) == text.size() && fflush(stdout) == 0;
}

struct DumpArgs {
  std::string log;
  bool json = false;
};

int RunDump(const DumpArgs& args) {
  Result<darshan::DarshanLog> log = darshan::ReadDarshanLogFile(args.log);
  if (!log.ok()) return FailLog("darshan dump", log.status());
  std::string text;
  if (args.json) {
    text = darshan::ToJson(*log).dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
    text += '\n';
  } else {
    text = darshan::FormatParserText(*log);
  }
  if (!WriteStdout(text)) {
    return Fail("darshan dump", Status::FromErrno(errno, "writing to stdout"));
  }
  return kExitOk;
}

struct ReencodeArgs {
  std::string in;
  std::string out;
  bool bzip2 = false;
};

// Every module is carried over: POSIX and STDIO converted to their current record versions,
// DXT_POSIX as read, and the modules clairfs does not decode as their bytes and version. Those
// bytes are in the input's byte order, so the output keeps that order.
int RunReencode(const ReencodeArgs& args) {
  darshan::ReadOptions read;
  read.keep_raw_modules = true;
  Result<darshan::DarshanLog> log = darshan::ReadDarshanLogFile(args.in, read);
  if (!log.ok()) return FailLog("darshan reencode", log.status());
  darshan::WriteOptions options;
  options.compression = args.bzip2 ? darshan::Compression::kBzip2 : darshan::Compression::kZlib;
  options.byte_order = log->byte_order;
  Status s = darshan::WriteDarshanLogFile(args.out, *log, options);
  if (!s.ok()) return FailLog("darshan reencode", s);
  return kExitOk;
}

}  // namespace

void RegisterDarshan(CLI::App& app) {
  CLI::App* darshan = app.add_subcommand(
      "darshan", "Read and write Darshan I/O logs (dump, rank hot files, import heat, re-encode)");
  darshan->require_subcommand(1);

  auto dump_args = std::make_shared<DumpArgs>();
  CLI::App* dump = AddCommand(
      darshan, "dump",
      "Print a log's POSIX and STDIO records exactly as darshan-parser does (or as JSON).\n"
      "The text is darshan-parser's line for line, so file names are printed raw, as the log\n"
      "stores them (a name holding a newline spans two lines); --json gives every name\n"
      "escaped (printable UTF-8 as is, \\ for a backslash, \\xHH for any other byte).");
  dump->add_option("LOG", dump_args->log, "Darshan log file")->required();
  dump->add_flag("--json", dump_args->json,
                 "Structured output: job, mounts, regions, records with named counters, DXT "
                 "traces; names escaped");
  dump->callback([dump_args] { SetExitCode(RunDump(*dump_args)); });

  RegisterDarshanTop(darshan);
  RegisterDarshanImport(darshan);

  auto reencode_args = std::make_shared<ReencodeArgs>();
  CLI::App* reencode = AddCommand(
      darshan, "reencode",
      "Rewrite a Darshan log (3.00-3.41) as a format-3.41 log: POSIX and STDIO records in\n"
      "their current versions, DXT_POSIX traces in the version they had, and every module\n"
      "clairfs does not decode (MPI-IO, LUSTRE, HEATMAP, ...) carried over with its bytes and\n"
      "version. The output keeps the input's byte order.");
  reencode->add_option("IN", reencode_args->in, "Darshan log to read")->required();
  reencode->add_option("OUT", reencode_args->out, "Log to write (must not exist)")->required();
  reencode->add_flag("--bzip2", reencode_args->bzip2, "Compress regions with bzip2, not zlib");
  reencode->callback([reencode_args] { SetExitCode(RunReencode(*reencode_args)); });
}

}  // namespace clairfs::cli
