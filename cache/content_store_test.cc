// Tests of ContentStore: publish/Find, the crash-safety of the publish protocol, single and batched
// (a simulated crash or an injected error at every step, including the index write, and real
// process deaths), recovery from hand-made damage, capacity and LRU eviction, pinning, min_free,
// injected ENOSPC/EIO, and the cache directory's lock and format.
#include "cache/content_store.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mount.h>
#include <sys/statvfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <list>
#include <map>
#include <set>
#include <thread>

#include <gtest/gtest.h>

#include "cache/cache_dir.h"
#include "cache/index_db.h"
#include "cache/testing/fault_env.h"
#include "cache/testing/index_fault_fs.h"
#include "cache/testing/test_store.h"
#include "tests/test_util.h"

extern char** environ;

namespace clairfs {
namespace {

using testing::PathExists;
using testing::RandomBytes;
using testing::ReadFile;
using testing::TempDir;
using testing::WriteFile;
namespace fsys = std::filesystem;

using testing::OpenStore;

Result<OpenStore> Open(const std::string& root, Env* env, ContentStoreOptions options = {},
                       const std::string& index_dir = "", rocksdb::Env* index_env = nullptr) {
  return testing::OpenTestStore(root, env, options, index_dir, index_env);
}

void Close(OpenStore* s) {
  s->store.reset();
  s->index.reset();
  s->dir.reset();
}

FileIdentity IdentityFor(const std::string& data) {
  return FileIdentity{data.size(), 1000, 2000, 42};
}

// Publishes `data` as `path` the way the stager does, writing in `chunk`-byte pieces.
Status Publish(ContentStore* store, Env* env, const std::string& path, const std::string& data,
               size_t chunk = 4096) {
  auto slot = store->BeginStaging(path, data.size());
  if (!slot.ok()) return slot.status();
  for (size_t off = 0; off < data.size(); off += chunk) {
    size_t n = std::min(chunk, data.size() - off);
    Status st = env->PwriteAll(slot->fd, data.data() + off, n, static_cast<off_t>(off));
    if (!st.ok()) {
      store->Abort(&*slot);
      return st;
    }
  }
  return store->Commit(&*slot, IdentityFor(data));
}

// A copy written into its slot and not yet published, as a staging engine hands it over.
struct Written {
  std::string path;
  std::string data;
  StagingSlot slot;
};

// Begins and writes `n` copies "<prefix>0/copy".."<prefix><n-1>/copy" (paths whose hashes, so
// whose fan-out directories, differ); the first `synced` of them are also fsynced by their writer
// (data_synced), as the io_uring engine and the thread pool do.
std::vector<Written> WriteBatchOf(ContentStore* store, Env* env, const std::string& prefix, int n,
                                  int synced) {
  std::vector<Written> batch;
  for (int i = 0; i < n; ++i) {
    Written w;
    w.path = prefix + std::to_string(i) + "/copy";
    w.data = RandomBytes(4096 * (i % 3) + 1000 + 17 * i, 100 + i);
    auto slot = store->BeginStaging(w.path, w.data.size());
    EXPECT_TRUE(slot.ok()) << slot.status().message();
    if (!slot.ok()) return {};
    w.slot = std::move(*slot);
    EXPECT_TRUE(env->PwriteAll(w.slot.fd, w.data.data(), w.data.size(), 0).ok());
    if (i < synced) {
      EXPECT_TRUE(store->SyncData(&w.slot).ok());
      EXPECT_TRUE(w.slot.data_synced);
    }
    batch.push_back(std::move(w));
  }
  return batch;
}

// Publishes the batch in one CommitBatch; returns each copy's outcome.
std::vector<Status> CommitAll(ContentStore* store, std::vector<Written>* batch) {
  std::vector<CommitItem> items;
  for (Written& w : *batch)
    items.push_back(CommitItem{&w.slot, IdentityFor(w.data), std::nullopt,
                               CopyOrigin::kBackingStore, Status::Ok()});
  store->CommitBatch(items);
  std::vector<Status> out;
  for (const CommitItem& item : items) out.push_back(item.status);
  return out;
}

// Which copy of the batch an Env trace line is about (its temp or data file name), or -1.
int CopyOfTraceLine(const std::vector<std::string>& names, const std::string& line) {
  for (size_t i = 0; i < names.size(); ++i) {
    if (line.find(names[i]) != std::string::npos) return static_cast<int>(i);
  }
  return -1;
}

size_t CountFiles(const std::string& dir) {
  size_t n = 0;
  std::error_code ec;
  for (auto it = fsys::recursive_directory_iterator(dir, ec); !ec && it != fsys::end(it);
       it.increment(ec)) {
    if (it->is_regular_file(ec)) ++n;
  }
  return n;
}

uint64_t AllocatedUnder(const std::string& dir) {
  uint64_t total = 0;
  for (const auto& e : fsys::recursive_directory_iterator(dir)) {
    struct stat st;
    if (e.is_regular_file() && lstat(e.path().c_str(), &st) == 0) {
      total += static_cast<uint64_t>(st.st_blocks) * 512;
    }
  }
  return total;
}

TEST(ContentStoreTest, PublishThenFindServesExactBytes) {
  TempDir tmp;
  std::string root = tmp / "cache";
  auto s = Open(root, Env::Default());
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::string data = RandomBytes(10000, 1);
  EXPECT_FALSE(s->store->Find("a/b.jpg").has_value());
  ASSERT_TRUE(Publish(s->store.get(), Env::Default(), "a/b.jpg", data).ok());
  auto copy = s->store->Find("a/b.jpg");
  ASSERT_TRUE(copy.has_value());
  EXPECT_EQ(ReadFile(copy->data_path), data);
  EXPECT_EQ(copy->identity, IdentityFor(data));
  EXPECT_EQ(copy->data_path.rfind(root + "/data/", 0), 0u) << copy->data_path;
  struct stat st;
  ASSERT_EQ(lstat(copy->data_path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(s->store->stats().files, 1u);
  EXPECT_EQ(s->store->stats().reserved_bytes, 0u);
  EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
  // Publishing the same path again is refused while it is staged.
  EXPECT_EQ(s->store->BeginStaging("a/b.jpg", 10).status().code(), EEXIST);

  Close(&*s);
  auto again = Open(root, Env::Default());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_EQ(again->store->recovery().entries, 1u);
  EXPECT_EQ(again->store->recovery().entries_dropped, 0u);
  EXPECT_EQ(again->store->recovery().orphans_removed, 0u);
  auto after = again->store->Find("a/b.jpg");
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(ReadFile(after->data_path), data);
}

TEST(ContentStoreTest, PublishProtocolRunsStepsInOrder) {
  TempDir tmp;
  FaultInjectionEnv env;
  auto s = Open(tmp / "cache", &env);
  ASSERT_TRUE(s.ok()) << s.status().message();
  env.ResetCounts();
  env.SetTracing(true);
  ASSERT_TRUE(Publish(s->store.get(), &env, "x", RandomBytes(3 * 4096, 2)).ok());
  std::vector<std::string> ops;
  for (const auto& line : env.trace()) ops.push_back(line.substr(0, line.find(' ')));
  std::vector<std::string> expected = {"statvfs", "open",  "pwrite", "pwrite", "pwrite",
                                       "fsync",   "fstat", "close",  "rename", "syncdir"};
  EXPECT_EQ(ops, expected);
  EXPECT_EQ(env.calls(FaultOp::kPwrite), 3u);
  EXPECT_NE(env.trace()[1].find("/tmp/"), std::string::npos);
  EXPECT_NE(env.trace()[9].find("/data/"), std::string::npos);
}

// Crash (every Env call fails from step k on) at every step of publishing "x"; then re-open with
// the default Env: "x" is never found, no temp is left, no data file lacks an entry, and the
// previously published "keep" is intact.
TEST(ContentStoreTest, CrashAtEveryPublishStepRecovers) {
  const std::string keep = RandomBytes(5000, 3);
  const std::string data = RandomBytes(3 * 4096 + 17, 4);
  bool finished = false;
  for (uint64_t k = 0; !finished; ++k) {
    ASSERT_LT(k, 50u) << "the publish never completed";
    SCOPED_TRACE("crash after " + std::to_string(k) + " steps");
    TempDir tmp;
    std::string root = tmp / "cache";
    FaultInjectionEnv env;
    auto s = Open(root, &env);
    ASSERT_TRUE(s.ok()) << s.status().message();
    ASSERT_TRUE(Publish(s->store.get(), &env, "keep", keep).ok());
    env.ResetCounts();
    env.SetTracing(true);
    env.CrashAfter(k);
    Status st = Publish(s->store.get(), &env, "x", data);
    bool crashed = env.crashed();
    std::vector<std::string> trace = env.trace();
    if (!crashed) {
      ASSERT_TRUE(st.ok()) << st.message();
      finished = true;  // k is past the last step: every step has had its crash
    } else {
      EXPECT_FALSE(st.ok());
      EXPECT_FALSE(s->store->Find("x").has_value());
    }
    bool renamed = false, opened = false;
    for (uint64_t i = 0; i < k && i < trace.size(); ++i) {
      if (trace[i].rfind("open", 0) == 0) opened = true;
      if (trace[i].rfind("rename", 0) == 0) renamed = true;
    }
    Close(&*s);  // the "dead" process's in-memory state is gone; its files stay as they are

    auto r = Open(root, Env::Default());
    ASSERT_TRUE(r.ok()) << r.status().message();
    const RecoveryReport& rep = r->store->recovery();
    EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
    if (crashed) {
      EXPECT_FALSE(r->store->Find("x").has_value());
      EXPECT_EQ(rep.entries, 1u);
      EXPECT_EQ(rep.temp_removed, opened && !renamed ? 1u : 0u);
      EXPECT_EQ(rep.orphans_removed, renamed ? 1u : 0u);
    } else {
      auto x = r->store->Find("x");
      ASSERT_TRUE(x.has_value());
      EXPECT_EQ(ReadFile(x->data_path), data);
      EXPECT_EQ(rep.entries, 2u);
    }
    EXPECT_EQ(CountFiles(root + "/data"), rep.entries);
    auto kept = r->store->Find("keep");
    ASSERT_TRUE(kept.has_value());
    EXPECT_EQ(ReadFile(kept->data_path), keep);
    // The store works after recovery.
    if (crashed) {
      ASSERT_TRUE(Publish(r->store.get(), Env::Default(), "x", data).ok());
      EXPECT_EQ(ReadFile(r->store->Find("x")->data_path), data);
    }
  }
}

// --- Batch publish: the same protocol, the durable steps shared. ---

// Six copies from several fan-out directories, three fsynced by their writer: the batch fsyncs
// the other three, renames all six into one directory, syncs that directory once and writes the
// index once (one synced log write), in that order.
TEST(ContentStoreTest, BatchPublishSharesOneDirectorySyncAndOneIndexWrite) {
  TempDir tmp;
  std::string root = tmp / "cache";
  FaultInjectionEnv env;
  IndexFaults faults;
  auto s = Open(root, &env, {}, "", faults.env());
  ASSERT_TRUE(s.ok()) << s.status().message();
  std::vector<Written> batch = WriteBatchOf(s->store.get(), &env, "b", 6, 3);
  ASSERT_EQ(batch.size(), 6u);
  std::set<std::string> fanouts;
  std::vector<std::string> names;
  for (const Written& w : batch) {
    fanouts.insert(w.slot.data_name.substr(0, 2));
    names.push_back(w.slot.data_name.substr(3));
  }
  ASSERT_GT(fanouts.size(), 1u) << "the test needs copies from several fan-out directories";
  env.ResetCounts();
  env.SetTracing(true);
  uint64_t log_syncs = faults.fs()->log_syncs();
  std::vector<Status> out = CommitAll(s->store.get(), &batch);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_TRUE(out[i].ok()) << i << ": " << out[i].message();
  EXPECT_EQ(env.calls(FaultOp::kFsync), 3u);
  EXPECT_EQ(env.calls(FaultOp::kRename), 6u);
  EXPECT_EQ(env.calls(FaultOp::kSyncDir), 1u);
  EXPECT_EQ(faults.fs()->log_syncs() - log_syncs, 1u);
  // Order: every fsync before the first rename, every rename before the directory sync.
  std::vector<std::string> trace = env.trace();
  size_t last_fsync = 0, first_rename = trace.size(), last_rename = 0, syncdir = 0;
  for (size_t i = 0; i < trace.size(); ++i) {
    if (trace[i].rfind("fsync", 0) == 0) last_fsync = i;
    if (trace[i].rfind("rename", 0) == 0) {
      first_rename = std::min(first_rename, i);
      last_rename = i;
    }
    if (trace[i].rfind("syncdir", 0) == 0) syncdir = i;
  }
  EXPECT_LT(last_fsync, first_rename);
  EXPECT_LT(last_rename, syncdir);
  std::set<std::string> published_in;
  for (const Written& w : batch) {
    auto copy = s->store->Find(w.path);
    ASSERT_TRUE(copy.has_value()) << w.path;
    EXPECT_EQ(ReadFile(copy->data_path), w.data) << w.path;
    published_in.insert(fsys::path(copy->data_path).parent_path().string());
  }
  ASSERT_EQ(published_in.size(), 1u);
  EXPECT_NE(trace[syncdir].find(*published_in.begin()), std::string::npos) << trace[syncdir];
  EXPECT_EQ(s->store->stats().files, 6u);
  EXPECT_EQ(s->store->stats().reserved_bytes, 0u);
  EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
  Close(&*s);

  auto r = Open(root, Env::Default());
  ASSERT_TRUE(r.ok()) << r.status().message();
  EXPECT_EQ(r->store->recovery().entries, 6u);
  EXPECT_EQ(r->store->recovery().orphans_removed, 0u);
  for (const Written& w : batch) {
    ASSERT_TRUE(r->store->Find(w.path).has_value()) << w.path;
    EXPECT_EQ(ReadFile(r->store->Find(w.path)->data_path), w.data) << w.path;
  }
}

// Crash (every Env call fails from step k on) at every step of publishing a batch of four copies
// (two fsynced by their writer, two left to the batch); then re-open with the default Env: no
// copy of the batch is found, no temp file is left, no data file lacks an entry, and the copies
// acknowledged earlier (by a batch of two) are intact.
TEST(ContentStoreTest, CrashAtEveryStepOfABatchPublishRecovers) {
  bool finished = false;
  for (uint64_t k = 0; !finished; ++k) {
    ASSERT_LT(k, 60u) << "the batch publish never completed";
    SCOPED_TRACE("crash after " + std::to_string(k) + " steps");
    TempDir tmp;
    std::string root = tmp / "cache";
    FaultInjectionEnv env;
    auto s = Open(root, &env);
    ASSERT_TRUE(s.ok()) << s.status().message();
    std::vector<Written> kept = WriteBatchOf(s->store.get(), &env, "keep", 2, 1);
    for (const Status& st : CommitAll(s->store.get(), &kept)) ASSERT_TRUE(st.ok()) << st.message();
    std::vector<Written> batch = WriteBatchOf(s->store.get(), &env, "x", 4, 2);
    ASSERT_EQ(batch.size(), 4u);
    env.ResetCounts();
    env.SetTracing(true);
    env.CrashAfter(k);
    std::vector<Status> out = CommitAll(s->store.get(), &batch);
    bool crashed = env.crashed();
    std::vector<std::string> trace = env.trace();
    size_t renamed = 0;
    for (uint64_t i = 0; i < k && i < trace.size(); ++i) {
      if (trace[i].rfind("rename", 0) == 0) ++renamed;
    }
    if (!crashed) {
      for (const Status& st : out) ASSERT_TRUE(st.ok()) << st.message();
      finished = true;  // k is past the last step: every step has had its crash
    } else {
      // Every step left runs into the crash, the shared directory sync included: nothing of
      // the batch is acknowledged or served.
      for (size_t i = 0; i < out.size(); ++i) {
        EXPECT_FALSE(out[i].ok()) << batch[i].path;
        EXPECT_FALSE(s->store->Find(batch[i].path).has_value()) << batch[i].path;
      }
    }
    Close(&*s);  // the "dead" process's in-memory state is gone; its files stay as they are

    auto r = Open(root, Env::Default());
    ASSERT_TRUE(r.ok()) << r.status().message();
    const RecoveryReport& rep = r->store->recovery();
    EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
    if (crashed) {
      for (const Written& w : batch) EXPECT_FALSE(r->store->Find(w.path).has_value()) << w.path;
      EXPECT_EQ(rep.entries, 2u);
      EXPECT_EQ(rep.temp_removed, 4u - renamed);
      EXPECT_EQ(rep.orphans_removed, renamed);
    } else {
      EXPECT_EQ(rep.entries, 6u);
      for (const Written& w : batch) {
        auto x = r->store->Find(w.path);
        ASSERT_TRUE(x.has_value()) << w.path;
        EXPECT_EQ(ReadFile(x->data_path), w.data) << w.path;
      }
    }
    EXPECT_EQ(CountFiles(root + "/data"), rep.entries);
    for (const Written& w : kept) {
      auto copy = r->store->Find(w.path);
      ASSERT_TRUE(copy.has_value()) << w.path;
      EXPECT_EQ(ReadFile(copy->data_path), w.data) << w.path;
    }
    // The store works after recovery.
    if (crashed) {
      std::vector<Written> again = WriteBatchOf(r->store.get(), Env::Default(), "x", 4, 2);
      for (const Status& st : CommitAll(r->store.get(), &again)) EXPECT_TRUE(st.ok());
      for (const Written& w : again) {
        EXPECT_EQ(ReadFile(r->store->Find(w.path)->data_path), w.data) << w.path;
      }
    }
  }
}

// The crash comes during the batch's index write, after every rename is durable: the log write
// fails before any byte of it reaches the log (kFailAppend), or the record reaches the log file
// but its sync fails (kFailSync), and the process dies before it can remove the data files. After
// recovery, a copy of the batch is either absent or served with exactly its bytes.
TEST(ContentStoreTest, CrashDuringTheIndexWriteOfABatchRecovers) {
  for (IndexFaultFs::Mode mode : {IndexFaultFs::Mode::kFailAppend, IndexFaultFs::Mode::kFailSync}) {
    SCOPED_TRACE(mode == IndexFaultFs::Mode::kFailAppend ? "append fails" : "sync fails");
    TempDir tmp;
    std::string root = tmp / "cache";
    FaultInjectionEnv env;
    IndexFaults faults;
    auto s = Open(root, &env, {}, "", faults.env());
    ASSERT_TRUE(s.ok()) << s.status().message();
    std::vector<Written> kept = WriteBatchOf(s->store.get(), &env, "keep", 2, 1);
    for (const Status& st : CommitAll(s->store.get(), &kept)) ASSERT_TRUE(st.ok()) << st.message();
    std::vector<Written> batch = WriteBatchOf(s->store.get(), &env, "x", 4, 2);
    // Every Env step of the batch runs (2 fsyncs, 4 fstats, 4 closes, 4 renames, 1 directory
    // sync); the index write fails; the process dies before its clean-up reaches the disk.
    env.ResetCounts();
    env.CrashAfter(15);
    faults.fs()->set_mode(mode);
    std::vector<Status> out = CommitAll(s->store.get(), &batch);
    EXPECT_EQ(env.calls(FaultOp::kSyncDir), 1u);
    for (size_t i = 0; i < out.size(); ++i) {
      EXPECT_FALSE(out[i].ok()) << batch[i].path;
      EXPECT_FALSE(s->store->Find(batch[i].path).has_value()) << batch[i].path;
    }
    EXPECT_TRUE(env.crashed());  // the clean-up ran into the crash
    Close(&*s);

    auto r = Open(root, Env::Default());
    ASSERT_TRUE(r.ok()) << r.status().message();
    EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
    EXPECT_EQ(CountFiles(root + "/data"), r->store->recovery().entries);
    size_t present = 0;
    for (const Written& w : batch) {
      auto copy = r->store->Find(w.path);
      if (!copy) continue;
      ++present;
      EXPECT_EQ(ReadFile(copy->data_path), w.data) << w.path;
    }
    if (mode == IndexFaultFs::Mode::kFailAppend) {
      EXPECT_EQ(present, 0u);
    }
    // The batch's entries are one log record: all of them or none.
    EXPECT_TRUE(present == 0 || present == batch.size()) << present;
    EXPECT_EQ(r->store->recovery().entries, 2u + present);
    for (const Written& w : kept) {
      auto copy = r->store->Find(w.path);
      ASSERT_TRUE(copy.has_value()) << w.path;
      EXPECT_EQ(ReadFile(copy->data_path), w.data) << w.path;
    }
  }
}

// An injected error (EIO, the process carries on) at each Env step of a batch publish in turn,
// then at its index write: a per-copy step fails that copy only, the shared directory sync and
// index write fail the whole batch; nothing failed is served, everything acknowledged is, and
// recovery afterwards finds nothing to repair.
TEST(ContentStoreTest, ErrorAtEachStepOfABatchFailsOnlyTheCopiesItMust) {
  // The steps of a clean run, in order.
  std::vector<std::pair<FaultOp, std::string>> steps;
  {
    TempDir tmp;
    FaultInjectionEnv env;
    auto s = Open(tmp / "cache", &env);
    ASSERT_TRUE(s.ok());
    std::vector<Written> batch = WriteBatchOf(s->store.get(), &env, "x", 4, 2);
    env.ResetCounts();
    env.SetTracing(true);
    for (const Status& st : CommitAll(s->store.get(), &batch)) ASSERT_TRUE(st.ok());
    for (const std::string& line : env.trace()) {
      std::string op = line.substr(0, line.find(' '));
      for (FaultOp candidate : {FaultOp::kFsync, FaultOp::kFstat, FaultOp::kClose, FaultOp::kRename,
                                FaultOp::kSyncDir}) {
        if (op == FaultOpName(candidate)) steps.emplace_back(candidate, line);
      }
    }
    ASSERT_EQ(steps.size(), env.trace().size()) << "a step the test does not know";
    ASSERT_EQ(steps.size(), 15u);
  }
  // One round per step, then one with the index write failing.
  for (size_t step = 0; step <= steps.size(); ++step) {
    const bool index_step = step == steps.size();
    SCOPED_TRACE(index_step ? std::string("index write") : steps[step].second);
    TempDir tmp;
    std::string root = tmp / "cache";
    FaultInjectionEnv env;
    IndexFaults faults;
    auto s = Open(root, &env, {}, "", faults.env());
    ASSERT_TRUE(s.ok()) << s.status().message();
    std::vector<Written> kept = WriteBatchOf(s->store.get(), &env, "keep", 1, 0);
    for (const Status& st : CommitAll(s->store.get(), &kept)) ASSERT_TRUE(st.ok());
    std::vector<Written> batch = WriteBatchOf(s->store.get(), &env, "x", 4, 2);
    std::vector<std::string> names;
    for (const Written& w : batch) names.push_back(w.slot.data_name.substr(3));
    // Told of exactly the copies published, each once it is served, outside the store's locks.
    std::multiset<std::string> published;
    s->store->set_publish_listener([&](const std::string& path) {
      EXPECT_TRUE(s->store->Find(path, /*touch=*/false).has_value()) << path;
      published.insert(path);
    });
    env.ResetCounts();
    env.SetTracing(true);
    int expect_failed = -2;  // -2: none, -1: all, else the copy
    if (index_step) {
      faults.fs()->set_mode(IndexFaultFs::Mode::kFailAppend);
      expect_failed = -1;
    } else {
      FaultOp op = steps[step].first;
      uint64_t nth = 0;
      for (size_t i = 0; i <= step; ++i) nth += steps[i].first == op;
      env.FailNth(op, nth, EIO);
      expect_failed = op == FaultOp::kSyncDir ? -1 : -3;  // -3: the copy the step is about
    }
    std::vector<Status> out = CommitAll(s->store.get(), &batch);
    if (expect_failed == -3) {
      // The failed call, found in this run's trace (the batch's names differ from the first run).
      std::vector<std::string> trace = env.trace();
      ASSERT_GT(trace.size(), step);
      expect_failed = CopyOfTraceLine(names, trace[step]);
      ASSERT_GE(expect_failed, 0) << trace[step];
    }
    size_t acknowledged = 0;
    for (size_t i = 0; i < batch.size(); ++i) {
      bool should_fail = expect_failed == -1 || expect_failed == static_cast<int>(i);
      EXPECT_EQ(out[i].ok(), !should_fail) << batch[i].path << ": " << out[i].message();
      if (should_fail) {
        EXPECT_EQ(out[i].code(), EIO) << out[i].message();
      }
      auto copy = s->store->Find(batch[i].path);
      EXPECT_EQ(copy.has_value(), !should_fail) << batch[i].path;
      EXPECT_EQ(published.count(batch[i].path), copy.has_value() ? 1u : 0u) << batch[i].path;
      if (copy) {
        EXPECT_EQ(ReadFile(copy->data_path), batch[i].data) << batch[i].path;
        ++acknowledged;
      }
    }
    EXPECT_EQ(published.size(), acknowledged);
    s->store->set_publish_listener(nullptr);
    EXPECT_EQ(s->store->stats().files, 1u + acknowledged);
    EXPECT_EQ(s->store->stats().reserved_bytes, 0u);
    EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
    EXPECT_EQ(CountFiles(root + "/data"), 1u + acknowledged);
    Close(&*s);

    auto r = Open(root, Env::Default());
    ASSERT_TRUE(r.ok()) << r.status().message();
    const RecoveryReport& rep = r->store->recovery();
    EXPECT_EQ(rep.entries, 1u + acknowledged);
    EXPECT_EQ(rep.orphans_removed, 0u);
    EXPECT_EQ(rep.temp_removed, 0u);
    for (size_t i = 0; i < batch.size(); ++i) {
      auto copy = r->store->Find(batch[i].path);
      if (out[i].ok()) {
        ASSERT_TRUE(copy.has_value()) << batch[i].path;
        EXPECT_EQ(ReadFile(copy->data_path), batch[i].data) << batch[i].path;
      } else {
        EXPECT_FALSE(copy.has_value()) << batch[i].path;
      }
    }
    ASSERT_TRUE(r->store->Find(kept[0].path).has_value());
    EXPECT_EQ(ReadFile(r->store->Find(kept[0].path)->data_path), kept[0].data);
  }
}

// --- Real process deaths: the child runs this (disabled) test in a fresh process. ---

std::string ContentFor(const std::string& path) {
  uint64_t seed = std::hash<std::string>()(path);
  return RandomBytes(1000 + seed % 30000, seed);
}

TEST(ContentStoreCrashChild, DISABLED_PublishLoop) {
  const char* root = getenv("CLAIRFS_CRASH_ROOT");
  const char* mode = getenv("CLAIRFS_CRASH_MODE");
  if (root == nullptr || mode == nullptr) GTEST_SKIP() << "run by CrashChildProcess tests only";
  auto s = Open(root, Env::Default());
  if (!s.ok()) _exit(3);
  if (std::string(mode) == "batch") {
    // Batches of eight, half of them fsynced by their writer, as the staging engines publish.
    for (int i = 0;; i += 8) {
      std::vector<Written> batch;
      for (int j = 0; j < 8; ++j) {
        Written w;
        w.path = "f" + std::to_string(i + j) + "-" + std::to_string(getpid());
        w.data = ContentFor(w.path);
        auto slot = s->store->BeginStaging(w.path, w.data.size());
        if (!slot.ok()) _exit(4);
        w.slot = std::move(*slot);
        if (!Env::Default()->PwriteAll(w.slot.fd, w.data.data(), w.data.size(), 0).ok()) _exit(4);
        if (j % 2 == 0 && !s->store->SyncData(&w.slot).ok()) _exit(4);
        batch.push_back(std::move(w));
      }
      for (const Status& st : CommitAll(s->store.get(), &batch)) {
        if (!st.ok()) _exit(4);
      }
    }
  }
  for (int i = 0;; ++i) {
    std::string path = "f" + std::to_string(i) + "-" + std::to_string(getpid());
    if (!Publish(s->store.get(), Env::Default(), path, ContentFor(path)).ok()) _exit(4);
    // Dies with no cleanup right after the index write returned: no destructor, no close.
    if (std::string(mode) == "once") _exit(0);
  }
}

pid_t SpawnChild(const std::string& root, const std::string& mode) {
  std::string self = fsys::read_symlink("/proc/self/exe");
  std::vector<std::string> args = {self,
                                   "--gtest_filter=ContentStoreCrashChild.DISABLED_PublishLoop",
                                   "--gtest_also_run_disabled_tests"};
  std::vector<std::string> envs = {"CLAIRFS_CRASH_ROOT=" + root, "CLAIRFS_CRASH_MODE=" + mode};
  for (char** e = environ; *e; ++e) envs.push_back(*e);
  std::vector<char*> argv, envp;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  for (auto& e : envs) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  pid_t pid = -1;
  int rc = posix_spawn(&pid, self.c_str(), &actions, nullptr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  return rc == 0 ? pid : -1;
}

// Checks the invariants after a real crash: every entry found has the exact bytes, nothing in tmp,
// every data file has an entry. Returns the number of entries.
uint64_t CheckRecovered(const std::string& root) {
  auto r = Open(root, Env::Default());
  EXPECT_TRUE(r.ok()) << r.status().message();
  if (!r.ok()) return 0;
  for (const auto& path : r->store->Paths()) {
    auto copy = r->store->Find(path, false);
    EXPECT_TRUE(copy.has_value());
    if (copy) {
      EXPECT_EQ(ReadFile(copy->data_path), ContentFor(path)) << path;
    }
  }
  EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
  EXPECT_EQ(CountFiles(root + "/data"), r->store->recovery().entries);
  return r->store->recovery().entries;
}

TEST(ContentStoreTest, ProcessDeathRightAfterIndexWriteKeepsTheCopy) {
  TempDir tmp;
  std::string root = tmp / "cache";
  pid_t pid = SpawnChild(root, "once");
  ASSERT_GT(pid, 0);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
  EXPECT_EQ(CheckRecovered(root), 1u);
}

// Kills a child publishing in `mode` ("loop": one copy at a time, "batch": batches of eight) at
// five instants; after each, recovery keeps every copy committed before and serves exact bytes.
void KillNineAtRandomInstants(const std::string& mode) {
  TempDir tmp;
  std::string root = tmp / "cache";
  uint64_t last = 0;
  for (int round = 0; round < 5; ++round) {
    size_t before = PathExists(root + "/data") ? CountFiles(root + "/data") : 0;
    pid_t pid = SpawnChild(root, mode);
    ASSERT_GT(pid, 0);
    // Wait until the child is publishing (slow starts under sanitizers), then kill it at an
    // instant that varies from round to round.
    for (int i = 0; i < 3000; ++i) {
      if (PathExists(root + "/data") && CountFiles(root + "/data") > before) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(13 + 37 * round));
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    ASSERT_TRUE(WIFSIGNALED(status)) << "child ended on its own: " << status;
    uint64_t n = CheckRecovered(root);
    EXPECT_GE(n, last);  // nothing committed earlier is lost
    last = n;
  }
  EXPECT_GT(last, 0u);
}

TEST(ContentStoreTest, KillNineAtRandomInstantsLeavesAConsistentCache) {
  KillNineAtRandomInstants("loop");
}

TEST(ContentStoreTest, KillNineDuringBatchPublishesLeavesAConsistentCache) {
  KillNineAtRandomInstants("batch");
}

// --- Recovery from damage done by hand. ---

TEST(ContentStoreTest, RecoveryDropsDamagedEntriesAndRemovesOrphansAndTemps) {
  TempDir tmp;
  std::string root = tmp / "cache";
  std::map<std::string, std::string> data_paths;
  {
    auto s = Open(root, Env::Default());
    ASSERT_TRUE(s.ok()) << s.status().message();
    for (const char* p : {"truncated", "deleted", "grown", "emptied", "good"}) {
      ASSERT_TRUE(Publish(s->store.get(), Env::Default(), p, RandomBytes(9000, p[0])).ok());
      data_paths[p] = s->store->Find(p)->data_path;
    }
  }
  ASSERT_EQ(truncate(data_paths["truncated"].c_str(), 4000), 0);
  ASSERT_EQ(unlink(data_paths["deleted"].c_str()), 0);
  WriteFile(data_paths["grown"], RandomBytes(9001, 9));
  ASSERT_EQ(truncate(data_paths["emptied"].c_str(), 0), 0);
  WriteFile(root + "/data/ab/stray", "not ours");
  WriteFile(root + "/tmp/inflight", "half");

  auto s = Open(root, Env::Default());
  ASSERT_TRUE(s.ok()) << s.status().message();
  const RecoveryReport& rep = s->store->recovery();
  EXPECT_EQ(rep.entries, 1u);
  EXPECT_EQ(rep.entries_dropped, 4u);
  EXPECT_EQ(rep.orphans_removed, 4u);  // stray + the data of truncated, grown, emptied
  EXPECT_EQ(rep.temp_removed, 1u);
  EXPECT_GT(rep.bytes, 0u);
  for (const char* p : {"truncated", "deleted", "grown", "emptied"}) {
    EXPECT_FALSE(s->store->Find(p).has_value()) << p;
  }
  auto good = s->store->Find("good");
  ASSERT_TRUE(good.has_value());
  EXPECT_EQ(ReadFile(good->data_path), RandomBytes(9000, 'g'));
  EXPECT_EQ(CountFiles(root + "/data"), 1u);
  EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
  EXPECT_EQ(s->store->stats().used_bytes, rep.bytes);
  Close(&*s);

  // A second recovery finds nothing more to fix.
  auto again = Open(root, Env::Default());
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->store->recovery().entries, 1u);
  EXPECT_EQ(again->store->recovery().entries_dropped, 0u);
  EXPECT_EQ(again->store->recovery().orphans_removed, 0u);
  EXPECT_EQ(again->store->recovery().temp_removed, 0u);
}

TEST(ContentStoreTest, CorruptIndexRecordIsDropped) {
  TempDir tmp;
  std::string root = tmp / "cache";
  {
    auto s = Open(root, Env::Default());
    ASSERT_TRUE(s.ok());
    ASSERT_TRUE(Publish(s->store.get(), Env::Default(), "a", "hello").ok());
    ASSERT_TRUE(s->index->Put(IndexDb::kEntries, "bogus", "\x01garbage", true).ok());
  }
  auto s = Open(root, Env::Default());
  ASSERT_TRUE(s.ok());
  EXPECT_EQ(s->store->recovery().entries, 1u);
  EXPECT_EQ(s->store->recovery().entries_dropped, 1u);
  EXPECT_FALSE(s->store->Find("bogus").has_value());
  auto left = s->index->Get(IndexDb::kEntries, "bogus");
  ASSERT_TRUE(left.ok());
  EXPECT_FALSE(left->has_value());
}

TEST(ContentStoreTest, EntryNamingAFileOutsideDataIsDroppedNotServed) {
  TempDir tmp;
  std::string root = tmp / "cache";
  {
    auto s = Open(root, Env::Default());
    ASSERT_TRUE(s.ok());
    // A damaged record whose data name leaves data/ and matches the size of CACHE/FORMAT.
    CacheEntryRecord evil{"../FORMAT", FileIdentity{16, 1, 1, 1}, 4096, 1, false, std::nullopt};
    ASSERT_TRUE(s->index->Put(IndexDb::kEntries, "evil", EncodeCacheEntry(evil), true).ok());
    CacheEntryRecord up{"00/../../FORMAT", FileIdentity{16, 1, 1, 1}, 4096, 1, false, std::nullopt};
    ASSERT_TRUE(s->index->Put(IndexDb::kEntries, "up", EncodeCacheEntry(up), true).ok());
  }
  auto s = Open(root, Env::Default());
  ASSERT_TRUE(s.ok()) << s.status().message();
  EXPECT_EQ(s->store->recovery().entries, 0u);
  EXPECT_EQ(s->store->recovery().entries_dropped, 2u);
  EXPECT_FALSE(s->store->Find("evil").has_value());
  EXPECT_FALSE(s->store->Find("up").has_value());
  (void)s->store->Evict("evil", true);
  (void)s->store->Evict("up", true);
  EXPECT_TRUE(PathExists(root + "/FORMAT"));
}

// --- Capacity and eviction. ---

// Checks a condition on every Env call of the store (so "at every step", not just between
// publishes).
class CheckingEnv : public EnvWrapper {
 public:
  explicit CheckingEnv(std::function<void()> check)
      : EnvWrapper(Env::Default()), check_(std::move(check)) {}
  Result<int> Open(const std::string& path, int flags, mode_t mode) override {
    check_();
    return EnvWrapper::Open(path, flags, mode);
  }
  Status Rename(const std::string& from, const std::string& to) override {
    check_();
    return EnvWrapper::Rename(from, to);
  }
  Status Unlink(const std::string& path) override {
    check_();
    return EnvWrapper::Unlink(path);
  }
  Status SyncDir(const std::string& dir) override {
    check_();
    return EnvWrapper::SyncDir(dir);
  }

 private:
  std::function<void()> check_;
};

TEST(ContentStoreTest, CapacityNeverExceededAndLruOrderHolds) {
  TempDir tmp;
  std::string root = tmp / "cache";
  const uint64_t capacity = 10 * 4096 + 4096;
  ContentStore* store = nullptr;
  uint64_t checks = 0;
  CheckingEnv env([&] {
    if (store == nullptr) return;
    ++checks;
    auto st = store->stats();
    ASSERT_LE(st.used_bytes + st.reserved_bytes, capacity);
  });
  auto s = Open(root, &env, ContentStoreOptions{capacity, 0, nullptr});
  ASSERT_TRUE(s.ok()) << s.status().message();
  store = s->store.get();

  // A model LRU: most recent at the front.
  std::list<std::string> model;
  std::map<std::string, uint64_t> alloc;
  uint64_t used = 0;
  std::vector<std::string> evicted;
  for (int i = 0; i < 33; ++i) {  // 3x the capacity in files
    std::string path = "f" + std::to_string(i);
    std::string data = RandomBytes(4096, i);
    // Expected victims: oldest first until the new file's estimate (its one block) fits.
    std::vector<std::string> expect_victims;
    while (used + 4096 > capacity) {
      expect_victims.push_back(model.back());
      used -= alloc[model.back()];
      model.pop_back();
    }
    uint64_t before = store->stats().evictions;
    ASSERT_TRUE(Publish(store, &env, path, data).ok()) << path;
    EXPECT_EQ(store->stats().evictions - before, expect_victims.size()) << path;
    for (const auto& v : expect_victims) EXPECT_FALSE(store->Contains(v)) << v << " for " << path;
    auto copy = store->Find(path);
    ASSERT_TRUE(copy.has_value());
    alloc[path] = copy->alloc_bytes;
    used += copy->alloc_bytes;
    model.push_front(path);
    // Every third step, use an older file so that LRU differs from FIFO.
    if (i % 3 == 2 && model.size() > 3) {
      std::string old = *std::next(model.begin(), static_cast<long>(model.size()) - 2);
      ASSERT_TRUE(store->Find(old).has_value());
      model.remove(old);
      model.push_front(old);
    }
    for (const auto& m : model) EXPECT_TRUE(store->Contains(m)) << m;
    EXPECT_EQ(store->stats().used_bytes, used);
    EXPECT_LE(AllocatedUnder(root + "/data") + AllocatedUnder(root + "/tmp"), capacity);
  }
  EXPECT_GT(checks, 100u);
  EXPECT_GE(store->stats().evictions, 20u);
  store = nullptr;
}

// Publishers, readers and evictions at once: the capacity holds at every step and whatever a
// reader manages to open has exactly the published bytes.
TEST(ContentStoreTest, ConcurrentPublishFindEvictKeepsInvariants) {
  TempDir tmp;
  std::string root = tmp / "cache";
  const uint64_t capacity = 12 * 8192;
  std::atomic<ContentStore*> store{nullptr};
  std::atomic<bool> over{false};
  CheckingEnv env([&] {
    ContentStore* s = store.load();
    if (s == nullptr) return;
    auto st = s->stats();
    if (st.used_bytes + st.reserved_bytes > capacity) over = true;
  });
  auto s = Open(root, &env, ContentStoreOptions{capacity, 0, nullptr});
  ASSERT_TRUE(s.ok()) << s.status().message();
  store = s->store.get();
  auto content = [](const std::string& p) {
    return RandomBytes(1000 + std::hash<std::string>()(p) % 7000, std::hash<std::string>()(p));
  };
  std::atomic<bool> done{false};
  std::atomic<int> bad{0}, served{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < 60; ++i) {
        std::string p = "t" + std::to_string(t) + "/" + std::to_string(i % 25);
        Status st = Publish(store.load(), &env, p, content(p));
        if (!st.ok() && st.code() != EEXIST) bad.fetch_add(1);
        if (i % 7 == 0) (void)store.load()->Evict(p);
      }
    });
  }
  std::thread reader([&] {
    while (!done) {
      for (int t = 0; t < 4; ++t) {
        for (int i = 0; i < 25; ++i) {
          std::string p = "t" + std::to_string(t) + "/" + std::to_string(i);
          auto copy = store.load()->Find(p);
          if (!copy) continue;
          int fd = open(copy->data_path.c_str(), O_RDONLY);
          if (fd < 0) continue;  // evicted since Find: a miss, not wrong bytes
          std::string got(copy->identity.size + 1, '\0');
          ssize_t n = pread(fd, got.data(), got.size(), 0);
          close(fd);
          got.resize(n < 0 ? 0 : static_cast<size_t>(n));
          if (got != content(p)) bad.fetch_add(1);
          served.fetch_add(1);
        }
      }
    }
  });
  for (auto& th : threads) th.join();
  done = true;
  reader.join();
  store = nullptr;
  EXPECT_EQ(bad.load(), 0);
  EXPECT_FALSE(over.load());
  EXPECT_GT(served.load(), 0);
  auto st = s->store->stats();
  EXPECT_EQ(st.reserved_bytes, 0u);
  EXPECT_EQ(st.files, s->store->Paths().size());
  EXPECT_EQ(CountFiles(root + "/data"), st.files);
  EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
  Close(&*s);
  auto r = Open(root, Env::Default(), ContentStoreOptions{capacity, 0, nullptr});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ(r->store->recovery().entries, st.files);
  EXPECT_EQ(r->store->recovery().entries_dropped, 0u);
  EXPECT_EQ(r->store->recovery().orphans_removed, 0u);
}

TEST(ContentStoreTest, PinnedCopiesAreNotEvicted) {
  TempDir tmp;
  auto s = Open(tmp / "cache", Env::Default(), ContentStoreOptions{3 * 4096, 0, nullptr});
  ASSERT_TRUE(s.ok());
  ContentStore* store = s->store.get();
  ASSERT_TRUE(Publish(store, Env::Default(), "p", RandomBytes(4096, 1)).ok());
  ASSERT_TRUE(store->SetPinned("p", true).ok());
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(Publish(store, Env::Default(), "o" + std::to_string(i), RandomBytes(4096, i)).ok());
    EXPECT_TRUE(store->Contains("p"));
  }
  // The capacity holds three copies: "p", "o4", "o5". Pin the other two: nothing is evictable.
  ASSERT_TRUE(store->SetPinned("o4", true).ok());
  ASSERT_TRUE(store->SetPinned("o5", true).ok());
  auto full = store->BeginStaging("q", 4096);
  EXPECT_EQ(full.status().code(), ENOSPC) << full.status().message();
  EXPECT_NE(full.status().message().find("nothing to evict"), std::string::npos);
  EXPECT_TRUE(store->Contains("p"));
  EXPECT_TRUE(store->Contains("o5"));
  EXPECT_EQ(store->Evict("p").code(), EBUSY);
  EXPECT_TRUE(store->Evict("p", /*force=*/true).ok());
  EXPECT_FALSE(store->Contains("p"));
  EXPECT_EQ(store->stats().reserved_bytes, 0u);
  // The pin survives a restart.
  std::string root = s->dir->root();
  Close(&*s);
  auto r = Open(root, Env::Default(), ContentStoreOptions{3 * 4096, 0, nullptr});
  ASSERT_TRUE(r.ok());
  ASSERT_TRUE(r->store->Find("o5").has_value());
  EXPECT_TRUE(r->store->Find("o5")->pinned);
}

