// FileSystem, the core behind the FUSE adapter, without a mount: a real backing directory, cache,
// manifest, content store and stager opened as the daemon opens them (cache/cache_opener.h), and
// the core's methods called as the adapter calls them.
#include "fs/filesystem.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <chrono>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "cache/cache_opener.h"
#include "cache/testing/fault_env.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::TempDir;

class FileSystemTest : public ::testing::Test {
 protected:
  void SetUp() override {
    testing::WriteFile(backing_ / "train/cat/a.jpg", "bytes of a");
    testing::WriteFile(backing_ / "train/cat/b.jpg", "bytes of b, longer");
    testing::WriteFile(backing_ / "train/dog/c.jpg", std::string(100000, 'c'));
    ASSERT_EQ(mkfifo((backing_ / "train/fifo").c_str(), 0644), 0);
    ASSERT_EQ(symlink("cat/a.jpg", (backing_ / "train/link.jpg").c_str()), 0);
  }

  void TearDown() override { Close(); }

  // Lists the backing tree into a fresh manifest and opens the core over it.
  void Open(Revalidate revalidate = Revalidate::kNever, bool read_through = true,
            Env* env = Env::Default()) {
    auto tree = BackingTree::Open(backing_.path(), env);
    ASSERT_TRUE(tree.ok()) << tree.status().message();
    CacheOpenOptions open;
    open.cache_dir = cache_.path();
    open.listing = ManifestListing::kRescan;
    open.backing = *tree;
    open.scan_threads = 1;
    auto opened = OpenCache(std::move(open), env);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    cache_stack_ = std::make_unique<OpenedCache>(std::move(*opened));
    StagerOptions stager_options;
    stager_options.backing_root = backing_.path();
    stager_options.backing = *tree;
    stager_options.threads = 1;
    stager_ = std::make_unique<Stager>(stager_options, cache_stack_->store.get(), env);
    FileSystemConfig config;
    config.backing_root = backing_.path();
    config.backing = *tree;
    config.revalidate = revalidate;
    config.read_through = read_through;
    config.no_open = no_open_;
    config.kept_files = kept_files_;
    config.settle_ns = settle_ns_;
    fs_ = std::make_unique<FileSystem>(config, cache_stack_->manifest.get(),
                                       cache_stack_->store.get(), stager_.get(), env);
  }

  void Close() {
    if (stager_) stager_->Shutdown();
    fs_.reset();
    stager_.reset();
    cache_stack_.reset();
  }

  // The inode of `path` (relative to the root), walking with Lookup as the kernel does.
  uint64_t Ino(const std::string& path) {
    uint64_t ino = kRootIno;
    size_t start = 0;
    while (start < path.size()) {
      size_t slash = path.find('/', start);
      if (slash == std::string::npos) slash = path.size();
      auto attr = fs_->Lookup(ino, std::string_view(path).substr(start, slash - start));
      EXPECT_TRUE(attr.ok()) << path << ": " << attr.status().message();
      if (!attr.ok()) return 0;
      ino = attr->ino;
      start = slash + 1;
    }
    return ino;
  }

  // Opens `path` read-only and reads it whole through the core.
  std::string ReadAll(const std::string& path, bool* from_cache = nullptr) {
    auto opened = fs_->Open(Ino(path), O_RDONLY);
    EXPECT_TRUE(opened.ok()) << path << ": " << opened.status().message();
    if (!opened.ok()) return "<error>";
    if (from_cache != nullptr) *from_cache = opened->file->from_cache;
    std::string out;
    char buf[4096];
    for (;;) {
      auto n = fs_->Read(*opened->file, buf, sizeof(buf), static_cast<off_t>(out.size()));
      EXPECT_TRUE(n.ok()) << n.status().message();
      if (!n.ok() || *n == 0) break;
      out.append(buf, *n);
    }
    fs_->Release(std::move(opened->file));
    return out;
  }

  // No-open mode: reads `path` whole by inode, as READs without an OPEN arrive.
  std::string ReadByInode(const std::string& path, size_t chunk = 4096) {
    const uint64_t ino = Ino(path);
    std::string out;
    std::vector<char> buf(chunk);
    for (;;) {
      auto file = fs_->FileForRead(ino, out.size());
      EXPECT_TRUE(file.ok()) << path << ": " << file.status().message();
      if (!file.ok()) return "<error>";
      auto n = fs_->Read(**file, buf.data(), buf.size(), static_cast<off_t>(out.size()));
      EXPECT_TRUE(n.ok()) << n.status().message();
      if (!n.ok() || *n == 0) break;
      // As the adapter does after its reply.
      if ((*file)->drop_pages) FileSystem::DropPages(**file, out.size(), *n);
      out.append(buf.data(), *n);
    }
    return out;
  }

  bool no_open_ = false;
  size_t kept_files_ = 1024;
  uint64_t settle_ns_ = 0;
  TempDir backing_;
  TempDir cache_;
  std::unique_ptr<OpenedCache> cache_stack_;
  std::unique_ptr<Stager> stager_;
  std::unique_ptr<FileSystem> fs_;
};

