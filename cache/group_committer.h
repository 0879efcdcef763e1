// GroupCommitter: publishes staged copies in groups, so that the durable steps of the publish
// protocol (the data directory's fsync and the synced index write) are paid once per group
// instead of once per file (ContentStore::CommitBatch).
//
// Batching: a committer thread waits for the first submitted copy, then takes everything queued
// (at most `max_batch`) and publishes it at once. Copies submitted while a group is being
// published form the next group, so under load groups grow by themselves and a lone copy is not
// delayed at all when `linger` is 0. With `linger` > 0 a group smaller than `max_batch` waits at
// most that long for more copies before it is published (never longer: a read-through stage
// still completes promptly).
//
// Submit() hands over a slot (its bytes written, fsynced already if slot->data_synced says so)
// and returns at once; `done` runs on a committer thread with the outcome (the slot is published
// or aborted by then). Commit() is Submit() plus waiting for the outcome.
//
// Thread-safe. The slot must stay valid until `done` runs. Callbacks must not block for long
// (they hold up the next group). The destructor publishes what is still queued, runs its
// callbacks, then joins the committer threads.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

#include "cache/content_store.h"
#include "cache/node_attr.h"
#include "planner/base/status.h"

namespace clairfs {

struct GroupCommitterOptions {
  size_t max_batch = 64;   // copies per group
  uint64_t linger_ns = 0;  // longest wait for company once a group has begun
  int threads = 1;         // groups published at once
};

class GroupCommitter {
 public:
  using Done = std::function<void(const Status& status)>;

  GroupCommitter(ContentStore* store, const GroupCommitterOptions& options);
  ~GroupCommitter();
  GroupCommitter(const GroupCommitter&) = delete;
  GroupCommitter& operator=(const GroupCommitter&) = delete;

  // Queues `slot` for publishing as the copy of `identity`; `done` gets the outcome. A `seal`
  // that came with the bytes (a peer's) is kept; without one the store seals the copy if it can
  // (ContentStore::CommitBatch).
  void Submit(StagingSlot* slot, const FileIdentity& identity, Done done,
              std::optional<CopySeal> seal = std::nullopt,
              CopyOrigin origin = CopyOrigin::kBackingStore);
  // Publishes `slot` with the next group and returns the outcome.
  Status Commit(StagingSlot* slot, const FileIdentity& identity,
                std::optional<CopySeal> seal = std::nullopt,
                CopyOrigin origin = CopyOrigin::kBackingStore);

  // Groups published so far and the copies in them (tests, benchmarks).
  uint64_t groups() const;
  uint64_t copies() const;

 private:
  struct Pending {
    StagingSlot* slot;
    FileIdentity identity;
    Done done;
    std::optional<CopySeal> seal;
    CopyOrigin origin;
  };
  void Loop();

  ContentStore* store_;
  GroupCommitterOptions options_;
  mutable std::mutex mu_;  // guards queue_, stop_, groups_, copies_
  std::condition_variable cv_;
  std::deque<Pending> queue_;
  bool stop_ = false;
  uint64_t groups_ = 0;
  uint64_t copies_ = 0;
  std::vector<std::thread> threads_;
};

}  // namespace clairfs
