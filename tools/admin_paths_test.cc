// Path arguments and --from-file lists: escapes, raw bytes, NUL-separated lists, and the errors
// for an empty argument, a bad escape and a directory given as a list.
#include "tools/admin_paths.h"

#include <fcntl.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace clairfs::cli {
namespace {

TEST(AdminPathsTest, ArgumentsAreEscapedNamesOrRawBytes) {
  auto raw = UnescapeArguments({"bad_\\xff\\xfe.bin", "back\\\\slash", "raw_\xe9", "new\\x0aline"});
  ASSERT_TRUE(raw.ok()) << raw.status().message();
  EXPECT_EQ(*raw,
            (std::vector<std::string>{"bad_\xff\xfe.bin", "back\\slash", "raw_\xe9", "new\nline"}));
  EXPECT_EQ(EscapePaths(*raw), (std::vector<std::string>{"bad_\\xff\\xfe.bin", "back\\\\slash",
                                                         "raw_\\xe9", "new\\x0aline"}));
  auto bare = UnescapeArguments({"back\\slash"});
  ASSERT_FALSE(bare.ok());
  EXPECT_EQ(bare.status().code(), EINVAL);
  EXPECT_NE(bare.status().message().find("\\\\ (a backslash)"), std::string::npos)
      << bare.status().message();
  auto empty = UnescapeArguments({"a", ""});
  ASSERT_FALSE(empty.ok());
  EXPECT_NE(empty.status().message().find("empty PATH"), std::string::npos);
}

TEST(AdminPathsTest, TextListsHoldOneEscapedNameALine) {
  testing::TempDir dir;
  const std::string list = dir / "list.txt";
  testing::WriteFile(list,
                     "# comment\r\na/b.bin\r\n\nnew\\x0aline\ntrailing space \n\\x23hash\n"
                     "raw_\xff\nlast");
  auto paths = ReadPathList(list, false);
  ASSERT_TRUE(paths.ok()) << paths.status().message();
  EXPECT_EQ(*paths, (std::vector<std::string>{"a/b.bin", "new\nline", "trailing space ", "#hash",
                                              "raw_\xff", "last"}));
  testing::WriteFile(list, "ok\nbad\\q\n");
  auto bad = ReadPathList(list, false);
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), EINVAL);
  EXPECT_NE(bad.status().message().find("line 2"), std::string::npos) << bad.status().message();
}

TEST(AdminPathsTest, NulListsHoldRawNames) {
  testing::TempDir dir;
  const std::string list = dir / "list.0";
  testing::WriteFile(list, std::string("new\nline\0back\\slash\0\0# not a comment\0tail", 42));
  auto paths = ReadPathList(list, true);
  ASSERT_TRUE(paths.ok()) << paths.status().message();
  EXPECT_EQ(*paths,
            (std::vector<std::string>{"new\nline", "back\\slash", "# not a comment", "tail"}));
}

TEST(AdminPathsTest, ADirectoryOrAMissingFileIsNamed) {
  testing::TempDir dir;
  auto d = ReadPathList(dir.path(), false);
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), EINVAL);
  EXPECT_NE(d.status().message().find("is a directory"), std::string::npos) << d.status().message();
  auto missing = ReadPathList(dir / "nope", false);
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ENOENT);
  EXPECT_NE(missing.status().message().find("nope"), std::string::npos);
}

TEST(AdminPathsTest, DashReadsStandardInput) {
  testing::TempDir dir;
  const std::string list = dir / "stdin.txt";
  testing::WriteFile(list, "x\ny\n");
  int saved = dup(STDIN_FILENO);
  int fd = open(list.c_str(), O_RDONLY);
  ASSERT_GE(fd, 0);
  dup2(fd, STDIN_FILENO);
  close(fd);
  auto paths = ReadPathList("-", false);
  dup2(saved, STDIN_FILENO);
  close(saved);
  ASSERT_TRUE(paths.ok()) << paths.status().message();
  EXPECT_EQ(*paths, (std::vector<std::string>{"x", "y"}));
}

}  // namespace
}  // namespace clairfs::cli