TEST_F(FileSystemTest, LookupGetattrAndReaddirComeFromTheListing) {
  Open();
  const uint64_t train = Ino("train");
  auto attr = fs_->GetAttr(train);
  ASSERT_TRUE(attr.ok());
  EXPECT_TRUE(attr->is_dir());
  auto b = fs_->Lookup(Ino("train/cat"), "b.jpg");
  ASSERT_TRUE(b.ok());
  EXPECT_TRUE(b->is_reg());
  EXPECT_EQ(b->size, std::string("bytes of b, longer").size());
  auto missing = fs_->Lookup(train, "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.status().code(), ENOENT);
  EXPECT_EQ(fs_->GetAttr(123456789).status().code(), ENOENT);

  // Removing a backing file changes nothing the core says until the next listing.
  ASSERT_EQ(unlink((backing_ / "train/cat/a.jpg").c_str()), 0);
  EXPECT_TRUE(fs_->Lookup(Ino("train/cat"), "a.jpg").ok());

  auto listing = fs_->OpenDir(train);
  ASSERT_TRUE(listing.ok()) << listing.status().message();
  std::vector<std::string> names;
  for (const ManifestChild& child : (*listing)->children) names.push_back(child.name);
  EXPECT_EQ(names, (std::vector<std::string>{"cat", "dog", "fifo", "link.jpg"}));
  EXPECT_EQ((*listing)->ino, train);
  EXPECT_EQ((*listing)->parent_ino, kRootIno);

  auto target = fs_->ReadLink(Ino("train/link.jpg"));
  ASSERT_TRUE(target.ok());
  EXPECT_EQ(*target, "cat/a.jpg");
}

TEST_F(FileSystemTest, AnUnstagedFileIsReadFromTheBackingStoreThenServedFromItsCopy) {
  Open();
  bool from_cache = true;
  EXPECT_EQ(ReadAll("train/dog/c.jpg", &from_cache), std::string(100000, 'c'));
  EXPECT_FALSE(from_cache);
  EXPECT_EQ(fs_->counters().misses.value.load(), 1u);
  // Read-through queued a copy; once published, the next open is a hit with the same bytes.
  stager_->WaitIdle();
  EXPECT_EQ(ReadAll("train/dog/c.jpg", &from_cache), std::string(100000, 'c'));
  EXPECT_TRUE(from_cache);
  EXPECT_EQ(fs_->counters().hits.value.load(), 1u);
  EXPECT_EQ(fs_->counters().bytes_from_cache.value.load(), 100000u);
  EXPECT_EQ(fs_->counters().bytes_from_backing.value.load(), 100000u);
}

// Answers OnMiss with a cause per path (unplanned for the rest) and records the misses it saw.
class CauseObserver : public OpenObserver {
 public:
  bool OnOpen(const std::string&, Opener) override { return false; }
  MissCause OnMiss(const std::string& path) override {
    asked.push_back(path);
    auto it = causes.find(path);
    return it != causes.end() ? it->second : MissCause::kUnplanned;
  }
  std::map<std::string, MissCause> causes;
  std::vector<std::string> asked;
};

TEST_F(FileSystemTest, EachMissIsCountedUnderTheCauseTheObserverGives) {
  Open(Revalidate::kNever, /*read_through=*/false);
  CauseObserver observer;
  observer.causes["train/cat/a.jpg"] = MissCause::kCopyInFlight;
  observer.causes["train/cat/b.jpg"] = MissCause::kLeftToReader;
  fs_->set_open_observer(&observer);
  ReadAll("train/cat/a.jpg");
  ReadAll("train/cat/a.jpg");
  ReadAll("train/cat/b.jpg");
  ReadAll("train/dog/c.jpg");
  const MountCounters& c = fs_->counters();
  EXPECT_EQ(c.misses.Get(), 4u);
  EXPECT_EQ(c.misses_copy_in_flight.Get(), 2u);
  EXPECT_EQ(c.misses_left_to_reader.Get(), 1u);
  EXPECT_EQ(c.misses_unplanned.Get(), 1u);
  EXPECT_EQ(c.misses_copy_queued.Get() + c.misses_not_staged_ahead.Get(), 0u);
  // A hit asks nothing.
  auto c_node = cache_stack_->manifest->GetByPath("train/dog/c.jpg");
  ASSERT_TRUE(c_node.ok() && c_node->has_value());
  const FileIdentity c_identity = (*c_node)->attr.identity();
  ASSERT_TRUE(stager_->Enqueue("train/dog/c.jpg", c_identity, StagePriority::kNormal));
  stager_->WaitIdle();
  observer.asked.clear();
  bool from_cache = false;
  ReadAll("train/dog/c.jpg", &from_cache);
  EXPECT_TRUE(from_cache);
  EXPECT_TRUE(observer.asked.empty());
  EXPECT_EQ(c.misses.Get(), 4u);
  fs_->set_open_observer(nullptr);
}

// Files and directories the kernel still held when its connection ended get no RELEASE: the
// filesystem releases them when it goes, so their fds are closed (and nothing leaks: ASan's
// leak check runs this test in CI).
TEST_F(FileSystemTest, HandlesTheKernelNeverReleasedAreReleasedWithTheFileSystem) {
  Open();
  std::vector<int> fds;
  for (const char* path : {"train/cat/a.jpg", "train/dog/c.jpg"}) {
    auto opened = fs_->Open(Ino(path), O_RDONLY);
    ASSERT_TRUE(opened.ok()) << opened.status().message();
    char buf[16];
    ASSERT_TRUE(fs_->Read(*opened->file, buf, sizeof(buf), 0).ok());
    const int fd = opened->file->fd.load();
    ASSERT_GE(fd, 0);
    fds.push_back(fd);
    (void)opened->file.release();  // handed to the kernel, which never sends its RELEASE
  }
  auto listing = fs_->OpenDir(Ino("train"));
  ASSERT_TRUE(listing.ok()) << listing.status().message();
  (void)listing->release();
  // One handle released as usual leaves the list in its destructor.
  ASSERT_EQ(ReadAll("train/cat/b.jpg"), "bytes of b, longer");
  stager_->Shutdown();
  fs_.reset();
  for (int fd : fds) {
    errno = 0;
    EXPECT_EQ(fcntl(fd, F_GETFD), -1) << "fd " << fd << " still open";
    EXPECT_EQ(errno, EBADF);
  }
}

// No-open mode: READs by inode with no OPEN. A file's first READ is its open (a miss, then hits),
// later READs reuse the kept file uncounted, a kept copy that leaves the store is let go, and the
// per-file counters include the files still kept.
TEST_F(FileSystemTest, NoOpenReadsByInodeCountTheFirstReadAsTheOpen) {
  no_open_ = true;
  kept_files_ = 2;
  Open();
  const std::string c(100000, 'c');
  auto& counters = fs_->counters();
  EXPECT_EQ(ReadByInode("train/dog/c.jpg"), c);
  EXPECT_EQ(counters.opens.Get(), 1u);
  EXPECT_EQ(counters.misses.Get(), 1u);
  EXPECT_EQ(counters.reads.Get(), 26u);  // 25 reads of 4096 bytes and the one at the end
  EXPECT_EQ(fs_->kept_files(), 1u);
  stager_->WaitIdle();
  // Staged since: the next first READ opens the copy (a hit), and the one after reuses it.
  EXPECT_EQ(ReadByInode("train/dog/c.jpg"), c);
  auto first = fs_->FileForRead(Ino("train/dog/c.jpg"), 0);
  ASSERT_TRUE(first.ok());
  EXPECT_TRUE((*first)->from_cache);
  EXPECT_TRUE((*first)->drop_pages);  // the FUSE file's pages are the cache
  // The read of the copy left none of its pages cached (the copy was read whole just before).
  EXPECT_EQ(testing::ResidentPages((*first)->data_path), 0u);
  EXPECT_EQ(counters.opens.Get(), 3u);
  EXPECT_EQ(counters.hits.Get(), 2u);
  auto again = fs_->FileForRead(Ino("train/dog/c.jpg"), 0);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->get(), first->get());  // kept: no open of its own
  EXPECT_EQ(counters.hits.Get(), 3u);
  first->reset();
  again->reset();
  // Two more files take the bound of 2: c.jpg's file is let go; a READ in mid-file opens it
  // again, uncounted.
  EXPECT_EQ(ReadByInode("train/cat/a.jpg"), "bytes of a");
  EXPECT_EQ(ReadByInode("train/cat/b.jpg"), "bytes of b, longer");
  EXPECT_EQ(fs_->kept_files(), 2u);
  const uint64_t opens = counters.opens.Get();
  auto middle = fs_->FileForRead(Ino("train/dog/c.jpg"), 4096);
  ASSERT_TRUE(middle.ok());
  char buf[10];
  auto n = fs_->Read(**middle, buf, sizeof(buf), 4096);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(buf, *n), std::string(10, 'c'));
  EXPECT_EQ(counters.opens.Get(), opens);
  middle->reset();
  // Its copy leaves the store: the kept file is let go at once, and the next first READ misses.
  const uint64_t misses = counters.misses.Get();
  ASSERT_TRUE(cache_stack_->store->Evict("train/dog/c.jpg", /*force=*/true).ok());
  EXPECT_EQ(fs_->kept_files(), 1u);
  EXPECT_EQ(ReadByInode("train/dog/c.jpg"), c);
  EXPECT_EQ(counters.misses.Get(), misses + 1);
  // The per-file counters include what the kept files read so far.
  uint64_t c_opens = 0, c_bytes = 0;
  for (const FileStatsRow& row : fs_->FileStatsSnapshot()) {
    if (row.path != "train/dog/c.jpg") continue;
    for (const FileIoCounters& by : row.by_source) {
      c_opens += by.opens;
      c_bytes += by.bytes_read;
    }
  }
  EXPECT_EQ(c_opens, 5u);                 // a miss, three hits, a miss
  EXPECT_EQ(c_bytes, 3 * c.size() + 10);  // the two hits that only asked for the file read none
}

