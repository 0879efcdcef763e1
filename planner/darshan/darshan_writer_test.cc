// Darshan writer: every shared log re-encoded by clairfs prints the original's darshan-parser
// record lines and keeps every module it does not decode byte for byte; both compressions;
// big-endian logs; DXT versions; logs built from named counters.
#include "planner/darshan/darshan_writer.h"

#include <gtest/gtest.h>

#include "planner/darshan/darshan_bytes.h"
#include "planner/darshan/darshan_hash.h"
#include "planner/darshan/darshan_reader.h"
#include "planner/darshan/darshan_records.h"
#include "planner/darshan/darshan_test_support.h"
#include "planner/darshan/darshan_text.h"
#include "tests/test_util.h"

namespace clairfs::darshan {
namespace {

using testing::LogPath;
using testing::ParserTextPath;
using testing::RecordLines;
using testing::SharedLogNames;

void ExpectSameRecordLines(const std::string& ours_text, const std::string& name) {
  std::vector<std::string> ours = RecordLines(ours_text);
  std::vector<std::string> want = RecordLines(clairfs::testing::ReadFile(ParserTextPath(name)));
  ASSERT_EQ(ours.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_EQ(ours[i], want[i]) << "line " << i;
}

struct Variant {
  Compression compression;
  ByteOrder order;
};

ReadOptions KeepEverything() {
  ReadOptions options;
  options.keep_raw_modules = true;
  return options;
}

// What a re-encoded log must still hold of `original`: its POSIX and STDIO record lines (as
// the reference darshan-parser printed them), job, mounts, DXT traces, and every other module
// as the same bytes with the same version and partial flag.
void ExpectNothingLost(const DarshanLog& original, const DarshanLog& again,
                       const std::string& name) {
  EXPECT_EQ(again.version_string, "3.41");
  EXPECT_EQ(again.FindModule(kPosixModule) != nullptr, !original.posix.empty());
  if (again.FindModule(kPosixModule)) {
    EXPECT_EQ(again.FindModule(kPosixModule)->version, 4u);
  }
  ExpectSameRecordLines(FormatParserText(again), name);
  EXPECT_EQ(again.job.exe, original.job.exe);
  EXPECT_EQ(again.job.metadata, original.job.metadata);
  EXPECT_EQ(again.job.start_time_sec, original.job.start_time_sec);
  EXPECT_EQ(again.mounts.size(), original.mounts.size());
  EXPECT_EQ(again.names, original.names);
  EXPECT_EQ(again.dxt_posix_version, original.dxt_posix_version);
  ASSERT_EQ(again.dxt_posix.size(), original.dxt_posix.size());
  for (size_t i = 0; i < original.dxt_posix.size(); ++i) {
    EXPECT_EQ(again.dxt_posix[i].reads.size(), original.dxt_posix[i].reads.size());
    if (!original.dxt_posix[i].reads.empty()) {
      EXPECT_EQ(again.dxt_posix[i].reads.back().offset, original.dxt_posix[i].reads.back().offset);
    }
  }
  ASSERT_EQ(again.raw_modules.size(), original.raw_modules.size());
  for (size_t i = 0; i < original.raw_modules.size(); ++i) {
    const RawModule &a = original.raw_modules[i], &b = again.raw_modules[i];
    SCOPED_TRACE(std::string(ModuleName(a.module_id)));
    EXPECT_EQ(b.module_id, a.module_id);
    EXPECT_EQ(b.version, a.version);
    EXPECT_TRUE(b.data == a.data) << b.data.size() << " bytes, originally " << a.data.size();
  }
  for (const ModuleRegion& m : original.modules) {
    const ModuleRegion* kept = again.FindModule(m.module_id);
    if (m.length == 0 && !m.partial) continue;
    ASSERT_NE(kept, nullptr) << ModuleName(m.module_id);
    EXPECT_EQ(kept->partial, m.partial) << ModuleName(m.module_id);
  }
}

TEST(DarshanWriter, ReencodedSharedLogsLoseNothing) {
  std::vector<std::string> names = SharedLogNames();
  ASSERT_GE(names.size(), 19u);
  size_t records = 0, raw_modules = 0;
  for (const std::string& name : names) {
    Result<DarshanLog> original = ReadDarshanLogFile(LogPath(name), KeepEverything());
    ASSERT_TRUE(original.ok()) << name << ": " << original.status().message();
    for (Compression c : {Compression::kZlib, Compression::kBzip2}) {
      SCOPED_TRACE(name + (c == Compression::kBzip2 ? " bzip2" : " zlib"));
      Result<std::string> bytes = EncodeDarshanLog(*original, {c, ByteOrder::kLittle});
      ASSERT_TRUE(bytes.ok()) << bytes.status().message();
      Result<DarshanLog> again = ParseDarshanLog(*bytes, KeepEverything());
      ASSERT_TRUE(again.ok()) << again.status().message();
      EXPECT_EQ(again->compression, c);
      EXPECT_EQ(again->byte_order, ByteOrder::kLittle);
      ExpectNothingLost(*original, *again, name);
    }
    records += original->posix.size();
    raw_modules += original->raw_modules.size();
  }
  EXPECT_GT(records, 100u);
  // MPI-IO, LUSTRE, HEATMAP, APMPI, DXT_MPIIO, ... across the shared logs.
  EXPECT_GT(raw_modules, 20u);
}

TEST(DarshanWriter, UndecodedModulesAreNeverDroppedSilently) {
  const std::string name = "treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1";
  // Read without their bytes, the MPI-IO and DXT_MPIIO regions cannot be written back.
  Result<DarshanLog> skipped = ReadDarshanLogFile(LogPath(name));
  ASSERT_TRUE(skipped.ok());
  Result<std::string> refused = EncodeDarshanLog(*skipped);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().message(),
            "the log's MPI-IO, DXT_MPIIO data was not read (ReadOptions::keep_raw_modules); "
            "writing it would lose that data");
  // DXT_POSIX read without its traces is refused the same way.
  ReadOptions no_dxt = KeepEverything();
  no_dxt.decode_dxt = false;
  Result<DarshanLog> without_dxt = ReadDarshanLogFile(LogPath(name), no_dxt);
  ASSERT_TRUE(without_dxt.ok());
  EXPECT_NE(EncodeDarshanLog(*without_dxt).status().message().find("DXT_POSIX data was not read"),
            std::string::npos);

  // Kept, they can be written in the log's own byte order only: clairfs cannot swap them.
  Result<DarshanLog> kept = ReadDarshanLogFile(LogPath(name), KeepEverything());
  ASSERT_TRUE(kept.ok());
  Result<std::string> big = EncodeDarshanLog(*kept, {Compression::kZlib, ByteOrder::kBig});
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().message(),
            "cannot write the MPI-IO, DXT_MPIIO data in big-endian order: clairfs does not "
            "decode those modules, so it cannot byte-swap them; write the log in its own byte "
            "order (little-endian)");

