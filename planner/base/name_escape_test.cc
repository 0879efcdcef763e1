#include "planner/base/name_escape.h"

#include <gtest/gtest.h>

#include <random>

namespace clairfs {
namespace {

TEST(NameEscapeTest, PrintableUtf8PassesAndEverythingElseIsEscaped) {
  EXPECT_EQ(EscapeName("train/n01440764/img_1.JPEG"), "train/n01440764/img_1.JPEG");
  EXPECT_EQ(EscapeName("caf\xc3\xa9 \xe6\x97\xa5.jpg"), "caf\xc3\xa9 \xe6\x97\xa5.jpg");
  EXPECT_EQ(EscapeName("bad_\xff\xfe.bin"), "bad_\\xff\\xfe.bin");
  EXPECT_EQ(EscapeName("a\nb\tc\x7f"), "a\\x0ab\\x09c\\x7f");
  EXPECT_EQ(EscapeName("back\\slash"), "back\\\\slash");
  EXPECT_EQ(EscapeName(std::string("nul\0x", 5)), "nul\\x00x");
  // A C1 control (U+0085, NEL) is escaped byte by byte; an overlong '/' and a surrogate too.
  EXPECT_EQ(EscapeName("x\xc2\x85y"), "x\\xc2\\x85y");
  EXPECT_EQ(EscapeName("\xc0\xaf"), "\\xc0\\xaf");
  EXPECT_EQ(EscapeName("\xed\xa0\x80"), "\\xed\\xa0\\x80");
  // A truncated sequence at the end.
  EXPECT_EQ(EscapeName("e\xc3"), "e\\xc3");
}

TEST(NameEscapeTest, UnescapeUndoesEscapesAndAcceptsRawBytes) {
  EXPECT_EQ(*UnescapeName("bad_\\xff\\xFE.bin"), "bad_\xff\xfe.bin");
  EXPECT_EQ(*UnescapeName("back\\\\slash"), "back\\slash");
  EXPECT_EQ(*UnescapeName("raw_\xff"), "raw_\xff");
  EXPECT_EQ(*UnescapeName("a\\x0ab"), "a\nb");
}

TEST(NameEscapeTest, BadEscapesAreErrorsNamingThePosition) {
  for (const char* bad : {"a\\b", "a\\", "a\\x", "a\\x4", "a\\xzz", "a\\n"}) {
    auto r = UnescapeName(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), EINVAL);
    EXPECT_NE(r.status().message().find("bad escape at byte 2"), std::string::npos)
        << r.status().message();
  }
}

TEST(NameEscapeTest, EveryByteStringRoundTripsAndEscapesAreValidUtf8) {
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20000; ++trial) {
    std::string raw(rng() % 24, '\0');
    for (char& c : raw) {
      // Mostly bytes near the interesting edges: ASCII, backslash, 'x', UTF-8 lead bytes.
      const char picks[] = {'a',    '\\',   'x',    '\n',   '\x7f', '\xc3', '\xa9', '\xe6',
                            '\x97', '\xf0', '\x9f', '\x98', '\x80', '\xff', '\0',   '/'};
      c = rng() % 3 == 0 ? static_cast<char>(rng() % 256) : picks[rng() % sizeof(picks)];
    }
    const std::string escaped = EscapeName(raw);
    ASSERT_TRUE(IsValidUtf8(escaped));
    for (char c : escaped) ASSERT_FALSE(static_cast<unsigned char>(c) < 0x20 || c == 0x7f);
    auto back = UnescapeName(escaped);
    ASSERT_TRUE(back.ok()) << back.status().message();
    ASSERT_EQ(*back, raw);
  }
}

TEST(NameEscapeTest, SanitizeTextKeepsOneLineOfValidUtf8) {
  EXPECT_EQ(SanitizeText("cannot open a\nb\xff: EIO"), "cannot open a\\x0ab\\xff: EIO");
  EXPECT_EQ(SanitizeText("keeps \\ and caf\xc3\xa9"), "keeps \\ and caf\xc3\xa9");
  EXPECT_TRUE(IsValidUtf8(SanitizeText("\xc0\xaf\xed\xa0\x80")));
}

}  // namespace
}  // namespace clairfs