TEST(ContentStoreTest, HeldCopiesAreNotEvictedUntilTheHoldsAreCleared) {
  TempDir tmp;
  auto s = Open(tmp / "cache", Env::Default(), ContentStoreOptions{3 * 4096, 0, nullptr});
  ASSERT_TRUE(s.ok());
  ContentStore* store = s->store.get();
  // A hold may name a file before it is staged (a home file still to come).
  store->SetHolds(std::make_shared<const std::unordered_set<std::string>>(
      std::unordered_set<std::string>{"h", "later"}));
  EXPECT_TRUE(store->IsHeld("later"));
  EXPECT_FALSE(store->IsHeld("o0"));
  ASSERT_TRUE(Publish(store, Env::Default(), "h", RandomBytes(4096, 1)).ok());
  for (int i = 0; i < 6; ++i) {
    ASSERT_TRUE(Publish(store, Env::Default(), "o" + std::to_string(i), RandomBytes(4096, i)).ok());
    EXPECT_TRUE(store->Contains("h")) << i;
  }
  // Not recorded in the index, and an explicit eviction still removes a held copy.
  EXPECT_FALSE(store->Find("h")->pinned);
  store->SetHolds(nullptr);
  for (int i = 6; i < 9; ++i) {
    ASSERT_TRUE(Publish(store, Env::Default(), "o" + std::to_string(i), RandomBytes(4096, i)).ok());
  }
  EXPECT_FALSE(store->Contains("h"));
}

