// Facts about the Darshan log format (versions 3.00 to 3.41) that the reader, the writer and the
// text printer share: sizes, module ids, record layouts and counter names.
//
// Module ids here are always the 3.41 numbering (NULL 0, POSIX 1, ... STDIO 9, DXT_POSIX 10);
// the reader maps older header slots onto it. Counter index constants and name tables are for
// the current record versions (POSIX 4, STDIO 2); older records are converted to these on read.
// Everything here is constant data; safe to use from any thread.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clairfs::darshan {

// The magic number every header carries; read in the wrong byte order it tells the reader that
// the log came from a machine of the other endianness.
constexpr int64_t kMagic = 6567223;

// Sizes of the uncompressed header.
constexpr size_t kHeaderSize341 = 1328;  // "3.41": 64 module slots
constexpr size_t kHeaderSizeOld = 360;   // "3.00" .. "3.21": 16 module slots
constexpr int kMaxModules = 64;
constexpr int kOldMaxModules = 16;

// The job region holds at most this many decompressed bytes: struct darshan_job, then the
// command line and mount table. Darshan's reader ignores anything beyond it.
constexpr size_t kJobRecordSize = 4096;
constexpr size_t kJobMetadataSize = 1024;  // including the terminating NUL
constexpr size_t kJobStructSize341 = 7 * 8 + kJobMetadataSize;
constexpr size_t kJobStructSizeOld = 5 * 8 + kJobMetadataSize;

enum class Compression : uint8_t { kZlib = 0, kBzip2 = 1, kNone = 2 };
// "ZLIB", "BZIP2", "NONE".
std::string_view CompressionName(Compression c);

enum class ByteOrder { kLittle, kBig };

// Log format versions the reader understands.
enum class FormatVersion { k300, k310, k320, k321, k341 };
std::optional<FormatVersion> ParseFormatVersion(std::string_view version_string);
std::string_view FormatVersionString(FormatVersion v);

// Module ids (3.41 numbering).
enum ModuleId : int {
  kNullModule = 0,
  kPosixModule = 1,
  kMpiioModule = 2,
  kH5fModule = 3,
  kH5dModule = 4,
  kPnetcdfFileModule = 5,
  kPnetcdfVarModule = 6,
  kBgqModule = 7,
  kLustreModule = 8,
  kStdioModule = 9,
  kDxtPosixModule = 10,
  kDxtMpiioModule = 11,
  kMdhimModule = 12,
  kApxcModule = 13,
  kApmpiModule = 14,
  kHeatmapModule = 15,
  kDfsModule = 16,
  kDaosModule = 17,
  kKnownModuleCount = 18,
};
// The name darshan-parser prints ("POSIX", "MPI-IO", ...), or "" for ids it does not know.
std::string_view ModuleName(int module_id);
// ModuleName, or "module N" for an id without a name: for messages.
std::string ModuleLabel(int module_id);

// Maps a header slot of a log of version `v` onto the 3.41 module id (older logs lack the H5D
// and PNETCDF_VAR slots).
int ModuleIdForSlot(FormatVersion v, int slot);

// Record versions this code reads (1..current) and writes (current).
constexpr uint32_t kPosixVersion = 4;
constexpr uint32_t kStdioVersion = 2;
constexpr uint32_t kDxtPosixMaxVersion = 2;

// POSIX record, version 4: {uint64 id; int64 rank; int64 counters[69]; double fcounters[17]}.
constexpr int kPosixCounters = 69;
constexpr int kPosixFCounters = 17;
// Record sizes by version (index = version).
constexpr std::array<size_t, 5> kPosixRecordSize = {0, 680, 648, 664, 704};

// Counter indices are named exactly as darshan-parser prints the counters (hence not kCamelCase),
// so that code using them reads like the logs it handles. Only those clairfs uses are listed.
enum PosixCounter : int {
  POSIX_OPENS = 0,
  POSIX_FILENOS = 1,
  POSIX_DUPS = 2,
  POSIX_READS = 3,
  POSIX_WRITES = 4,
  POSIX_RENAME_SOURCES = 10,
  POSIX_RENAMED_FROM = 12,
  POSIX_BYTES_READ = 14,
  POSIX_BYTES_WRITTEN = 15,
  POSIX_MAX_BYTE_READ = 16,
};
enum PosixFCounter : int {
  POSIX_F_OPEN_START_TIMESTAMP = 0,
  POSIX_F_CLOSE_START_TIMESTAMP = 3,
  POSIX_F_OPEN_END_TIMESTAMP = 4,
  POSIX_F_READ_TIME = 8,
  POSIX_F_META_TIME = 10,
};
extern const std::array<std::string_view, kPosixCounters> kPosixCounterNames;
extern const std::array<std::string_view, kPosixFCounters> kPosixFCounterNames;

// STDIO record, version 2: 14 integer and 15 float counters (248 bytes); version 1 lacks FDOPENS.
constexpr int kStdioCounters = 14;
constexpr int kStdioFCounters = 15;
constexpr std::array<size_t, 3> kStdioRecordSize = {0, 240, 248};
enum StdioCounter : int {
  STDIO_OPENS = 0,
  STDIO_FDOPENS = 1,
  STDIO_READS = 2,
  STDIO_BYTES_READ = 7,
  STDIO_MAX_BYTE_READ = 8,
};
enum StdioFCounter : int {
  STDIO_F_META_TIME = 0,
  STDIO_F_READ_TIME = 2,
};
extern const std::array<std::string_view, kStdioCounters> kStdioCounterNames;
extern const std::array<std::string_view, kStdioFCounters> kStdioFCounterNames;

// DXT file record: {uint64 id; int64 rank; int64 shared_record; char hostname[64];
// int64 write_count; int64 read_count}, then the segments (writes first).
constexpr size_t kDxtRecordSize = 104;
constexpr size_t kDxtHostnameSize = 64;
constexpr std::array<size_t, 3> kDxtSegmentSize = {0, 32, 40};

}  // namespace clairfs::darshan
