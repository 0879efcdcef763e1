// Darshan reader: every shared log prints as darshan-parser printed it; ids are lookup8 hashes;
// truncated, corrupted and hostile logs give errors naming the region, never crashes.
#include "planner/darshan/darshan_reader.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "planner/darshan/darshan_bytes.h"
#include "planner/darshan/darshan_compress.h"
#include "planner/darshan/darshan_hash.h"
#include "planner/darshan/darshan_records.h"
#include "planner/darshan/darshan_test_support.h"
#include "planner/darshan/darshan_text.h"
#include "planner/darshan/darshan_writer.h"
#include "tests/test_util.h"

namespace clairfs::darshan {
namespace {

using testing::ComparableLines;
using testing::LogPath;
using testing::ParserTextPath;
using testing::SharedLogNames;

std::string Load(const std::string& name) { return clairfs::testing::ReadFile(LogPath(name)); }

TEST(DarshanReader, EverySharedLogDumpsAsDarshanParser) {
  std::vector<std::string> names = SharedLogNames();
  ASSERT_GE(names.size(), 19u) << "shared logs not found under " << testing::DataDir();
  for (const std::string& name : names) {
    SCOPED_TRACE(name);
    Result<DarshanLog> log = ReadDarshanLogFile(LogPath(name));
    ASSERT_TRUE(log.ok()) << log.status().message();
    std::vector<std::string> ours = ComparableLines(FormatParserText(*log));
    std::vector<std::string> want =
        ComparableLines(clairfs::testing::ReadFile(ParserTextPath(name)));
    ASSERT_GT(want.size(), 10u);
    ASSERT_EQ(ours.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(ours[i], want[i]) << "line " << i;
  }
}

TEST(DarshanReader, OldFormatsMapModuleSlotsAndVersions) {
  Result<DarshanLog> v310 = ReadDarshanLogFile(LogPath("mpi-io-test-x86_64-3.1.6"));
  ASSERT_TRUE(v310.ok()) << v310.status().message();
  EXPECT_EQ(v310->version, FormatVersion::k310);
  ASSERT_NE(v310->FindModule(kStdioModule), nullptr);
  EXPECT_EQ(v310->FindModule(kStdioModule)->version, 1u);
  ASSERT_NE(v310->FindModule(kDxtPosixModule), nullptr);
  EXPECT_EQ(v310->FindModule(kPosixModule)->version, 3u);
  // Counters version 3 lacks: -1, and RENAMED_FROM 0.
  ASSERT_EQ(v310->posix.size(), 1u);
  EXPECT_EQ(v310->posix[0].counters[POSIX_FILENOS], -1);
  EXPECT_EQ(v310->posix[0].counters[POSIX_RENAMED_FROM], 0);
  EXPECT_EQ(v310->stdio[0].counters[STDIO_FDOPENS], -1);

  Result<DarshanLog> v300 = ReadDarshanLogFile(LogPath("mpi-io-test-x86_64-3.0.0"));
  ASSERT_TRUE(v300.ok()) << v300.status().message();
  EXPECT_EQ(v300->FindModule(kPosixModule)->version, 1u);
  EXPECT_EQ(v300->posix[0].fcounters[POSIX_F_CLOSE_START_TIMESTAMP], -1);
}

TEST(DarshanReader, DecodesDxtPosixTraces) {
  Result<DarshanLog> log = ReadDarshanLogFile(LogPath("nonmpi_dxt_anonymized"));
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_FALSE(log->dxt_posix.empty());
  size_t segments = 0;
  for (const DxtRecord& r : log->dxt_posix) {
    for (const auto* list : {&r.reads, &r.writes}) {
      for (const DxtSegment& s : *list) {
        EXPECT_GE(s.length, 0);
        EXPECT_LE(s.start_time, s.end_time);
        ++segments;
      }
    }
  }
  EXPECT_GT(segments, 1000u);
  ReadOptions no_dxt;
  no_dxt.decode_dxt = false;
  Result<DarshanLog> skipped = ReadDarshanLogFile(LogPath("nonmpi_dxt_anonymized"), no_dxt);
  ASSERT_TRUE(skipped.ok());
  EXPECT_TRUE(skipped->dxt_posix.empty());
  EXPECT_EQ(skipped->posix.size(), log->posix.size());
}

TEST(DarshanHash, RecordIdsAreLookup8OfTheName) {
  EXPECT_EQ(DarshanRecordId("<STDIN>"), 14734109647742566553ULL);
  size_t checked = 0;
  for (const std::string& name : SharedLogNames()) {
    if (name.find("anonymized") != std::string::npos) continue;  // names were replaced
    Result<DarshanLog> log = ReadDarshanLogFile(LogPath(name));
    ASSERT_TRUE(log.ok());
    for (const auto& [id, path] : log->names) {
      EXPECT_EQ(DarshanRecordId(path), id) << name << ": " << path;
      ++checked;
    }
  }
  EXPECT_GT(checked, 200u);
}

TEST(DarshanHash, CleansPathsAsDarshanDoes) {
  EXPECT_EQ(CleanDarshanPath("/a//b/./c"), "/a/b/c");
  EXPECT_EQ(CleanDarshanPath("///x/././y"), "/x/y");
  EXPECT_EQ(CleanDarshanPath("/a/../b"), "/a/../b");
  EXPECT_EQ(CleanDarshanPath("<STDOUT>"), "<STDOUT>");
}

// The region containing the byte just before `cut`, i.e. the first region (in file order) that
// a log truncated to `cut` bytes no longer holds entirely.
std::string FirstCutRegion(const DarshanLog& log, size_t header_size, size_t cut) {
  if (cut < header_size) return "header";
  std::vector<std::pair<uint64_t, std::string>> ends;  // (end offset, name)
  const uint64_t job_end = header_size + log.job_region_length;
  ends.push_back({job_end, "job region"});
  if (log.name_map_length > 0) ends.push_back({job_end + log.name_map_length, "name map"});
  std::vector<ModuleRegion> modules = log.modules;
  std::sort(modules.begin(), modules.end(),
            [](const ModuleRegion& a, const ModuleRegion& b) { return a.offset < b.offset; });
  for (const ModuleRegion& m : modules) {
    if (m.length > 0) ends.push_back({m.offset + m.length, std::string(ModuleName(m.module_id))});
  }
  for (const auto& [end, name] : ends) {
    if (end > cut) return name;
  }
  return "";
}

std::vector<size_t> Boundaries(const DarshanLog& log, size_t header_size, size_t file_size) {
  std::vector<size_t> cuts = {0, 1, 7, 8, 16, 17, 24, 32, 48, header_size - 1, header_size};
  const uint64_t job_end = header_size + log.job_region_length;
  cuts.push_back(job_end - 1);
  cuts.push_back(job_end);
  cuts.push_back(job_end + 1);
  for (const ModuleRegion& m : log.modules) {
    if (m.length == 0) continue;
    for (uint64_t at : {m.offset - 1, m.offset, m.offset + 1, m.offset + m.length - 1}) {
      cuts.push_back(at);
    }
  }
  cuts.push_back(file_size - 1);
  return cuts;
}

const std::vector<std::string> kCorpus = {
    "mpi-io-test-x86_64-3.0.0",
    "mpi-io-test-x86_64-3.1.6",
    "mpi-io-test-x86_64-3.2.1",
    "mpi-io-test-x86_64-3.4.6",
    "empty_log",
    "snyder_python3_id3116902-2110365_12-19-66957-188958432683465822_1"};

TEST(DarshanReader, TruncationAtEveryRegionBoundaryNamesTheRegion) {
  for (const std::string& name : kCorpus) {
    SCOPED_TRACE(name);
    std::string bytes = Load(name);
    Result<DarshanLog> log = ParseDarshanLog(bytes);
    ASSERT_TRUE(log.ok()) << log.status().message();
    const size_t header_size = log->version == FormatVersion::k341 ? 1328 : 360;
    std::vector<size_t> cuts = Boundaries(*log, header_size, bytes.size());
    std::mt19937_64 rng(42);
    for (int i = 0; i < 300; ++i) cuts.push_back(rng() % bytes.size());
    for (size_t cut : cuts) {
      if (cut >= bytes.size()) continue;
      Result<DarshanLog> r = ParseDarshanLog(std::string_view(bytes).substr(0, cut));
      ASSERT_FALSE(r.ok()) << "cut at " << cut;
      std::string want = FirstCutRegion(*log, header_size, cut);
      EXPECT_EQ(r.status().message().rfind(want, 0), 0u)
          << "cut at " << cut << ": " << r.status().message() << " (expected " << want << ")";
      EXPECT_EQ(r.status().code(), EINVAL);
    }
  }
}

TEST(DarshanReader, FlippedBytesInDecodedRegionsAreDetected) {
  const std::string name = "mpi-io-test-x86_64-3.4.6";
  std::string bytes = Load(name);
  Result<DarshanLog> log = ParseDarshanLog(bytes);
  ASSERT_TRUE(log.ok());
  size_t detected = 0, flips = 0;
  for (int module : {kPosixModule, kStdioModule}) {
    const ModuleRegion* m = log->FindModule(module);
    ASSERT_NE(m, nullptr);
    for (uint64_t at = m->offset; at < m->offset + m->length; ++at) {
      for (int bit : {0, 3, 7}) {
        std::string bad = bytes;
        bad[at] = static_cast<char>(bad[at] ^ (1 << bit));
        Result<DarshanLog> r = ParseDarshanLog(bad);
        ++flips;
        if (r.ok()) continue;  // a flip may leave valid data, never a crash
        ++detected;
        EXPECT_EQ(r.status().message().rfind(std::string(ModuleName(module)) + " region", 0), 0u)
            << r.status().message();
      }
    }
  }
  // zlib's checksum catches nearly every flip.
  EXPECT_GT(detected, flips * 9 / 10);
}

TEST(DarshanReader, RandomCorruptionNeverCrashes) {
  std::mt19937_64 rng(7);
  for (const std::string& name : kCorpus) {
    std::string bytes = Load(name);
    ASSERT_GT(bytes.size(), 360u) << "cannot read " << LogPath(name);
    for (int i = 0; i < 400; ++i) {
      std::string bad = bytes;
      int flips = 1 + static_cast<int>(rng() % 8);
      for (int f = 0; f < flips; ++f) bad[rng() % bad.size()] = static_cast<char>(rng());
      Result<DarshanLog> r = ParseDarshanLog(bad);
      if (!r.ok()) {
        EXPECT_FALSE(r.status().message().empty());
        // Text and JSON of whatever was read must not crash either.
      } else {
        FormatParserText(*r);
      }
    }
  }
}

void PutU64(std::string* bytes, size_t at, uint64_t v) {
  std::string enc;
  AppendU64(&enc, v, ByteOrder::kLittle);
  bytes->replace(at, 8, enc);
}

TEST(DarshanReader, OffsetsAndLengthsPastTheEndAreErrors) {
  std::string bytes = Load("mpi-io-test-x86_64-3.4.6");
  const size_t kNameMap = 32, kModMap = 48;
  struct Case {
    size_t at;
    uint64_t value;
    std::string region;
  } cases[] = {
      {kNameMap + 8, ~uint64_t{0}, "name map"},
      {kNameMap + 8, uint64_t{1} << 62, "name map"},
      {kNameMap, uint64_t{1} << 40, "job region"},
      {kModMap + 16 * kPosixModule + 8, uint64_t{1} << 63, "POSIX region"},
      {kModMap + 16 * kPosixModule, ~uint64_t{0} - 4, "POSIX region"},
      {kModMap + 16 * kStdioModule + 8, bytes.size(), "STDIO region"},
      {kModMap + 16 * 40, 100, "module 40 region"},
  };
  for (const Case& c : cases) {
    std::string bad = bytes;
    PutU64(&bad, c.at, c.value);
    if (c.region == "module 40 region") PutU64(&bad, c.at + 8, bytes.size());
    Result<DarshanLog> r = ParseDarshanLog(bad);
    ASSERT_FALSE(r.ok()) << c.region;
    EXPECT_EQ(r.status().message().rfind(c.region, 0), 0u) << r.status().message();
  }
}

TEST(DarshanReader, BadHeaderFieldsAreNamed) {
  std::string bytes = Load("mpi-io-test-x86_64-3.4.6");
  std::string bad = bytes;
  bad.replace(0, 4, "3.99");
  EXPECT_NE(ParseDarshanLog(bad).status().message().find("unsupported log format version"),
            std::string::npos);
  bad = bytes;
  bad[9] ^= 0x40;
  EXPECT_NE(ParseDarshanLog(bad).status().message().find("header: bad magic"), std::string::npos);
  bad = bytes;
  bad[16] = 9;
  EXPECT_NE(ParseDarshanLog(bad).status().message().find("header: unknown compression"),
            std::string::npos);
  // An unsupported POSIX record version.
  bad = bytes;
  bad[1072 + 4 * kPosixModule] = 7;
  EXPECT_EQ(
      ParseDarshanLog(bad).status().message().rfind("POSIX region: POSIX record version 7", 0), 0u);
}

// Builds a 3.41 log by hand whose POSIX region is `posix_region` (already compressed).
std::string LogWithPosixRegion(const std::string& posix_region, uint32_t version) {
  DarshanLog base;
  base.job.exe = "x";
  base.mounts = {{"ext4", "/"}};
  Result<std::string> bytes = EncodeDarshanLog(base);
  EXPECT_TRUE(bytes.ok());
  std::string out = *bytes;
  PutU64(&out, 48 + 16 * kPosixModule, out.size());
  PutU64(&out, 48 + 16 * kPosixModule + 8, posix_region.size());
  std::string ver;
  AppendU32(&ver, version, ByteOrder::kLittle);
  out.replace(1072 + 4 * kPosixModule, 4, ver);
  return out + posix_region;
}

TEST(DarshanReader, InflationIsCapped) {
  // 64 MiB of zeros deflate to about 64 KiB: a small file that would expand without end.
  Result<std::string> bomb = DeflateRegion(std::string(64u << 20, '\0'), Compression::kZlib);
  ASSERT_TRUE(bomb.ok());
  std::string log = LogWithPosixRegion(*bomb, 4);
  ReadOptions options;
  options.max_region_bytes = 8u << 20;
  Result<DarshanLog> r = ParseDarshanLog(log, options);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("POSIX region: inflates to more than", 0), 0u)
      << r.status().message();
  // The ratio limit applies too.
  options.max_region_bytes = size_t{1} << 32;
  options.max_expansion = 10;
  r = ParseDarshanLog(log, options);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("inflates to more than"), std::string::npos);
}

TEST(DarshanReader, PosixV1RecordsWithStdioCountersAreDroppedAndCounted) {
  // Two version-1 records (680 bytes): the first has fopens (counter 6) set.
  std::string raw(2 * 680, '\0');
  PutU64(&raw, 16 + 8 * 6, 3);
  PutU64(&raw, 680 + 16 + 8 * 0, 7);  // second record: POSIX_OPENS = 7
  Result<std::string> packed = DeflateRegion(raw, Compression::kZlib);
  Result<DarshanLog> log = ParseDarshanLog(LogWithPosixRegion(*packed, 1));
  ASSERT_TRUE(log.ok()) << log.status().message();
  ASSERT_EQ(log->posix.size(), 1u);
  EXPECT_EQ(log->posix[0].counters[POSIX_OPENS], 7);
  EXPECT_EQ(log->dropped_posix_v1_records, 1u);
  EXPECT_NE(FormatParserText(*log).find("# note: 1 version-1 records"), std::string::npos);
}

TEST(DarshanReader, PartialRecordsAndHostileDxtCountsAreErrors) {
  Result<std::string> odd = DeflateRegion(std::string(700, '\0'), Compression::kZlib);
  Result<DarshanLog> r = ParseDarshanLog(LogWithPosixRegion(*odd, 4));
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("POSIX region: 700 bytes is not a whole number", 0), 0u)
      << r.status().message();