TEST(ContentStoreTest, WithASealKeyEveryCopyIsSealedAndTheSealSurvivesARestart) {
  TempDir tmp;
  auto key = PeerKey::FromBytes(std::string(32, 'k'));
  ContentStoreOptions options;
  options.seal_key = key;
  auto s = Open(tmp / "cache", Env::Default(), options);
  ASSERT_TRUE(s.ok());
  const std::string data = RandomBytes(70000, 9);
  ASSERT_TRUE(Publish(s->store.get(), Env::Default(), "a", data).ok());
  auto copy = s->store->Find("a");
  ASSERT_TRUE(copy && copy->seal);
  Sha256Stream digest;
  digest.Update(data.data(), data.size());
  EXPECT_EQ(copy->seal->digest, digest.Finish());
  EXPECT_TRUE(key->Verify("a", IdentityFor(data), *copy->seal));
  EXPECT_EQ(copy->origin, CopyOrigin::kBackingStore);

  // A copy from a peer keeps the seal it came with, and its origin.
  const std::string peer_data = RandomBytes(5000, 10);
  auto slot = s->store->BeginStaging("b", peer_data.size());
  ASSERT_TRUE(slot.ok());
  ASSERT_TRUE(Env::Default()->PwriteAll(slot->fd, peer_data.data(), peer_data.size(), 0).ok());
  CopySeal peer_seal;
  Sha256Stream peer_digest;
  peer_digest.Update(peer_data.data(), peer_data.size());
  peer_seal.digest = peer_digest.Finish();
  peer_seal.auth = key->Authenticate("b", IdentityFor(peer_data), peer_seal.digest);
  CommitItem item{&*slot, IdentityFor(peer_data), peer_seal, CopyOrigin::kPeer, Status::Ok()};
  s->store->CommitBatch(std::span<CommitItem>(&item, 1));
  ASSERT_TRUE(item.status.ok()) << item.status.message();

  std::string root = s->dir->root();
  Close(&*s);
  auto r = Open(root, Env::Default());
  ASSERT_TRUE(r.ok());
  auto a = r->store->Find("a");
  auto b = r->store->Find("b");
  ASSERT_TRUE(a && b && a->seal && b->seal);
  EXPECT_EQ(a->seal, copy->seal);
  EXPECT_EQ(*b->seal, peer_seal);
  EXPECT_EQ(b->origin, CopyOrigin::kPeer);
  // Without a key nothing is sealed.
  ASSERT_TRUE(Publish(r->store.get(), Env::Default(), "c", "plain").ok());
  EXPECT_FALSE(r->store->Find("c")->seal.has_value());
}

