// Integration tests of `clairfs fsck`: a cache built with the cache API in a temp dir is damaged
// by hand, then the real binary ($CLAIRFS_BIN) is run and its output, exit code and the cache
// left behind are checked.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <map>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "cache/cache_dir.h"
#include "cache/content_store.h"
#include "cache/env.h"
#include "cache/index_db.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::ClairfsBin;
using testing::CommandResult;
using testing::PathExists;
using testing::RandomBytes;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;

class FsckTest : public ::testing::Test {
 protected:
  void SetUp() override {
    cache_ = tmp_ / "cache";
    backing_ = tmp_ / "backing";
    files_ = {{"a.bin", RandomBytes(70000, 1)},
              {"dir/b.bin", RandomBytes(3000, 2)},
              {"dir/sub/c d.bin", RandomBytes(1 << 20, 3)},
              {"empty", ""}};
    for (const auto& [rel, data] : files_) WriteFile(backing_ + "/" + rel, data);
    WithStore([&](ContentStore* store) {
      for (const auto& [rel, data] : files_) {
        auto slot = store->BeginStaging(rel, data.size());
        ASSERT_TRUE(slot.ok()) << slot.status().message();
        ASSERT_TRUE(Env::Default()->PwriteAll(slot->fd, data.data(), data.size(), 0).ok());
        struct stat st;
        ASSERT_EQ(lstat((backing_ + "/" + rel).c_str(), &st), 0);
        ASSERT_TRUE(store->Commit(&*slot, IdentityOf(st)).ok());
        data_paths_[rel] = store->Find(rel)->data_path;
      }
    });
  }

  // Opens the cache with the API (and runs its recovery) for the duration of `fn`.
  void WithStore(const std::function<void(ContentStore*)>& fn) {
    auto dir = CacheDir::Acquire(cache_, Env::Default());
    ASSERT_TRUE(dir.ok()) << dir.status().message();
    auto index = IndexDb::Open((*dir)->index_dir());
    ASSERT_TRUE(index.ok()) << index.status().message();
    auto store = ContentStore::Open(dir->get(), index->get(), Env::Default(), {}, NewLruPolicy());
    ASSERT_TRUE(store.ok()) << store.status().message();
    fn(store->get());
  }

  CommandResult Fsck(std::vector<std::string> args) {
    args.insert(args.begin(), {ClairfsBin(), "fsck"});
    return testing::Run(args, 120);
  }

  nlohmann::json Json(const CommandResult& r) {
    auto j = nlohmann::json::parse(r.out, nullptr, /*allow_exceptions=*/false);
    EXPECT_FALSE(j.is_discarded()) << "not JSON: " << r.out << r.err;
    return j;
  }

  TempDir tmp_;
  std::string cache_, backing_;
  std::map<std::string, std::string> files_;
  std::map<std::string, std::string> data_paths_;
};

