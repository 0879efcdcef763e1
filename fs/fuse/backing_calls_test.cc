// Unit tests of the backing-call pool (backing_calls.h) without a mount: calls are test objects
// that record whether they ran or were cancelled, and block until released.
#include "fs/fuse/backing_calls.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace clairfs {
namespace {

using std::chrono::milliseconds;

// What the calls did, and a gate that holds every running call until opened.
struct Journal {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<int> ran;                        // ids, in the order they started
  std::vector<std::pair<int, int>> cancelled;  // id, error
  std::vector<std::thread::id> threads;        // the thread each run started on
  int running = 0;
  bool open = false;

  bool WaitFor(const std::function<bool()>& done, milliseconds timeout = milliseconds(5000)) {
    std::unique_lock<std::mutex> lock(mu);
    return cv.wait_for(lock, timeout, done);
  }
  void Open() {
    std::lock_guard<std::mutex> lock(mu);
    open = true;
    cv.notify_all();
  }
};

class TestCall final : public BackingCallPool::Call {
 public:
  TestCall(Journal* journal, int id) : journal_(journal), id_(id) {}
  void Run() override {
    std::unique_lock<std::mutex> lock(journal_->mu);
    journal_->ran.push_back(id_);
    journal_->threads.push_back(std::this_thread::get_id());
    ++journal_->running;
    journal_->cv.notify_all();
    journal_->cv.wait(lock, [&] { return journal_->open; });
    --journal_->running;
    journal_->cv.notify_all();
  }
  void Cancel(int error) override {
    std::lock_guard<std::mutex> lock(journal_->mu);
    journal_->cancelled.emplace_back(id_, error);
    journal_->cv.notify_all();
  }