TEST(ContentStoreTest, EntriesOfTheFirstFormatStillDecode) {
  // Version 1: no flags byte and no seal.
  std::string v1(1, '\x01');
  for (uint64_t field :
       {uint64_t{5}, uint64_t{6}, uint64_t{7}, uint64_t{8}, uint64_t{4096}, uint64_t{9}}) {
    for (int i = 0; i < 8; ++i) v1.push_back(static_cast<char>(field >> (8 * i)));
  }
  v1.push_back(1);  // pinned
  const std::string name = "ab/copy";
  for (int i = 0; i < 4; ++i) v1.push_back(static_cast<char>(name.size() >> (8 * i)));
  v1 += name;
  auto rec = DecodeCacheEntry(v1);
  ASSERT_TRUE(rec.ok()) << rec.status().message();
  EXPECT_EQ(rec->identity.size, 5u);
  EXPECT_TRUE(rec->pinned);
  EXPECT_FALSE(rec->seal.has_value());
  EXPECT_EQ(rec->data_name, name);
  // The current format round-trips, and a damaged flags byte is refused.
  CacheEntryRecord sealed{name,       FileIdentity{1, 2, 3, 4}, 4096, 5, false,
                          CopySeal{}, CopyOrigin::kPeer};
  sealed.seal->digest[3] = 7;
  auto back = DecodeCacheEntry(EncodeCacheEntry(sealed));
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(back->seal, sealed.seal);
  EXPECT_EQ(back->origin, CopyOrigin::kPeer);
  std::string bad = EncodeCacheEntry(sealed);
  bad[1 + 48 + 1] = static_cast<char>(0x80);
  EXPECT_FALSE(DecodeCacheEntry(bad).ok());
}

