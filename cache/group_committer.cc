// GroupCommitter: the committer threads and their batching (see group_committer.h).
#include "cache/group_committer.h"

#include <algorithm>
#include <chrono>
#include <future>
#include <span>

namespace clairfs {

GroupCommitter::GroupCommitter(ContentStore* store, const GroupCommitterOptions& options)
    : store_(store), options_(options) {
  options_.max_batch = std::max<size_t>(1, options_.max_batch);
  for (int i = 0; i < std::max(1, options_.threads); ++i) {
    threads_.emplace_back([this] { Loop(); });
  }
}

GroupCommitter::~GroupCommitter() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : threads_) t.join();
}

void GroupCommitter::Submit(StagingSlot* slot, const FileIdentity& identity, Done done,
                            std::optional<CopySeal> seal, CopyOrigin origin) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(Pending{slot, identity, std::move(done), seal, origin});
  }
  cv_.notify_all();  // a lingering group may be waiting for exactly this copy
}

Status GroupCommitter::Commit(StagingSlot* slot, const FileIdentity& identity,
                              std::optional<CopySeal> seal, CopyOrigin origin) {
  std::promise<Status> outcome;
  std::future<Status> result = outcome.get_future();
  Submit(
      slot, identity, [&outcome](const Status& st) { outcome.set_value(st); }, seal, origin);
  return result.get();
}

uint64_t GroupCommitter::groups() const {
  std::lock_guard<std::mutex> lock(mu_);
  return groups_;
}

uint64_t GroupCommitter::copies() const {
  std::lock_guard<std::mutex> lock(mu_);
  return copies_;
}

void GroupCommitter::Loop() {
  std::vector<Pending> group;
  std::vector<CommitItem> items;
  for (;;) {
    group.clear();
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopping with nothing left
      if (options_.linger_ns > 0 && !stop_ && queue_.size() < options_.max_batch) {
        auto deadline =
            std::chrono::steady_clock::now() + std::chrono::nanoseconds(options_.linger_ns);
        cv_.wait_until(lock, deadline,
                       [&] { return stop_ || queue_.size() >= options_.max_batch; });
      }
      size_t n = std::min(queue_.size(), options_.max_batch);
      if (n == 0) continue;  // another committer thread took them while this one lingered
      for (size_t i = 0; i < n; ++i) {
        group.push_back(std::move(queue_.front()));
        queue_.pop_front();
      }
      ++groups_;
      copies_ += n;
    }
    items.clear();
    for (const Pending& p : group) {
      items.push_back(CommitItem{p.slot, p.identity, p.seal, p.origin, Status::Ok()});
    }
    store_->CommitBatch(std::span<CommitItem>(items));
    for (size_t i = 0; i < group.size(); ++i) {
      if (group[i].done) group[i].done(items[i].status);
    }
  }
}

}  // namespace clairfs
