// Unit tests of the daemon threads' scheduling policy (sched_policy.h), on a scratch thread so
// the test binary's own threads keep their policy.
#include "fs/sched_policy.h"

#include <gtest/gtest.h>

#include <thread>

#include "fs/mount_options.h"

namespace clairfs {
namespace {

TEST(SchedPolicy, ParsesBatchAndNormalOnly) {
  EXPECT_EQ(*ParseSchedPolicy("batch"), SchedPolicy::kBatch);
  EXPECT_EQ(*ParseSchedPolicy("normal"), SchedPolicy::kNormal);
  for (const char* bad : {"", "fifo", "BATCH", "idle"}) {
    auto r = ParseSchedPolicy(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), EINVAL);
  }
  MountOptions o;
  EXPECT_EQ(o.sched, "normal");
  ASSERT_TRUE(ApplyMountOption("sched=batch", &o).ok());
  EXPECT_EQ(o.sched, "batch");
  EXPECT_FALSE(ApplyMountOption("sched=rr", &o).ok());
}

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