TEST_F(FsckTest, CleanCacheIsConsistent) {
  CommandResult r = Fsck({"--cache", cache_, "--verify", "--backing", backing_, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json j = Json(r);
  EXPECT_EQ(j["consistent"], true);
  EXPECT_EQ(j["recovery"]["entries_kept"], 4);
  EXPECT_EQ(j["recovery"]["temp_removed"], 0);
  EXPECT_EQ(j["recovery"]["entries_dropped"], 0);
  EXPECT_EQ(j["recovery"]["orphans_removed"], 0);
  EXPECT_EQ(j["verify"]["checked"], 4);
  EXPECT_EQ(j["verify"]["equal"], 4);
  EXPECT_EQ(j["verify"]["bytes_compared"], 70000 + 3000 + (1 << 20));

  // Not on a terminal and without --json: plain "key value" lines.
  CommandResult plain = Fsck({"--cache", cache_});
  EXPECT_EQ(plain.exit_code, 0) << plain.err;
  EXPECT_NE(plain.out.find("entries_kept 4\n"), std::string::npos) << plain.out;
  EXPECT_NE(plain.out.find("result consistent\n"), std::string::npos) << plain.out;
}

TEST_F(FsckTest, RepairsDamageAndReportsEachFix) {
  WriteFile(cache_ + "/tmp/0123456789abcdef-1", "half a copy");
  WriteFile(cache_ + "/data/7f/0123456789abcdef-2", "nobody's");
  ASSERT_EQ(unlink(data_paths_["dir/b.bin"].c_str()), 0);
  ASSERT_EQ(truncate(data_paths_["a.bin"].c_str(), 100), 0);

  CommandResult r = Fsck({"--cache", cache_, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.out << r.err;  // fixed, hence consistent
  nlohmann::json j = Json(r);
  EXPECT_EQ(j["consistent"], true);
  EXPECT_EQ(j["recovery"]["temp_removed"], 1);
  EXPECT_EQ(j["recovery"]["entries_dropped"], 2);
  EXPECT_EQ(j["recovery"]["orphans_removed"], 2);  // the stray and the truncated copy
  EXPECT_EQ(j["recovery"]["entries_kept"], 2);
  EXPECT_EQ(j["verify"], nullptr);
  EXPECT_FALSE(PathExists(cache_ + "/tmp/0123456789abcdef-1"));
  EXPECT_FALSE(PathExists(cache_ + "/data/7f/0123456789abcdef-2"));
  EXPECT_FALSE(PathExists(data_paths_["a.bin"]));

  // Nothing left to fix on a second run.
  CommandResult again = Fsck({"--cache", cache_});
  EXPECT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find("temp_removed 0\n"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("entries_dropped 0\n"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("orphans_removed 0\n"), std::string::npos) << again.out;
  EXPECT_NE(again.out.find("entries_kept 2\n"), std::string::npos) << again.out;
  WithStore([&](ContentStore* store) {
    EXPECT_FALSE(store->Contains("a.bin"));
    EXPECT_FALSE(store->Contains("dir/b.bin"));
    EXPECT_EQ(ReadFile(store->Find("dir/sub/c d.bin")->data_path), files_["dir/sub/c d.bin"]);
  });
}

TEST_F(FsckTest, VerifyEvictsACopyWhoseBackingFileChanged) {
  // Same size, one byte changed deep inside: only a byte comparison sees it.
  std::string changed = files_["dir/sub/c d.bin"];
  changed[700000] = static_cast<char>(changed[700000] ^ 0x5a);
  WriteFile(backing_ + "/dir/sub/c d.bin", changed);
  ASSERT_EQ(unlink((backing_ + "/dir/b.bin").c_str()), 0);

  CommandResult r = Fsck({"--cache", cache_, "--verify", "--backing", backing_});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.out.find("mismatched 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("missing 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("mismatch dir/sub/c d.bin: contents differ from byte 700000 (copy evicted)"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("missing dir/b.bin"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("result problems\n"), std::string::npos) << r.out;
  WithStore([&](ContentStore* store) {
    EXPECT_FALSE(store->Contains("dir/sub/c d.bin"));
    EXPECT_TRUE(store->Contains("dir/b.bin"));  // kept: the daemon decides on a fresh listing
    EXPECT_EQ(ReadFile(store->Find("a.bin")->data_path), files_["a.bin"]);
  });
  EXPECT_FALSE(PathExists(data_paths_["dir/sub/c d.bin"]));

  // Once the missing file is back, the cache verifies clean.
  WriteFile(backing_ + "/dir/b.bin", files_["dir/b.bin"]);
  CommandResult clean = Fsck({"--cache", cache_, "--verify", "--backing", backing_, "--json"});
  EXPECT_EQ(clean.exit_code, 0) << clean.out << clean.err;
  EXPECT_EQ(Json(clean)["verify"]["checked"], 3);
}

TEST_F(FsckTest, VerifyCatchesASizeChange) {
  WriteFile(backing_ + "/a.bin", files_["a.bin"] + "more");
  CommandResult r = Fsck({"--cache", cache_, "--verify", "--backing", backing_ + "/", "--json"});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  nlohmann::json j = Json(r);
  EXPECT_EQ(j["consistent"], false);
  EXPECT_EQ(j["verify"]["mismatched"], 1);
  ASSERT_EQ(j["verify"]["problems"].size(), 1u);
  EXPECT_EQ(j["verify"]["problems"][0]["path"], "a.bin");
  EXPECT_EQ(j["verify"]["problems"][0]["evicted"], true);
  EXPECT_EQ(j["recovery"]["entries_kept"], 3);
}

TEST_F(FsckTest, RefusesWhileTheCacheIsInUse) {
  auto held = CacheDir::Acquire(cache_, Env::Default());
  ASSERT_TRUE(held.ok());
  WriteFile(cache_ + "/tmp/inflight", "x");  // must survive: fsck may not touch a live cache
  CommandResult r = Fsck({"--cache", cache_});
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("in use by another clairfs process"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("pid " + std::to_string(getpid())), std::string::npos) << r.err;
  EXPECT_TRUE(PathExists(cache_ + "/tmp/inflight"));
}

TEST_F(FsckTest, UsageErrorsAndNonCaches) {
  EXPECT_EQ(Fsck({}).exit_code, 2);
  CommandResult no_backing = Fsck({"--cache", cache_, "--verify"});
  EXPECT_EQ(no_backing.exit_code, 2);
  EXPECT_NE(no_backing.err.find("--verify needs --backing"), std::string::npos);
  EXPECT_EQ(Fsck({"--cache", cache_, "--backing", backing_}).exit_code, 2);
  EXPECT_EQ(Fsck({"--cache", cache_, "--verify", "--backing", tmp_ / "nope"}).exit_code, 2);
  EXPECT_EQ(Fsck({"--cache", cache_, "--bogus"}).exit_code, 2);

  // A missing or foreign directory is refused and left as it was (never made into a cache).
  CommandResult missing = Fsck({"--cache", tmp_ / "missing"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_NE(missing.err.find("No such file or directory"), std::string::npos) << missing.err;
  EXPECT_FALSE(PathExists(tmp_ / "missing"));
  CommandResult foreign = Fsck({"--cache", backing_});
  EXPECT_EQ(foreign.exit_code, 1);
  EXPECT_NE(foreign.err.find("is not a clairfs cache"), std::string::npos) << foreign.err;
  EXPECT_FALSE(PathExists(backing_ + "/lock"));
  EXPECT_FALSE(PathExists(backing_ + "/FORMAT"));

  CommandResult help = Fsck({"--help"});
  EXPECT_EQ(help.exit_code, 0);
  EXPECT_NE(help.out.find("--verify"), std::string::npos);
  EXPECT_NE(help.out.find("Exit status"), std::string::npos);
}

}  // namespace
}  // namespace clairfs