  // A DXT record claiming 2^60 segments.
  DarshanLog base;
  base.job.exe = "x";
  base.mounts = {{"ext4", "/"}};
  DxtRecord dxt;
  dxt.id = 5;
  dxt.reads.resize(2);
  base.dxt_posix.push_back(dxt);
  std::string raw;
  EncodeDxtRecord(dxt, 1, ByteOrder::kLittle, &raw);  // the version EncodeDarshanLog picks
  PutU64(&raw, 96, uint64_t{1} << 60);                // read_count
  Result<std::string> packed = DeflateRegion(raw, Compression::kZlib);
  std::string log = *EncodeDarshanLog(base);
  size_t region_at = log.size();
  PutU64(&log, 48 + 16 * kDxtPosixModule, region_at);
  PutU64(&log, 48 + 16 * kDxtPosixModule + 8, packed->size());
  r = ParseDarshanLog(log.substr(0, region_at) + *packed);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message().rfind("DXT_POSIX region: record at byte 0", 0), 0u)
      << r.status().message();
}

TEST(DarshanReader, PartialFlagIsReportedAndMappedForOldLogs) {
  std::string bytes = Load("mpi-io-test-x86_64-3.4.6");
  bytes[24] = static_cast<char>(1 << kPosixModule);
  Result<DarshanLog> log = ParseDarshanLog(bytes);
  ASSERT_TRUE(log.ok());
  EXPECT_TRUE(log->FindModule(kPosixModule)->partial);
  EXPECT_NE(FormatParserText(*log).find("the POSIX module is partial"), std::string::npos);

  // In a 3.10 header, slot 7 is STDIO (9 today); the flag is a uint32 at byte 20.
  std::string old = Load("mpi-io-test-x86_64-3.1.6");
  old[20] = static_cast<char>(1 << 7);
  Result<DarshanLog> old_log = ParseDarshanLog(old);
  ASSERT_TRUE(old_log.ok());
  EXPECT_TRUE(old_log->FindModule(kStdioModule)->partial);
  EXPECT_FALSE(old_log->FindModule(kPosixModule)->partial);
}

TEST(DarshanReader, MissingFileIsAnErrnoError) {
  Result<DarshanLog> r = ReadDarshanLogFile("/nonexistent/x.darshan");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), ENOENT);
}

}  // namespace
}  // namespace clairfs::darshan