// Opens and READs that must call the backing store are handed on (OpenResult::deferred, a null
// FileForRead) before anything is counted or done; hits are served as usual; an open again
// without deferral counts once (docs/RELIABILITY.md, backing store faults, finding 3).
TEST_F(FileSystemTest, OpensThatMustCallTheBackingStoreAreDeferredWithNothingDone) {
  Open();
  auto& counters = fs_->counters();
  const uint64_t ino = Ino("train/dog/c.jpg");
  auto deferred = fs_->Open(ino, O_RDONLY, true, nullptr, /*defer_backing=*/true);
  ASSERT_TRUE(deferred.ok()) << deferred.status().message();
  EXPECT_TRUE(deferred->deferred);
  EXPECT_EQ(deferred->file, nullptr);
  EXPECT_EQ(counters.opens.Get(), 0u);
  EXPECT_EQ(counters.misses.Get(), 0u);
  EXPECT_EQ(stager_->stats().queued + stager_->stats().in_flight + stager_->stats().files_staged,
            0u);  // read-through queued nothing
  // Errors found without the backing store are still answered at once.
  EXPECT_EQ(fs_->Open(Ino("train/cat"), O_RDONLY, true, nullptr, true).status().code(), EISDIR);
  EXPECT_EQ(fs_->Open(ino, O_RDWR, true, nullptr, true).status().code(), EROFS);
  // The same open where it may wait: a miss, counted once, read from the backing file.
  auto miss = fs_->Open(ino, O_RDONLY, true, nullptr, /*defer_backing=*/false);
  ASSERT_TRUE(miss.ok());
  ASSERT_NE(miss->file, nullptr);
  EXPECT_FALSE(miss->deferred);
  EXPECT_TRUE(FileSystem::ReadCallsBacking(*miss->file));
  EXPECT_EQ(counters.opens.Get(), 1u);
  EXPECT_EQ(counters.misses.Get(), 1u);
  fs_->Release(std::move(miss->file));
  stager_->WaitIdle();
  // Staged: a deferrable open is a hit, served here, and its READs read the copy.
  for (bool open_copy_now : {true, false}) {
    auto hit = fs_->Open(ino, O_RDONLY, open_copy_now, nullptr, /*defer_backing=*/true);
    ASSERT_TRUE(hit.ok());
    EXPECT_FALSE(hit->deferred);
    ASSERT_NE(hit->file, nullptr);
    EXPECT_TRUE(hit->file->from_cache);
    EXPECT_FALSE(FileSystem::ReadCallsBacking(*hit->file));
    char buf[5];
    auto n = fs_->Read(*hit->file, buf, sizeof(buf), 0);
    ASSERT_TRUE(n.ok());
    EXPECT_EQ(std::string(buf, *n), "ccccc");
    fs_->Release(std::move(hit->file));
  }
  EXPECT_EQ(counters.opens.Get(), 3u);
  EXPECT_EQ(counters.hits.Get(), 2u);
  EXPECT_EQ(counters.misses.Get(), 1u);
  // A copy that is gone since it was found in the index: deferred, not served from the backing
  // store here (and not counted).
  ASSERT_EQ(unlink(cache_stack_->store->Find("train/dog/c.jpg", false)->data_path.c_str()), 0);
  auto gone = fs_->Open(ino, O_RDONLY, true, nullptr, /*defer_backing=*/true);
  ASSERT_TRUE(gone.ok());
  EXPECT_TRUE(gone->deferred);
  EXPECT_EQ(counters.opens.Get(), 3u);
}

