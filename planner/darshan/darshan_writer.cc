// Darshan 3.41 log writer and the named-counter log builder (see darshan_writer.h).
#include "planner/darshan/darshan_writer.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <set>
#include <unordered_map>

#include "planner/base/name_escape.h"
#include "planner/darshan/darshan_bytes.h"
#include "planner/darshan/darshan_compress.h"
#include "planner/darshan/darshan_hash.h"
#include "planner/darshan/darshan_records.h"

namespace clairfs::darshan {
namespace {

bool HasSpace(std::string_view s) {
  for (char ch : s) {
    if (std::isspace(static_cast<unsigned char>(ch))) return true;
  }
  return false;
}

Result<std::string> JobRegionBytes(const DarshanLog& log, ByteOrder order) {
  const JobInfo& job = log.job;
  if (job.metadata.size() >= kJobMetadataSize) {
    return Status::Invalid("job metadata is " + std::to_string(job.metadata.size()) +
                           " bytes; at most " + std::to_string(kJobMetadataSize - 1) + " fit");
  }
  if (job.metadata.find('\0') != std::string::npos) {
    return Status::Invalid("job metadata contains a NUL byte");
  }
  if (job.exe.find_first_of(std::string_view("\n\0", 2)) != std::string::npos) {
    return Status::Invalid("command line contains a newline or NUL");
  }
  std::string raw;
  AppendI64(&raw, job.uid, order);
  AppendI64(&raw, job.start_time_sec, order);
  AppendI64(&raw, job.start_time_nsec, order);
  AppendI64(&raw, job.end_time_sec, order);
  AppendI64(&raw, job.end_time_nsec, order);
  AppendI64(&raw, job.nprocs, order);
  AppendI64(&raw, job.jobid, order);
  std::string metadata = job.metadata;
  metadata.resize(kJobMetadataSize, '\0');
  raw += metadata;
  // Command line, then "\n<type>\t<path>" per mount, then NUL; the reader sorts mounts by
  // length, so writing them in the given order keeps a read-write-read cycle stable.
  std::string text = job.exe;
  for (const MountEntry& m : log.mounts) {
    if (m.fs_type.empty() || m.path.empty() || HasSpace(m.fs_type) || HasSpace(m.path)) {
      return Status::Invalid("mount entry \"" + EscapeName(m.fs_type) + "\" \"" +
                             EscapeName(m.path) +
                             "\": type and path must be non-empty and without whitespace");
    }
    text += "\n" + m.fs_type + "\t" + m.path;
  }
  text.push_back('\0');
  if (raw.size() + text.size() > kJobRecordSize) {
    return Status::Invalid("command line and mount table take " + std::to_string(text.size()) +
                           " bytes; Darshan's job record holds " +
                           std::to_string(kJobRecordSize - raw.size()));
  }
  raw += text;
  return raw;
}

std::string NameMapBytes(const DarshanLog& log, ByteOrder order) {
  std::string raw;
  for (const auto& [id, name] : log.names) {
    AppendU64(&raw, id, order);
    raw += name.substr(0, name.find('\0'));
    raw.push_back('\0');
  }
  return raw;
}

struct Region {
  uint64_t off = 0;
  uint64_t len = 0;
};

}  // namespace

Result<std::string> EncodeDarshanLog(const DarshanLog& log, const WriteOptions& options) {
  if (options.compression == Compression::kNone) {
    return Status::Invalid("Darshan logs are written compressed (zlib or bzip2)");
  }
  const ByteOrder order = options.byte_order;
  Result<std::string> job_raw = JobRegionBytes(log, order);
  if (!job_raw.ok()) return job_raw.status().WithContext("job region");

  // Nothing the log lists may be lost silently: a region the reader skipped cannot be written.
  if (std::string skipped = log.ModulesNotHeld(); !skipped.empty()) {
    return Status::Invalid("the log's " + skipped +
                           " data was not read (ReadOptions::keep_raw_modules); writing it "
                           "would lose that data");
  }
  // Raw modules are in the byte order of the log they came from; their layouts are not known
  // here, so they cannot be swapped.
  if (!log.raw_modules.empty() && order != log.byte_order) {
    std::string names;
    for (const RawModule& m : log.raw_modules) {
      names += (names.empty() ? "" : ", ") + ModuleLabel(m.module_id);
    }
    return Status::Invalid(
        "cannot write the " + names + " data in " + (order == ByteOrder::kBig ? "big" : "little") +
        "-endian order: clairfs does not decode those modules, so it cannot byte-swap them; "
        "write the log in its own byte order (" +
        (log.byte_order == ByteOrder::kBig ? "big" : "little") + "-endian)");
  }

  // Module payloads, in module-id order.
  std::array<std::string, kMaxModules> module_raw;
  std::array<uint32_t, kMaxModules> versions{};
  for (const PosixRecord& r : log.posix) EncodePosixRecord(r, order, &module_raw[kPosixModule]);
  for (const StdioRecord& r : log.stdio) EncodeStdioRecord(r, order, &module_raw[kStdioModule]);
  const uint32_t dxt_version = DxtPosixVersionToWrite(log);
  for (const DxtRecord& r : log.dxt_posix) {
    EncodeDxtRecord(r, dxt_version, order, &module_raw[kDxtPosixModule]);
  }
  // A module the log lists keeps its version (raw modules, partial modules without data).
  for (const ModuleRegion& m : log.modules) {
    if (m.module_id >= 0 && m.module_id < kMaxModules) versions[m.module_id] = m.version;
  }
  for (const RawModule& m : log.raw_modules) {
    if (m.module_id <= kNullModule || m.module_id >= kMaxModules || m.module_id == kPosixModule ||
        m.module_id == kStdioModule || m.module_id == kDxtPosixModule) {
      return Status::Invalid("raw data for module id " + std::to_string(m.module_id) +
                             " cannot be written (not a module slot clairfs leaves undecoded)");
    }
    module_raw[m.module_id] = m.data;
    versions[m.module_id] = m.version;
  }
  versions[kPosixModule] = kPosixVersion;
  versions[kStdioModule] = kStdioVersion;
  versions[kDxtPosixModule] = dxt_version;
  uint64_t partial_flags = 0;
  for (const ModuleRegion& m : log.modules) {
    if (m.partial && m.module_id >= 0 && m.module_id < kMaxModules) {
      partial_flags |= uint64_t{1} << m.module_id;
    }
  }

  std::string body;  // everything after the header
  auto append_region = [&](std::string_view raw, Region* region) -> Status {
    Result<std::string> packed = DeflateRegion(raw, options.compression);
    if (!packed.ok()) return packed.status();
    if (packed->empty()) return Status::Ok();  // Darshan leaves empty regions at {0, 0}
    region->off = kHeaderSize341 + body.size();
    region->len = packed->size();
    body += *packed;
    return Status::Ok();
  };
  Region job_region, name_map;
  std::array<Region, kMaxModules> modules{};
  CLAIRFS_RETURN_IF_ERROR(append_region(*job_raw, &job_region));
  CLAIRFS_RETURN_IF_ERROR(append_region(NameMapBytes(log, order), &name_map));
  for (int id = 0; id < kMaxModules; ++id) {
    CLAIRFS_RETURN_IF_ERROR(append_region(module_raw[id], &modules[id]));
    if (modules[id].len == 0 && !((partial_flags >> id) & 1)) versions[id] = 0;
  }

  std::string out;
  out.reserve(kHeaderSize341 + body.size());
  std::string version = "3.41";
  version.resize(8, '\0');
  out += version;
  AppendI64(&out, kMagic, order);
  out.push_back(static_cast<char>(options.compression));
  out.append(7, '\0');
  AppendU64(&out, partial_flags, order);
  AppendU64(&out, name_map.off, order);
  AppendU64(&out, name_map.len, order);
  for (const Region& r : modules) {
    AppendU64(&out, r.off, order);
    AppendU64(&out, r.len, order);
  }
  for (uint32_t v : versions) AppendU32(&out, v, order);
  out += body;
  return out;
}

Status WriteDarshanLogFile(const std::string& path, const DarshanLog& log,
                           const WriteOptions& options) {
  const std::string shown = EscapeName(path);  // as messages show it
  Result<std::string> bytes = EncodeDarshanLog(log, options);
  if (!bytes.ok()) return bytes.status().WithContext(shown);
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) return Status::FromErrno(errno, shown);
  size_t done = 0;
  int err = 0;
  while (done < bytes->size()) {
    ssize_t n = write(fd, bytes->data() + done, bytes->size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      err = errno;
      break;
    }
    done += static_cast<size_t>(n);
  }
  if (err == 0 && fsync(fd) != 0) err = errno;
  if (close(fd) != 0 && err == 0) err = errno;
  if (err != 0) {
    unlink(path.c_str());
    return Status::FromErrno(err, "writing " + shown);
  }
  return Status::Ok();
}

