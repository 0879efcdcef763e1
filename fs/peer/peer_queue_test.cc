// PeerStagingQueue: what goes to the agent, what to the stager, and when a want falls back.
#include "fs/peer/peer_queue.h"

#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

namespace clairfs {
namespace {

using namespace std::chrono_literals;

class RecordingQueue : public StagingQueue {
 public:
  bool Prefetch(const std::string& path, const FileIdentity&, StagePriority) override {
    prefetched.push_back(path);
    return true;
  }
  bool CancelUnwaited(const std::string& path) override {
    cancelled.push_back(path);
    return true;
  }
  StagerStats stats() override {
    StagerStats s;
    s.files_staged = 7;
    return s;
  }
  CopyProgress ProgressOf(const std::string& path) override {
    return path == "staging" ? CopyProgress::kInFlight : CopyProgress::kNone;
  }
  std::vector<std::string> prefetched;
  std::vector<std::string> cancelled;
};

const FileIdentity kId{10, 1, 2, 3};

TEST(PeerQueueTest, WithoutAnAgentEverythingGoesToTheStager) {
  RecordingQueue stager;
  PeerStagingQueue queue(&stager);
  EXPECT_TRUE(queue.Prefetch("a", kId, StagePriority::kNormal));
  EXPECT_EQ(stager.prefetched, std::vector<std::string>{"a"});
  EXPECT_TRUE(queue.TakeWants(10).empty());
}

TEST(PeerQueueTest, OwnFilesGoToTheStagerOthersToTheAgentInOfferOrder) {
  RecordingQueue stager;
  PeerStagingQueue queue(&stager);
  queue.Attach({"mine"}, 1000ms);
  EXPECT_TRUE(queue.Prefetch("mine", kId, StagePriority::kNormal));
  EXPECT_TRUE(queue.Prefetch("b", kId, StagePriority::kNormal));
  EXPECT_TRUE(queue.Prefetch("c", kId, StagePriority::kHigh));
  EXPECT_FALSE(queue.Prefetch("b", kId, StagePriority::kNormal));  // already wanted
  EXPECT_EQ(stager.prefetched, std::vector<std::string>{"mine"});
  StagerStats s = queue.stats();
  EXPECT_EQ(s.queued, 2u);
  auto wants = queue.TakeWants(1);
  ASSERT_EQ(wants.size(), 1u);
  EXPECT_EQ(wants[0].path, "c");  // high priority first
  wants = queue.TakeWants(5);
  ASSERT_EQ(wants.size(), 1u);
  EXPECT_EQ(wants[0].path, "b");
  s = queue.stats();
  EXPECT_EQ(s.queued, 0u);
  EXPECT_EQ(s.in_flight, 2u);
  queue.Delivered("c", 10);
  EXPECT_TRUE(queue.Failed("b"));
  EXPECT_FALSE(queue.Failed("b"));
  EXPECT_EQ(stager.prefetched, (std::vector<std::string>{"mine", "b"}));
  s = queue.stats();
  EXPECT_EQ(s.files_staged, 8u);  // the stager's 7 and the delivered one
  PeerQueueStats p = queue.peer_stats();
  EXPECT_EQ(p.wants, 2u);
  EXPECT_EQ(p.delivered, 1u);
  EXPECT_EQ(p.failed, 1u);
  EXPECT_EQ(p.bytes_delivered, 10u);
}

TEST(PeerQueueTest, AWantIsQueuedUntilTakenThenInFlightUntilDelivered) {
  RecordingQueue stager;
  PeerStagingQueue queue(&stager);
  queue.Attach({"mine"}, 1000ms);
  ASSERT_TRUE(queue.Prefetch("b", kId, StagePriority::kNormal));
  EXPECT_EQ(queue.ProgressOf("b"), CopyProgress::kQueued);
  ASSERT_EQ(queue.TakeWants(1).size(), 1u);
  EXPECT_EQ(queue.ProgressOf("b"), CopyProgress::kInFlight);
  // Withdrawn while the agent brings it: the transfer is still under way.
  EXPECT_TRUE(queue.CancelUnwaited("b"));
  EXPECT_EQ(queue.ProgressOf("b"), CopyProgress::kInFlight);
  queue.Delivered("b", 10);
  EXPECT_EQ(queue.ProgressOf("b"), CopyProgress::kNone);
  // Not a want: the stager's answer.
  EXPECT_EQ(queue.ProgressOf("staging"), CopyProgress::kInFlight);
  EXPECT_EQ(queue.ProgressOf("mine"), CopyProgress::kNone);
}

TEST(PeerQueueTest, WantsPastTheirDeadlineTakenOrNotGoToTheStager) {
  RecordingQueue stager;
  PeerStagingQueue queue(&stager);
  queue.Attach({}, 100ms);
  const auto t0 = PeerStagingQueue::Clock::now();
  ASSERT_TRUE(queue.Prefetch("taken", kId, StagePriority::kNormal));
  ASSERT_TRUE(queue.Prefetch("untaken", kId, StagePriority::kNormal));
  ASSERT_EQ(queue.TakeWants(1, t0 + 50ms).size(), 1u);  // "taken", deadline t0 + 150 ms
  EXPECT_EQ(queue.Expire(t0 + 20ms), 0u);
  // An agent that takes nothing (stopped) does not hold a want beyond its deadline.
  EXPECT_EQ(queue.Expire(t0 + 120ms), 1u);
  EXPECT_EQ(stager.prefetched, std::vector<std::string>{"untaken"});
  EXPECT_EQ(queue.Expire(t0 + 160ms), 1u);
  EXPECT_EQ(stager.prefetched, (std::vector<std::string>{"untaken", "taken"}));
  EXPECT_EQ(queue.peer_stats().expired, 2u);
  EXPECT_EQ(queue.peer_stats().failed_timed, 0u);  // expiring is no refusal
  // A late delivery of an expired want is still counted (the store refuses a second copy).
  queue.Delivered("taken", 10);
}

// The time from the agent taking a want to giving up on it is summed over the wants it took
// (what a refusal by a peer costs); a want given up before it was taken is not timed.
TEST(PeerQueueTest, TimesEachRefusalFromTheTaking) {
  RecordingQueue stager;
  PeerStagingQueue queue(&stager);
  queue.Attach({}, 1000ms);
  const auto t0 = PeerStagingQueue::Clock::now();
  for (const char* path : {"a", "b", "untaken"}) {
    ASSERT_TRUE(queue.Prefetch(path, kId, StagePriority::kNormal));
  }
  ASSERT_EQ(queue.TakeWants(1, t0).size(), 1u);         // "a"
  ASSERT_EQ(queue.TakeWants(1, t0 + 10ms).size(), 1u);  // "b"
  EXPECT_TRUE(queue.Failed("a", t0 + 30ms));
  EXPECT_TRUE(queue.Failed("b", t0 + 60ms));
  EXPECT_TRUE(queue.Failed("untaken", t0 + 90ms));
  PeerQueueStats p = queue.peer_stats();
  EXPECT_EQ(p.failed, 3u);
  EXPECT_EQ(p.failed_timed, 2u);
  EXPECT_EQ(p.failure_ns, static_cast<uint64_t>((30ms + 50ms) / 1ns));
  EXPECT_EQ(stager.prefetched, (std::vector<std::string>{"a", "b", "untaken"}));
}

TEST(PeerQueueTest, CancelAndDetach) {
  RecordingQueue stager;
  PeerStagingQueue queue(&stager);
  queue.Attach({}, 1000ms);
  ASSERT_TRUE(queue.Prefetch("a", kId, StagePriority::kNormal));
  ASSERT_TRUE(queue.Prefetch("b", kId, StagePriority::kNormal));
  EXPECT_TRUE(queue.CancelUnwaited("a"));
  EXPECT_TRUE(stager.cancelled.empty());
  EXPECT_TRUE(queue.CancelUnwaited("z"));  // not a want: the stager's
  EXPECT_EQ(stager.cancelled, std::vector<std::string>{"z"});
  auto wants = queue.TakeWants(10);
  ASSERT_EQ(wants.size(), 1u);
  EXPECT_EQ(wants[0].path, "b");
  // Offered, withdrawn, offered again: taken once.
  ASSERT_TRUE(queue.Prefetch("c", kId, StagePriority::kNormal));
  ASSERT_TRUE(queue.CancelUnwaited("c"));
  ASSERT_TRUE(queue.Prefetch("c", kId, StagePriority::kNormal));
  EXPECT_EQ(queue.TakeWants(10).size(), 1u);
  queue.Detach();
  EXPECT_FALSE(queue.attached());
  std::set<std::string> to_stager(stager.prefetched.begin(), stager.prefetched.end());
  EXPECT_EQ(to_stager, (std::set<std::string>{"b", "c"}));
  EXPECT_TRUE(queue.Prefetch("d", kId, StagePriority::kNormal));
  EXPECT_EQ(stager.prefetched.back(), "d");
}

}  // namespace
}  // namespace clairfs

