// PeerStagingQueue (see peer_queue.h).
#include "fs/peer/peer_queue.h"

namespace clairfs {

bool PeerStagingQueue::Prefetch(const std::string& path, const FileIdentity& identity,
                                StagePriority priority) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (attached_ && own_files_.count(path) == 0 && to_stager_.count(path) == 0) {
      auto again = wants_.find(path);
      if (again != wants_.end()) {
        // Withdrawn while the agent brings it, now wanted again: the transfer still counts.
        const bool revived = again->second.withdrawn;
        again->second.withdrawn = false;
        return revived;
      }
      wants_.emplace(path, Want{identity, priority, false, Clock::now() + deadline_});
      std::deque<std::string>& order = priority == StagePriority::kHigh ? order_high_ : order_;
      order.push_back(path);
      if (order_high_.size() + order_.size() > 2 * wants_.size() + 1024) {
        // Offers withdrawn before the agent took them leave stale names: drop them.
        for (std::deque<std::string>* q : {&order_high_, &order_}) {
          std::deque<std::string> kept;
          for (std::string& p : *q) {
            auto it = wants_.find(p);
            if (it != wants_.end() && !it->second.taken) kept.push_back(std::move(p));
          }
          q->swap(kept);
        }
      }
      ++stats_.wants;
      return true;
    }
  }
  return inner_->Prefetch(path, identity, priority);
}

bool PeerStagingQueue::CancelUnwaited(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = wants_.find(path);
    if (it != wants_.end()) {
      // A want the agent is bringing is left to arrive: the transfer is under way, and a copy
      // that arrives after its reader costs the PFS nothing (the policy evicts it if unneeded).
      if (it->second.taken) {
        if (!it->second.withdrawn) ++stats_.kept_in_flight;
        it->second.withdrawn = true;
        return true;
      }
      ++stats_.withdrawn;
      wants_.erase(it);
      return true;
    }
    to_stager_.erase(path);
  }
  return inner_->CancelUnwaited(path);
}

CopyProgress PeerStagingQueue::ProgressOf(const std::string& path) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = wants_.find(path);
    if (it != wants_.end())
      return it->second.taken ? CopyProgress::kInFlight : CopyProgress::kQueued;
  }
  return inner_->ProgressOf(path);
}

uint64_t PeerStagingQueue::held_bytes() {
  std::lock_guard<std::mutex> lock(mu_);
  return attached_ ? held_bytes_ : 0;
}

bool PeerStagingQueue::PeerAgentAttached() {
  std::lock_guard<std::mutex> lock(mu_);
  return attached_;
}

bool PeerStagingQueue::CopiesFromBackingStore(const std::string& path) {
  std::lock_guard<std::mutex> lock(mu_);
  return !attached_ || own_files_.count(path) != 0 || to_stager_.count(path) != 0;
}

StagerStats PeerStagingQueue::stats() {
  StagerStats s = inner_->stats();
  std::lock_guard<std::mutex> lock(mu_);
  for (const auto& [path, want] : wants_) {
    if (want.taken) {
      ++s.in_flight;
    } else {
      ++s.queued;
    }
  }
  s.files_staged += stats_.delivered;
  s.bytes_staged += stats_.bytes_delivered;
  return s;
}

void PeerStagingQueue::Attach(std::unordered_set<std::string> own_files,
                              std::chrono::milliseconds deadline, uint64_t held_bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  attached_ = true;
  deadline_ = deadline;
  held_bytes_ = held_bytes;
  own_files_ = std::move(own_files);
}

void PeerStagingQueue::Detach() {
  std::vector<std::pair<std::string, Want>> left;
  {
    std::lock_guard<std::mutex> lock(mu_);
    attached_ = false;
    own_files_.clear();
    to_stager_.clear();
    for (auto& [path, want] : wants_) {
      if (!want.withdrawn) left.emplace_back(path, want);
    }
    wants_.clear();
    order_high_.clear();
    order_.clear();
  }
  ToStager(left);
}

bool PeerStagingQueue::attached() {
  std::lock_guard<std::mutex> lock(mu_);
  return attached_;
}

std::vector<PeerWant> PeerStagingQueue::TakeWants(size_t max, Clock::time_point now) {
  std::vector<PeerWant> out;
  std::lock_guard<std::mutex> lock(mu_);
  for (std::deque<std::string>* order : {&order_high_, &order_}) {
    while (out.size() < max && !order->empty()) {
      std::string path = std::move(order->front());
      order->pop_front();
      auto it = wants_.find(path);
      if (it == wants_.end() || it->second.taken) continue;  // cancelled, or offered again
      it->second.taken = true;
      it->second.taken_at = now;
      it->second.deadline = now + deadline_;
      out.push_back(PeerWant{std::move(path), it->second.identity});
    }
  }
  return out;
}

void PeerStagingQueue::Delivered(const std::string& path, uint64_t bytes) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = wants_.find(path);
  if (it != wants_.end()) {
    if (it->second.taken) {
      stats_.delivery_ns += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(Clock::now() - it->second.taken_at)
              .count());
      ++stats_.delivered_timed;
    }
    wants_.erase(it);
  }
  to_stager_.erase(path);
  ++stats_.delivered;
  stats_.bytes_delivered += bytes;
}

bool PeerStagingQueue::Failed(const std::string& path, Clock::time_point now) {
  std::vector<std::pair<std::string, Want>> failed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = wants_.find(path);
    if (it == wants_.end()) return false;
    if (it->second.taken && now > it->second.taken_at) {
      // How long a refusal takes (a home that has no copy, a peer that is busy): the simulator's
      // --refusal-ms (docs/SIMULATOR.md).
      stats_.failure_ns += static_cast<uint64_t>(
          std::chrono::duration_cast<std::chrono::nanoseconds>(now - it->second.taken_at).count());
      ++stats_.failed_timed;
    }
    if (!it->second.withdrawn) {
      failed.emplace_back(it->first, it->second);
      to_stager_.insert(it->first);
    }
    wants_.erase(it);
    ++stats_.failed;
  }
  ToStager(failed);
  return true;
}

size_t PeerStagingQueue::Expire(Clock::time_point now) {
  std::vector<std::pair<std::string, Want>> expired;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto it = wants_.begin(); it != wants_.end();) {
      if (it->second.deadline <= now) {
        if (!it->second.withdrawn) {
          expired.emplace_back(it->first, it->second);
          to_stager_.insert(it->first);
        }
        ++stats_.expired;
        it = wants_.erase(it);
      } else {
        ++it;
      }
    }
  }
  ToStager(expired);
  return expired.size();
}

PeerQueueStats PeerStagingQueue::peer_stats() {
  std::lock_guard<std::mutex> lock(mu_);
  PeerQueueStats s = stats_;
  s.waiting = 0;
  s.taken = 0;
  for (const auto& [path, want] : wants_) (want.taken ? s.taken : s.waiting) += 1;
  return s;
}

void PeerStagingQueue::ToStager(const std::vector<std::pair<std::string, Want>>& wants) {
  for (const auto& [path, want] : wants) inner_->Prefetch(path, want.identity, want.priority);
}

}  // namespace clairfs
