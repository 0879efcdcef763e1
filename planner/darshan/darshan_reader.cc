// Darshan log reader: header, job region, name map, modules (see darshan_reader.h).
#include "planner/darshan/darshan_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <utility>
#include <vector>

#include "planner/base/name_escape.h"
#include "planner/darshan/darshan_bytes.h"
#include "planner/darshan/darshan_compress.h"
#include "planner/darshan/darshan_records.h"

namespace clairfs::darshan {
namespace {

struct Span {
  uint64_t off = 0;
  uint64_t len = 0;
};

// The header after mapping old module slots onto 3.41 ids.
struct Header {
  size_t size = 0;
  Span name_map;
  std::array<Span, kMaxModules> modules{};
  std::array<uint32_t, kMaxModules> versions{};
  uint64_t partial_flags = 0;
};

std::string RegionName(int module_id) { return ModuleLabel(module_id) + " region"; }

Status ParseHeader(std::string_view bytes, DarshanLog* log, Header* h) {
  if (bytes.size() < 8) {
    return Status::Invalid("header: file is " + std::to_string(bytes.size()) +
                           " bytes, too short for a version string");
  }
  std::string_view version = bytes.substr(0, 8);
  std::optional<FormatVersion> v = ParseFormatVersion(version);
  if (!v) {
    std::string shown;
    for (char ch : version.substr(0, version.find('\0'))) {
      shown += std::isprint(static_cast<unsigned char>(ch)) ? ch : '?';
    }
    return Status::Invalid("header: unsupported log format version \"" + shown +
                           "\" (supported: 3.00, 3.10, 3.20, 3.21, 3.41)");
  }
  log->version = *v;
  log->version_string = std::string(FormatVersionString(*v));
  const bool is341 = *v == FormatVersion::k341;
  h->size = is341 ? kHeaderSize341 : kHeaderSizeOld;
  if (bytes.size() < h->size) {
    return Status::Invalid("header: truncated (" + std::to_string(bytes.size()) + " of " +
                           std::to_string(h->size) + " bytes)");
  }
  if (static_cast<int64_t>(LoadU64(bytes.data() + 8, ByteOrder::kLittle)) == kMagic) {
    log->byte_order = ByteOrder::kLittle;
  } else if (static_cast<int64_t>(LoadU64(bytes.data() + 8, ByteOrder::kBig)) == kMagic) {
    log->byte_order = ByteOrder::kBig;
  } else {
    return Status::Invalid("header: bad magic number (not a Darshan log, or corrupt)");
  }
  const ByteOrder order = log->byte_order;
  const unsigned comp = static_cast<unsigned char>(bytes[16]);
  if (comp > 2) {
    return Status::Invalid("header: unknown compression type " + std::to_string(comp));
  }
  log->compression = static_cast<Compression>(comp);

  const int slots = is341 ? kMaxModules : kOldMaxModules;
  const size_t name_map_at = is341 ? 32 : 24;
  const size_t mod_map_at = name_map_at + 16;
  const size_t mod_ver_at = mod_map_at + 16 * static_cast<size_t>(slots);
  const uint64_t raw_partial =
      is341 ? LoadU64(bytes.data() + 24, order) : LoadU32(bytes.data() + 20, order);
  h->name_map = {LoadU64(bytes.data() + name_map_at, order),
                 LoadU64(bytes.data() + name_map_at + 8, order)};
  for (int slot = 0; slot < slots; ++slot) {
    int id = ModuleIdForSlot(*v, slot);
    if (id >= kMaxModules) continue;
    h->modules[id] = {LoadU64(bytes.data() + mod_map_at + 16 * slot, order),
                      LoadU64(bytes.data() + mod_map_at + 16 * slot + 8, order)};
    h->versions[id] = LoadU32(bytes.data() + mod_ver_at + 4 * slot, order);
    if (raw_partial & (uint64_t{1} << slot)) h->partial_flags |= uint64_t{1} << id;
  }
  return Status::Ok();
}

// Checks that [off, off+len) lies inside the file, after the header.
Status CheckSpan(const std::string& region, Span s, size_t header_size, size_t file_size) {
  if (s.len == 0) return Status::Ok();
  if (s.off < header_size || s.off > file_size || s.len > file_size - s.off) {
    return Status::Invalid(region + ": offset " + std::to_string(s.off) + " + length " +
                           std::to_string(s.len) + " is outside the file (" +
                           std::to_string(file_size) + " bytes, header " +
                           std::to_string(header_size) + ")");
  }
  return Status::Ok();
}

size_t InflateCap(const ReadOptions& options, uint64_t compressed_len) {
  const uint64_t relative = compressed_len * options.max_expansion + (uint64_t{1} << 20);
  const bool overflow =
      options.max_expansion != 0 && relative / options.max_expansion < compressed_len;
  if (overflow) return options.max_region_bytes;
  return static_cast<size_t>(std::min<uint64_t>(options.max_region_bytes, relative));
}

// Splits the NUL-terminated text after struct darshan_job into the command line (before the
// first newline) and the mount table (one "<type> <path>" entry after each newline), the way
// darshan-util reads it.
Status ParseExeAndMounts(std::string_view trailing, DarshanLog* log) {
  trailing = trailing.substr(0, trailing.find('\0'));
  size_t first_newline = trailing.find('\n');
  // Without a newline darshan-util shows no command line at all.
  log->job.exe =
      first_newline == std::string_view::npos ? "" : std::string(trailing.substr(0, first_newline));
  size_t line = 0;
  for (size_t nl = first_newline; nl != std::string_view::npos; nl = trailing.find('\n', nl + 1)) {
    ++line;
    // Two whitespace-separated tokens, possibly spanning lines (as sscanf("%s\t%s") reads).
    std::array<std::string, 2> tokens;
    size_t pos = nl + 1;
    for (std::string& token : tokens) {
      while (pos < trailing.size() && std::isspace(static_cast<unsigned char>(trailing[pos]))) {
        ++pos;
      }
      size_t start = pos;
      while (pos < trailing.size() && !std::isspace(static_cast<unsigned char>(trailing[pos]))) {
        ++pos;
      }
      token = std::string(trailing.substr(start, pos - start));
    }
    if (tokens[0].empty() || tokens[1].empty()) {
      return Status::Invalid("job region: mount table entry " + std::to_string(line) +
                             " is not \"<type>\\t<path>\"");
    }
    log->mounts.push_back({tokens[0], tokens[1]});
  }
  std::stable_sort(
      log->mounts.begin(), log->mounts.end(),
      [](const MountEntry& a, const MountEntry& b) { return a.path.size() > b.path.size(); });
  return Status::Ok();
}

// The job region runs from the header to the name map (or to the first module, or to the end
// of the file when nothing follows).
Result<Span> JobSpan(const Header& h, size_t file_size) {
  uint64_t end = file_size;
  if (h.name_map.off != 0) {
    end = h.name_map.off;
  } else {
    for (const Span& m : h.modules) {
      if (m.off != 0) {
        end = m.off;
        break;
      }
    }
  }
  if (end < h.size || end > file_size) {
    return Status::Invalid("job region: ends at offset " + std::to_string(end) +
                           ", outside the file (" + std::to_string(file_size) + " bytes, header " +
                           std::to_string(h.size) + ")");
  }
  return Span{h.size, end - h.size};
}

// Checks every region against the file size, in file order, so that a truncated log is
// reported at the first region it cuts.
Status CheckRegions(const Header& h, size_t file_size, Span* job) {
  Result<Span> job_span = JobSpan(h, file_size);
  if (!job_span.ok()) return job_span.status();
  *job = *job_span;
  std::vector<std::pair<Span, std::string>> regions;
  regions.push_back({h.name_map, "name map"});
  for (int id = 0; id < kMaxModules; ++id) regions.push_back({h.modules[id], RegionName(id)});
  std::stable_sort(regions.begin(), regions.end(),
                   [](const auto& a, const auto& b) { return a.first.off < b.first.off; });
  for (const auto& [span, name] : regions) {
    CLAIRFS_RETURN_IF_ERROR(CheckSpan(name, span, h.size, file_size));
  }
  return Status::Ok();
}

Status ParseJobRegion(std::string_view bytes, Span job, DarshanLog* log) {
  log->job_region_length = job.len;
  if (job.len == 0) return Status::Invalid("job region: empty");
  Result<std::string> raw = InflateRegion(bytes.substr(job.off, job.len), log->compression,
                                          kJobRecordSize, LimitMode::kTruncate);
  if (!raw.ok()) return raw.status().WithContext("job region");
  const bool is341 = log->version == FormatVersion::k341;
  const size_t struct_size = is341 ? kJobStructSize341 : kJobStructSizeOld;
  if (raw->size() <= struct_size) {
    return Status::Invalid("job region: " + std::to_string(raw->size()) +
                           " bytes decompressed, need more than " + std::to_string(struct_size));
  }
  ByteCursor c(*raw, log->byte_order);
  JobInfo& job_info = log->job;
  c.I64(&job_info.uid);
  c.I64(&job_info.start_time_sec);
  if (is341) c.I64(&job_info.start_time_nsec);
  c.I64(&job_info.end_time_sec);
  if (is341) c.I64(&job_info.end_time_nsec);
  c.I64(&job_info.nprocs);
  c.I64(&job_info.jobid);
  std::string_view metadata;
  c.Bytes(kJobMetadataSize, &metadata);
  job_info.metadata = std::string(metadata.substr(0, metadata.find('\0')));
  std::string_view trailing;
  c.Bytes(c.remaining(), &trailing);
  return ParseExeAndMounts(trailing, log);
}

// Name map: {uint64 id; NUL-terminated name} (3.10+) or {uint64 id; uint32 len; name} (3.00).
// The first name seen for an id wins, unless it was empty.
Status ParseNameMap(std::string_view raw, DarshanLog* log) {
  ByteCursor c(raw, log->byte_order);
  while (!c.at_end()) {
    const size_t at = c.position();
    uint64_t id = 0;
    if (!c.U64(&id)) {
      return Status::Invalid("name map: record at byte " + std::to_string(at) + " is cut short");
    }
    std::string_view name;
    if (log->version == FormatVersion::k300) {
      uint32_t len = 0;
      if (!c.U32(&len) || !c.Bytes(len, &name)) {
        return Status::Invalid("name map: record at byte " + std::to_string(at) + " is cut short");
      }
      name = name.substr(0, name.find('\0'));
    } else if (!c.CString(&name)) {
      return Status::Invalid("name map: name at byte " + std::to_string(at + 8) +
                             " has no terminating NUL");
    }
    auto [it, inserted] = log->names.try_emplace(id, name);
    if (!inserted && it->second.empty()) it->second = std::string(name);
  }
  return Status::Ok();
}

}  // namespace

Result<DarshanLog> ParseDarshanLog(std::string_view bytes, const ReadOptions& options) {
  DarshanLog log;
  Header h;
  CLAIRFS_RETURN_IF_ERROR(ParseHeader(bytes, &log, &h));
  Span job;
  CLAIRFS_RETURN_IF_ERROR(CheckRegions(h, bytes.size(), &job));
  CLAIRFS_RETURN_IF_ERROR(ParseJobRegion(bytes, job, &log));

  log.name_map_length = h.name_map.len;
  if (h.name_map.len > 0) {
    Result<std::string> raw = InflateRegion(bytes.substr(h.name_map.off, h.name_map.len),
                                            log.compression, InflateCap(options, h.name_map.len));
    if (!raw.ok()) return raw.status().WithContext("name map");
    CLAIRFS_RETURN_IF_ERROR(ParseNameMap(*raw, &log));
  }

  for (int id = 0; id < kMaxModules; ++id) {
    const Span& span = h.modules[id];
    const bool partial = (h.partial_flags >> id) & 1;
    if (span.len == 0 && !partial) continue;
    const bool decoded =
        id == kPosixModule || id == kStdioModule || (id == kDxtPosixModule && options.decode_dxt);
    const bool kept_raw = !decoded && id != kDxtPosixModule && options.keep_raw_modules;
    log.modules.push_back({id, span.off, span.len, h.versions[id], partial, decoded || kept_raw});
    if ((!decoded && !kept_raw) || span.len == 0) continue;  // skipped undecoded
    const std::string region = RegionName(id);
    Result<std::string> raw = InflateRegion(bytes.substr(span.off, span.len), log.compression,
                                            InflateCap(options, span.len));
    if (!raw.ok()) return raw.status().WithContext(region);
    if (kept_raw) {
      // An empty stream holds nothing to keep (and is written as no region at all).
      if (!raw->empty()) log.raw_modules.push_back({id, h.versions[id], std::move(*raw)});
      continue;
    }
    Status s;
    if (id == kPosixModule) {
      s = DecodePosixRecords(*raw, h.versions[id], log.byte_order, &log.posix,
                             &log.dropped_posix_v1_records);
    } else if (id == kStdioModule) {
      s = DecodeStdioRecords(*raw, h.versions[id], log.byte_order, &log.stdio);
    } else {
      log.dxt_posix_version = h.versions[id];
      s = DecodeDxtRecords(*raw, h.versions[id], log.byte_order, &log.dxt_posix);
    }
    if (!s.ok()) return s.WithContext(region);
  }
  return log;
}

Result<DarshanLog> ReadDarshanLogFile(const std::string& raw_path, const ReadOptions& options) {
  const std::string path = EscapeName(raw_path);  // as messages show it
  int fd = open(raw_path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, path);
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return Status::FromErrno(err, path);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return Status::Invalid(path + ": not a regular file");
  }
  if (static_cast<uint64_t>(st.st_size) > options.max_file_bytes) {
    close(fd);
    return Status::Invalid(path + ": " + std::to_string(st.st_size) +
                           " bytes, larger than the limit for a Darshan log");
  }
  std::string bytes(static_cast<size_t>(st.st_size), '\0');
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = read(fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      int err = errno;
      close(fd);
      return Status::FromErrno(err, path);
    }
    if (n == 0) break;  // the file shrank: parse what is there
    done += static_cast<size_t>(n);
  }
  close(fd);
  bytes.resize(done);
  Result<DarshanLog> log = ParseDarshanLog(bytes, options);
  if (!log.ok()) return log.status().WithContext(path);
  return log;
}

}  // namespace clairfs::darshan