  // Dropped on purpose, the rest is written in either order.
  DarshanLog dropped = *kept;
  dropped.DropModulesNotDecoded();
  EXPECT_TRUE(dropped.raw_modules.empty());
  EXPECT_EQ(dropped.FindModule(kMpiioModule), nullptr);
  EXPECT_NE(dropped.FindModule(kPosixModule), nullptr);
  big = EncodeDarshanLog(dropped, {Compression::kZlib, ByteOrder::kBig});
  ASSERT_TRUE(big.ok()) << big.status().message();
  Result<DarshanLog> again = ParseDarshanLog(*big, KeepEverything());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->byte_order, ByteOrder::kBig);
  EXPECT_TRUE(again->raw_modules.empty());
  ExpectSameRecordLines(FormatParserText(*again), name);
}

TEST(DarshanWriter, EveryLogReadsBackInBigEndianOrderWithoutItsUndecodedModules) {
  for (const std::string& name : SharedLogNames()) {
    SCOPED_TRACE(name);
    Result<DarshanLog> original = ReadDarshanLogFile(LogPath(name), KeepEverything());
    ASSERT_TRUE(original.ok());
    DarshanLog log = *original;
    log.DropModulesNotDecoded();
    Result<std::string> bytes = EncodeDarshanLog(log, {Compression::kZlib, ByteOrder::kBig});
    ASSERT_TRUE(bytes.ok()) << bytes.status().message();
    Result<DarshanLog> again = ParseDarshanLog(*bytes);
    ASSERT_TRUE(again.ok()) << again.status().message();
    EXPECT_EQ(again->byte_order, ByteOrder::kBig);
    ExpectSameRecordLines(FormatParserText(*again), name);
    EXPECT_EQ(again->dxt_posix.size(), original->dxt_posix.size());
  }
}