TEST(ContentStoreTest, FileLargerThanCapacityIsEfbig) {
  TempDir tmp;
  std::string root = tmp / "cache";
  auto s = Open(root, Env::Default(), ContentStoreOptions{64 * 1024, 0, nullptr});
  ASSERT_TRUE(s.ok());
  ASSERT_TRUE(Publish(s->store.get(), Env::Default(), "small", "x").ok());
  auto big = s->store->BeginStaging("big", 64 * 1024 + 1);  // 17 blocks in a 16-block cache
  EXPECT_EQ(big.status().code(), EFBIG);
  EXPECT_NE(big.status().message().find("big"), std::string::npos);
  EXPECT_TRUE(s->store->Contains("small"));  // nothing evicted for a hopeless file
  EXPECT_EQ(s->store->stats().reserved_bytes, 0u);
  EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
  // The path is not left marked as staging.
  EXPECT_TRUE(Publish(s->store.get(), Env::Default(), "big", "now small").ok());
}

// A 2 MiB tmpfs at `dir`/dev, detached when the object goes: a device small enough to fill.
// error() says why it could not be mounted (not root, no tmpfs).
class TinyTmpfs {
 public:
  explicit TinyTmpfs(const TempDir& dir) : path_(dir / "dev") {
    if (geteuid() != 0) {
      error_ = "mounting a tmpfs needs root";
      return;
    }
    testing::MakeDirs(path_);
    if (mount("tmpfs", path_.c_str(), "tmpfs", 0, "size=2m,mode=0700") != 0) {
      error_ = std::string("cannot mount tmpfs: ") + strerror(errno);
      return;
    }
    mounted_ = true;
  }
  ~TinyTmpfs() {
    if (mounted_) umount2(path_.c_str(), MNT_DETACH);
  }
  TinyTmpfs(const TinyTmpfs&) = delete;
  TinyTmpfs& operator=(const TinyTmpfs&) = delete;
  const std::string& path() const { return path_; }
  const std::string& error() const { return error_; }

