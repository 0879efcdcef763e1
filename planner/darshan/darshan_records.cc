// Record decoding with version conversion, and record encoding (see darshan_records.h).
#include "planner/darshan/darshan_records.h"

#include <array>

#include "planner/darshan/darshan_bytes.h"

namespace clairfs::darshan {
namespace {

Status WholeRecords(std::string_view data, size_t record_size) {
  if (data.size() % record_size != 0) {
    return Status::Invalid(std::to_string(data.size()) + " bytes is not a whole number of " +
                           std::to_string(record_size) + "-byte records");
  }
  return Status::Ok();
}

// Reads exactly N values; the caller has checked the length. Each record version reads arrays
// of its own fixed sizes: a count known only at run time let GCC's -O3 inliner fold the
// instantiations together and warn (-Warray-bounds) about accesses it could not bound.
template <size_t N>
std::array<int64_t, N> ReadInts(ByteCursor* c) {
  std::array<int64_t, N> v{};
  for (int64_t& x : v) c->I64(&x);
  return v;
}
template <size_t N>
std::array<double, N> ReadDoubles(ByteCursor* c) {
  std::array<double, N> v{};
  for (double& x : v) c->Double(&x);
  return v;
}

// Integer counters of each POSIX record version.
constexpr size_t kPosixV1Ints = 68;  // v3's 64 plus four stdio counters after MMAPS
constexpr size_t kPosixV3Ints = 64;  // v2 and v3
constexpr size_t kPosixV2Floats = 15;
static_assert(kPosixRecordSize[1] == 16 + 8 * (kPosixV1Ints + kPosixV2Floats));
static_assert(kPosixRecordSize[2] == 16 + 8 * (kPosixV3Ints + kPosixV2Floats));
static_assert(kPosixRecordSize[3] == 16 + 8 * (kPosixV3Ints + kPosixFCounters));
static_assert(kPosixRecordSize[4] == 16 + 8 * (kPosixCounters + kPosixFCounters));

// Version 1 holds four stdio counters after MMAPS (index 6..9), which later versions dropped.
std::array<int64_t, kPosixV3Ints> PosixV1IntsToV3(const std::array<int64_t, kPosixV1Ints>& raw) {
  std::array<int64_t, kPosixV3Ints> v3{};
  for (size_t i = 0; i < 6; ++i) v3[i] = raw[i];
  for (size_t i = 6; i < kPosixV3Ints; ++i) v3[i] = raw[i + 4];
  return v3;
}

// Versions 1-3 lack FILENOS and DUPS (after OPENS) and the three rename counters (after
// FDSYNCS).
std::array<int64_t, kPosixCounters> PosixV3IntsToV4(const std::array<int64_t, kPosixV3Ints>& v3) {
  std::array<int64_t, kPosixCounters> out{};
  out[POSIX_OPENS] = v3[0];
  out[POSIX_FILENOS] = -1;
  out[POSIX_DUPS] = -1;
  for (size_t i = 1; i <= 7; ++i) out[i + 2] = v3[i];
  out[POSIX_RENAME_SOURCES] = -1;
  out[POSIX_RENAME_SOURCES + 1] = -1;
  out[POSIX_RENAMED_FROM] = 0;  // a record id: "none" is 0, not -1
  for (size_t i = 8; i < kPosixV3Ints; ++i) out[i + 5] = v3[i];
  return out;
}

// Versions 1-2 lack CLOSE_START and OPEN_END timestamps (indices 3 and 4).
std::array<double, kPosixFCounters> PosixV2FloatsToV3(
    const std::array<double, kPosixV2Floats>& raw) {
  std::array<double, kPosixFCounters> out{};
  for (size_t i = 0; i < 3; ++i) out[i] = raw[i];
  out[POSIX_F_CLOSE_START_TIMESTAMP] = -1;
  out[POSIX_F_OPEN_END_TIMESTAMP] = -1;
  for (size_t i = 3; i < kPosixV2Floats; ++i) out[i + 2] = raw[i];
  return out;
}

// darshan-util converts old records in place, shifting only as many bytes as the stored record
// holds; the last float counters of version 2 and 3 records fall off the end and read as 0
// (version 1 records are longer and keep them). dump must equal darshan-parser, and a
// re-encoded log must print as the original did, so the reader gives the same values. Only
// rank-variance and fastest/slowest-rank times are affected, which heat does not use.
void ApplyDarshanUtilTruncation(uint32_t version, std::array<double, kPosixFCounters>* f) {
  size_t first_lost = version == 2 ? 13 : version == 3 ? 15 : kPosixFCounters;
  for (size_t i = first_lost; i < kPosixFCounters; ++i) (*f)[i] = 0;
}

void ReadSegments(ByteCursor* c, uint32_t version, size_t n, std::vector<DxtSegment>* out) {
  out->resize(n);
  for (DxtSegment& s : *out) {
    c->I64(&s.offset);
    c->I64(&s.length);
    c->Double(&s.start_time);
    c->Double(&s.end_time);
    if (version >= 2) c->U64(&s.pthread_id);
  }
}

}  // namespace

Status DecodePosixRecords(std::string_view data, uint32_t version, ByteOrder order,
                          std::vector<PosixRecord>* out, size_t* dropped) {
  if (version < 1 || version > kPosixVersion) {
    return Status::Invalid("POSIX record version " + std::to_string(version) +
                           " not supported (1-" + std::to_string(kPosixVersion) + ")");
  }
  const size_t size = kPosixRecordSize[version];
  CLAIRFS_RETURN_IF_ERROR(WholeRecords(data, size));
  ByteCursor c(data, order);
  out->reserve(out->size() + data.size() / size);
  while (!c.at_end()) {
    PosixRecord r;
    c.U64(&r.id);
    c.I64(&r.rank);
    switch (version) {
      case 1: {
        std::array<int64_t, kPosixV1Ints> ints = ReadInts<kPosixV1Ints>(&c);
        std::array<double, kPosixV2Floats> floats = ReadDoubles<kPosixV2Floats>(&c);
        // Records that also carry stdio counters (fopens > 0) cannot be converted.
        if (ints[6] > 0) {
          ++*dropped;
          continue;
        }
        r.counters = PosixV3IntsToV4(PosixV1IntsToV3(ints));
        r.fcounters = PosixV2FloatsToV3(floats);
        break;
      }
      case 2:
        r.counters = PosixV3IntsToV4(ReadInts<kPosixV3Ints>(&c));
        r.fcounters = PosixV2FloatsToV3(ReadDoubles<kPosixV2Floats>(&c));
        break;
      case 3:
        r.counters = PosixV3IntsToV4(ReadInts<kPosixV3Ints>(&c));
        r.fcounters = ReadDoubles<kPosixFCounters>(&c);
        break;
      default:
        r.counters = ReadInts<kPosixCounters>(&c);
        r.fcounters = ReadDoubles<kPosixFCounters>(&c);
        break;
    }
    ApplyDarshanUtilTruncation(version, &r.fcounters);
    out->push_back(r);
  }
  return Status::Ok();
}

Status DecodeStdioRecords(std::string_view data, uint32_t version, ByteOrder order,
                          std::vector<StdioRecord>* out) {
  if (version < 1 || version > kStdioVersion) {
    return Status::Invalid("STDIO record version " + std::to_string(version) +
                           " not supported (1-" + std::to_string(kStdioVersion) + ")");
  }
  const size_t size = kStdioRecordSize[version];
  CLAIRFS_RETURN_IF_ERROR(WholeRecords(data, size));
  ByteCursor c(data, order);
  out->reserve(out->size() + data.size() / size);
  while (!c.at_end()) {
    StdioRecord r;
    c.U64(&r.id);
    c.I64(&r.rank);
    if (version == 2) {
      r.counters = ReadInts<kStdioCounters>(&c);
    } else {
      // Version 1 lacks FDOPENS (after OPENS).
      std::array<int64_t, kStdioCounters - 1> raw = ReadInts<kStdioCounters - 1>(&c);
      r.counters[STDIO_OPENS] = raw[0];
      r.counters[STDIO_FDOPENS] = -1;
      for (size_t i = 1; i < raw.size(); ++i) r.counters[i + 1] = raw[i];
    }
    r.fcounters = ReadDoubles<kStdioFCounters>(&c);
    out->push_back(r);
  }
  return Status::Ok();
}

Status DecodeDxtRecords(std::string_view data, uint32_t version, ByteOrder order,
                        std::vector<DxtRecord>* out) {
  if (version < 1 || version > kDxtPosixMaxVersion) {
    return Status::Invalid("DXT record version " + std::to_string(version) + " not supported (1-" +
                           std::to_string(kDxtPosixMaxVersion) + ")");
  }
  const size_t segment_size = kDxtSegmentSize[version];
  ByteCursor c(data, order);
  while (!c.at_end()) {
    const size_t record_offset = c.position();
    if (c.remaining() < kDxtRecordSize) {
      return Status::Invalid("record at byte " + std::to_string(record_offset) + ": only " +
                             std::to_string(c.remaining()) + " bytes left for a " +
                             std::to_string(kDxtRecordSize) + "-byte record");
    }
    DxtRecord r;
    std::string_view host;
    int64_t write_count = 0, read_count = 0;
    c.U64(&r.id);
    c.I64(&r.rank);
    c.I64(&r.shared_record);
    c.Bytes(kDxtHostnameSize, &host);
    c.I64(&write_count);
    c.I64(&read_count);
    r.hostname = std::string(host.substr(0, host.find('\0')));
    // Check the counts against the bytes that follow before allocating anything.
    const uint64_t max_segments = c.remaining() / segment_size;
    if (write_count < 0 || read_count < 0 || static_cast<uint64_t>(write_count) > max_segments ||
        static_cast<uint64_t>(read_count) > max_segments - static_cast<uint64_t>(write_count)) {
      return Status::Invalid("record at byte " + std::to_string(record_offset) + ": " +
                             std::to_string(write_count) + " writes + " +
                             std::to_string(read_count) + " reads do not fit in the " +
                             std::to_string(c.remaining()) + " bytes that follow");
    }
    ReadSegments(&c, version, static_cast<size_t>(write_count), &r.writes);
    ReadSegments(&c, version, static_cast<size_t>(read_count), &r.reads);
    out->push_back(std::move(r));
  }
  return Status::Ok();
}

void EncodePosixRecord(const PosixRecord& r, ByteOrder order, std::string* out) {
  AppendU64(out, r.id, order);
  AppendI64(out, r.rank, order);
  for (int64_t v : r.counters) AppendI64(out, v, order);
  for (double v : r.fcounters) AppendDouble(out, v, order);
}

void EncodeStdioRecord(const StdioRecord& r, ByteOrder order, std::string* out) {
  AppendU64(out, r.id, order);
  AppendI64(out, r.rank, order);
  for (int64_t v : r.counters) AppendI64(out, v, order);
  for (double v : r.fcounters) AppendDouble(out, v, order);
}

uint32_t DxtPosixVersionToWrite(const DarshanLog& log) {
  if (log.dxt_posix_version >= 1 && log.dxt_posix_version <= kDxtPosixMaxVersion) {
    return log.dxt_posix_version;
  }
  for (const DxtRecord& r : log.dxt_posix) {
    for (const auto* list : {&r.writes, &r.reads}) {
      for (const DxtSegment& s : *list) {
        if (s.pthread_id != 0) return 2;
      }
    }
  }
  return 1;
}

void EncodeDxtRecord(const DxtRecord& r, uint32_t version, ByteOrder order, std::string* out) {
  AppendU64(out, r.id, order);
  AppendI64(out, r.rank, order);
  AppendI64(out, r.shared_record, order);
  std::string host = r.hostname.substr(0, kDxtHostnameSize - 1);
  host.resize(kDxtHostnameSize, '\0');
  out->append(host);
  AppendI64(out, static_cast<int64_t>(r.writes.size()), order);
  AppendI64(out, static_cast<int64_t>(r.reads.size()), order);
  for (const auto* list : {&r.writes, &r.reads}) {
    for (const DxtSegment& s : *list) {
      AppendI64(out, s.offset, order);
      AppendI64(out, s.length, order);
      AppendDouble(out, s.start_time, order);
      AppendDouble(out, s.end_time, order);
      if (version >= 2) AppendU64(out, s.pthread_id, order);
    }
  }
}

}  // namespace clairfs::darshan
