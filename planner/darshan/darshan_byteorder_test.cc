// Big-endian logs of every format: each shared log is converted here, field by field and
// independently of the writer, into the log a big-endian machine would have written (old
// headers, old job records, 3.00 name maps, old record versions and DXT traces included), and
// must read back with the original's darshan-parser record lines.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>

#include "planner/darshan/darshan_compress.h"
#include "planner/darshan/darshan_reader.h"
#include "planner/darshan/darshan_test_support.h"
#include "planner/darshan/darshan_text.h"
#include "tests/test_util.h"

namespace clairfs::darshan {
namespace {

using testing::LogPath;
using testing::ParserTextPath;
using testing::RecordLines;
using testing::SharedLogNames;

void Swap(std::string* s, size_t at, size_t width) {
  ASSERT_LE(at + width, s->size());
  std::reverse(s->begin() + static_cast<std::ptrdiff_t>(at),
               s->begin() + static_cast<std::ptrdiff_t>(at + width));
}

uint64_t Le64(const std::string& s, size_t at) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; --i) v = (v << 8) | static_cast<unsigned char>(s[at + i]);
  return v;
}

// Swaps the decompressed contents of one region in place.
void SwapRegion(const std::string& what, bool v300, bool v341, std::string* raw) {
  if (what == "job") {
    for (int i = 0; i < (v341 ? 7 : 5); ++i) Swap(raw, 8 * i, 8);
  } else if (what == "names") {
    for (size_t at = 0; at < raw->size();) {
      Swap(raw, at, 8);
      if (v300) {
        uint32_t len = static_cast<uint32_t>(Le64(*raw + std::string(4, '\0'), at + 8));
        Swap(raw, at + 8, 4);
        at += 12 + len;
      } else {
        at = raw->find('\0', at + 8) + 1;
      }
    }
  } else if (what == "records") {  // POSIX and STDIO: all fields are 8 bytes wide
    for (size_t at = 0; at + 8 <= raw->size(); at += 8) Swap(raw, at, 8);
  } else if (what == "dxt1" || what == "dxt2") {
    const size_t segment = what == "dxt1" ? 32 : 40;
    for (size_t at = 0; at < raw->size();) {
      const uint64_t writes = Le64(*raw, at + 88), reads = Le64(*raw, at + 96);
      for (size_t f : {0, 8, 16, 88, 96}) Swap(raw, at + f, 8);
      at += 104;
      for (uint64_t s = 0; s < (writes + reads) * segment / 8; ++s, at += 8) Swap(raw, at, 8);
    }
  }
}

// The big-endian twin of a little-endian log.
std::string ToBigEndian(const std::string& le) {
  const std::string version = le.substr(0, 4);
  const bool v341 = version == "3.41", v300 = version == "3.00";
  const size_t header = v341 ? 1328 : 360, slots = v341 ? 64 : 16;
  const size_t name_map_at = v341 ? 32 : 24, mod_map_at = name_map_at + 16;
  std::string out = le.substr(0, header);
  Swap(&out, 8, 8);                          // magic
  Swap(&out, v341 ? 24 : 20, v341 ? 8 : 4);  // partial flags
  for (size_t i = 0; i < 2 + 2 * slots; ++i) Swap(&out, name_map_at + 8 * i, 8);
  for (size_t i = 0; i < slots; ++i) Swap(&out, mod_map_at + 16 * slots + 4 * i, 4);

  // Regions in file order: job, name map, modules.
  struct Region {
    uint64_t off, len;
    size_t map_field;  // where its {off, len} sits in the header (0 for the job region)
    std::string what;
  };
  std::vector<Region> regions;
  const uint64_t names_off = Le64(le, name_map_at), names_len = Le64(le, name_map_at + 8);
  uint64_t job_end = names_off ? names_off : le.size();
  for (size_t slot = 0; slot < slots && !names_off; ++slot) {
    if (uint64_t off = Le64(le, mod_map_at + 16 * slot)) {
      job_end = off;
      break;
    }
  }
  regions.push_back({header, job_end - header, 0, "job"});
  if (names_len) regions.push_back({names_off, names_len, name_map_at, "names"});
  for (size_t slot = 0; slot < slots; ++slot) {
    uint64_t off = Le64(le, mod_map_at + 16 * slot), len = Le64(le, mod_map_at + 16 * slot + 8);
    if (len == 0) continue;
    uint32_t ver =
        static_cast<uint32_t>(Le64(le + std::string(4, '\0'), mod_map_at + 16 * slots + 4 * slot));
    // Module ids by slot: POSIX 1 always; STDIO 7 (3.00/3.10), 8 (3.2x), 9 (3.41); DXT_POSIX
    // follows STDIO. Other modules are copied compressed (the reader does not open them).
    const size_t stdio = v341 ? 9 : (version == "3.20" || version == "3.21") ? 8 : 7;
    std::string what = slot == 1 || slot == stdio ? "records"
                       : slot == stdio + 1        ? "dxt" + std::to_string(ver)
                                                  : "";
    regions.push_back({off, len, mod_map_at + 16 * slot, what});
  }
  std::sort(regions.begin(), regions.end(),
            [](const Region& a, const Region& b) { return a.off < b.off; });
  for (const Region& r : regions) {
    std::string packed = le.substr(r.off, r.len);
    if (!r.what.empty()) {
      Result<std::string> raw = InflateRegion(packed, Compression::kZlib, 1 << 26);
      EXPECT_TRUE(raw.ok()) << raw.status().message();
      std::string swapped = *raw;
      SwapRegion(r.what, v300, v341, &swapped);
      packed = *DeflateRegion(swapped, Compression::kZlib);
    }
    uint64_t new_off = out.size();
    out += packed;
    if (r.map_field != 0) {
      std::string field;
      for (uint64_t v : {new_off, static_cast<uint64_t>(packed.size())}) {
        for (int i = 7; i >= 0; --i) field.push_back(static_cast<char>(v >> (8 * i)));
      }
      out.replace(r.map_field, 16, field);
    }
  }
  // Empty regions may still carry an offset (the end of the file, where they would start); it
  // bounds the job region, so it must move with the file's new end.
  std::vector<size_t> empty_fields;
  if (names_len == 0 && names_off != 0) empty_fields.push_back(name_map_at);
  for (size_t slot = 0; slot < slots; ++slot) {
    if (Le64(le, mod_map_at + 16 * slot + 8) == 0 && Le64(le, mod_map_at + 16 * slot) != 0) {
      empty_fields.push_back(mod_map_at + 16 * slot);
    }
  }
  for (size_t field : empty_fields) {
    std::string end;
    for (int i = 7; i >= 0; --i) end.push_back(static_cast<char>(out.size() >> (8 * i)));
    out.replace(field, 8, end);
  }
  return out;
}