 private:
  std::string path_;
  std::string error_;
  bool mounted_ = false;
};

TEST(ContentStoreTest, MinFreeHonouredOnATinyTmpfs) {
  TempDir tmp;
  TinyTmpfs tmpfs(tmp);
  if (!tmpfs.error().empty()) GTEST_SKIP() << tmpfs.error() << " (see MinFreeFromEnv)";
  const std::string& dev = tmpfs.path();
  const uint64_t min_free = 1 << 20;
  std::string root = dev + "/cache";
  {
    // The index lives off the tiny device (RocksDB preallocates its log).
    auto s = Open(root, Env::Default(), ContentStoreOptions{0, min_free, nullptr}, tmp / "index");
    ASSERT_TRUE(s.ok()) << s.status().message();
    for (int i = 0; i < 40; ++i) {  // 2.5 MiB into a 2 MiB device
      std::string path = "f" + std::to_string(i);
      Status st = Publish(s->store.get(), Env::Default(), path, RandomBytes(64 * 1024, i));
      ASSERT_TRUE(st.ok()) << path << ": " << st.message();
      struct statvfs vfs;
      ASSERT_EQ(statvfs(dev.c_str(), &vfs), 0);
      EXPECT_GE(static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize, min_free) << path;
    }
    EXPECT_GT(s->store->stats().evictions, 20u);
    EXPECT_TRUE(s->store->Contains("f39"));
  }
}

