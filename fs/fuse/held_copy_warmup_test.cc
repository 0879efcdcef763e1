// Tests of HeldCopyWarmup against a real manifest and content store, with a recording
// HeldCopies: which copies it holds (staged at the manifest's version only), that it stops when
// the bound is reached, that a copy evicted while it was being held is let go again, and that
// copies published while it runs are held as they come.
#include "fs/fuse/held_copy_warmup.h"

#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <map>
#include <optional>
#include <set>

#include <gtest/gtest.h>

#include "cache/testing/test_store.h"
#include "fs/fuse/passthrough.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

class RecordingHeldCopies : public HeldCopies {
 public:
  bool Claim(uint64_t, const FileIdentity&, const std::string&, int*) override { return false; }
  void CopyRemoved(const std::string& data_path) override {
    removed.insert(data_path);
    for (auto it = held.begin(); it != held.end();) {
      it = it->second == data_path ? held.erase(it) : std::next(it);
    }
  }
  size_t HoldRoom() const override { return room > held.size() ? room - held.size() : 0; }
  // Models the bound only for kBehindReleased (refused when full); a kMostRecent hold is always
  // taken (the real one closes a lower-ranked copy for it: tests/passthrough_test.cc).
  bool Hold(uint64_t ino, int fd, const FileIdentity& identity, const std::string& data_path,
            HoldRank rank) override {
    struct stat st;
    // The fd handed over is the copy itself, open.
    EXPECT_EQ(fstat(fd, &st), 0);
    EXPECT_EQ(static_cast<uint64_t>(st.st_size), identity.size);
    if (rank == HoldRank::kBehindReleased && HoldRoom() == 0) return false;
    if (during_hold) during_hold(data_path);
    held[ino] = data_path;
    ranks[ino] = rank;
    return true;
  }

  size_t room = 1000;
  std::map<uint64_t, HoldRank> ranks;                   // ino -> rank of its latest hold
  std::function<void(const std::string&)> during_hold;  // runs inside Hold
  std::map<uint64_t, std::string> held;                 // ino -> copy
  std::set<std::string> removed;
};

class HeldCopyWarmupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    backing_ = dir_ / "backing";
    for (const char* name : {"a", "b", "c", "d", "e", "f"}) {
      testing::WriteFile(backing_ + "/" + name, std::string(1000 + name[0], name[0]));
    }
    auto store = testing::OpenTestStore(dir_ / "cache", Env::Default());
    ASSERT_TRUE(store.ok()) << store.status().message();
    s_ = std::move(*store);
    manifest_ = std::make_unique<Manifest>(s_.index.get());
    ASSERT_TRUE(manifest_->Rescan(backing_, 1, Env::Default()).ok());
  }
  void TearDown() override {
    manifest_.reset();
    s_.store.reset();
    s_.index.reset();
    s_.dir.reset();
  }

  NodeAttr AttrOf(const std::string& path) {
    auto node = manifest_->GetByPath(path);
    EXPECT_TRUE(node.ok() && node->has_value()) << path;
    return (*node)->attr;
  }

  // Publishes a copy of `path` recorded as `identity` (the manifest's unless given).
  void Stage(const std::string& path, std::optional<FileIdentity> identity = std::nullopt) {
    const std::string data = testing::ReadFile(backing_ + "/" + path);
    auto slot = s_.store->BeginStaging(path, data.size());
    ASSERT_TRUE(slot.ok()) << slot.status().message();
    ASSERT_TRUE(Env::Default()->PwriteAll(slot->fd, data.data(), data.size(), 0).ok());
    ASSERT_TRUE(s_.store->Commit(&*slot, identity.value_or(AttrOf(path).identity())).ok());
  }

  testing::TempDir dir_;
  std::string backing_;
  testing::OpenStore s_;
  std::unique_ptr<Manifest> manifest_;
};