Result<DarshanLog> BuildPosixLog(const JobDescription& job,
                                 const std::vector<FileCounters>& files) {
  DarshanLog log;
  log.version = FormatVersion::k341;
  log.version_string = "3.41";
  log.job.uid = job.uid;
  log.job.jobid = job.jobid;
  log.job.nprocs = job.nprocs;
  log.job.start_time_sec = job.start_time_sec;
  log.job.start_time_nsec = job.start_time_nsec;
  log.job.end_time_sec = job.end_time_sec;
  log.job.end_time_nsec = job.end_time_nsec;
  for (const auto& [key, value] : job.metadata) {
    if (key.empty() || key.find_first_of("=\n") != std::string::npos ||
        value.find('\n') != std::string::npos) {
      return Status::Invalid("metadata \"" + EscapeName(key) +
                             "\": keys need no '=' or newline, values no "
                             "newline");
    }
    log.job.metadata += key + "=" + value + "\n";
  }
  log.job.exe = job.exe;
  for (char& ch : log.job.exe) {
    if (ch == '\n' || ch == '\0') ch = ' ';
  }
  log.mounts = job.mounts;

  std::unordered_map<std::string_view, int> int_index, float_index;
  for (int i = 0; i < kPosixCounters; ++i) int_index[kPosixCounterNames[i]] = i;
  for (int i = 0; i < kPosixFCounters; ++i) float_index[kPosixFCounterNames[i]] = i;
  std::set<std::pair<uint64_t, int64_t>> seen;
  for (const FileCounters& f : files) {
    if (f.path.empty() || (f.path[0] != '/' && f.path[0] != '<')) {
      return Status::Invalid("file \"" + EscapeName(f.path) + "\": path must be absolute");
    }
    if (f.path.find('\0') != std::string::npos) {
      return Status::Invalid("file path contains a NUL byte");
    }
    std::string name = CleanDarshanPath(f.path);
    PosixRecord r;
    r.id = DarshanRecordId(name);
    r.rank = f.rank;
    if (!seen.insert({r.id, r.rank}).second) {
      return Status::Invalid("file \"" + EscapeName(name) + "\" rank " + std::to_string(f.rank) +
                             " given twice");
    }
    for (const auto& [counter, value] : f.counters) {
      auto it = int_index.find(counter);
      if (it == int_index.end()) {
        return Status::Invalid("file \"" + EscapeName(name) + "\": unknown POSIX counter " +
                               EscapeName(counter));
      }
      r.counters[it->second] = value;
    }
    for (const auto& [counter, value] : f.fcounters) {
      auto it = float_index.find(counter);
      if (it == float_index.end()) {
        return Status::Invalid("file \"" + EscapeName(name) + "\": unknown POSIX float counter " +
                               EscapeName(counter));
      }
      r.fcounters[it->second] = value;
    }
    auto [it, inserted] = log.names.try_emplace(r.id, name);
    if (!inserted && it->second != name) {
      return Status::Invalid("files \"" + EscapeName(it->second) + "\" and \"" + EscapeName(name) +
                             "\" have the same record id");
    }
    log.posix.push_back(r);
  }
  if (!log.posix.empty()) log.modules.push_back({kPosixModule, 0, 0, kPosixVersion, false, true});
  return log;
}

}  // namespace clairfs::darshan
