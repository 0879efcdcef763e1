// Record decoding with version conversion, and record encoding (see darshan_records.h).
#include "planner/darshan_records.h"

#include <array>

#include "planner/darshan_bytes.h"

namespace clairfs::darshan {
namespace {

Status WholeRecords(std::string_view data, size_t record_size) {
  if (data.size() % record_size != 0) {
    return Status::Invalid(std::to_string(data.size()) + " bytes is not a whole number of " +
                           std::to_string(record_size) + "-byte records");
  }
  return Status::Ok();
}

// Reads `n` int64 values; the caller has checked the length.
template <size_t N>
void ReadInts(ByteCursor* c, std::array<int64_t, N>* v, size_t n) {
  for (size_t i = 0; i < n; ++i) c->I64(&(*v)[i]);
}
template <size_t N>
void ReadDoubles(ByteCursor* c, std::array<double, N>* v, size_t n) {
  for (size_t i = 0; i < n; ++i) c->Double(&(*v)[i]);
}

// Maps the integer counters of POSIX versions 1-3 onto version 4.
void ConvertPosixCounters(uint32_t version, const std::array<int64_t, 68>& raw,
                          std::array<int64_t, kPosixCounters>* out) {
  // Versions 1-3 lack FILENOS and DUPS (after OPENS) and the three rename counters (after
  // FDSYNCS). Version 1 also holds four stdio counters after MMAPS, which are skipped.
  std::array<int64_t, 64> v3{};
  if (version == 1) {
    for (int i = 0; i < 6; ++i) v3[i] = raw[i];
    for (int i = 6; i < 64; ++i) v3[i] = raw[i + 4];
  } else {
    for (int i = 0; i < 64; ++i) v3[i] = raw[i];
  }
  (*out)[POSIX_OPENS] = v3[0];
  (*out)[POSIX_FILENOS] = -1;
  (*out)[POSIX_DUPS] = -1;
  for (int i = 1; i <= 7; ++i) (*out)[i + 2] = v3[i];
  (*out)[POSIX_RENAME_SOURCES] = -1;
  (*out)[POSIX_RENAME_SOURCES + 1] = -1;
  (*out)[POSIX_RENAMED_FROM] = 0;  // a record id: "none" is 0, not -1
  for (int i = 8; i < 64; ++i) (*out)[i + 5] = v3[i];
}

void ConvertPosixFCounters(uint32_t version, const std::array<double, kPosixFCounters>& raw,
                           std::array<double, kPosixFCounters>* out) {
  if (version >= 3) {
    *out = raw;
    return;
  }
  // Versions 1-2 lack CLOSE_START and OPEN_END timestamps (indices 3 and 4).
  for (int i = 0; i < 3; ++i) (*out)[i] = raw[i];
  (*out)[POSIX_F_CLOSE_START_TIMESTAMP] = -1;
  (*out)[POSIX_F_OPEN_END_TIMESTAMP] = -1;
  for (int i = 3; i < 15; ++i) (*out)[i + 2] = raw[i];
}

// darshan-util converts old records in place, shifting only as many bytes as the stored record
// holds; the last float counters of version 2 and 3 records fall off the end and read as 0
// (version 1 records are longer and keep them). dump must equal darshan-parser, and a
// re-encoded log must print as the original did, so the reader gives the same values. Only
// rank-variance and fastest/slowest-rank times are affected, which heat does not use.
void ApplyDarshanUtilTruncation(uint32_t version, std::array<double, kPosixFCounters>* f) {
  int first_lost = version == 2 ? 13 : version == 3 ? 15 : kPosixFCounters;
  for (int i = first_lost; i < kPosixFCounters; ++i) (*f)[i] = 0;
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
  const size_t n_ints = version == 1 ? 68 : version == 4 ? 69 : 64;
  const size_t n_floats = version >= 3 ? 17 : 15;
  ByteCursor c(data, order);
  out->reserve(out->size() + data.size() / size);
  while (!c.at_end()) {
    PosixRecord r;
    c.U64(&r.id);
    c.I64(&r.rank);
    std::array<int64_t, 68> raw_ints{};
    std::array<int64_t, 69> ints69{};
    std::array<double, kPosixFCounters> raw_floats{};
    if (version == 4) {
      ReadInts(&c, &ints69, n_ints);
    } else {
      ReadInts(&c, &raw_ints, n_ints);
    }
    ReadDoubles(&c, &raw_floats, n_floats);
    if (version == 1 && raw_ints[6] > 0) {
      ++*dropped;
      continue;
    }
    if (version == 4) {
      r.counters = ints69;
    } else {
      ConvertPosixCounters(version, raw_ints, &r.counters);
    }
    ConvertPosixFCounters(version, raw_floats, &r.fcounters);
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
      ReadInts(&c, &r.counters, kStdioCounters);
    } else {
      // Version 1 lacks FDOPENS (after OPENS).
      std::array<int64_t, kStdioCounters> raw{};
      ReadInts(&c, &raw, kStdioCounters - 1);
      r.counters[STDIO_OPENS] = raw[0];
      r.counters[STDIO_FDOPENS] = -1;
      for (int i = 1; i < kStdioCounters - 1; ++i) r.counters[i + 1] = raw[i];
    }
    ReadDoubles(&c, &r.fcounters, kStdioFCounters);
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

void EncodeDxtRecord(const DxtRecord& r, ByteOrder order, std::string* out) {
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
      AppendU64(out, s.pthread_id, order);
    }
  }
}

}  // namespace clairfs::darshan