TEST(DarshanByteOrder, BigEndianTwinsOfEverySharedLogReadTheSame) {
  std::vector<std::string> names = SharedLogNames();
  ASSERT_GE(names.size(), 19u);
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    std::string le = clairfs::testing::ReadFile(LogPath(name));
    std::string be = ToBigEndian(le);
    ASSERT_NE(be, le);
    Result<DarshanLog> little = ParseDarshanLog(le);
    Result<DarshanLog> big = ParseDarshanLog(be);
    ASSERT_TRUE(big.ok()) << big.status().message();
    EXPECT_EQ(big->byte_order, ByteOrder::kBig);
    EXPECT_EQ(big->version, little->version);
    EXPECT_EQ(big->job.jobid, little->job.jobid);
    EXPECT_EQ(big->job.start_time_sec, little->job.start_time_sec);
    EXPECT_EQ(big->job.exe, little->job.exe);
    EXPECT_EQ(big->names, little->names);
    EXPECT_EQ(big->dxt_posix.size(), little->dxt_posix.size());
    EXPECT_EQ(RecordLines(FormatParserText(*big)),
              RecordLines(clairfs::testing::ReadFile(ParserTextPath(name))));
  }
}

// darshan-util 3.4.7 decodes version-3 POSIX records of a byte-swapped log wrongly: its float
// swap loop skips the indices that equal the names of three integer counters it sets during
// up-conversion (POSIX_RENAME_SOURCES, _TARGETS, RENAMED_FROM: 10, 11, 12), which as float
// indices are F_META_TIME, F_MAX_READ_TIME and F_MAX_WRITE_TIME, left unswapped (it prints them
// as subnormal +-0). clairfs swaps every field: the big-endian twin of the 3.1.6 log (POSIX
// version 3) gives exactly the little-endian original's values.
TEST(DarshanByteOrder, VersionThreeTimesOfBigEndianLogsDecodeAsTheOriginal) {
  const std::string name = "mpi-io-test-x86_64-3.1.6";
  std::string le = clairfs::testing::ReadFile(LogPath(name));
  Result<DarshanLog> little = ParseDarshanLog(le);
  Result<DarshanLog> big = ParseDarshanLog(ToBigEndian(le));
  ASSERT_TRUE(little.ok() && big.ok());
  ASSERT_EQ(big->FindModule(kPosixModule)->version, 3u);
  ASSERT_EQ(big->byte_order, ByteOrder::kBig);
  const PosixRecord* shared = nullptr;
  for (const PosixRecord& r : big->posix) {
    if (r.rank == -1) shared = &r;
  }
  ASSERT_NE(shared, nullptr);
  const PosixRecord* original = nullptr;
  for (const PosixRecord& r : little->posix) {
    if (r.rank == -1 && r.id == shared->id) original = &r;
  }
  ASSERT_NE(original, nullptr);
  // The reference darshan-parser output of the little-endian log: 0.000273, 0.011514, 0.042412.
  const std::string reference = clairfs::testing::ReadFile(ParserTextPath(name));
  for (int i : {10, 11, 12}) {
    SCOPED_TRACE(kPosixFCounterNames[i]);
    EXPECT_EQ(shared->fcounters[i], original->fcounters[i]);
    EXPECT_GT(shared->fcounters[i], 1e-4);  // not a subnormal left unswapped
    char line[160];
    snprintf(line, sizeof(line), "\t%s\t%f\t", std::string(kPosixFCounterNames[i]).c_str(),
             shared->fcounters[i]);
    EXPECT_NE(reference.find(line), std::string::npos) << line;
    // What darshan-util shows: the stored big-endian bytes read as they are.
    double unswapped =
        std::bit_cast<double>(__builtin_bswap64(std::bit_cast<uint64_t>(shared->fcounters[i])));
    EXPECT_LT(std::abs(unswapped), 1e-300);
  }
}

}  // namespace
}  // namespace clairfs::darshan
