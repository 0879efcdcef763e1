// Darshan format constants: module names, version strings, counter names (see darshan_format.h).
// The counter names are the identifiers darshan-parser prints, in record order.
#include "planner/darshan/darshan_format.h"

namespace clairfs::darshan {

std::string_view CompressionName(Compression c) {
  switch (c) {
    case Compression::kZlib:
      return "ZLIB";
    case Compression::kBzip2:
      return "BZIP2";
    case Compression::kNone:
      return "NONE";
  }
  return "UNKNOWN";
}

std::optional<FormatVersion> ParseFormatVersion(std::string_view version_string) {
  // The header field is 8 bytes, NUL-padded.
  size_t nul = version_string.find('\0');
  if (nul != std::string_view::npos) version_string = version_string.substr(0, nul);
  if (version_string == "3.00") return FormatVersion::k300;
  if (version_string == "3.10") return FormatVersion::k310;
  if (version_string == "3.20") return FormatVersion::k320;
  if (version_string == "3.21") return FormatVersion::k321;
  if (version_string == "3.41") return FormatVersion::k341;
  return std::nullopt;
}

std::string_view FormatVersionString(FormatVersion v) {
  switch (v) {
    case FormatVersion::k300:
      return "3.00";
    case FormatVersion::k310:
      return "3.10";
    case FormatVersion::k320:
      return "3.20";
    case FormatVersion::k321:
      return "3.21";
    case FormatVersion::k341:
      return "3.41";
  }
  return "?";
}

std::string_view ModuleName(int module_id) {
  static constexpr std::array<std::string_view, kKnownModuleCount> kNames = {
      "NULL",        "POSIX", "MPI-IO", "H5F",     "H5D",       "PNETCDF_FILE",
      "PNETCDF_VAR", "BG/Q",  "LUSTRE", "STDIO",   "DXT_POSIX", "DXT_MPIIO",
      "MDHIM",       "APXC",  "APMPI",  "HEATMAP", "DFS",       "DAOS"};
  if (module_id < 0 || module_id >= kKnownModuleCount) return "";
  return kNames[module_id];
}

std::string ModuleLabel(int module_id) {
  std::string_view name = ModuleName(module_id);
  return name.empty() ? "module " + std::to_string(module_id) : std::string(name);
}

int ModuleIdForSlot(FormatVersion v, int slot) {
  switch (v) {
    case FormatVersion::k300:
    case FormatVersion::k310:
      // Neither H5D (now 4) nor PNETCDF_VAR (now 6) existed yet.
      if (slot < 4) return slot;
      if (slot == 4) return 5;
      return slot + 2;
    case FormatVersion::k320:
    case FormatVersion::k321:
      // H5D exists; PNETCDF_VAR (now 6) does not.
      return slot < 6 ? slot : slot + 1;
    case FormatVersion::k341:
      return slot;
  }
  return slot;
}

const std::array<std::string_view, kPosixCounters> kPosixCounterNames = {
    "POSIX_OPENS",
    "POSIX_FILENOS",
    "POSIX_DUPS",
    "POSIX_READS",
    "POSIX_WRITES",
    "POSIX_SEEKS",
    "POSIX_STATS",
    "POSIX_MMAPS",
    "POSIX_FSYNCS",
    "POSIX_FDSYNCS",
    "POSIX_RENAME_SOURCES",
    "POSIX_RENAME_TARGETS",
    "POSIX_RENAMED_FROM",
    "POSIX_MODE",
    "POSIX_BYTES_READ",
    "POSIX_BYTES_WRITTEN",
    "POSIX_MAX_BYTE_READ",
    "POSIX_MAX_BYTE_WRITTEN",
    "POSIX_CONSEC_READS",
    "POSIX_CONSEC_WRITES",
    "POSIX_SEQ_READS",
    "POSIX_SEQ_WRITES",
    "POSIX_RW_SWITCHES",
    "POSIX_MEM_NOT_ALIGNED",
    "POSIX_MEM_ALIGNMENT",
    "POSIX_FILE_NOT_ALIGNED",
    "POSIX_FILE_ALIGNMENT",
    "POSIX_MAX_READ_TIME_SIZE",
    "POSIX_MAX_WRITE_TIME_SIZE",
    "POSIX_SIZE_READ_0_100",
    "POSIX_SIZE_READ_100_1K",
    "POSIX_SIZE_READ_1K_10K",
    "POSIX_SIZE_READ_10K_100K",
    "POSIX_SIZE_READ_100K_1M",
    "POSIX_SIZE_READ_1M_4M",
    "POSIX_SIZE_READ_4M_10M",
    "POSIX_SIZE_READ_10M_100M",
    "POSIX_SIZE_READ_100M_1G",
    "POSIX_SIZE_READ_1G_PLUS",
    "POSIX_SIZE_WRITE_0_100",
    "POSIX_SIZE_WRITE_100_1K",
    "POSIX_SIZE_WRITE_1K_10K",
    "POSIX_SIZE_WRITE_10K_100K",
    "POSIX_SIZE_WRITE_100K_1M",
    "POSIX_SIZE_WRITE_1M_4M",
    "POSIX_SIZE_WRITE_4M_10M",
    "POSIX_SIZE_WRITE_10M_100M",
    "POSIX_SIZE_WRITE_100M_1G",
    "POSIX_SIZE_WRITE_1G_PLUS",
    "POSIX_STRIDE1_STRIDE",
    "POSIX_STRIDE2_STRIDE",
    "POSIX_STRIDE3_STRIDE",
    "POSIX_STRIDE4_STRIDE",
    "POSIX_STRIDE1_COUNT",
    "POSIX_STRIDE2_COUNT",
    "POSIX_STRIDE3_COUNT",
    "POSIX_STRIDE4_COUNT",
    "POSIX_ACCESS1_ACCESS",
    "POSIX_ACCESS2_ACCESS",
    "POSIX_ACCESS3_ACCESS",
    "POSIX_ACCESS4_ACCESS",
    "POSIX_ACCESS1_COUNT",
    "POSIX_ACCESS2_COUNT",
    "POSIX_ACCESS3_COUNT",
    "POSIX_ACCESS4_COUNT",
    "POSIX_FASTEST_RANK",
    "POSIX_FASTEST_RANK_BYTES",
    "POSIX_SLOWEST_RANK",
    "POSIX_SLOWEST_RANK_BYTES",
};

const std::array<std::string_view, kPosixFCounters> kPosixFCounterNames = {
    "POSIX_F_OPEN_START_TIMESTAMP",
    "POSIX_F_READ_START_TIMESTAMP",
    "POSIX_F_WRITE_START_TIMESTAMP",
    "POSIX_F_CLOSE_START_TIMESTAMP",
    "POSIX_F_OPEN_END_TIMESTAMP",
    "POSIX_F_READ_END_TIMESTAMP",
    "POSIX_F_WRITE_END_TIMESTAMP",
    "POSIX_F_CLOSE_END_TIMESTAMP",
    "POSIX_F_READ_TIME",
    "POSIX_F_WRITE_TIME",
    "POSIX_F_META_TIME",
    "POSIX_F_MAX_READ_TIME",
    "POSIX_F_MAX_WRITE_TIME",
    "POSIX_F_FASTEST_RANK_TIME",
    "POSIX_F_SLOWEST_RANK_TIME",
    "POSIX_F_VARIANCE_RANK_TIME",
    "POSIX_F_VARIANCE_RANK_BYTES",
};

const std::array<std::string_view, kStdioCounters> kStdioCounterNames = {
    "STDIO_OPENS",         "STDIO_FDOPENS",
    "STDIO_READS",         "STDIO_WRITES",
    "STDIO_SEEKS",         "STDIO_FLUSHES",
    "STDIO_BYTES_WRITTEN", "STDIO_BYTES_READ",
    "STDIO_MAX_BYTE_READ", "STDIO_MAX_BYTE_WRITTEN",
    "STDIO_FASTEST_RANK",  "STDIO_FASTEST_RANK_BYTES",
    "STDIO_SLOWEST_RANK",  "STDIO_SLOWEST_RANK_BYTES",
};

const std::array<std::string_view, kStdioFCounters> kStdioFCounterNames = {
    "STDIO_F_META_TIME",
    "STDIO_F_WRITE_TIME",
    "STDIO_F_READ_TIME",
    "STDIO_F_OPEN_START_TIMESTAMP",
    "STDIO_F_CLOSE_START_TIMESTAMP",
    "STDIO_F_WRITE_START_TIMESTAMP",
    "STDIO_F_READ_START_TIMESTAMP",
    "STDIO_F_OPEN_END_TIMESTAMP",
    "STDIO_F_CLOSE_END_TIMESTAMP",
    "STDIO_F_WRITE_END_TIMESTAMP",
    "STDIO_F_READ_END_TIMESTAMP",
    "STDIO_F_FASTEST_RANK_TIME",
    "STDIO_F_SLOWEST_RANK_TIME",
    "STDIO_F_VARIANCE_RANK_TIME",
    "STDIO_F_VARIANCE_RANK_BYTES",
};

}  // namespace clairfs::darshan