TEST_F(FileSystemTest, UnderRevalidateOpenEveryDeferrableOpenIsDeferred) {
  Open(Revalidate::kOpen);
  EXPECT_EQ(ReadAll("train/cat/a.jpg"), "bytes of a");
  stager_->WaitIdle();
  const uint64_t opens = fs_->counters().opens.Get();
  // Staged, but the open stats the backing file first.
  auto deferred = fs_->Open(Ino("train/cat/a.jpg"), O_RDONLY, true, nullptr, true);
  ASSERT_TRUE(deferred.ok());
  EXPECT_TRUE(deferred->deferred);
  EXPECT_EQ(fs_->counters().opens.Get(), opens);
}

TEST_F(FileSystemTest, NoOpenReadsThatMustCallTheBackingStoreAreDeferred) {
  no_open_ = true;
  Open(Revalidate::kNever, /*read_through=*/false);
  auto& counters = fs_->counters();
  const uint64_t ino = Ino("train/cat/b.jpg");
  // Not kept, not staged: the first READ would open the backing file.
  auto file = fs_->FileForRead(ino, 0, /*defer_backing=*/true);
  ASSERT_TRUE(file.ok());
  EXPECT_EQ(*file, nullptr);
  EXPECT_EQ(counters.opens.Get(), 0u);
  EXPECT_EQ(fs_->kept_files(), 0u);
  // Served where it may wait: kept from the backing file; a later READ of it is deferred too.
  file = fs_->FileForRead(ino, 0);
  ASSERT_TRUE(file.ok());
  ASSERT_NE(*file, nullptr);
  EXPECT_FALSE((*file)->from_cache);
  file->reset();
  EXPECT_EQ(counters.opens.Get(), 1u);
  auto later = fs_->FileForRead(ino, 4, /*defer_backing=*/true);
  ASSERT_TRUE(later.ok());
  EXPECT_EQ(*later, nullptr);
  // Staged since: the first READ opens the copy here (a hit), and later READs use it.
  ASSERT_TRUE(
      stager_->Enqueue("train/cat/b.jpg", fs_->GetAttr(ino)->identity(), StagePriority::kNormal));
  stager_->WaitIdle();
  auto copy = fs_->FileForRead(ino, 0, /*defer_backing=*/true);
  ASSERT_TRUE(copy.ok());
  ASSERT_NE(*copy, nullptr);
  EXPECT_TRUE((*copy)->from_cache);
  auto next = fs_->FileForRead(ino, 4, /*defer_backing=*/true);
  ASSERT_TRUE(next.ok());
  EXPECT_EQ(next->get(), copy->get());
}