TEST_F(HeldCopyWarmupTest, HoldsEveryCopyStagedAtTheManifestsVersion) {
  for (const char* name : {"a", "b", "d", "e"}) Stage(name);
  FileIdentity old = AttrOf("c").identity();
  old.mtime_ns -= 1000000000;  // a copy of an earlier version of c
  Stage("c", old);
  // f is not staged.
  RecordingHeldCopies held;
  HeldCopyWarmup warmup(manifest_.get(), s_.store.get(), Env::Default());
  EXPECT_FALSE(warmup.stats().started);
  ASSERT_TRUE(warmup.Run(&held).ok());

  std::map<uint64_t, std::string> want;
  for (const char* name : {"a", "b", "d", "e"}) {
    want[AttrOf(name).ino] = s_.store->Find(name, false)->data_path;
  }
  EXPECT_EQ(held.held, want);
  const HeldCopyWarmup::Stats stats = warmup.stats();
  EXPECT_TRUE(stats.started);
  EXPECT_TRUE(stats.done);
  EXPECT_EQ(stats.held, 4u);
  EXPECT_EQ(stats.scanned, 5u);  // f comes after every staged copy was seen
  EXPECT_TRUE(held.removed.empty());

  // Held files were remembered: their LOOKUP reads no index record (another Manifest rewrites
  // the records; this one still answers with what it remembered), the others' does.
  Manifest writer(s_.index.get());
  ASSERT_TRUE(writer.UseStored(backing_).ok());
  for (const char* name : {"a", "f"}) {
    ManifestNode changed{name, AttrOf(name)};
    changed.attr.size = 1;
    ASSERT_TRUE(writer.Update(changed).ok());
  }
  EXPECT_EQ((*manifest_->Lookup(kRootIno, "a"))->attr.size, 1000u + 'a');
  EXPECT_EQ((*manifest_->Lookup(kRootIno, "f"))->attr.size, 1u);
}

TEST_F(HeldCopyWarmupTest, StopsWhenTheBoundIsReached) {
  for (const char* name : {"a", "b", "c", "d", "e", "f"}) Stage(name);
  RecordingHeldCopies held;
  held.room = 2;
  HeldCopyWarmup warmup(manifest_.get(), s_.store.get(), Env::Default());
  ASSERT_TRUE(warmup.Run(&held).ok());
  // Name order: the first two files.
  EXPECT_EQ(held.held.size(), 2u);
  EXPECT_EQ(held.held.count(AttrOf("a").ino), 1u);
  EXPECT_EQ(held.held.count(AttrOf("b").ino), 1u);
  EXPECT_EQ(warmup.stats().scanned, 2u);
  EXPECT_TRUE(warmup.stats().done);
}

TEST_F(HeldCopyWarmupTest, StopsOnceEveryStagedCopyWasSeen) {
  for (const char* name : {"a", "b"}) Stage(name);
  RecordingHeldCopies held;
  HeldCopyWarmup warmup(manifest_.get(), s_.store.get(), Env::Default());
  ASSERT_TRUE(warmup.Run(&held).ok());
  EXPECT_EQ(held.held.size(), 2u);
  EXPECT_EQ(warmup.stats().scanned, 2u);  // c-f not looked at
  EXPECT_TRUE(warmup.stats().done);

  // An empty store: nothing looked at.
  RecordingHeldCopies none;
  for (const char* name : {"a", "b"}) ASSERT_TRUE(s_.store->Evict(name, /*force=*/true).ok());
  HeldCopyWarmup empty(manifest_.get(), s_.store.get(), Env::Default());
  ASSERT_TRUE(empty.Run(&none).ok());
  EXPECT_TRUE(none.held.empty());
  EXPECT_EQ(empty.stats().scanned, 0u);
}

TEST_F(HeldCopyWarmupTest, ACopyEvictedWhileItWasBeingHeldIsLetGo) {
  for (const char* name : {"a", "b", "c"}) Stage(name);
  const std::string b_copy = s_.store->Find("b", false)->data_path;
  RecordingHeldCopies held;
  // b leaves the store while it is being registered: its removal notice (CopyRemoved from the
  // store's listener) came before the hold, so only the warm-up can let it go.
  held.during_hold = [&](const std::string& data_path) {
    if (data_path == b_copy) {
      ASSERT_TRUE(s_.store->Evict("b", /*force=*/true).ok());
    }
  };
  HeldCopyWarmup warmup(manifest_.get(), s_.store.get(), Env::Default());
  ASSERT_TRUE(warmup.Run(&held).ok());
  EXPECT_EQ(held.removed, std::set<std::string>{b_copy});
  EXPECT_EQ(held.held.size(), 2u);
  EXPECT_EQ(held.held.count(AttrOf("b").ino), 0u);
  EXPECT_EQ(warmup.stats().held, 2u);
}