// Darshan 3.4.x reads DXT_POSIX version 1 only (32-byte segments, no pthread id); version 2
// (Darshan 3.5) adds the pthread id. Traces are written in the version they were read in.
TEST(DarshanWriter, DxtTracesKeepTheirVersion) {
  const std::string name = "nonmpi_dxt_anonymized";
  Result<DarshanLog> v1 = ReadDarshanLogFile(LogPath(name), KeepEverything());
  ASSERT_TRUE(v1.ok());
  ASSERT_EQ(v1->dxt_posix_version, 1u);
  ASSERT_FALSE(v1->dxt_posix.empty());
  Result<std::string> bytes = EncodeDarshanLog(*v1);
  ASSERT_TRUE(bytes.ok());
  // mod_ver[DXT_POSIX] in the 3.41 header (little-endian uint32 at 1072 + 4 * id).
  EXPECT_EQ(LoadU32(bytes->data() + 1072 + 4 * kDxtPosixModule, ByteOrder::kLittle), 1u);
  Result<DarshanLog> again = ParseDarshanLog(*bytes);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->dxt_posix_version, 1u);
  EXPECT_EQ(again->FindModule(kDxtPosixModule)->version, 1u);

  // A version-2 trace keeps its pthread ids.
  DarshanLog v2 = *v1;
  v2.raw_modules.clear();
  v2.modules.clear();
  v2.dxt_posix_version = 2;
  v2.dxt_posix[0].reads.at(0).pthread_id = 140234;
  bytes = EncodeDarshanLog(v2);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  EXPECT_EQ(LoadU32(bytes->data() + 1072 + 4 * kDxtPosixModule, ByteOrder::kLittle), 2u);
  again = ParseDarshanLog(*bytes);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->dxt_posix_version, 2u);
  EXPECT_EQ(again->dxt_posix[0].reads[0].pthread_id, 140234u);
  EXPECT_EQ(again->dxt_posix[0].reads.size(), v1->dxt_posix[0].reads.size());

  // A log made in memory gets version 1 unless a segment carries a pthread id.
  v2.dxt_posix_version = 0;
  EXPECT_EQ(DxtPosixVersionToWrite(v2), 2u);
  v2.dxt_posix[0].reads[0].pthread_id = 0;
  EXPECT_EQ(DxtPosixVersionToWrite(v2), 1u);
}

TEST(DarshanWriter, BigEndianLogsStoreFieldsInBigEndianOrder) {
  DarshanLog log;
  log.job.exe = "prog";
  log.mounts = {{"lustre", "/lus"}};
  log.job.uid = 0x0102030405060708;
  Result<std::string> bytes = EncodeDarshanLog(log, {Compression::kZlib, ByteOrder::kBig});
  ASSERT_TRUE(bytes.ok());
  // The magic number 6567223 = 0x643537, most significant byte first.
  EXPECT_EQ(bytes->substr(8, 8), std::string("\0\0\0\0\0\x64\x35\x37", 8));
  Result<DarshanLog> back = ParseDarshanLog(*bytes);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->byte_order, ByteOrder::kBig);
  EXPECT_EQ(back->job.uid, 0x0102030405060708);
}

