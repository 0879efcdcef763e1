// Layouts on real temporary trees: torchvision's ImageFolder order (whole-dirpath sort,
// extension filter, links), sorted and list layouts, link cycles, links leaving the root, and
// errors injected through a FileTree wrapper.
#include "planner/layout.h"

#include <unistd.h>

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::MakeDirs;
using testing::TempDir;
using testing::WriteFile;

void Link(const std::string& target, const std::string& link) {
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0) << link;
}

std::vector<std::string> Paths(const Layout& layout) {
  std::vector<std::string> out;
  for (uint64_t i = 0; i < layout.size(); ++i) out.push_back(layout.path(i));
  return out;
}

Result<Layout> Build(const std::string& root, const std::string& kind,
                     const std::string& layout_root = "") {
  auto spec = ParseLayoutSpec(kind, layout_root);
  if (!spec.ok()) return spec.status();
  return BuildLayout(PosixFileTreeInstance(), root, *spec);
}

TEST(ImageFolderLayout, OrdersLikeTorchvision) {
  TempDir dir;
  const std::string root = dir / "ds";
  // Nested directories inside a class sort by whole dirpath string.
  for (const char* sub : {"a0", "a/c", "a.b", "a-b", "a b", "a"}) {
    WriteFile(root + "/k/" + sub + "/x.jpg", "x");
  }
  WriteFile(root + "/k/top.PNG", "x");
  WriteFile(root + "/k/notes.txt", "x");
  WriteFile(root + "/b/2.jpeg", "x");
  WriteFile(root + "/b/10.jpeg", "x");
  WriteFile(root + "/b/.hidden.WEBP", "x");
  WriteFile(root + "/README", "x");  // a file at the top is not a class
  auto layout = Build(root, "imagefolder");
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(Paths(*layout),
            (std::vector<std::string>{"b/.hidden.WEBP", "b/10.jpeg", "b/2.jpeg", "k/top.PNG",
                                      "k/a/x.jpg", "k/a b/x.jpg", "k/a-b/x.jpg", "k/a.b/x.jpg",
                                      "k/a/c/x.jpg", "k/a0/x.jpg"}));
}

TEST(ImageFolderLayout, FollowsLinksToClassesFilesAndDirectories) {
  TempDir dir;
  const std::string root = dir / "ds";
  WriteFile(root + "/real/1.jpg", "x");
  Link("real", root + "/alias");                // symlinked class
  Link("../real/1.jpg", root + "/real/2.jpg");  // symlink to a file
  Link("gone.jpg", root + "/real/3.jpg");       // broken link still counts
  MakeDirs(root + "/other");
  WriteFile(root + "/other/o.png", "x");
  Link("../other", root + "/real/sub");  // symlinked directory inside a class
  auto layout = Build(root, "imagefolder");
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(Paths(*layout),
            (std::vector<std::string>{"alias/1.jpg", "alias/2.jpg", "alias/3.jpg",
                                      "alias/sub/o.png", "other/o.png", "real/1.jpg", "real/2.jpg",
                                      "real/3.jpg", "real/sub/o.png"}));
  EXPECT_EQ(layout->state(2), FileState::kBroken);
  EXPECT_TRUE(layout->warnings().empty());
}

TEST(ImageFolderLayout, EmptyClassAndNoClassAreErrors) {
  TempDir dir;
  WriteFile(dir / "ds/full/a.jpg", "x");
  WriteFile(dir / "ds/empty/readme.txt", "x");
  auto layout = Build(dir / "ds", "imagefolder");
  ASSERT_FALSE(layout.ok());
  EXPECT_NE(layout.status().message().find("no valid file for the classes empty"),
            std::string::npos)
      << layout.status().message();
  WriteFile(dir / "flat/a.jpg", "x");
  auto flat = Build(dir / "flat", "imagefolder");
  ASSERT_FALSE(flat.ok());
  EXPECT_NE(flat.status().message().find("couldn't find any class folder"), std::string::npos);
  auto missing = Build(dir / "nope", "imagefolder");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ENOENT);
}

