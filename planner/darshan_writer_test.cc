// Darshan writer: every shared log re-encoded by clairfs prints the original's darshan-parser
// record lines; both byte orders and both compressions; logs built from named counters.
#include "planner/darshan_writer.h"

#include <gtest/gtest.h>

#include "planner/darshan_bytes.h"
#include "planner/darshan_hash.h"
#include "planner/darshan_reader.h"
#include "planner/darshan_test_support.h"
#include "planner/darshan_text.h"
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

TEST(DarshanWriter, ReencodedSharedLogsPrintTheOriginalRecordLines) {
  std::vector<std::string> names = SharedLogNames();
  ASSERT_GE(names.size(), 19u);
  size_t records = 0;
  for (const std::string& name : names) {
    Result<DarshanLog> original = ReadDarshanLogFile(LogPath(name));
    ASSERT_TRUE(original.ok()) << name << ": " << original.status().message();
    for (Variant v : {Variant{Compression::kZlib, ByteOrder::kLittle},
                      Variant{Compression::kBzip2, ByteOrder::kLittle},
                      Variant{Compression::kZlib, ByteOrder::kBig}}) {
      SCOPED_TRACE(name + (v.compression == Compression::kBzip2 ? " bzip2" : " zlib") +
                   (v.order == ByteOrder::kBig ? " big-endian" : ""));
      Result<std::string> bytes = EncodeDarshanLog(*original, {v.compression, v.order});
      ASSERT_TRUE(bytes.ok()) << bytes.status().message();
      Result<DarshanLog> again = ParseDarshanLog(*bytes);
      ASSERT_TRUE(again.ok()) << again.status().message();
      EXPECT_EQ(again->version_string, "3.41");
      EXPECT_EQ(again->compression, v.compression);
      EXPECT_EQ(again->byte_order, v.order);
      EXPECT_EQ(again->FindModule(kPosixModule) != nullptr, !original->posix.empty());
      if (again->FindModule(kPosixModule)) {
        EXPECT_EQ(again->FindModule(kPosixModule)->version, 4u);
      }
      ExpectSameRecordLines(FormatParserText(*again), name);
      // Job, mounts and DXT traces survive too.
      EXPECT_EQ(again->job.exe, original->job.exe);
      EXPECT_EQ(again->job.metadata, original->job.metadata);
      EXPECT_EQ(again->job.start_time_sec, original->job.start_time_sec);
      EXPECT_EQ(again->mounts.size(), original->mounts.size());
      ASSERT_EQ(again->dxt_posix.size(), original->dxt_posix.size());
      for (size_t i = 0; i < original->dxt_posix.size(); ++i) {
        EXPECT_EQ(again->dxt_posix[i].reads.size(), original->dxt_posix[i].reads.size());
        if (!original->dxt_posix[i].reads.empty()) {
          EXPECT_EQ(again->dxt_posix[i].reads.back().offset,
                    original->dxt_posix[i].reads.back().offset);
        }
      }
    }
    records += original->posix.size();
  }
  EXPECT_GT(records, 100u);
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