 private:
  Journal* journal_;
  int id_;
};

std::unique_ptr<BackingCallPool::Call> MakeCall(Journal* j, int id) {
  return std::make_unique<TestCall>(j, id);
}

bool WaitState(const std::function<bool()>& done, milliseconds timeout = milliseconds(5000)) {
  const auto end = std::chrono::steady_clock::now() + timeout;
  while (!done()) {
    if (std::chrono::steady_clock::now() > end) return false;
    std::this_thread::sleep_for(milliseconds(2));
  }
  return true;
}

TEST(BackingCallPoolTest, RunsUpToTheBoundAtOnceAndQueuesTheRestInOrder) {
  Journal j;
  BackingCallState state;
  {
    BackingCallPool pool(3, &state);
    for (int id = 0; id < 8; ++id) pool.Submit(MakeCall(&j, id));
    ASSERT_TRUE(j.WaitFor([&] { return j.running == 3; }));
    std::this_thread::sleep_for(milliseconds(50));  // no fourth call starts
    {
      std::lock_guard<std::mutex> lock(j.mu);
      EXPECT_EQ(j.running, 3);
      EXPECT_EQ(j.ran.size(), 3u);
    }
    EXPECT_EQ(state.threads(), 3u);
    EXPECT_EQ(state.max_threads(), 3u);
    EXPECT_EQ(state.queued(), 5u);
    EXPECT_EQ(state.in_flight(), 8u);
    EXPECT_EQ(state.deferred(), 8u);
    j.Open();
    ASSERT_TRUE(j.WaitFor([&] { return j.ran.size() == 8 && j.running == 0; }));
    ASSERT_TRUE(WaitState([&] { return state.in_flight() == 0; }));
    std::lock_guard<std::mutex> lock(j.mu);
    // The three first calls started at once (in any order), then the queued ones.
    std::vector<int> first(j.ran.begin(), j.ran.begin() + 3);
    std::sort(first.begin(), first.end());
    EXPECT_EQ(first, (std::vector<int>{0, 1, 2}));
    EXPECT_TRUE(j.cancelled.empty());
  }
  EXPECT_EQ(state.max_in_flight(), 8u);
  EXPECT_EQ(state.queued(), 0u);
  EXPECT_EQ(state.threads(), 0u);  // the destructor waited for every thread
}

TEST(BackingCallPoolTest, QueuedCallsRunFirstInFirstOut) {
  Journal j;
  BackingCallPool pool(1, nullptr);  // one thread: the queue's order is the order calls start
  for (int id = 0; id < 6; ++id) pool.Submit(MakeCall(&j, id));
  ASSERT_TRUE(j.WaitFor([&] { return j.running == 1; }));
  EXPECT_EQ(pool.state().queued(), 5u);
  j.Open();
  ASSERT_TRUE(j.WaitFor([&] { return j.ran.size() == 6 && j.running == 0; }));
  std::lock_guard<std::mutex> lock(j.mu);
  EXPECT_EQ(j.ran, (std::vector<int>{0, 1, 2, 3, 4, 5}));
}

TEST(BackingCallPoolTest, AnIdleThreadTakesTheNextCallAndIdleThreadsEnd) {
  Journal j;
  j.open = true;
  BackingCallState state;
  BackingCallPool pool(4, &state, milliseconds(100));
  pool.Submit(MakeCall(&j, 0));
  ASSERT_TRUE(j.WaitFor([&] { return j.ran.size() == 1 && j.running == 0; }));
  ASSERT_TRUE(WaitState([&] { return state.in_flight() == 0; }));
  EXPECT_EQ(state.threads(), 1u);
  std::this_thread::sleep_for(milliseconds(30));  // the thread is back waiting for work
  pool.Submit(MakeCall(&j, 1));                   // the idle thread serves it: no second thread
  ASSERT_TRUE(j.WaitFor([&] { return j.ran.size() == 2 && j.running == 0; }));
  {
    std::lock_guard<std::mutex> lock(j.mu);
    EXPECT_EQ(j.threads[0], j.threads[1]);
  }
  EXPECT_EQ(state.threads(), 1u);
  // Idle for longer than idle_exit: the thread ends.
  EXPECT_TRUE(WaitState([&] { return state.threads() == 0; }, milliseconds(2000)));
  // And a new one is made for the next call.
  pool.Submit(MakeCall(&j, 2));
  ASSERT_TRUE(j.WaitFor([&] { return j.ran.size() == 3 && j.running == 0; }));
  EXPECT_TRUE(j.cancelled.empty());
}

TEST(BackingCallPoolTest, ShutdownAnswersQueuedCallsAtOnceAndLaterOnesOnSubmit) {
  Journal j;
  BackingCallState state;
  BackingCallPool pool(2, &state);
  for (int id = 0; id < 5; ++id) pool.Submit(MakeCall(&j, id));
  ASSERT_TRUE(j.WaitFor([&] { return j.running == 2; }));
  const auto start = std::chrono::steady_clock::now();
  pool.Shutdown(ENOTCONN);  // does not wait for the two running (hung) calls
  EXPECT_LT(std::chrono::steady_clock::now() - start, milliseconds(500));
  {
    std::lock_guard<std::mutex> lock(j.mu);
    EXPECT_EQ(j.cancelled,
              (std::vector<std::pair<int, int>>{{2, ENOTCONN}, {3, ENOTCONN}, {4, ENOTCONN}}));
    EXPECT_EQ(j.running, 2);
  }
  pool.Submit(MakeCall(&j, 5));  // after shutdown: cancelled on this thread, never run
  {
    std::lock_guard<std::mutex> lock(j.mu);
    ASSERT_EQ(j.cancelled.size(), 4u);
    EXPECT_EQ(j.cancelled.back(), std::make_pair(5, ENOTCONN));
  }
  EXPECT_EQ(state.cancelled(), 4u);
  EXPECT_EQ(state.queued(), 0u);
  EXPECT_EQ(state.in_flight(), 2u);
  j.Open();  // the hung calls end; their threads then leave
  EXPECT_TRUE(WaitState([&] { return state.threads() == 0 && state.in_flight() == 0; }));
  std::lock_guard<std::mutex> lock(j.mu);
  EXPECT_EQ(j.ran.size(), 2u);
}

TEST(BackingCallPoolTest, TheDestructorWaitsForRunningCallsAndCancelsQueuedOnes) {
  Journal j;
  BackingCallState state;
  auto pool = std::make_unique<BackingCallPool>(1, &state);
  pool->Submit(MakeCall(&j, 0));
  pool->Submit(MakeCall(&j, 1));
  ASSERT_TRUE(j.WaitFor([&] { return j.running == 1; }));
  std::thread opener([&] {
    std::this_thread::sleep_for(milliseconds(200));
    j.Open();
  });
  const auto start = std::chrono::steady_clock::now();
  pool.reset();
  EXPECT_GE(std::chrono::steady_clock::now() - start, milliseconds(150));
  opener.join();
  std::lock_guard<std::mutex> lock(j.mu);
  EXPECT_EQ(j.ran, std::vector<int>{0});
  EXPECT_EQ(j.cancelled, (std::vector<std::pair<int, int>>{{1, EIO}}));
  EXPECT_EQ(j.running, 0);
  EXPECT_EQ(state.threads(), 0u);
}

TEST(BackingCallPoolTest, ManySubmittersNeverExceedTheBoundAndEveryCallRunsOnce) {
  Journal j;
  j.open = true;
  BackingCallState state;
  {
    BackingCallPool pool(4, &state, milliseconds(20));
    std::vector<std::thread> submitters;
    for (int t = 0; t < 8; ++t) {
      submitters.emplace_back([&, t] {
        for (int i = 0; i < 250; ++i) {
          pool.Submit(MakeCall(&j, t * 1000 + i));
          if (i % 50 == 0) std::this_thread::sleep_for(milliseconds(30));  // let threads idle out
          EXPECT_LE(state.threads(), 4u);
        }
      });
    }
    for (auto& t : submitters) t.join();
    ASSERT_TRUE(WaitState([&] { return state.in_flight() == 0; }));
  }
  std::lock_guard<std::mutex> lock(j.mu);
  EXPECT_EQ(j.ran.size(), 2000u);
  EXPECT_TRUE(j.cancelled.empty());
  EXPECT_EQ(state.threads(), 0u);
}

}  // namespace
}  // namespace clairfs
