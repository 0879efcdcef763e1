// Tests of Manifest: Rescan of an adversarial tree agrees with the tree through every query,
// inode numbers are unique and stable under UseStored, UseStored refuses what it cannot trust,
// and a Rescan replaces the previous listing.
#include "cache/manifest.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cache/index_db.h"
#include "cache/testing/fault_env.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::MakeDirs;
using testing::TempDir;
using testing::WriteFile;
namespace fsys = std::filesystem;

int64_t Nanos(const struct timespec& ts) {
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

// Builds the adversarial tree under `root`.
void BuildTree(const std::string& root) {
  MakeDirs(root);
  WriteFile(root + "/with space.txt", "spaces");
  WriteFile(root + "/ünïcödé/日本語 ファイル.bin", std::string(1234, 'x'));
  std::string deep = root;
  for (int i = 0; i < 24; ++i) deep += "/d" + std::to_string(i);
  WriteFile(deep + "/leaf", "deep");
  MakeDirs(root + "/empty dir");
  MakeDirs(root + "/nested/empty/too");
  for (int i = 0; i < 10000; ++i) {
    char name[32];
    snprintf(name, sizeof(name), "/many/f%05d", i);
    WriteFile(root + name, std::to_string(i));
  }
  // Byte order differs from locale order: "B" < "_" < "a" < "b" < "\xc3\x84" ("Ä").
  for (const char* n : {"b", "a", "B", "_", "\xc3\x84", "a b", "a.b"}) {
    WriteFile(root + "/order/" + n, n);
  }
  ASSERT_EQ(symlink("with space.txt", (root + "/link inside").c_str()), 0);
  ASSERT_EQ(symlink("../../etc/passwd", (root + "/nested/link outside").c_str()), 0);
  ASSERT_EQ(symlink("/etc/hostname", (root + "/absolute link").c_str()), 0);
  ASSERT_EQ(symlink("no such target", (root + "/dangling").c_str()), 0);
  ASSERT_EQ(symlink("order", (root + "/dir link").c_str()), 0);
  ASSERT_EQ(mkfifo((root + "/a fifo").c_str(), 0600), 0);
  ASSERT_EQ(chmod((root + "/with space.txt").c_str(), 0640), 0);
}

struct Walked {
  std::map<std::string, struct stat> entries;  // relative path -> lstat ("" = root)
};

Walked Walk(const std::string& root) {
  Walked w;
  struct stat st;
  lstat(root.c_str(), &st);
  w.entries[""] = st;
  for (auto it = fsys::recursive_directory_iterator(root); it != fsys::end(it); ++it) {
    std::string abs = it->path().string();
    lstat(abs.c_str(), &st);
    w.entries[abs.substr(root.size() + 1)] = st;
  }
  return w;
}

std::string Parent(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? "" : rel.substr(0, slash);
}
std::string Name(const std::string& rel) {
  size_t slash = rel.rfind('/');
  return slash == std::string::npos ? rel : rel.substr(slash + 1);
}

class ManifestTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = tmp_ / "dataset";
    index_dir_ = tmp_ / "index";
  }
  void OpenIndex() {
    index_.reset();
    auto index = IndexDb::Open(index_dir_);
    ASSERT_TRUE(index.ok()) << index.status().message();
    index_ = std::move(*index);
  }

  // Checks every query against the tree; returns path -> ino.
  void CheckAgainstTree(const Manifest& m, std::map<std::string, uint64_t>* out) {
    Walked w = Walk(root_);
    std::map<std::string, uint64_t>& inos = *out;
    std::set<uint64_t> seen;
    std::map<std::string, std::vector<std::string>> children;
    uint64_t files = 0, dirs = 0, others = 0, bytes = 0;
    for (const auto& [rel, st] : w.entries) {
      SCOPED_TRACE("path '" + rel + "'");
      auto node = m.GetByPath(rel);
      EXPECT_TRUE(node.ok()) << node.status().message();
      if (!node.ok() || !node->has_value()) {
        ADD_FAILURE() << "missing from the manifest";
        continue;
      }
      const NodeAttr& a = (*node)->attr;
      EXPECT_EQ((*node)->path, rel);
      EXPECT_EQ(a.mode, st.st_mode);
      EXPECT_EQ(a.uid, st.st_uid);
      EXPECT_EQ(a.gid, st.st_gid);
      EXPECT_EQ(a.mtime_ns, Nanos(st.st_mtim));
      EXPECT_EQ(a.backing_ino, st.st_ino);
      if (S_ISREG(st.st_mode)) {
        EXPECT_EQ(a.size, static_cast<uint64_t>(st.st_size));
        ++files;
        bytes += static_cast<uint64_t>(st.st_size);
      } else if (S_ISDIR(st.st_mode)) {
        ++dirs;
      } else {
        ++others;
      }
      if (S_ISLNK(st.st_mode)) {
        char target[4096];
        ssize_t n = readlink((root_ + "/" + rel).c_str(), target, sizeof(target));
        ASSERT_GT(n, 0);
        EXPECT_EQ(a.link_target, std::string(target, static_cast<size_t>(n)));
      } else {
        EXPECT_EQ(a.link_target, "");
      }
      EXPECT_TRUE(seen.insert(a.ino).second) << "inode " << a.ino << " given twice";
      inos[rel] = a.ino;
      if (rel.empty()) {
        EXPECT_EQ(a.ino, kRootIno);
      } else {
        children[Parent(rel)].push_back(Name(rel));
      }
      auto by_ino = m.Get(a.ino);
      EXPECT_TRUE(by_ino.ok() && by_ino->has_value());
      if (by_ino.ok() && by_ino->has_value()) {
        EXPECT_EQ((*by_ino)->path, rel);
        EXPECT_EQ((*by_ino)->attr.ino, a.ino);
      }
    }
    for (const auto& [rel, st] : w.entries) {
      if (rel.empty()) continue;
      auto looked = m.Lookup(inos[Parent(rel)], Name(rel));
      ASSERT_TRUE(looked.ok());
      ASSERT_TRUE(looked->has_value()) << rel;
      EXPECT_EQ((*looked)->attr.ino, inos[rel]);
      EXPECT_EQ((*looked)->path, rel);
    }
    for (const auto& [rel, st] : w.entries) {
      if (!S_ISDIR(st.st_mode)) continue;
      std::vector<ManifestChild> listed;
      ASSERT_TRUE(m.List(inos[rel], &listed).ok()) << rel;
      std::vector<std::string> names, expected = children[rel];
      for (const auto& c : listed) {
        names.push_back(c.name);
        EXPECT_EQ(c.attr.ino, inos[rel.empty() ? c.name : rel + "/" + c.name]);
      }
      std::sort(expected.begin(), expected.end());  // std::string compares bytes (as unsigned)
      EXPECT_EQ(names, expected) << "children of '" << rel << "'";
    }
    EXPECT_EQ(m.summary().files, files);
    EXPECT_EQ(m.summary().dirs, dirs);
    EXPECT_EQ(m.summary().others, others);
    EXPECT_EQ(m.summary().bytes, bytes);
    uint64_t each = 0;
    EXPECT_TRUE(m.ForEachFile([&](const std::string& path, const NodeAttr& attr) {
                   EXPECT_TRUE(attr.is_reg()) << path;
                   EXPECT_EQ(inos.count(path), 1u) << path;
                   ++each;
                   return true;
                 }).ok());
    EXPECT_EQ(each, files);
  }

  TempDir tmp_;
  std::string root_;
  std::string index_dir_;
  std::unique_ptr<IndexDb> index_;
};

