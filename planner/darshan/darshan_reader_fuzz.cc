// libFuzzer target for the Darshan reader (built only with -DCLAIRFS_FUZZ=ON and clang; run by
// .ci/fuzz). Any input must give a log or an error Status: no crash, no sanitizer
// report, bounded memory. For inputs that parse, printing them must work (the JSON strictly:
// every string in it is escaped, so it is UTF-8), and a log clairfs re-encodes must read back
// with the same records, names and raw modules (a property, not just "no crash").
#include <cstdint>
#include <cstring>
#include <string_view>

#include "planner/darshan/darshan_json.h"
#include "planner/darshan/darshan_reader.h"
#include "planner/darshan/darshan_text.h"
#include "planner/darshan/darshan_writer.h"

namespace {

using namespace clairfs::darshan;

template <typename R>
bool SameRecords(const std::vector<R>& a, const std::vector<R>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    // Bitwise, so that NaN counters compare equal to themselves.
    if (a[i].id != b[i].id || a[i].rank != b[i].rank || a[i].counters != b[i].counters ||
        std::memcmp(a[i].fcounters.data(), b[i].fcounters.data(),
                    sizeof(double) * a[i].fcounters.size()) != 0) {
      return false;
    }
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ReadOptions options;
  options.max_region_bytes = 64u << 20;  // well inside the fuzzer's memory limit
  options.keep_raw_modules = true;
  std::string_view input(reinterpret_cast<const char*>(data), size);
  clairfs::Result<DarshanLog> log = ParseDarshanLog(input, options);
  if (!log.ok()) {
    if (log.status().message().empty()) __builtin_trap();
    return 0;
  }
  FormatParserText(*log);
  ToJson(*log).dump();  // throws (and the fuzzer reports it) if a string is not UTF-8

  // Old logs may not fit a 3.41 job record; that is a clean error. Anything encoded must read
  // back with the same records, names and raw modules. Raw modules stay in the log's order.
  WriteOptions write;
  write.byte_order = log->byte_order;
  clairfs::Result<std::string> encoded = EncodeDarshanLog(*log, write);
  if (!encoded.ok()) return 0;
  clairfs::Result<DarshanLog> again = ParseDarshanLog(*encoded, options);
  if (!again.ok()) __builtin_trap();
  if (!SameRecords(log->posix, again->posix) || !SameRecords(log->stdio, again->stdio) ||
      again->names != log->names || again->job.exe != log->job.exe ||
      again->raw_modules.size() != log->raw_modules.size()) {
    __builtin_trap();
  }
  for (size_t i = 0; i < log->raw_modules.size(); ++i) {
    const RawModule &a = log->raw_modules[i], &b = again->raw_modules[i];
    if (a.module_id != b.module_id || a.version != b.version || a.data != b.data) {
      __builtin_trap();
    }
  }
  return 0;
}