// A staged copy that cannot be read (its device failed) is served from the listed backing file,
// counted, and the next opens go to the backing store without trying a copy.
TEST_F(FileSystemTest, ACopyThatFailsToReadIsServedFromTheBackingFile) {
  FaultInjectionEnv env;
  Open(Revalidate::kNever, true, &env);
  const std::string c(100000, 'c');
  EXPECT_EQ(ReadAll("train/dog/c.jpg"), c);
  stager_->WaitIdle();
  env.FailPath(FaultOp::kPread, cache_.path() + "/data/", EIO);
  bool from_cache = false;
  EXPECT_EQ(ReadAll("train/dog/c.jpg", &from_cache), c);
  EXPECT_TRUE(from_cache);  // a hit at open; its first read failed over
  EXPECT_EQ(fs_->counters().copy_read_fallbacks.value.load(), 1u);
  EXPECT_FALSE(cache_stack_->store->copies_readable());
  EXPECT_EQ(ReadAll("train/dog/c.jpg", &from_cache), c);
  EXPECT_FALSE(from_cache);
  EXPECT_EQ(fs_->counters().copy_read_fallbacks.value.load(), 1u);
  EXPECT_EQ(fs_->counters().bytes_from_cache.value.load(), 0u);
  EXPECT_EQ(fs_->counters().bytes_from_backing.value.load(), 3 * c.size());
  Close();  // before `env` goes
}

TEST_F(FileSystemTest, ACopyThatFailsToOpenIsServedFromTheBackingFile) {
  FaultInjectionEnv env;
  Open(Revalidate::kNever, true, &env);
  EXPECT_EQ(ReadAll("train/cat/b.jpg"), "bytes of b, longer");
  stager_->WaitIdle();
  env.FailPath(FaultOp::kOpen, cache_.path() + "/data/", EIO);
  // Opened now (as in passthrough) and at the first read (DataFd): both fall back.
  auto opened = fs_->Open(Ino("train/cat/b.jpg"), O_RDONLY, /*open_copy_now=*/true);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_FALSE(opened->file->from_cache);
  fs_->Release(std::move(opened->file));
  EXPECT_EQ(fs_->counters().copy_read_fallbacks.value.load(), 1u);
  // A fresh store tries copies again; this open defers the copy to its first READ (DataFd).
  Close();
  Open(Revalidate::kNever, true, &env);
  opened = fs_->Open(Ino("train/cat/b.jpg"), O_RDONLY, /*open_copy_now=*/false);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_TRUE(opened->file->from_cache);
  char buf[64];
  auto n = fs_->Read(*opened->file, buf, sizeof(buf), 0);
  ASSERT_TRUE(n.ok()) << n.status().message();
  EXPECT_EQ(std::string(buf, *n), "bytes of b, longer");
  fs_->Release(std::move(opened->file));
  EXPECT_EQ(fs_->counters().copy_read_fallbacks.value.load(), 1u);
  EXPECT_EQ(fs_->counters().bytes_from_backing.value.load(), *n);
  Close();
}

TEST_F(FileSystemTest, WithoutReadThroughNothingIsStaged) {
  Open(Revalidate::kNever, /*read_through=*/false);
  bool from_cache = true;
  EXPECT_EQ(ReadAll("train/cat/a.jpg", &from_cache), "bytes of a");
  stager_->WaitIdle();
  EXPECT_EQ(ReadAll("train/cat/a.jpg", &from_cache), "bytes of a");
  EXPECT_FALSE(from_cache);
  EXPECT_EQ(fs_->counters().hits.value.load(), 0u);
}

TEST_F(FileSystemTest, AChangedOrVanishedFileIsNeverServedAsTheListedOne) {
  Open();
  // Replaced by another file under the same name: not the listed version.
  testing::WriteFile(backing_ / "train/cat/b.jpg.new", "other bytes");
  ASSERT_EQ(
      rename((backing_ / "train/cat/b.jpg.new").c_str(), (backing_ / "train/cat/b.jpg").c_str()),
      0);
  auto changed = fs_->Open(Ino("train/cat/b.jpg"), O_RDONLY);
  ASSERT_FALSE(changed.ok());
  EXPECT_EQ(changed.status().code(), ESTALE);
  EXPECT_EQ(fs_->counters().not_as_listed.value.load(), 1u);
  // Gone: the reader is told so, for that file only.
  ASSERT_EQ(unlink((backing_ / "train/cat/a.jpg").c_str()), 0);
  auto vanished = fs_->Open(Ino("train/cat/a.jpg"), O_RDONLY);
  ASSERT_FALSE(vanished.ok());
  EXPECT_EQ(vanished.status().code(), ENOENT);
  EXPECT_EQ(ReadAll("train/dog/c.jpg"), std::string(100000, 'c'));
}

TEST_F(FileSystemTest, AStagedCopyOfAChangedFileIsDroppedNotServed) {
  Open(Revalidate::kOpen);
  EXPECT_EQ(ReadAll("train/cat/b.jpg"), "bytes of b, longer");
  stager_->WaitIdle();
  bool from_cache = false;
  EXPECT_EQ(ReadAll("train/cat/b.jpg", &from_cache), "bytes of b, longer");
  ASSERT_TRUE(from_cache);
  // A new version (another size): revalidation at open finds it, drops the copy, serves the new
  // bytes from the backing store and tells the kernel not to keep its pages.
  testing::WriteFile(backing_ / "train/cat/b.jpg", "new b");
  auto opened = fs_->Open(Ino("train/cat/b.jpg"), O_RDONLY);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_FALSE(opened->file->from_cache);
  EXPECT_FALSE(opened->keep_cache);
  char buf[64];
  auto n = fs_->Read(*opened->file, buf, sizeof(buf), 0);
  ASSERT_TRUE(n.ok());
  EXPECT_EQ(std::string(buf, *n), "new b");
  fs_->Release(std::move(opened->file));
  EXPECT_EQ(fs_->counters().stale_detected.value.load(), 1u);
  EXPECT_EQ(fs_->GetAttr(Ino("train/cat/b.jpg"))->size, 5u);
}