TEST_F(ManifestTest, AdversarialTreeAgreesWithEveryQueryAndSurvivesReopen) {
  BuildTree(root_);
  OpenIndex();
  std::map<std::string, uint64_t> first;
  {
    Manifest m(index_.get());
    ASSERT_TRUE(m.Rescan(root_, 4, Env::Default()).ok());
    CheckAgainstTree(m, &first);
    EXPECT_GT(first.size(), 10000u);
    // Misses are values, not errors.
    auto miss = m.Lookup(kRootIno, "no such name");
    ASSERT_TRUE(miss.ok());
    EXPECT_FALSE(miss->has_value());
    auto miss_ino = m.Get(999999999);
    ASSERT_TRUE(miss_ino.ok());
    EXPECT_FALSE(miss_ino->has_value());
    std::vector<ManifestChild> none;
    EXPECT_EQ(m.List(999999999, &none).code(), ENOENT);
    std::vector<ManifestChild> order;
    ASSERT_TRUE(m.List(first["order"], &order).ok());
    std::vector<std::string> names;
    for (const auto& c : order) names.push_back(c.name);
    EXPECT_EQ(names, (std::vector<std::string>{"B", "_", "a", "a b", "a.b", "b", "\xc3\x84"}));
  }
  OpenIndex();  // as after a restart
  Manifest again(index_.get());
  ASSERT_TRUE(again.UseStored(root_).ok());
  std::map<std::string, uint64_t> second;
  CheckAgainstTree(again, &second);
  EXPECT_EQ(first, second);  // the same inode for every path
}