TEST(ImageFolderLayout, LinkCycleIsAnErrorNamingTheLink) {
  TempDir dir;
  const std::string root = dir / "ds";
  WriteFile(root + "/c/a.jpg", "x");
  MakeDirs(root + "/c/deep");
  Link("..", root + "/c/deep/up");  // leads back to c
  auto layout = Build(root, "imagefolder");
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), ELOOP);
  EXPECT_NE(layout.status().message().find("c/deep/up"), std::string::npos)
      << layout.status().message();
}

TEST(ImageFolderLayout, MutualLinksAndSelfLoopsAreCycles) {
  TempDir dir;
  const std::string root = dir / "ds";
  WriteFile(root + "/c/a.jpg", "x");
  MakeDirs(root + "/x");
  MakeDirs(root + "/y");
  Link("../y", root + "/x/to_y");
  Link("../x", root + "/y/to_x");
  WriteFile(root + "/x/f.jpg", "x");
  auto mutual = Build(root, "imagefolder");
  ASSERT_FALSE(mutual.ok());
  EXPECT_EQ(mutual.status().code(), ELOOP);

  TempDir dir2;
  WriteFile(dir2 / "ds/c/a.jpg", "x");
  Link("self.jpg", dir2 / "ds/c/self.jpg");
  auto self = Build(dir2 / "ds", "imagefolder");
  ASSERT_FALSE(self.ok());
  EXPECT_NE(self.status().message().find("c/self.jpg"), std::string::npos);
}

TEST(ImageFolderLayout, LinksLeavingTheRootAreLeftOutWithAWarning) {
  TempDir dir;
  const std::string root = dir / "ds";
  WriteFile(dir / "outside/o.jpg", "x");
  WriteFile(dir / "outside/cls/p.jpg", "x");
  WriteFile(root + "/c/a.jpg", "x");
  Link(dir / "outside/o.jpg", root + "/c/b.jpg");      // file link: kept in numbering
  Link("../../outside/cls", root + "/c/sub");          // directory link: not walked
  Link(dir / "outside/cls", root + "/escaped_class");  // class link: not a class
  auto layout = Build(root, "imagefolder");
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(Paths(*layout), (std::vector<std::string>{"c/a.jpg", "c/b.jpg"}));
  EXPECT_TRUE(layout->stageable(0));
  EXPECT_FALSE(layout->stageable(1));
  EXPECT_EQ(layout->state(1), FileState::kEscapes);
  ASSERT_EQ(layout->warnings().size(), 3u);
  std::string all;
  for (const auto& w : layout->warnings()) all += w + "\n";
  EXPECT_NE(all.find("c/b.jpg"), std::string::npos) << all;
  EXPECT_NE(all.find("c/sub"), std::string::npos) << all;
  EXPECT_NE(all.find("escaped_class"), std::string::npos) << all;
}

TEST(ImageFolderLayout, LayoutRootSelectsASubdirectory) {
  TempDir dir;
  WriteFile(dir / "ds/train/n1/a.JPEG", "x");
  WriteFile(dir / "ds/val/n1/b.JPEG", "x");
  auto layout = Build(dir / "ds", "imagefolder", "train/");
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(Paths(*layout), std::vector<std::string>{"train/n1/a.JPEG"});
  EXPECT_FALSE(ParseLayoutSpec("imagefolder", "../x").ok());
  EXPECT_FALSE(ParseLayoutSpec("imagefolder", "/abs").ok());
  EXPECT_FALSE(Build(dir / "ds", "imagefolder", "missing").ok());
}

TEST(SortedLayout, EveryRegularFileInByteOrder) {
  TempDir dir;
  const std::string root = dir / "ds";
  WriteFile(root + "/b/x.bin", "x");
  WriteFile(root + "/a b/y", "x");
  WriteFile(root + "/a/z.txt", "x");
  WriteFile(root + "/\xc3\xa9", "x");
  Link("a/z.txt", root + "/link");    // link to a regular file inside: included
  Link("nothing", root + "/broken");  // broken: not a regular file
  WriteFile(dir / "outside/o", "x");
  Link(dir / "outside/o", root + "/out");  // leaves the root: left out
  auto layout = Build(root, "sorted");
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(Paths(*layout),
            (std::vector<std::string>{"a b/y", "a/z.txt", "b/x.bin", "link", "\xc3\xa9"}));
  EXPECT_EQ(layout->warnings().size(), 1u);
}

