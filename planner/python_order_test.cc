// Python str order of file names (surrogateescape decoding, code point comparison).
#include "planner/python_order.h"

#include <algorithm>
#include <string>
#include <vector>

#include <gtest/gtest.h>

namespace clairfs {
namespace {

TEST(PythonOrder, DirpathOrderOfSortedOsWalk) {
  // The order docs/access-order.md gives for sorted(os.walk(...)) dirpaths.
  std::vector<std::string> expected = {"c/a", "c/a b", "c/a-b", "c/a.b", "c/a/c", "c/a0"};
  std::vector<std::string> shuffled = {"c/a0", "c/a/c", "c/a.b", "c/a", "c/a-b", "c/a b"};
  std::sort(shuffled.begin(), shuffled.end(), PythonStrLess);
  EXPECT_EQ(shuffled, expected);
}

TEST(PythonOrder, InvalidUtf8SortsAsSurrogateEscapes) {
  // Python: sorted(['\udcff', 'é', '😀', 'e']) == ['e', 'é', '\udcff', '😀'], while byte
  // order would put 0xFF last and 'é' (C3 A9) before the emoji (F0 ...).
  std::vector<std::string> names = {"\xf0\x9f\x98\x80", "\xff", "\xc3\xa9", "e"};
  std::sort(names.begin(), names.end(), PythonStrLess);
  EXPECT_EQ(names, (std::vector<std::string>{"e", "\xc3\xa9", "\xff", "\xf0\x9f\x98\x80"}));
}

TEST(PythonOrder, DecodesLikeSurrogateEscape) {
  EXPECT_EQ(DecodeLikePython("a\xc3\xa9"), (std::vector<uint32_t>{'a', 0xe9}));
  // An encoded surrogate (ED A0 80) and an overlong form (C0 AF) are invalid: byte escapes.
  EXPECT_EQ(DecodeLikePython("\xed\xa0\x80"), (std::vector<uint32_t>{0xdced, 0xdca0, 0xdc80}));
  EXPECT_EQ(DecodeLikePython("\xc0\xaf"), (std::vector<uint32_t>{0xdcc0, 0xdcaf}));
  // A truncated sequence followed by ASCII.
  EXPECT_EQ(DecodeLikePython("\xe2\x82"
                             "A"),
            (std::vector<uint32_t>{0xdce2, 0xdc82, 'A'}));
  EXPECT_EQ(DecodeLikePython("\xf0\x9f\x98\x80"), (std::vector<uint32_t>{0x1f600}));
}

}  // namespace
}  // namespace clairfs