TEST_F(ManifestTest, UseStoredRefusesWhatItCannotTrust) {
  BuildTree(root_);
  OpenIndex();
  Manifest fresh(index_.get());
  Status none = fresh.UseStored(root_);
  EXPECT_EQ(none.code(), ENOENT);
  EXPECT_NE(none.message().find("no complete manifest"), std::string::npos) << none.message();

  ASSERT_TRUE(fresh.Rescan(root_, 2, Env::Default()).ok());
  Manifest other(index_.get());
  Status wrong = other.UseStored(tmp_ / "another");
  EXPECT_EQ(wrong.code(), EINVAL);
  EXPECT_NE(wrong.message().find(root_), std::string::npos) << wrong.message();
  EXPECT_NE(wrong.message().find(tmp_ / "another"), std::string::npos) << wrong.message();

  // A rescan that fails leaves no manifest marked complete.
  Manifest failing(index_.get());
  EXPECT_FALSE(failing.Rescan(tmp_ / "missing root", 2, Env::Default()).ok());
  Manifest after(index_.get());
  EXPECT_EQ(after.UseStored(root_).code(), ENOENT);
}

TEST_F(ManifestTest, RescanReplacesTheOlderManifest) {
  MakeDirs(root_ + "/keep");
  WriteFile(root_ + "/keep/a", "a");
  WriteFile(root_ + "/gone.txt", "x");
  WriteFile(root_ + "/gone dir/inner", "y");
  OpenIndex();
  Manifest m(index_.get());
  ASSERT_TRUE(m.Rescan(root_, 2, Env::Default()).ok());
  ASSERT_TRUE(m.GetByPath("gone dir/inner")->has_value());
  auto old_inner = m.GetByPath("gone dir/inner");
  uint64_t old_inner_ino = (*old_inner)->attr.ino;

  ASSERT_EQ(unlink((root_ + "/gone.txt").c_str()), 0);
  fsys::remove_all(root_ + "/gone dir");
  WriteFile(root_ + "/new.txt", "new");
  WriteFile(root_ + "/keep/a", "changed size");
  ASSERT_TRUE(m.Rescan(root_, 2, Env::Default()).ok());
  std::map<std::string, uint64_t> inos;
  CheckAgainstTree(m, &inos);
  EXPECT_FALSE(m.GetByPath("gone.txt")->has_value());
  EXPECT_FALSE(m.GetByPath("gone dir")->has_value());
  EXPECT_FALSE(m.GetByPath("gone dir/inner")->has_value());
  EXPECT_FALSE(m.Lookup(kRootIno, "gone.txt")->has_value());
  auto stale = m.Get(old_inner_ino);
  ASSERT_TRUE(stale.ok());
  if (stale->has_value()) {
    EXPECT_NE((*stale)->path, "gone dir/inner");
  }
  EXPECT_EQ((*m.GetByPath("keep/a"))->attr.size, 12u);
  EXPECT_EQ(m.summary().files, 2u);
}

// A listing for the kernel (remember) puts its children in the node cache, so the OPEN or
// GETATTR that follows READDIRPLUS reads no index record. Seen from outside: another Manifest
// rewrites a child's record, and only the Manifest that remembered the listing still answers
// with the attributes it listed.
TEST_F(ManifestTest, RememberedListingAnswersByInodeFromItsCache) {
  WriteFile(root_ + "/dir/a", "a");
  WriteFile(root_ + "/dir/b", "bb");
  OpenIndex();
  Manifest writer(index_.get());
  ASSERT_TRUE(writer.Rescan(root_, 2, Env::Default()).ok());
  Manifest remembering(index_.get()), forgetting(index_.get());
  ASSERT_TRUE(remembering.UseStored(root_).ok());
  ASSERT_TRUE(forgetting.UseStored(root_).ok());
  auto dir = writer.GetByPath("dir");
  ASSERT_TRUE(dir.ok() && dir->has_value());
  std::vector<ManifestChild> listed, plain;
  ASSERT_TRUE(remembering.List((*dir)->attr.ino, &listed, /*remember=*/true).ok());
  ASSERT_TRUE(forgetting.List((*dir)->attr.ino, &plain).ok());
  ASSERT_EQ(listed.size(), 2u);

  auto b = writer.GetByPath("dir/b");
  ASSERT_TRUE(b.ok() && b->has_value());
  ManifestNode changed = **b;
  changed.attr.size = 4096;
  ASSERT_TRUE(writer.Update(changed).ok());

  auto cached = remembering.Get(changed.attr.ino);
  ASSERT_TRUE(cached.ok() && cached->has_value());
  EXPECT_EQ((*cached)->path, "dir/b");
  EXPECT_EQ((*cached)->attr.size, 2u);
  auto read = forgetting.Get(changed.attr.ino);
  ASSERT_TRUE(read.ok() && read->has_value());
  EXPECT_EQ((*read)->path, "dir/b");
  EXPECT_EQ((*read)->attr.size, 4096u);
}