// Records the kernel invalidations the core asks for.
class RecordingNotifier : public KernelNotifier {
 public:
  void InvalidateInode(uint64_t ino) override { invalidated.push_back(ino); }
  std::vector<uint64_t> invalidated;
};

TEST_F(FileSystemTest, AChangeAGetattrFoundInvalidatesTheInodeAtTheNextOpen) {
  Open(Revalidate::kOpen);
  RecordingNotifier notifier;
  fs_->set_notifier(&notifier);
  const uint64_t ino = Ino("train/cat/b.jpg");
  EXPECT_EQ(ReadAll("train/cat/b.jpg"), "bytes of b, longer");
  testing::WriteFile(backing_ / "train/cat/b.jpg", "new b");
  // The GETATTR finds the change and replies the fresh size, with no invalidation (it would make
  // the kernel drop that very reply).
  auto attr = fs_->GetAttr(ino);
  ASSERT_TRUE(attr.ok()) << attr.status().message();
  EXPECT_EQ(attr->size, 5u);
  EXPECT_TRUE(notifier.invalidated.empty());
  // The next open drops the kernel's pages and attributes both, in case that reply was dropped.
  auto opened = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_FALSE(opened->keep_cache);
  EXPECT_EQ(notifier.invalidated, std::vector<uint64_t>{ino});
  fs_->Release(std::move(opened->file));
  // Once only: the open after that keeps its cache.
  auto again = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(again.ok());
  EXPECT_TRUE(again->keep_cache);
  EXPECT_EQ(notifier.invalidated.size(), 1u);
  fs_->Release(std::move(again->file));
  fs_->set_notifier(nullptr);
}

// Runs an open of the inode it is asked to invalidate, once, before it "tells the kernel": an open
// that arrives on another thread while the thread that found a change has updated the manifest
// but not yet invalidated the kernel's caches.
class OpenWhileInvalidatingNotifier : public KernelNotifier {
 public:
  explicit OpenWhileInvalidatingNotifier(FileSystem* fs) : fs_(fs) {}
  void InvalidateInode(uint64_t ino) override {
    if (nested_runs_ < nested_opens_wanted) {
      ++nested_runs_;
      auto opened = fs_->Open(ino, O_RDONLY);
      if (opened.ok()) {
        nested_keep_cache.push_back(opened->keep_cache);
        nested_direct_io.push_back(opened->direct_io);
        fs_->Release(std::move(opened->file));
      }
    }
    invalidated.push_back(ino);
  }
  int nested_opens_wanted = 1;
  std::vector<bool> nested_keep_cache;  // of each nested open
  std::vector<bool> nested_direct_io;
  std::vector<uint64_t> invalidated;  // in the order they reached the kernel

 private:
  FileSystem* fs_;
  int nested_runs_ = 0;
};

// docs/RELIABILITY.md, backing store faults, finding 2 (the stale reads that remained): an open
// that finds no change because another thread has just recorded it, before that thread has told
// the kernel, must not be answered from the kernel's caches (the old size and pages): it reads
// with direct I/O, and sends no invalidation of its own (the other thread's comes; one more
// could cross the READs of the opens that thread answers).
TEST_F(FileSystemTest, AnOpenDuringAnotherThreadsInvalidationBypassesTheKernelsCaches) {
  Open(Revalidate::kOpen);
  OpenWhileInvalidatingNotifier notifier(fs_.get());
  fs_->set_notifier(&notifier);
  const uint64_t ino = Ino("train/cat/b.jpg");
  EXPECT_EQ(ReadAll("train/cat/b.jpg"), "bytes of b, longer");
  testing::WriteFile(backing_ / "train/cat/b.jpg", "new b, grown longer than before");
  auto opened = fs_->Open(ino, O_RDONLY);  // finds the change; the nested open runs meanwhile
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_FALSE(opened->keep_cache);
  EXPECT_FALSE(opened->direct_io);  // its reads come after its invalidation
  ASSERT_EQ(notifier.nested_keep_cache.size(), 1u);
  EXPECT_FALSE(notifier.nested_keep_cache[0]) << "answered from the kernel's stale caches";
  EXPECT_TRUE(notifier.nested_direct_io[0]) << "answered from the kernel's stale caches";
  EXPECT_EQ(notifier.invalidated, std::vector<uint64_t>{ino});
  fs_->Release(std::move(opened->file));
  // Once the kernel is told, opens read through its caches again.
  auto later = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->keep_cache);
  EXPECT_FALSE(later->direct_io);
  EXPECT_EQ(notifier.invalidated.size(), 1u);
  fs_->Release(std::move(later->file));
  EXPECT_EQ(fs_->counters().stale_detected.value.load(), 1u);
  fs_->set_notifier(nullptr);
}

