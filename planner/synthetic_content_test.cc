// Tests of synthetic file content: random access, verification and what it catches.
#include "planner/synthetic_content.h"

#include <gtest/gtest.h>

#include <string>

namespace clairfs {
namespace {

std::string Generate(std::string_view relpath, uint64_t size) {
  std::string data(size, '\0');
  FillSyntheticBytes(relpath, size, 0, data.data(), data.size());
  return data;
}

TEST(SyntheticContent, HeaderHoldsMagicAndSize) {
  std::string data = Generate("class_0000/img_00000000.jpg", 1000);
  EXPECT_EQ(data.substr(0, 8), "CLFSSYN1");
  auto size = SyntheticSizeFromHeader(data);
  ASSERT_TRUE(size.ok()) << size.status().message();
  EXPECT_EQ(*size, 1000u);
  EXPECT_FALSE(SyntheticSizeFromHeader(data.substr(0, 15)).ok());
  EXPECT_FALSE(SyntheticSizeFromHeader("XLFSSYN1" + data.substr(8)).ok());
}

// Pins the stream (values computed by an independent Python model of the format) so that a change
// of the format (which would make old datasets fail verification) is a deliberate decision, not an
// accident.
TEST(SyntheticContent, StreamIsPinned) {
  std::string data = Generate("a/b.jpg", 40);
  const unsigned char expected_tail[] = {
      0xce, 0xe8, 0x57, 0x51, 0x31, 0xee, 0x16, 0x2a, 0x06, 0x4f, 0x1b, 0xf0,
      0x76, 0x22, 0x3a, 0xa2, 0xe0, 0x98, 0x50, 0x63, 0xd7, 0xc5, 0xac, 0xdb,
  };
  ASSERT_EQ(sizeof(expected_tail), 24u);
  EXPECT_EQ(data.substr(16), std::string(reinterpret_cast<const char*>(expected_tail), 24));
}

TEST(SyntheticContent, RandomAccessMatchesSequential) {
  const std::string path = "file_00000007.bin";
  const uint64_t size = 300000;
  std::string whole = Generate(path, size);
  // Odd offsets and lengths, crossing the header and word boundaries.
  for (uint64_t offset : {0ULL, 1ULL, 7ULL, 15ULL, 16ULL, 17ULL, 4093ULL, 65537ULL, 299990ULL}) {
    for (size_t len : {size_t{1}, size_t{3}, size_t{8}, size_t{9}, size_t{10}, size_t{70001}}) {
      if (offset + len > size) continue;
      std::string piece(len, '\0');
      FillSyntheticBytes(path, size, offset, piece.data(), len);
      ASSERT_EQ(piece, whole.substr(offset, len)) << "offset " << offset << " len " << len;
    }
  }
}

TEST(SyntheticContent, DependsOnPathOnlyBeyondHeader) {
  std::string a = Generate("x/1.bin", 4096);
  std::string b = Generate("x/2.bin", 4096);
  std::string a_longer = Generate("x/1.bin", 8192);
  EXPECT_NE(a.substr(16), b.substr(16));
  EXPECT_EQ(a.substr(16), a_longer.substr(16, 4096 - 16));
}

TEST(SyntheticContent, VerifierAcceptsGoodFilesOfEverySmallSize) {
  for (uint64_t size = 0; size <= 40; ++size) {
    std::string path = "f" + std::to_string(size);
    EXPECT_TRUE(VerifySyntheticFile(path, Generate(path, size)).ok()) << size;
  }
}

TEST(SyntheticContent, VerifierCatchesAFlippedByteAnywhere) {
  const std::string path = "class_0001/img_00000042.jpg";
  std::string data = Generate(path, 200000);
  for (size_t pos : {size_t{0}, size_t{9}, size_t{16}, size_t{12345}, size_t{199999}}) {
    std::string bad = data;
    bad[pos] = static_cast<char>(bad[pos] ^ 0x01);
    Status s = VerifySyntheticFile(path, bad);
    ASSERT_FALSE(s.ok()) << pos;
    EXPECT_EQ(s.code(), EILSEQ);
    EXPECT_NE(s.message().find(path), std::string::npos) << s.message();
    if (pos >= 16) {
      EXPECT_NE(s.message().find("offset " + std::to_string(pos)), std::string::npos)
          << s.message();
    }
  }
}

TEST(SyntheticContent, VerifierCatchesLengthAndNameErrors) {
  const std::string path = "file_00000001.bin";
  std::string data = Generate(path, 5000);
  EXPECT_FALSE(VerifySyntheticFile(path, data.substr(0, 4999)).ok());
  EXPECT_FALSE(VerifySyntheticFile(path, data + "x").ok());
  EXPECT_FALSE(VerifySyntheticFile("file_00000002.bin", data).ok());
  // A short file's truncated header must match its own length.
  std::string short_file = Generate(path, 12);
  EXPECT_TRUE(VerifySyntheticFile(path, short_file).ok());
  EXPECT_FALSE(VerifySyntheticFile(path, short_file.substr(0, 11)).ok());
  EXPECT_TRUE(VerifySyntheticFile(path, "").ok());  // an empty file is a valid size-0 file
}

TEST(SyntheticContent, StreamingVerifierMatchesWholeFile) {
  const std::string path = "shard_0000.tar";
  std::string data = Generate(path, 1 << 20);
  SyntheticVerifier verifier(path);
  size_t pos = 0;
  for (size_t step = 1; pos < data.size(); step = step * 3 + 1) {
    size_t n = std::min(step, data.size() - pos);
    ASSERT_TRUE(verifier.Update(data.data() + pos, n).ok());
    pos += n;
  }
  EXPECT_TRUE(verifier.Finish().ok());
  EXPECT_EQ(verifier.bytes_checked(), data.size());

  data[777777] ^= 0x40;
  SyntheticVerifier bad(path);
  Status first = bad.Update(data.data(), 500000);
  EXPECT_TRUE(first.ok());
  Status second = bad.Update(data.data() + 500000, data.size() - 500000);
  ASSERT_FALSE(second.ok());
  EXPECT_NE(second.message().find("offset 777777"), std::string::npos) << second.message();
  EXPECT_FALSE(bad.Finish().ok());  // the error sticks
}

}  // namespace
}  // namespace clairfs