namespace clairfs {
namespace {

TEST(PeerQueueTest, SaysWhichFilesComeFromThePfsAndWhatIsHeld) {
  RecordingQueue stager;
  PeerStagingQueue queue(&stager);
  EXPECT_TRUE(queue.CopiesFromBackingStore("x"));
  EXPECT_EQ(queue.held_bytes(), 0u);
  queue.Attach({"mine"}, 1000ms, 4096);
  EXPECT_TRUE(queue.CopiesFromBackingStore("mine"));
  EXPECT_FALSE(queue.CopiesFromBackingStore("x"));
  EXPECT_EQ(queue.held_bytes(), 4096u);
  EXPECT_EQ(queue.backing_stats().files_staged, 7u);
  // A want handed to the stager is the PFS's from then on.
  ASSERT_TRUE(queue.Prefetch("x", kId, StagePriority::kNormal));
  ASSERT_EQ(queue.TakeWants(1).size(), 1u);
  ASSERT_TRUE(queue.Failed("x"));
  EXPECT_TRUE(queue.CopiesFromBackingStore("x"));
  queue.Detach();
  EXPECT_TRUE(queue.CopiesFromBackingStore("y"));
  EXPECT_EQ(queue.held_bytes(), 0u);
}

TEST(PeerQueueTest, AWantWithdrawnWhileTheAgentBringsItArrivesButNeverFallsBackToThePfs) {
  RecordingQueue stager;
  PeerStagingQueue queue(&stager);
  queue.Attach({}, 100ms);
  const auto t0 = PeerStagingQueue::Clock::now();
  for (const char* p : {"a", "b", "c", "d"})
    ASSERT_TRUE(queue.Prefetch(p, kId, StagePriority::kNormal));
  ASSERT_EQ(queue.TakeWants(4, t0).size(), 4u);
  for (const char* p : {"a", "b", "c", "d"}) EXPECT_TRUE(queue.CancelUnwaited(p));
  EXPECT_TRUE(stager.cancelled.empty());
  EXPECT_EQ(queue.peer_stats().kept_in_flight, 4u);
  EXPECT_EQ(queue.stats().in_flight, 4u);  // the transfers go on
  // Wanted again while still on its way: the same transfer, no second want.
  EXPECT_TRUE(queue.Prefetch("c", kId, StagePriority::kNormal));
  EXPECT_TRUE(queue.TakeWants(10, t0).empty());
  EXPECT_TRUE(queue.Failed("a"));  // withdrawn: dropped, not staged from the PFS
  queue.Delivered("d", 10);        // arrives though withdrawn: published, counted
  EXPECT_EQ(queue.peer_stats().delivered, 1u);
  // Past the deadline: b, withdrawn, is dropped; c, wanted again, goes to the stager.
  EXPECT_EQ(queue.Expire(t0 + 200ms), 1u);
  EXPECT_EQ(stager.prefetched, std::vector<std::string>{"c"});
  EXPECT_EQ(queue.peer_stats().expired, 2u);
  // Detach stages what is still wanted only.
  ASSERT_TRUE(queue.Prefetch("e", kId, StagePriority::kNormal));
  ASSERT_TRUE(queue.Prefetch("f", kId, StagePriority::kNormal));
  ASSERT_EQ(queue.TakeWants(2).size(), 2u);
  EXPECT_TRUE(queue.CancelUnwaited("e"));
  queue.Detach();
  EXPECT_EQ(stager.prefetched, (std::vector<std::string>{"c", "f"}));
}

TEST(PeerQueueTest, AFileHandedToTheStagerIsNotWantedAgain) {
  RecordingQueue stager;
  PeerStagingQueue queue(&stager);
  queue.Attach({}, std::chrono::milliseconds(1000));
  ASSERT_TRUE(queue.Prefetch("a", kId, StagePriority::kNormal));
  ASSERT_EQ(queue.TakeWants(1).size(), 1u);
  ASSERT_TRUE(queue.Failed("a"));
  // The prefetcher asks again while the stager has it: the stager answers, no second want.
  EXPECT_TRUE(queue.Prefetch("a", kId, StagePriority::kNormal));
  EXPECT_EQ(stager.prefetched, (std::vector<std::string>{"a", "a"}));
  EXPECT_TRUE(queue.TakeWants(10).empty());
  // Withdrawn, it may be a want again later.
  EXPECT_TRUE(queue.CancelUnwaited("a"));
  EXPECT_TRUE(queue.Prefetch("a", kId, StagePriority::kNormal));
  EXPECT_EQ(queue.TakeWants(10).size(), 1u);
}

}  // namespace
}  // namespace clairfs