// The index on the cache device itself (as at every mount): copies fill the device, evicting
// each other, and the floor keeps room for the index's log. Without that room RocksDB's log
// write meets ENOSPC and Debian's RocksDB aborts the process (a daemon: the mount dies).
TEST(ContentStoreTest, AFullDeviceLeavesRoomForTheIndexOnIt) {
  TempDir tmp;
  TinyTmpfs tmpfs(tmp);
  if (!tmpfs.error().empty()) GTEST_SKIP() << tmpfs.error();
  const std::string& dev = tmpfs.path();
  auto s = Open(dev + "/cache", Env::Default());
  ASSERT_TRUE(s.ok()) << s.status().message();
  const uint64_t floor = s->store->free_floor();
  EXPECT_EQ(floor, (uint64_t{2} << 20) / 16);  // a sixteenth of a device below 1 GiB
  for (int i = 0; i < 600; ++i) {              // 9.4 MiB of copies through a 2 MiB device
    const std::string path = "f" + std::to_string(i);
    Status st = Publish(s->store.get(), Env::Default(), path, RandomBytes(16 * 1024, i));
    ASSERT_TRUE(st.ok()) << path << ": " << st.message();
    struct statvfs vfs;
    ASSERT_EQ(statvfs(dev.c_str(), &vfs), 0);
    // Copies stop at the floor; the index's log grows into the room kept for it, never to 0.
    ASSERT_GT(static_cast<uint64_t>(vfs.f_bavail) * vfs.f_frsize, 0u) << path;
  }
  EXPECT_GT(s->store->stats().evictions, 400u);
  EXPECT_TRUE(s->store->Contains("f599"));
  // The index took every entry and deletion: it reads back after a reopen.
  Close(&*s);
  auto again = Open(dev + "/cache", Env::Default());
  ASSERT_TRUE(again.ok()) << again.status().message();
  EXPECT_TRUE(again->store->Contains("f599"));
}

TEST(ContentStoreTest, MinFreeFromEnv) {
  TempDir tmp;
  std::string root = tmp / "cache";
  FaultInjectionEnv env;
  const uint64_t min_free = 100 << 20;
  auto s = Open(root, &env, ContentStoreOptions{0, min_free, nullptr});
  ASSERT_TRUE(s.ok());
  // The index is on the same device: the floor keeps room for it too.
  EXPECT_EQ(s->store->free_floor(), min_free + ContentStore::kIndexReserve);
  env.SetFreeBytes(s->store->free_floor() + 8192);
  ASSERT_TRUE(Publish(s->store.get(), &env, "fits", RandomBytes(4096, 1)).ok());
  // Three blocks would eat into min_free: everything evictable goes, then ENOSPC.
  Status st = Publish(s->store.get(), &env, "nofit", RandomBytes(9000, 2));
  EXPECT_EQ(st.code(), ENOSPC) << st.message();
  EXPECT_FALSE(s->store->Contains("nofit"));
  EXPECT_EQ(s->store->stats().reserved_bytes, 0u);
  EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
  env.SetFreeBytes(std::nullopt);
  EXPECT_TRUE(Publish(s->store.get(), &env, "nofit", RandomBytes(9000, 2)).ok());
}

