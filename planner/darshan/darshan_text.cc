// darshan-parser-compatible text and JSON for a DarshanLog (see darshan_text.h).
#include "planner/darshan/darshan_text.h"

#include <cinttypes>
#include <cstdarg>
#include <cstdio>
#include <ctime>

namespace clairfs::darshan {
namespace {

void Appendf(std::string* out, const char* format, ...) __attribute__((format(printf, 2, 3)));
void Appendf(std::string* out, const char* format, ...) {
  char buf[512];
  va_list args;
  va_start(args, format);
  int n = vsnprintf(buf, sizeof(buf), format, args);
  va_end(args);
  if (n < 0) return;
  if (static_cast<size_t>(n) < sizeof(buf)) {
    out->append(buf, static_cast<size_t>(n));
    return;
  }
  std::string big(static_cast<size_t>(n) + 1, '\0');
  va_start(args, format);
  vsnprintf(big.data(), big.size(), format, args);
  va_end(args);
  big.resize(static_cast<size_t>(n));
  out->append(big);
}

// ctime()'s layout ("Thu Oct 17 17:49:25 2024"), in UTC.
std::string AsciiTime(int64_t seconds) {
  time_t t = static_cast<time_t>(seconds);
  struct tm tm;
  if (gmtime_r(&t, &tm) == nullptr) return "(null)";
  char buf[64];
  if (strftime(buf, sizeof(buf), "%a %b %e %H:%M:%S %Y", &tm) == 0) return "(null)";
  return buf;
}

// The name, mount point and fs type columns of a record: "\t<name>\t<mount>\t<type>\n".
std::string ColumnsFor(const DarshanLog& log, uint64_t id) {
  const std::string* name = log.FindName(id);
  const MountEntry* mount = name ? log.MountFor(*name) : nullptr;
  std::string s = "\t";
  // darshan-parser hands a NULL name to printf, which glibc shows as "(null)".
  s += name ? *name : "(null)";
  s += '\t';
  s += mount ? mount->path : "UNKNOWN";
  s += '\t';
  s += mount ? mount->fs_type : "UNKNOWN";
  s += '\n';
  return s;
}

void AppendMetadataLines(const std::string& metadata, std::string* out) {
  size_t start = 0;
  while (start <= metadata.size()) {
    size_t end = metadata.find('\n', start);
    if (end == std::string::npos) end = metadata.size();
    std::string_view line(metadata.data() + start, end - start);
    size_t eq = line.find('=');
    if (!line.empty() && eq != std::string_view::npos) {
      out->append("# metadata: ");
      out->append(line.substr(0, eq));
      out->append(" = ");
      out->append(line.substr(eq + 1));
      out->push_back('\n');
    }
    start = end + 1;
  }
}

void AppendSectionHeader(const DarshanLog& log, int module_id, std::string* out) {
  const ModuleRegion* region = log.FindModule(module_id);
  out->append("\n# *******************************************************\n");
  Appendf(out, "# %s module data\n", std::string(ModuleName(module_id)).c_str());
  out->append("# *******************************************************\n");
  if (region && region->partial) {
    Appendf(out,
            "\n# WARNING: the %s module is partial: Darshan ran out of record memory at run\n"
            "# time, so files beyond its record limit are missing below.\n",
            std::string(ModuleName(module_id)).c_str());
  }
  const uint32_t current = module_id == kPosixModule ? kPosixVersion : kStdioVersion;
  if (region && region->version < current && region->version > 0) {
    Appendf(out,
            "\n# note: record version %u converted to version %u; counters version %u lacks "
            "show -1.\n",
            region->version, current, region->version);
  }
  if (module_id == kPosixModule && log.dropped_posix_v1_records > 0) {
    Appendf(out,
            "\n# note: %zu version-1 records also held stdio counters and cannot be converted; "
            "they are left out, as darshan-parser leaves them out.\n",
            log.dropped_posix_v1_records);
  }
  out->append(
      "\n#<module>\t<rank>\t<record id>\t<counter>\t<value>\t<file name>\t<mount pt>"
      "\t<fs type>\n");
}

}  // namespace

void AppendPosixRecordLines(const DarshanLog& log, const PosixRecord& r, std::string* out) {
  const std::string columns = ColumnsFor(log, r.id);
  for (int i = 0; i < kPosixCounters; ++i) {
    if (i == POSIX_RENAMED_FROM) {
      Appendf(out, "POSIX\t%" PRId64 "\t%" PRIu64 "\t%s\t%" PRIu64, r.rank, r.id,
              kPosixCounterNames[i].data(), static_cast<uint64_t>(r.counters[i]));
    } else {
      Appendf(out, "POSIX\t%" PRId64 "\t%" PRIu64 "\t%s\t%" PRId64, r.rank, r.id,
              kPosixCounterNames[i].data(), r.counters[i]);
    }
    out->append(columns);
  }
  for (int i = 0; i < kPosixFCounters; ++i) {
    Appendf(out, "POSIX\t%" PRId64 "\t%" PRIu64 "\t%s\t%f", r.rank, r.id,
            kPosixFCounterNames[i].data(), r.fcounters[i]);
    out->append(columns);
  }
}

void AppendStdioRecordLines(const DarshanLog& log, const StdioRecord& r, std::string* out) {
  const std::string columns = ColumnsFor(log, r.id);
  for (int i = 0; i < kStdioCounters; ++i) {
    Appendf(out, "STDIO\t%" PRId64 "\t%" PRIu64 "\t%s\t%" PRId64, r.rank, r.id,
            kStdioCounterNames[i].data(), r.counters[i]);
    out->append(columns);
  }
  for (int i = 0; i < kStdioFCounters; ++i) {
    Appendf(out, "STDIO\t%" PRId64 "\t%" PRIu64 "\t%s\t%f", r.rank, r.id,
            kStdioFCounterNames[i].data(), r.fcounters[i]);
    out->append(columns);
  }
}

std::string FormatParserText(const DarshanLog& log) {
  std::string out;
  const JobInfo& job = log.job;
  Appendf(&out, "# darshan log version: %s\n", log.version_string.c_str());
  Appendf(&out, "# compression method: %s\n",
          std::string(CompressionName(log.compression)).c_str());
  out += "# exe: " + job.exe + "\n";
  Appendf(&out, "# uid: %" PRId64 "\n", job.uid);
  Appendf(&out, "# jobid: %" PRId64 "\n", job.jobid);
  Appendf(&out, "# start_time: %" PRId64 "\n", job.start_time_sec);
  out += "# start_time_asci: " + AsciiTime(job.start_time_sec) + "\n";
  Appendf(&out, "# end_time: %" PRId64 "\n", job.end_time_sec);
  out += "# end_time_asci: " + AsciiTime(job.end_time_sec) + "\n";
  Appendf(&out, "# nprocs: %" PRId64 "\n", job.nprocs);
  Appendf(&out, "# run time: %.4f\n", log.RunTimeSeconds());
  AppendMetadataLines(job.metadata, &out);

  out += "\n# log file regions\n";
  out += "# -------------------------------------------------------\n";
  // darshan-parser always shows the size of the current (3.41) header structure.
  Appendf(&out, "# header: %zu bytes (uncompressed)\n", kHeaderSize341);
  Appendf(&out, "# job data: %" PRIu64 " bytes (compressed)\n", log.job_region_length);
  Appendf(&out, "# record table: %" PRIu64 " bytes (compressed)\n", log.name_map_length);
  for (const ModuleRegion& m : log.modules) {
    if (m.module_id < kKnownModuleCount) {
      Appendf(&out, "# %s module: %" PRIu64 " bytes (compressed), ver=%d\n",
              std::string(ModuleName(m.module_id)).c_str(), m.length, static_cast<int>(m.version));
    } else {
      Appendf(&out, "# <UNKNOWN> module (id %d): %" PRIu64 " bytes (compressed), ver=%d\n",
              m.module_id, m.length, static_cast<int>(m.version));
    }
  }

  out += "\n# mounted file systems (mount point and fs type)\n";
  out += "# -------------------------------------------------------\n";
  for (const MountEntry& m : log.mounts) {
    out += "# mount entry:\t" + m.path + "\t" + m.fs_type + "\n";
  }

  if (log.FindModule(kPosixModule)) {
    AppendSectionHeader(log, kPosixModule, &out);
    for (const PosixRecord& r : log.posix) AppendPosixRecordLines(log, r, &out);
  }
  if (log.FindModule(kStdioModule)) {
    AppendSectionHeader(log, kStdioModule, &out);
    for (const StdioRecord& r : log.stdio) AppendStdioRecordLines(log, r, &out);
  }
  if (log.modules.empty()) out += "\n# no module data available.\n";
  return out;
}

}  // namespace clairfs::darshan