// A remembered file (what the hold-ahead warm-up does) and a listed child are looked up from
// the cache: after another Manifest rewrites their records, this one still answers with what it
// remembered, while a file it never saw is read from the index.
TEST_F(ManifestTest, RememberedAndListedFilesAreLookedUpFromTheCache) {
  WriteFile(root_ + "/dir/a", "a");
  WriteFile(root_ + "/dir/b", "bb");
  WriteFile(root_ + "/other/c", "ccc");
  OpenIndex();
  Manifest writer(index_.get());
  ASSERT_TRUE(writer.Rescan(root_, 2, Env::Default()).ok());
  Manifest m(index_.get());
  ASSERT_TRUE(m.UseStored(root_).ok());
  auto dir = writer.GetByPath("dir");
  auto other = writer.GetByPath("other");
  ASSERT_TRUE(dir.ok() && dir->has_value() && other.ok() && other->has_value());
  const uint64_t dir_ino = (*dir)->attr.ino, other_ino = (*other)->attr.ino;

  const uint64_t version = m.CacheVersion();
  auto a = writer.GetByPath("dir/a");
  ASSERT_TRUE(a.ok() && a->has_value());
  m.Remember(dir_ino, "dir/a", (*a)->attr, version);
  std::vector<ManifestChild> children;
  ASSERT_TRUE(m.List(other_ino, &children, /*remember=*/true).ok());

  for (const char* path : {"dir/a", "dir/b", "other/c"}) {
    auto node = writer.GetByPath(path);
    ASSERT_TRUE(node.ok() && node->has_value());
    ManifestNode changed = **node;
    changed.attr.size = 4096;
    ASSERT_TRUE(writer.Update(changed).ok());
  }
  auto looked_a = m.Lookup(dir_ino, "a");
  ASSERT_TRUE(looked_a.ok() && looked_a->has_value());
  EXPECT_EQ((*looked_a)->path, "dir/a");
  EXPECT_EQ((*looked_a)->attr.size, 1u);  // remembered
  auto looked_c = m.Lookup(other_ino, "c");
  ASSERT_TRUE(looked_c.ok() && looked_c->has_value());
  EXPECT_EQ((*looked_c)->path, "other/c");
  EXPECT_EQ((*looked_c)->attr.size, 3u);  // listed
  auto looked_b = m.Lookup(dir_ino, "b");
  ASSERT_TRUE(looked_b.ok() && looked_b->has_value());
  EXPECT_EQ((*looked_b)->attr.size, 4096u);  // never seen: read from the index
  EXPECT_FALSE(m.Lookup(dir_ino, "c")->has_value());
  EXPECT_FALSE(m.Lookup(other_ino, "a")->has_value());

  // A remembered read that raced with an update (here of another file) is not kept.
  Manifest fresh(index_.get());
  ASSERT_TRUE(fresh.UseStored(root_).ok());
  const uint64_t stale = fresh.CacheVersion();
  auto c = writer.GetByPath("other/c");
  ASSERT_TRUE(fresh.Update(**c).ok());
  auto b = writer.GetByPath("dir/b");
  NodeAttr old_b = (*b)->attr;
  old_b.size = 2;
  fresh.Remember(dir_ino, "dir/b", old_b, stale);
  EXPECT_EQ((*fresh.Lookup(dir_ino, "b"))->attr.size, 4096u);
}

TEST_F(ManifestTest, UnreadableDirectoryIsShownEmpty) {
  WriteFile(root_ + "/secret/hidden", "h");
  WriteFile(root_ + "/open/visible", "v");
  FaultInjectionEnv env;
  env.FailPath(FaultOp::kListDir, "/secret", EACCES);
  OpenIndex();
  Manifest m(index_.get());
  ASSERT_TRUE(m.Rescan(root_, 2, &env).ok());
  EXPECT_EQ(m.summary().unreadable_dirs, 1u);
  auto secret = m.GetByPath("secret");
  ASSERT_TRUE(secret.ok() && secret->has_value());
  std::vector<ManifestChild> children;
  ASSERT_TRUE(m.List((*secret)->attr.ino, &children).ok());
  EXPECT_TRUE(children.empty());
  EXPECT_TRUE(m.GetByPath("open/visible")->has_value());
  EXPECT_EQ(env.calls(FaultOp::kListDir), 3u);  // root, open, secret: one listing each
}

}  // namespace
}  // namespace clairfs