TEST(ListLayout, LineIIsSampleI) {
  TempDir dir;
  WriteFile(dir / "list.txt", "b/2.jpg\na/1.jpg\nc d/3.jpg\n");
  auto layout = Build(dir.path(), "list:" + (dir / "list.txt"));
  ASSERT_TRUE(layout.ok()) << layout.status().message();
  EXPECT_EQ(Paths(*layout), (std::vector<std::string>{"b/2.jpg", "a/1.jpg", "c d/3.jpg"}));
  auto rooted = Build(dir.path(), "list:" + (dir / "list.txt"), "train");
  ASSERT_TRUE(rooted.ok());
  EXPECT_EQ(rooted->path(0), "train/b/2.jpg");
}

TEST(ListLayout, BadListsNameTheLine) {
  TempDir dir;
  for (const char* content : {"a.jpg\n\nb.jpg\n", "a.jpg\n/abs.jpg\n", "a.jpg\nx/../y\n",
                              "a.jpg\n./b\n", "a.jpg\nx//y\n"}) {
    WriteFile(dir / "bad.txt", content);
    auto layout = Build(dir.path(), "list:" + (dir / "bad.txt"));
    ASSERT_FALSE(layout.ok()) << content;
    EXPECT_EQ(layout.status().code(), EINVAL);
    EXPECT_NE(layout.status().message().find("bad.txt:2"), std::string::npos)
        << layout.status().message();
  }
  auto unreadable = Build(dir.path(), "list:" + (dir / "missing.txt"));
  ASSERT_FALSE(unreadable.ok());
  EXPECT_EQ(unreadable.status().code(), EINVAL);
  EXPECT_NE(unreadable.status().message().find("missing.txt"), std::string::npos);
  EXPECT_FALSE(ParseLayoutSpec("list:", "").ok());
  EXPECT_FALSE(ParseLayoutSpec("folders", "").ok());
}

// A FileTree that fails listings of one directory, to check errors reach the caller.
class FailingTree : public FileTree {
 public:
  explicit FailingTree(std::string fail_dir) : fail_dir_(std::move(fail_dir)) {}
  Status ListDir(const std::string& dir, std::vector<TreeEntry>* entries) override {
    ++lists_;
    if (dir == fail_dir_) return Status::FromErrno(EIO, "cannot list " + dir);
    return PosixFileTreeInstance()->ListDir(dir, entries);
  }
  Status StatFollow(const std::string& path, FollowedStat* stat, int* error) override {
    return PosixFileTreeInstance()->StatFollow(path, stat, error);
  }
  Result<std::string> RealPath(const std::string& path) override {
    return PosixFileTreeInstance()->RealPath(path);
  }
  Result<std::string> ReadFile(const std::string& path, uint64_t max_bytes) override {
    return PosixFileTreeInstance()->ReadFile(path, max_bytes);
  }
  int lists_ = 0;

 private:
  std::string fail_dir_;
};

TEST(Layout, ListingErrorsPropagateWithThePath) {
  TempDir dir;
  WriteFile(dir / "ds/c/sub/a.jpg", "x");
  FailingTree tree(dir / "ds/c/sub");
  auto spec = ParseLayoutSpec("imagefolder", "");
  ASSERT_TRUE(spec.ok());
  auto layout = BuildLayout(&tree, dir / "ds", *spec);
  ASSERT_FALSE(layout.ok());
  EXPECT_EQ(layout.status().code(), EIO);
  EXPECT_NE(layout.status().message().find("c/sub"), std::string::npos);
  EXPECT_EQ(tree.lists_, 3);  // root, class, the failing subdirectory
}

}  // namespace
}  // namespace clairfs
