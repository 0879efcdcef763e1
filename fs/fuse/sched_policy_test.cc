// Unit tests of the daemon threads' scheduling policy (sched_policy.h), on a scratch thread so
// the test binary's own threads keep their policy.
#include "fs/fuse/sched_policy.h"

#include <gtest/gtest.h>

#include <thread>

namespace clairfs {
namespace {

TEST(SchedPolicy, AppliesToTheThreadAndIsInheritedByItsNewThreads) {
  std::string applied, inherited, restored;
  std::thread scratch([&] {
    ASSERT_TRUE(ApplySchedPolicy(SchedPolicy::kBatch).ok());
    applied = CurrentSchedPolicyName();
    std::thread child([&] { inherited = CurrentSchedPolicyName(); });
    child.join();
    ASSERT_TRUE(ApplySchedPolicy(SchedPolicy::kNormal).ok());
    restored = CurrentSchedPolicyName();
  });
  scratch.join();
  EXPECT_EQ(applied, "batch");
  EXPECT_EQ(inherited, "batch");
  EXPECT_EQ(restored, "normal");
}

}  // namespace
}  // namespace clairfs
