// PeerDeliverer: publishes the bytes a peer sent, only if they are what the PFS held.
//
// Receiving a file from a peer, step by step (docs/PEERS.md, "Staging through a peer"):
//   1. Open(path): a memory file (memfd) of the listed size that the agent fills; the daemon keeps
//      its own descriptor of it.
//   2. Deliver(path, seal): the agent says the bytes are in, with the digest and authenticator
//      that came with them. The memory file is sealed (no write, grow or shrink from then on, by
//      anyone; refused if the agent still has it mapped writable), then a worker thread checks the
//      authenticator against this path's listed version, copies the bytes into a staging slot of
//      the store while computing their SHA-256, compares it with the claimed digest, fsyncs and
//      hands the slot to a group committer, which publishes it with the seal (origin: peer).
//   3. Any mismatch (size, digest, authenticator, seal refused) drops the bytes; `on_outcome` is
//      told the file failed, so it is staged from the PFS. A corrupt, short or forged transfer is
//      a miss, never wrong bytes.
// Bounds: at most max_open memory files at once and max_open_bytes of them (Open answers EAGAIN
// beyond); a memory file not delivered within open_timeout is dropped (Sweep).
//
// Thread-safety: every method is thread-safe. `on_outcome` runs on a worker or committer thread,
// never under the deliverer's lock.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "cache/content_store.h"
#include "cache/copy_seal.h"
#include "cache/group_committer.h"
#include "cache/manifest.h"

namespace clairfs {

struct PeerDelivererOptions {
  size_t max_open = 64;
  uint64_t max_open_bytes = uint64_t{256} << 20;
  std::chrono::milliseconds open_timeout{30000};
  // Each publish waits on its fsync: workers overlap them (the device merges concurrent ones).
  int workers = 4;
};

struct PeerDeliveryStats {
  uint64_t published = 0;
  uint64_t bytes_published = 0;
  uint64_t rejected = 0;  // size, digest, authenticator or seal wrong
  uint64_t dropped = 0;   // opened and never delivered in time
  uint64_t open = 0;      // memory files handed out and not delivered yet
  // Where a published transfer's time went, summed over the published files: from handing out
  // the memory file to the agent's delivery (the peers' part), from the delivery to a worker
  // taking it (the queue), and from there to the index entry (check, copy, fsync, commit).
  uint64_t filling_ns = 0;
  uint64_t queued_ns = 0;
  uint64_t publishing_ns = 0;
};

class PeerDeliverer {
 public:
  // `on_outcome(path, status, bytes)`: ok when published; otherwise why not.
  using Outcome =
      std::function<void(const std::string& path, const Status& status, uint64_t bytes)>;

  PeerDeliverer(ContentStore* store, Manifest* manifest, std::shared_ptr<const PeerKey> key,
                Outcome on_outcome, PeerDelivererOptions options = {});
  // Drops open memory files and finishes the deliveries under way.
  ~PeerDeliverer();
  PeerDeliverer(const PeerDeliverer&) = delete;
  PeerDeliverer& operator=(const PeerDeliverer&) = delete;

  // A memory file for the bytes of `path` (a regular file of the manifest), for the agent to
  // fill: a descriptor of its own, which the caller sends and closes. EAGAIN over the bounds,
  // EEXIST if one is open for `path` or its copy is published, ENOENT if `path` is not a listed
  // file.
  Result<int> Open(const std::string& path);
  // The agent filled `path`'s memory file: checked and published in the background (see the
  // top of this file). Errors only for what is wrong at once (no memory file open for `path`).
  Status Deliver(const std::string& path, const CopySeal& claimed);
  // The agent gives `path` up: its memory file is dropped.
  void Abandon(const std::string& path);
  // The agent left: every memory file not delivered is dropped.
  void AbandonAll();
  // Drops memory files opened longer than open_timeout ago; returns how many.
  size_t Sweep(std::chrono::steady_clock::time_point now = std::chrono::steady_clock::now());

  PeerDeliveryStats stats();

 private:
  struct Opened {
    int fd = -1;
    uint64_t size = 0;
    FileIdentity identity;
    std::chrono::steady_clock::time_point opened;
  };
  struct Job {
    std::string path;
    Opened file;
    CopySeal claimed;
    std::chrono::steady_clock::time_point delivered;
  };
  void Work();
  // Checks and copies one delivery into a staging slot; the slot is then the committer's.
  void Publish(Job job, std::vector<char>* buffer);
  void Finish(const std::string& path, const Status& status, uint64_t bytes);

  ContentStore* store_;
  Manifest* manifest_;
  std::shared_ptr<const PeerKey> key_;
  Outcome on_outcome_;
  PeerDelivererOptions options_;
  std::unique_ptr<GroupCommitter> committer_;
  std::mutex mu_;  // guards everything below
  std::condition_variable cv_;
  std::unordered_map<std::string, Opened> open_;
  uint64_t open_bytes_ = 0;
  std::deque<Job> jobs_;
  bool stop_ = false;
  PeerDeliveryStats stats_;
  std::vector<std::thread> workers_;
};

}  // namespace clairfs
