// ListAhead: lists a mount's tree for the kernel ahead of the job's opens (see list_ahead.h).
#include "fs/fuse/list_ahead.h"

#include <dirent.h>

#include <vector>

#include "fs/fuse/sched_policy.h"
#include "planner/base/log.h"

namespace clairfs {

ListAhead::ListAhead(Env* env, uint64_t max_names) : env_(env), max_names_(max_names) {}

ListAhead::~ListAhead() { Stop(); }

void ListAhead::Start(const std::string& mountpoint) {
  if (thread_.joinable()) return;
  thread_ = std::thread([this, mountpoint] {
    BecomeWarmUpThread("clairfs-list");  // the job's requests come before its READDIRPLUS
    (void)Run(mountpoint);
  });
}

void ListAhead::Stop() {
  RequestStop();
  if (thread_.joinable()) thread_.join();
}

ListAhead::Stats ListAhead::stats() const {
  Stats s;
  s.started = started_.load();
  s.names = names_.load();
  s.directories = directories_.load();
  s.failed_directories = failed_directories_.load();
  s.done = done_.load();
  s.stopped = stopped_.load();
  s.seconds = seconds_.load();
  return s;
}

Status ListAhead::Run(const std::string& mountpoint) {
  started_.store(true);
  const uint64_t start = env_->NowMonotonicNanos();
  Status first_error;
  std::vector<std::string> pending{mountpoint};  // a stack: depth-first, in listing order
  std::vector<DirEntry> entries;
  uint64_t names = 0;
  while (!pending.empty() && names < max_names_) {
    if (stop_.load(std::memory_order_relaxed)) {
      stopped_.store(true);
      break;
    }
    const std::string dir = std::move(pending.back());
    pending.pop_back();
    Status listed = env_->ListDir(dir, &entries, max_names_ - names);
    if (!listed.ok()) {
      failed_directories_.fetch_add(1, std::memory_order_relaxed);
      if (first_error.ok()) first_error = listed;
      continue;
    }
    names += entries.size();
    names_.store(names, std::memory_order_relaxed);
    directories_.fetch_add(1, std::memory_order_relaxed);
    for (auto it = entries.rbegin(); it != entries.rend(); ++it) {
      if (it->type == DT_DIR) pending.push_back(dir + "/" + it->name);
    }
  }
  seconds_.store(static_cast<double>(env_->NowMonotonicNanos() - start) / 1e9);
  done_.store(true);
  Log(first_error.ok() ? LogLevel::kInfo : LogLevel::kWarn,
      "listed %llu names in %llu directories ahead of the first opens (%.3f s%s%s%s)",
      static_cast<unsigned long long>(names), static_cast<unsigned long long>(directories_.load()),
      seconds_.load(), names >= max_names_ ? ", bound reached" : "",
      stopped_.load() ? ", stopped at unmount" : "",
      first_error.ok() ? "" : (", some directories not listed: " + first_error.message()).c_str());
  return first_error;
}

}  // namespace clairfs
