// CacheDeviceProbe: notices a cache device that stopped reading while nobody asks the daemon for a
// copy's bytes.
//
// With passthrough, and with the copies the kernel holds between opens (held copies), the kernel
// reads staged copies itself: a device that dies under them shows only as EIO to their readers,
// and the daemon, which would fall back to the backing store on a copy it reads itself
// (FileSystem, ContentStore::ReportCopyReadError), never learns of it. The probe reads the first
// block of a small file of the cache (CACHE/FORMAT) every interval, with O_DIRECT where the
// filesystem takes it (the page cache would otherwise answer for a dead device). A failure is
// reported to the store as a copy read error: opens then go to the backing store (copies are not
// served, held copies not claimed) for the store's pause, renewed at every failed probe while the
// device stays dead. Files opened in passthrough before the probe saw the death still fail their
// readers (the kernel reads them; docs/RELIABILITY.md).
//
// Cost: one open, one 4 KiB read and one close a second, on a thread of its own. Thread-safety:
// Stop() (and the destructor) joins the thread; ProbeOnce() may run on any thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <string>
#include <thread>

#include "cache/content_store.h"
#include "planner/base/status.h"

namespace clairfs {

class CacheDeviceProbe {
 public:
  // Probes `probe_path` (a file on the cache device) and reports failures to `store`.
  CacheDeviceProbe(ContentStore* store, std::string probe_path,
                   std::chrono::milliseconds interval = std::chrono::milliseconds(1000));
  ~CacheDeviceProbe();
  CacheDeviceProbe(const CacheDeviceProbe&) = delete;
  CacheDeviceProbe& operator=(const CacheDeviceProbe&) = delete;

  void Start();
  void Stop();
  // One probe: Ok, or the error that was reported to the store.
  Status ProbeOnce();

 private:
  void Loop();

  ContentStore* store_;
  const std::string probe_path_;
  const std::chrono::milliseconds interval_;
  std::mutex mu_;  // guards stopping_
  std::condition_variable wake_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace clairfs