// A manifest walk that fails part way (here: a record that does not decode) ends the warm-up
// with that error, reports it done, and keeps what it already held.
TEST_F(HeldCopyWarmupTest, AWalkThatFailsKeepsWhatItHeldAndReportsDone) {
  for (const char* name : {"a", "b", "e"}) Stage(name);
  const uint64_t a = AttrOf("a").ino, b = AttrOf("b").ino;
  ASSERT_TRUE(s_.index->Put(IndexDb::kNames, Manifest::KeyForPath("d"), "not a record", true).ok());
  RecordingHeldCopies held;
  HeldCopyWarmup warmup(manifest_.get(), s_.store.get(), Env::Default());
  EXPECT_FALSE(warmup.Run(&held).ok());
  const HeldCopyWarmup::Stats stats = warmup.stats();
  EXPECT_TRUE(stats.done);
  EXPECT_EQ(stats.held, 2u);  // a and b, before d; e is never reached
  EXPECT_EQ(held.held.size(), 2u);
  EXPECT_EQ(held.held.count(a), 1u);
  EXPECT_EQ(held.held.count(b), 1u);
  EXPECT_TRUE(held.removed.empty());
}

TEST_F(HeldCopyWarmupTest, StartOnItsOwnThreadAndStop) {
  for (const char* name : {"a", "b", "c", "d", "e", "f"}) Stage(name);
  RecordingHeldCopies held;
  HeldCopyWarmup warmup(manifest_.get(), s_.store.get(), Env::Default());
  warmup.Start(&held);
  warmup.Stop();  // joins: done, whether it finished or stopped early
  EXPECT_TRUE(warmup.stats().started);
  EXPECT_TRUE(warmup.stats().done);
  EXPECT_EQ(warmup.stats().held, held.held.size());
}

// Copies published once the warm-up has started are held as they come (the manifest's version
// only), ranked as most recent, also when the bound is full; none before Start or after Stop. The
// walk's holds rank behind released copies.
TEST_F(HeldCopyWarmupTest, CopiesPublishedAfterStartAreHeldAsMostRecent) {
  RecordingHeldCopies held;
  held.room = 3;
  HeldCopyWarmup warmup(manifest_.get(), s_.store.get(), Env::Default());
  s_.store->set_publish_listener([&](const std::string& path) { warmup.OnPublished(path); });
  Stage("a");  // not started: nothing to hold into
  EXPECT_TRUE(held.held.empty());

  ASSERT_TRUE(warmup.Run(&held).ok());  // the walk holds a
  EXPECT_EQ(warmup.stats().held, 1u);
  Stage("b");
  FileIdentity old = AttrOf("c").identity();
  old.mtime_ns -= 1000000000;
  Stage("c", old);  // a copy of an earlier version of c: never held
  Stage("d");
  Stage("e");  // the bound (3) is reached: held all the same, as most recent
  std::map<uint64_t, std::string> want;
  for (const char* name : {"a", "b", "d", "e"}) {
    want[AttrOf(name).ino] = s_.store->Find(name, false)->data_path;
  }
  EXPECT_EQ(held.held, want);
  EXPECT_EQ(held.ranks[AttrOf("a").ino], HoldRank::kBehindReleased);
  for (const char* name : {"b", "d", "e"}) {
    EXPECT_EQ(held.ranks[AttrOf(name).ino], HoldRank::kMostRecent) << name;
  }
  EXPECT_EQ(warmup.stats().held_when_staged, 3u);

  warmup.Stop();
  Stage("f");  // stopped: no more holding
  EXPECT_EQ(held.held.count(AttrOf("f").ino), 0u);
  EXPECT_EQ(warmup.stats().held_when_staged, 3u);
  s_.store->set_publish_listener(nullptr);
}

}  // namespace
}  // namespace clairfs