// The same for the invalidation a GETATTR's finding leaves to the next open: while that open is
// telling the kernel, another open must not be answered from its caches either.
TEST_F(FileSystemTest, AnOpenDuringTheInvalidationAGetattrLeftBypassesTheKernelsCaches) {
  Open(Revalidate::kOpen);
  OpenWhileInvalidatingNotifier notifier(fs_.get());
  fs_->set_notifier(&notifier);
  const uint64_t ino = Ino("train/cat/b.jpg");
  testing::WriteFile(backing_ / "train/cat/b.jpg", "new b, grown longer than before");
  ASSERT_TRUE(fs_->GetAttr(ino).ok());  // finds the change, leaves the pages to the next open
  EXPECT_TRUE(notifier.invalidated.empty());
  auto opened = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(opened.ok()) << opened.status().message();
  EXPECT_FALSE(opened->keep_cache);
  ASSERT_EQ(notifier.nested_keep_cache.size(), 1u);
  EXPECT_FALSE(notifier.nested_keep_cache[0]) << "answered from the kernel's stale caches";
  EXPECT_TRUE(notifier.nested_direct_io[0]) << "answered from the kernel's stale caches";
  EXPECT_EQ(notifier.invalidated, std::vector<uint64_t>{ino});
  fs_->Release(std::move(opened->file));
  auto later = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->keep_cache);
  fs_->Release(std::move(later->file));
  fs_->set_notifier(nullptr);
}

// docs/RELIABILITY.md, backing store faults, finding 2: an open that began before a change and is
// counted live after another thread recorded it (and, here, after that thread's opens are gone)
// is of a superseded version: its bytes must not enter the page cache, and once it goes the next
// open drops the pages. (Before, the release compared with the newest version opened, which such
// a late open of the old version had become.)
TEST_F(FileSystemTest, AnOpenOfAVersionSupersededWhileItOpenedKeepsOutOfThePageCache) {
  FaultInjectionEnv env;
  Open(Revalidate::kOpen, true, &env);
  RecordingNotifier notifier;
  fs_->set_notifier(&notifier);
  const uint64_t ino = Ino("train/cat/b.jpg");
  EXPECT_EQ(ReadAll("train/cat/b.jpg"), "bytes of b, longer");
  stager_->WaitIdle();  // staged: the late open below is a hit on the old copy
  // While the late open opens the old copy (it stat'ed the file before the change), the file is
  // rewritten and another open records the change, reads and goes.
  env.AfterOpen(cache_.path() + "/data/", [&] {
    testing::WriteFile(backing_ / "train/cat/b.jpg", "new b, of another length");
    auto other = fs_->Open(ino, O_RDONLY);
    ASSERT_TRUE(other.ok()) << other.status().message();
    EXPECT_FALSE(other->keep_cache);
    fs_->Release(std::move(other->file));
  });
  auto late = fs_->Open(ino, O_RDONLY, /*open_copy_now=*/true);
  ASSERT_TRUE(late.ok()) << late.status().message();
  EXPECT_TRUE(late->file->from_cache);
  EXPECT_TRUE(late->direct_io) << "the old version's bytes would enter the page cache";
  const size_t invalidations = notifier.invalidated.size();
  fs_->Release(std::move(late->file));
  auto next = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->keep_cache) << "the pages the late open may have read were kept";
  EXPECT_EQ(notifier.invalidated.size(), invalidations + 1);
  fs_->Release(std::move(next->file));
  fs_->set_notifier(nullptr);
  Close();  // before `env` goes
}

// The last release of an old version queues its pages' drop. An open that had found nothing to
// drop, and is counted live only after that release, must not be answered from the kernel's
// pages either: they may still be the old version's. (Before, such an open was answered with
// keep_cache and read them: the release was not yet queued when it looked, and no other version
// was live when it was counted.)
TEST_F(FileSystemTest, AnOpenCountedAfterTheLastOldOpenWentNeverReadsTheOldPages) {
  FaultInjectionEnv env;
  Open(Revalidate::kOpen, /*read_through=*/false, &env);
  RecordingNotifier notifier;
  fs_->set_notifier(&notifier);
  const uint64_t ino = Ino("train/cat/b.jpg");
  auto old_open = fs_->Open(ino, O_RDONLY);  // of the listed version
  ASSERT_TRUE(old_open.ok()) << old_open.status().message();
  testing::WriteFile(backing_ / "train/cat/b.jpg", "new b, of another length");
  EXPECT_EQ(ReadAll("train/cat/b.jpg"), "new b, of another length");  // records the change
  auto now = fs_->GetAttr(ino);
  ASSERT_TRUE(now.ok());
  stager_->Enqueue("train/cat/b.jpg", now->identity(), StagePriority::kNormal);
  stager_->WaitIdle();  // the new version staged: the open below is a hit on its copy
  // While that open opens the copy (after it found nothing to drop), the old open goes.
  env.AfterOpen(cache_.path() + "/data/", [&] { fs_->Release(std::move(old_open->file)); });
  auto late = fs_->Open(ino, O_RDONLY, /*open_copy_now=*/true);
  ASSERT_TRUE(late.ok()) << late.status().message();
  EXPECT_TRUE(late->file->from_cache);
  EXPECT_TRUE(late->direct_io) << "answered from pages the old version's open may have read";
  const size_t invalidations = notifier.invalidated.size();
  fs_->Release(std::move(late->file));
  auto next = fs_->Open(ino, O_RDONLY);  // drops the pages
  ASSERT_TRUE(next.ok());
  EXPECT_FALSE(next->keep_cache);
  EXPECT_FALSE(next->direct_io);
  EXPECT_EQ(notifier.invalidated.size(), invalidations + 1);
  fs_->Release(std::move(next->file));
  auto later = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->keep_cache);
  EXPECT_FALSE(later->direct_io);
  fs_->Release(std::move(later->file));
  fs_->set_notifier(nullptr);
  Close();  // before `env` goes
}