TEST(DarshanWriter, BuildsLogsFromNamedCounters) {
  JobDescription job;
  job.uid = 1000;
  job.jobid = 77;
  job.start_time_sec = 1700000000;
  job.end_time_sec = 1700000100;
  job.start_time_nsec = 250000000;
  job.metadata = {{"lib_ver", "clairfs"}, {"counters", "after page cache; split at max_read"}};
  job.exe = "clairfs mount /data /mnt";
  job.mounts = {{"fuse.clairfs", "/mnt"}, {"lustre", "/lus"}};
  FileCounters a;
  a.path = "/mnt//train/./img_1.npz";
  a.counters = {{"POSIX_OPENS", 3}, {"POSIX_READS", 12}, {"POSIX_BYTES_READ", 4096}};
  a.fcounters = {{"POSIX_F_READ_TIME", 0.5}};
  FileCounters b;
  b.path = "/lus/x";
  b.rank = 2;
  Result<DarshanLog> log = BuildPosixLog(job, {a, b});
  ASSERT_TRUE(log.ok()) << log.status().message();
  Result<std::string> bytes = EncodeDarshanLog(*log);
  ASSERT_TRUE(bytes.ok()) << bytes.status().message();
  Result<DarshanLog> back = ParseDarshanLog(*bytes);
  ASSERT_TRUE(back.ok()) << back.status().message();
  ASSERT_EQ(back->posix.size(), 2u);
  const PosixRecord& r = back->posix[0];
  EXPECT_EQ(r.id, DarshanRecordId("/mnt/train/img_1.npz"));
  EXPECT_EQ(*back->FindName(r.id), "/mnt/train/img_1.npz");
  EXPECT_EQ(r.counters[POSIX_READS], 12);
  EXPECT_EQ(r.counters[POSIX_BYTES_READ], 4096);
  EXPECT_EQ(r.fcounters[POSIX_F_READ_TIME], 0.5);
  EXPECT_EQ(back->posix[1].rank, 2);
  EXPECT_EQ(back->job.exe, job.exe);
  EXPECT_EQ(back->job.start_time_nsec, 250000000);
  std::string text = FormatParserText(*back);
  EXPECT_NE(text.find("# metadata: counters = after page cache; split at max_read\n"),
            std::string::npos);
  EXPECT_NE(text.find("POSIX\t-1\t" + std::to_string(r.id) +
                      "\tPOSIX_READS\t12\t/mnt/train/img_1.npz\t/mnt\tfuse.clairfs\n"),
            std::string::npos);
}

TEST(DarshanWriter, RejectsWhatTheFormatCannotHold) {
  JobDescription job;
  job.mounts = {{"ext4", "/"}};
  FileCounters f;
  f.path = "/a";
  f.counters = {{"POSIX_NOPE", 1}};
  EXPECT_NE(BuildPosixLog(job, {f}).status().message().find("unknown POSIX counter POSIX_NOPE"),
            std::string::npos);
  f.counters = {};
  f.fcounters = {{"POSIX_READS", 1.0}};
  EXPECT_FALSE(BuildPosixLog(job, {f}).ok());
  f.fcounters = {};
  f.path = "relative/path";
  EXPECT_NE(BuildPosixLog(job, {f}).status().message().find("must be absolute"), std::string::npos);
  f.path = "/a";
  EXPECT_NE(BuildPosixLog(job, {f, f}).status().message().find("given twice"), std::string::npos);

  job.metadata = {{"k", std::string(2000, 'v')}};
  Result<DarshanLog> log = BuildPosixLog(job, {f});
  ASSERT_TRUE(log.ok());
  EXPECT_EQ(EncodeDarshanLog(*log).status().message().rfind("job region: job metadata is", 0), 0u);
  job.metadata = {};
  job.mounts = {{"ext4", "/with space"}};
  EXPECT_FALSE(EncodeDarshanLog(*BuildPosixLog(job, {f})).ok());
  job.mounts = {{"ext4", "/" + std::string(4000, 'm')}};
  EXPECT_NE(EncodeDarshanLog(*BuildPosixLog(job, {f}))
                .status()
                .message()
                .find("Darshan's job record holds"),
            std::string::npos);
}

TEST(DarshanWriter, WritesFilesOnceOnly) {
  clairfs::testing::TempDir dir;
  DarshanLog log;
  log.job.exe = "x";
  log.mounts = {{"ext4", "/"}};
  ASSERT_TRUE(WriteDarshanLogFile(dir / "a.darshan", log).ok());
  EXPECT_TRUE(ReadDarshanLogFile(dir / "a.darshan").ok());
  Status again = WriteDarshanLogFile(dir / "a.darshan", log);
  EXPECT_EQ(again.code(), EEXIST);
}

}  // namespace
}  // namespace clairfs::darshan