TEST(ContentStoreTest, LruOrderSurvivesRestart) {
  TempDir tmp;
  std::string root = tmp / "cache";
  const ContentStoreOptions options{3 * 4096, 0, nullptr};  // room for three 4 KiB copies
  {
    auto s = Open(root, Env::Default(), options);
    ASSERT_TRUE(s.ok());
    // Staged oldest first in an order that differs from the index's key order.
    for (const char* p : {"z", "a", "m"}) {
      ASSERT_TRUE(Publish(s->store.get(), Env::Default(), p, RandomBytes(4096, p[0])).ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    ASSERT_TRUE(s->store->Contains("z"));
  }
  auto s = Open(root, Env::Default(), options);
  ASSERT_TRUE(s.ok());
  ASSERT_EQ(s->store->recovery().entries, 3u);
  // The oldest copy ("z"), not the first key ("a"), is the first victim.
  ASSERT_TRUE(Publish(s->store.get(), Env::Default(), "new", RandomBytes(4096, 1)).ok());
  EXPECT_FALSE(s->store->Contains("z"));
  EXPECT_TRUE(s->store->Contains("a"));
  EXPECT_TRUE(s->store->Contains("m"));
}

TEST(ContentStoreTest, EstimateIsTheSizeInWholeBlocks) {
  EXPECT_EQ(ContentStore::EstimateAlloc(0), 0u);
  EXPECT_EQ(ContentStore::EstimateAlloc(1), 4096u);
  EXPECT_EQ(ContentStore::EstimateAlloc(4095), 4096u);
  EXPECT_EQ(ContentStore::EstimateAlloc(4096), 4096u);
  EXPECT_EQ(ContentStore::EstimateAlloc(4097), 8192u);
  EXPECT_EQ(ContentStore::EstimateAlloc(uint64_t{1} << 30), uint64_t{1} << 30);
}

// A cache of exactly the files' rounded sizes holds all of them: staging the last one evicts
// nothing (a reservation of one block more than the rounded size evicted a copy here).
TEST(ContentStoreTest, ACacheOfExactlyTheRoundedSizesHoldsEveryFile) {
  TempDir tmp;
  const std::vector<size_t> sizes = {
      0, 1, 4095, 4096, 4097, 8192, 60000, 143000, size_t{1} << 20, (size_t{1} << 20) + 1};
  uint64_t capacity = 0;
  for (size_t size : sizes) capacity += (size + 4095) / 4096 * 4096;
  auto s = Open(tmp / "cache", Env::Default(), ContentStoreOptions{capacity, 0, nullptr});
  ASSERT_TRUE(s.ok());
  for (size_t i = 0; i < sizes.size(); ++i) {
    Status st = Publish(s->store.get(), Env::Default(), "f" + std::to_string(i),
                        RandomBytes(sizes[i], i), size_t{1} << 20);
    ASSERT_TRUE(st.ok()) << sizes[i] << ": " << st.message();
  }
  auto st = s->store->stats();
  EXPECT_EQ(st.evictions, 0u);
  EXPECT_EQ(st.files, sizes.size());
  EXPECT_EQ(st.reserved_bytes, 0u);
  EXPECT_LE(st.used_bytes, capacity);
  EXPECT_LE(AllocatedUnder(tmp / "cache/data"), capacity);
}

// An Env whose Fstat reports `extra` more allocated bytes than the file has, as ext4 does for a
// large file that needs an extent-tree block; checks the capacity on every other call.
class InflatingEnv : public CheckingEnv {
 public:
  using CheckingEnv::CheckingEnv;
  Status Fstat(int fd, struct stat* st) override {
    Status s = EnvWrapper::Fstat(fd, st);
    if (s.ok()) st->st_blocks += static_cast<blkcnt_t>(extra / 512);
    return s;
  }
  std::atomic<uint64_t> extra{0};
};

// A copy whose real allocation exceeds its reservation is topped up before it is published: by
// evicting when the request may evict, else it is dropped; the capacity holds at every step.
TEST(ContentStoreTest, ACopyThatAllocatesMoreThanReservedIsToppedUpOrDropped) {
  TempDir tmp;
  std::string root = tmp / "cache";
  const uint64_t capacity = 3 * 4096;
  ContentStore* store = nullptr;
  InflatingEnv env([&] {
    if (store == nullptr) return;
    auto st = store->stats();
    ASSERT_LE(st.used_bytes + st.reserved_bytes, capacity);
  });
  auto s = Open(root, &env, ContentStoreOptions{capacity, 0, nullptr});
  ASSERT_TRUE(s.ok());
  store = s->store.get();
  ASSERT_TRUE(Publish(store, &env, "a", RandomBytes(4096, 1)).ok());
  ASSERT_TRUE(Publish(store, &env, "b", RandomBytes(4096, 2)).ok());
  env.extra = 4096;  // the next copies take two blocks where one was reserved

  // May not evict: there is room for its reservation but not for what it really took.
  const std::string data = RandomBytes(4096, 3);
  auto slot = store->BeginStaging("c", data.size(), /*may_evict=*/false);
  ASSERT_TRUE(slot.ok()) << slot.status().message();
  ASSERT_TRUE(env.PwriteAll(slot->fd, data.data(), data.size(), 0).ok());
  Status refused = store->Commit(&*slot, IdentityFor(data));
  EXPECT_EQ(refused.code(), ENOSPC) << refused.message();
  EXPECT_FALSE(store->Contains("c"));
  EXPECT_TRUE(store->Contains("a"));
  EXPECT_TRUE(store->Contains("b"));
  EXPECT_EQ(store->stats().reserved_bytes, 0u);
  EXPECT_EQ(CountFiles(root + "/tmp"), 0u);

  // May evict: the least recently used copy makes room for the second block.
  ASSERT_TRUE(Publish(store, &env, "c", data).ok());
  EXPECT_FALSE(store->Contains("a"));
  EXPECT_TRUE(store->Contains("b"));
  ASSERT_TRUE(store->Find("c").has_value());
  EXPECT_EQ(store->Find("c")->alloc_bytes, 8192u);
  EXPECT_EQ(store->stats().used_bytes, capacity);
  EXPECT_EQ(store->stats().reserved_bytes, 0u);
  store = nullptr;
}

TEST(ContentStoreTest, ReopenWithSmallerCapacityEvictsDownToIt) {
  TempDir tmp;
  std::string root = tmp / "cache";
  {
    auto s = Open(root, Env::Default(), ContentStoreOptions{1 << 20, 0, nullptr});
    ASSERT_TRUE(s.ok());
    for (int i = 0; i < 8; ++i) {
      ASSERT_TRUE(
          Publish(s->store.get(), Env::Default(), "f" + std::to_string(i), RandomBytes(4096, i))
              .ok());
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
  }
  const uint64_t capacity = 3 * 4096;
  auto s = Open(root, Env::Default(), ContentStoreOptions{capacity, 0, nullptr});
  ASSERT_TRUE(s.ok()) << s.status().message();
  auto st = s->store->stats();
  EXPECT_LE(st.used_bytes, capacity);
  EXPECT_EQ(st.files, 3u);
  EXPECT_EQ(s->store->recovery().evicted, 5u);
  EXPECT_EQ(s->store->recovery().entries, 3u);
  EXPECT_TRUE(s->store->Contains("f7"));  // the newest stay
  EXPECT_FALSE(s->store->Contains("f0"));
  EXPECT_EQ(CountFiles(root + "/data"), 3u);
  EXPECT_LE(AllocatedUnder(root + "/data"), capacity);
}

TEST(ContentStoreTest, FileLargerThanTheDeviceIsEfbigAndEvictsNothing) {
  TempDir tmp;
  TinyTmpfs tmpfs(tmp);
  if (!tmpfs.error().empty()) GTEST_SKIP() << tmpfs.error();
  const std::string& dev = tmpfs.path();
  auto s =
      Open(dev + "/cache", Env::Default(), ContentStoreOptions{0, 1 << 20, nullptr}, tmp / "index");
  ASSERT_TRUE(s.ok()) << s.status().message();
  ASSERT_TRUE(Publish(s->store.get(), Env::Default(), "small", RandomBytes(4096, 1)).ok());
  auto big = s->store->BeginStaging("big", 1536 * 1024);  // 1.5 MiB: never fits above 1 MiB free
  EXPECT_EQ(big.status().code(), EFBIG) << big.status().message();
  EXPECT_TRUE(s->store->Contains("small"));
  EXPECT_EQ(s->store->stats().evictions, 0u);
}

// --- Injected errors on the cache device. ---

TEST(ContentStoreTest, InjectedErrorsLeaveNoTempAndNoEntry) {
  struct Case {
    FaultOp op;
    uint64_t nth;
    int err;
  };
  for (const Case& c : {Case{FaultOp::kPwrite, 2, ENOSPC}, Case{FaultOp::kFsync, 1, EIO},
                        Case{FaultOp::kFsync, 1, ENOSPC}, Case{FaultOp::kOpen, 1, ENOSPC},
                        Case{FaultOp::kRename, 1, EIO}, Case{FaultOp::kSyncDir, 1, EIO},
                        Case{FaultOp::kClose, 1, EIO}, Case{FaultOp::kStatVfs, 1, EIO}}) {
    SCOPED_TRACE(std::string(FaultOpName(c.op)) + " " + strerror(c.err));
    TempDir tmp;
    std::string root = tmp / "cache";
    FaultInjectionEnv env;
    auto s = Open(root, &env);
    ASSERT_TRUE(s.ok());
    env.FailNth(c.op, c.nth, c.err);
    Status st = Publish(s->store.get(), &env, "x", RandomBytes(3 * 4096, 5));
    EXPECT_EQ(st.code(), c.err) << st.message();
    EXPECT_FALSE(s->store->Contains("x"));
    EXPECT_EQ(s->store->stats().reserved_bytes, 0u);
    EXPECT_EQ(s->store->stats().files, 0u);
    EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
    EXPECT_EQ(CountFiles(root + "/data"), 0u);
    // The path can be staged again once the fault is gone.
    EXPECT_TRUE(Publish(s->store.get(), &env, "x", RandomBytes(3 * 4096, 5)).ok());
  }
}

TEST(ContentStoreTest, ShortCopyIsNotPublished) {
  TempDir tmp;
  std::string root = tmp / "cache";
  auto s = Open(root, Env::Default());
  ASSERT_TRUE(s.ok());
  auto slot = s->store->BeginStaging("x", 10000);
  ASSERT_TRUE(slot.ok());
  std::string part = RandomBytes(5000, 1);
  ASSERT_TRUE(Env::Default()->PwriteAll(slot->fd, part.data(), part.size(), 0).ok());
  Status st = s->store->Commit(&*slot, FileIdentity{10000, 1, 1, 1});
  EXPECT_EQ(st.code(), EIO);
  EXPECT_FALSE(s->store->Contains("x"));
  EXPECT_EQ(CountFiles(root + "/tmp"), 0u);
  EXPECT_EQ(s->store->stats().reserved_bytes, 0u);
}

// --- Cache directory: format, lock, permissions. ---

TEST(CacheDirTest, FormatMismatchRefusedClearly) {
  TempDir tmp;
  std::string root = tmp / "cache";
  { ASSERT_TRUE(CacheDir::Acquire(root, Env::Default()).ok()); }
  WriteFile(root + "/FORMAT", "clairfs-cache 99\n");
  auto dir = CacheDir::Acquire(root, Env::Default());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), EPROTO);
  EXPECT_NE(dir.status().message().find("clairfs-cache 99"), std::string::npos)
      << dir.status().message();
  EXPECT_NE(dir.status().message().find("clairfs-cache 1"), std::string::npos);
  EXPECT_NE(dir.status().message().find(root), std::string::npos);
}

TEST(CacheDirTest, ForeignNonEmptyDirectoryRefused) {
  TempDir tmp;
  WriteFile(tmp / "precious.txt", "user data");
  ASSERT_EQ(chmod(tmp.path().c_str(), 0755), 0);
  auto dir = CacheDir::Acquire(tmp.path(), Env::Default());
  ASSERT_FALSE(dir.ok());
  EXPECT_EQ(dir.status().code(), ENOTEMPTY);
  EXPECT_NE(dir.status().message().find("precious.txt"), std::string::npos);
  EXPECT_EQ(ReadFile(tmp / "precious.txt"), "user data");
  // Refused untouched: no lock file left in it and its mode unchanged.
  EXPECT_FALSE(PathExists(tmp / "lock"));
  struct stat st;
  ASSERT_EQ(lstat(tmp.path().c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0755u);
}

TEST(CacheDirTest, CrashDuringFirstAcquireDoesNotMakeTheDirectoryForeign) {
  TempDir tmp;
  std::string root = tmp / "cache";
  testing::MakeDirs(root + "/data");
  WriteFile(root + "/lock", "123\n");
  WriteFile(root + "/FORMAT.tmp", "clairfs-ca");  // died before the rename
  auto dir = CacheDir::Acquire(root, Env::Default());
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  EXPECT_EQ(ReadFile(root + "/FORMAT"), "clairfs-cache 1\n");
}

TEST(CacheDirTest, SecondAcquireIsEbusyNamingThePid) {
  TempDir tmp;
  std::string root = tmp / "cache";
  auto first = CacheDir::Acquire(root, Env::Default());
  ASSERT_TRUE(first.ok());
  auto second = CacheDir::Acquire(root, Env::Default());
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), EBUSY);
  EXPECT_NE(second.status().message().find("pid " + std::to_string(getpid())), std::string::npos)
      << second.status().message();
  first->reset();
  EXPECT_TRUE(CacheDir::Acquire(root, Env::Default()).ok());
}

TEST(CacheDirTest, LayoutIsPrivate) {
  TempDir tmp;
  std::string root = tmp / "cache";
  mode_t old = umask(0);
  testing::MakeDirs(root);
  chmod(root.c_str(), 0777);
  auto dir = CacheDir::Acquire(root, Env::Default());
  umask(old);
  ASSERT_TRUE(dir.ok()) << dir.status().message();
  for (const std::string& p : {root, root + "/data", root + "/tmp", root + "/index",
                               root + "/data/00", root + "/data/ff"}) {
    struct stat st;
    ASSERT_EQ(lstat(p.c_str(), &st), 0) << p;
    EXPECT_EQ(st.st_mode & 0777, 0700u) << p;
  }
  EXPECT_EQ(ReadFile(root + "/FORMAT"), "clairfs-cache 1\n");
}

}  // namespace
}  // namespace clairfs