// The settle rule for the page cache: a file changed within the settle time may still be being
// written (its ctime is set when a write begins), so pages read from it then may be half new,
// half old, with no change left to find once the write ends. Its opens keep no pages from before
// them, and the first open after it has settled drops the pages read meanwhile.
TEST_F(FileSystemTest, UnderRevalidateOpenPagesReadBeforeAFileSettledAreDroppedOnceItHas) {
  settle_ns_ = 300'000'000;  // 300 ms
  Open(Revalidate::kOpen);
  RecordingNotifier notifier;
  fs_->set_notifier(&notifier);
  const uint64_t ino = Ino("train/cat/b.jpg");
  std::this_thread::sleep_for(std::chrono::milliseconds(350));  // SetUp's write has settled
  EXPECT_EQ(ReadAll("train/cat/b.jpg"), "bytes of b, longer");
  testing::WriteFile(backing_ / "train/cat/b.jpg", "new b, written just now");
  auto changed = fs_->Open(ino, O_RDONLY);  // finds the change: invalidates
  ASSERT_TRUE(changed.ok()) << changed.status().message();
  EXPECT_FALSE(changed->keep_cache);
  EXPECT_FALSE(changed->direct_io);  // mmap works
  fs_->Release(std::move(changed->file));
  auto unsettled = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(unsettled.ok());
  EXPECT_FALSE(unsettled->keep_cache);
  EXPECT_FALSE(unsettled->direct_io);
  fs_->Release(std::move(unsettled->file));
  EXPECT_EQ(notifier.invalidated.size(), 1u);
  std::this_thread::sleep_for(std::chrono::milliseconds(350));
  auto settled = fs_->Open(ino, O_RDONLY);  // drops what was read before it settled
  ASSERT_TRUE(settled.ok());
  EXPECT_FALSE(settled->keep_cache);
  EXPECT_EQ(notifier.invalidated.size(), 2u);
  fs_->Release(std::move(settled->file));
  auto later = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(later.ok());
  EXPECT_TRUE(later->keep_cache);
  EXPECT_EQ(notifier.invalidated.size(), 2u);
  fs_->Release(std::move(later->file));
  fs_->set_notifier(nullptr);
}

// docs/RELIABILITY.md, backing store faults, finding 2: the kernel's page cache is shared by all
// opens of an inode, and an open of the old version still live after a change refills it with
// the old bytes. So while one is live, opens of the new version are answered with direct I/O,
// and once the last is released the next open drops the pages it may have left.
TEST_F(FileSystemTest, OpensOfANewVersionBypassThePageCacheWhileOldOnesAreLive) {
  Open(Revalidate::kOpen);
  RecordingNotifier notifier;
  fs_->set_notifier(&notifier);
  const uint64_t ino = Ino("train/cat/b.jpg");
  auto old_open = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(old_open.ok()) << old_open.status().message();
  EXPECT_FALSE(old_open->direct_io);
  auto same = fs_->Open(ino, O_RDONLY);  // the same version: its pages are right
  ASSERT_TRUE(same.ok());
  EXPECT_FALSE(same->direct_io);
  EXPECT_TRUE(same->keep_cache);
  fs_->Release(std::move(same->file));
  testing::WriteFile(backing_ / "train/cat/b.jpg", "new b");
  auto new_open = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(new_open.ok());
  EXPECT_TRUE(new_open->direct_io);
  EXPECT_FALSE(new_open->keep_cache);
  auto another = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(another.ok());
  EXPECT_TRUE(another->direct_io);  // the old open is still live
  fs_->Release(std::move(another->file));
  const size_t invalidations = notifier.invalidated.size();
  fs_->Release(std::move(old_open->file));
  // The old version's last open is gone: opens are normal again, and the first drops the pages.
  auto after = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(after.ok());
  EXPECT_FALSE(after->direct_io);
  EXPECT_FALSE(after->keep_cache);
  EXPECT_EQ(notifier.invalidated.size(), invalidations + 1);
  fs_->Release(std::move(after->file));
  fs_->Release(std::move(new_open->file));
  auto later = fs_->Open(ino, O_RDONLY);
  ASSERT_TRUE(later.ok());
  EXPECT_FALSE(later->direct_io);
  EXPECT_TRUE(later->keep_cache);
  fs_->Release(std::move(later->file));
  fs_->set_notifier(nullptr);
}

TEST_F(FileSystemTest, EveryWritingOpenIsErofsAndOnlyRegularFilesOpen) {
  Open();
  const uint64_t a = Ino("train/cat/a.jpg");
  for (int flags :
       {O_WRONLY, O_RDWR, O_RDONLY | O_TRUNC, O_RDONLY | O_CREAT, O_WRONLY | O_APPEND}) {
    auto opened = fs_->Open(a, flags);
    ASSERT_FALSE(opened.ok()) << flags;
    EXPECT_EQ(opened.status().code(), EROFS) << flags;
  }
  EXPECT_EQ(fs_->Open(Ino("train"), O_RDONLY).status().code(), EISDIR);
  EXPECT_EQ(fs_->Open(Ino("train/fifo"), O_RDONLY).status().code(), EPERM);
  // Nothing above reached the backing store or counted as an open of a file.
  EXPECT_EQ(fs_->counters().opens.value.load(), 0u);
}

}  // namespace
}  // namespace clairfs
