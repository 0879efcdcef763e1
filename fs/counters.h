// MountCounters: per-mount totals of what reached the daemon.
//
// Counters see the requests the kernel sends: reads the kernel page cache serves never reach the
// daemon, so "bytes from cache" means bytes the daemon read from a staged copy. A hit is an open
// of a file whose copy was already published in the local cache. Relaxed atomics, each on its own
// cache line, so readers on different cores do not contend on one line or any lock.
// In kernel passthrough the daemon sees opens and releases but no reads: such an open adds the
// whole file size to bytes_from_cache (an estimate: a dataset sample is usually read whole).
// On a no-open mount an open is a file's first READ (at offset 0) that reaches the daemon
// (docs/NO-OPEN.md): opens and reads the kernel's page cache serves are not seen.
#pragma once

#include <atomic>
#include <cstdint>

namespace clairfs {

struct alignas(64) PaddedCounter {
  std::atomic<uint64_t> value{0};
  void Add(uint64_t n) { value.fetch_add(n, std::memory_order_relaxed); }
  uint64_t Get() const { return value.load(std::memory_order_relaxed); }
};

struct MountCounters {
  PaddedCounter opens;
  PaddedCounter hits;
  PaddedCounter misses;
  // The misses by cause (OpenObserver's MissCause); they sum to `misses`.
  PaddedCounter misses_unplanned;
  PaddedCounter misses_copy_queued;
  PaddedCounter misses_copy_in_flight;
  PaddedCounter misses_left_to_reader;
  PaddedCounter misses_not_staged_ahead;
  PaddedCounter reads;
  PaddedCounter bytes_from_cache;
  PaddedCounter bytes_from_backing;
  PaddedCounter backing_errors;  // backing-store errors returned to readers (as EIO etc.)
  PaddedCounter stale_detected;  // files found changed at open (--revalidate open)
  // Staged copies this mount's listing found changed or gone in the backing store (dropped).
  PaddedCounter stale_at_mount;
  // Opens refused because the backing file is not the listed version any more (ESTALE): changed
  // or replaced while mounted (cache/backing_tree.h).
  PaddedCounter not_as_listed;
  // Opens and reads of a staged copy that failed (not because it was gone: its device failed)
  // and were served from the backing file instead.
  PaddedCounter copy_read_fallbacks;
  PaddedCounter lookups;
  PaddedCounter read_requests;  // READ requests received by the adapter
  // OPEN, FLUSH and RELEASE requests received (a no-open mount answers the first OPEN and FLUSH
  // with ENOSYS, after which the kernel sends none of the three).
  PaddedCounter open_requests;
  PaddedCounter flush_requests;
  PaddedCounter release_requests;
  PaddedCounter passthrough_opens;  // opens the kernel reads directly from a staged copy
  PaddedCounter held_copy_opens;    // of those, opens of a copy the kernel already held
  // Of the hits and of bytes_from_cache: those on copies a peer brought (docs/PEERS.md).
  PaddedCounter hits_peer_copies;
  PaddedCounter bytes_from_peer_copies;
};

}  // namespace clairfs
