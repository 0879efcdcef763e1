// MountOptions parsing: strict sizes and counts with errors naming the option, a setting given
// twice refused (flags and -o alike), plan-only settings refused without a plan.
#include "fs/daemon/mount_options.h"

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fs/fuse/fuse_uring_transport.h"
#include "fs/fuse/list_ahead.h"
#include "fs/fuse/passthrough.h"
#include "fs/fuse/sched_policy.h"

namespace clairfs {
namespace {

Status Apply(const std::vector<std::string>& items, MountOptions* o = nullptr) {
  MountOptions local;
  return ApplyMountOptionItems(items, o != nullptr ? o : &local);
}

TEST(MountOptions, SizesAreBinaryAndStrict) {
  MountOptions o;
  ASSERT_TRUE(Apply({"capacity=800G", "min_free=1.5G"}, &o).ok());
  EXPECT_EQ(o.capacity, uint64_t{800} << 30);
  EXPECT_EQ(o.min_free, uint64_t{3} << 29);
  for (const char* bad : {"capacity=-0", "capacity=1e3", "capacity=-1G", "capacity=0x10",
                          "capacity= 1G", "capacity=", "min_free=lots", "min_free=99999P"}) {
    Status st = Apply({bad});
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.code(), EINVAL);
    const std::string key = std::string(bad).substr(0, std::string(bad).find('='));
    const std::string flag = key == "capacity" ? "--capacity" : "--min-free";
    EXPECT_NE(st.message().find(flag + " (-o " + key + ")"), std::string::npos) << st.message();
  }
}

TEST(MountOptions, CountsAreDecimalInRange) {
  MountOptions o;
  EXPECT_EQ(o.request_threads, 128);
  ASSERT_TRUE(Apply({"stage_threads=010", "held_copies=0", "request_threads=256"}, &o).ok());
  EXPECT_EQ(o.stage_threads, 10);  // decimal, not octal
  EXPECT_EQ(o.request_threads, 256);
  EXPECT_EQ(o.held_copies, 0u);
  for (const char* bad :
       {"stage_threads=-1", "stage_threads=0", "stage_threads=+4", "stage_threads= 4",
        "stage_threads=1e2", "scan_threads=257", "plan_window=0", "held_copies=-1",
        "request_threads=3", "request_threads=4097", "attr_timeout=-0", "attr_timeout=1e3",
        "attr_timeout=0x10", "stage_bandwidth=-0"}) {
    Status st = Apply({bad});
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find(std::string(bad).substr(0, std::string(bad).find('='))),
              std::string::npos)
        << st.message();
  }
  ASSERT_TRUE(Apply({"attr_timeout=0.5"}, &o).ok());
  EXPECT_DOUBLE_EQ(o.attr_timeout, 0.5);
}

TEST(MountOptions, BackingThreadsFromZeroTo4096) {
  MountOptions o;
  EXPECT_EQ(o.backing_threads, 256);
  ASSERT_TRUE(Apply({"backing_threads=0"}, &o).ok());  // 0: on the request threads
  EXPECT_EQ(o.backing_threads, 0);
  MountOptions most;
  ASSERT_TRUE(Apply({"backing_threads=4096"}, &most).ok());
  EXPECT_EQ(most.backing_threads, 4096);
  for (const char* bad : {"backing_threads=4097", "backing_threads=-1", "backing_threads=",
                          "backing_threads", "backing_threads=1e3", "backing_threads=0x10"}) {
    Status st = Apply({bad});
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.code(), EINVAL) << bad;
    EXPECT_NE(st.message().find("--backing-threads (-o backing_threads)"), std::string::npos)
        << st.message();
  }
  // Given twice (flag and -o): refused, as every setting.
  MountOptions twice;
  EXPECT_FALSE(ApplyMountOptionItems({"backing_threads=8", "backing_threads=16"}, &twice).ok());
}

TEST(MountOptions, StageSettleIsADurationDefaulting2s) {
  MountOptions o;
  EXPECT_EQ(o.stage_settle_ns, 2'000'000'000u);
  const std::pair<const char*, uint64_t> good[] = {{"0", 0},
                                                   {"2", 2'000'000'000},
                                                   {"0.5", 500'000'000},
                                                   {"2s", 2'000'000'000},
                                                   {"250ms", 250'000'000},
                                                   {"0.001", 1'000'000},
                                                   {"1.5ms", 1'500'000},
                                                   {"3600", 3600'000'000'000},
                                                   {"0.000000001", 1}};
  for (const auto& [text, ns] : good) {
    ASSERT_TRUE(Apply({std::string("stage_settle=") + text}, &o).ok()) << text;
    EXPECT_EQ(o.stage_settle_ns, ns) << text;
  }
  for (const char* bad :
       {"stage_settle=", "stage_settle", "stage_settle=-1", "stage_settle=1e3", "stage_settle=3601",
        "stage_settle=2h", "stage_settle=.5", "stage_settle=1.", "stage_settle=0.0000000001",
        "stage_settle=ms", "stage_settle= 2", "stage_settle=0x10"}) {
    Status st = Apply({bad});
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.code(), EINVAL);
    EXPECT_NE(st.message().find("--stage-settle (-o stage_settle)"), std::string::npos)
        << st.message();
  }
  EXPECT_FALSE(Apply({"stage_settle=1", "stage-settle=2"}).ok());  // given twice
}

TEST(MountOptions, ASettingGivenTwiceIsRefused) {
  // A flag and an -o item, two -o lists, or the flag twice: all reach ApplyMountOptionItems.
  for (const std::vector<std::string>& items :
       {std::vector<std::string>{"capacity=1G", "capacity=2G"},
        std::vector<std::string>{"min-free=1G", "min_free=1G"},
        std::vector<std::string>{"read_through", "no_read_through"},
        std::vector<std::string>{"cache=/a", "cache=/b"}}) {
    Status st = Apply(items);
    ASSERT_FALSE(st.ok()) << items[0];
    EXPECT_EQ(st.code(), EINVAL);
    EXPECT_NE(st.message().find("given twice"), std::string::npos) << st.message();
  }
  Status st = Apply(SplitMountOptionList("cache=/c,capacity=1G,allow_other,capacity=2G"));
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--capacity (-o capacity) given twice"), std::string::npos)
      << st.message();
  // FUSE and mount(8) options may repeat; they set nothing of ours twice.
  EXPECT_TRUE(Apply({"allow_other", "allow_other", "_netdev", "nofail", "_netdev"}).ok());
}

// Found by mount_options_fuzz: `nodev=/c` was taken as nodev, and `allow_other=0` or `suid=0`
// turned the option on. Options that are on by being named refuse a value.
TEST(MountOptions, OptionsOnByBeingNamedRefuseAValue) {
  for (const char* bad : {"allow_other=0", "suid=0", "dev=1", "nosuid=0", "nodev=/c",
                          "foreground=0", "no_read_through=1", "read_through=banana"}) {
    MountOptions o;
    Status st = Apply({bad}, &o);
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_EQ(st.code(), EINVAL);
    const std::string key = std::string(bad).substr(0, std::string(bad).find('='));
    EXPECT_NE(st.message().find("(-o " + key + ")"), std::string::npos) << st.message();
    EXPECT_FALSE(o.allow_other || o.suid || o.dev) << bad;
  }
  MountOptions o;
  ASSERT_TRUE(Apply({"allow_other", "suid", "dev", "foreground"}, &o).ok());
  EXPECT_TRUE(o.allow_other && o.suid && o.dev && o.foreground);
  ASSERT_TRUE(Apply({"read_through=0"}, &o).ok());
  EXPECT_FALSE(o.read_through);
  ASSERT_TRUE(Apply({"read-through=yes"}, &o).ok());
  EXPECT_TRUE(o.read_through);
}

// Found by mount_options_fuzz: a backslash in an item passed through (`fsname=m\e`) reached
// libfuse unescaped, which reads it as an escape (the kernel got "me"; a trailing one would have
// joined the next item). Items and the backing path go escaped.
TEST(MountOptions, KernelOptionsCarryEveryItemAsGiven) {
  MountOptions o;
  o.backing = "/pfs/a,b\\012c";
  EXPECT_EQ(KernelMountOptions(o),
            "ro,default_permissions,nosuid,nodev,fsname=clairfs:/pfs/a\\,b\\\\012c,"
            "subtype=clairfs");
  ASSERT_TRUE(Apply(SplitMountOptionList("allow_other,fsname=m\\e,subtype=x\\,noatime"), &o).ok());
  EXPECT_EQ(KernelMountOptions(o),
            "ro,default_permissions,nosuid,nodev,allow_other,fsname=m\\\\e,subtype=x\\\\,"
            "noatime");
}

TEST(MountOptions, PlanOnlySettingsNeedAPlan) {
  for (const char* item :
       {"layout=bogus", "layout=sorted", "layout_root=train", "plan_window=8", "plan_uid=0"}) {
    Status st = Apply({"cache=/c", item});
    ASSERT_FALSE(st.ok()) << item;
    EXPECT_NE(st.message().find("needs --plan"), std::string::npos) << st.message();
  }
  MountOptions o;
  ASSERT_TRUE(Apply({"plan=sequential", "layout=sorted", "layout_root=train"}, &o).ok());
  EXPECT_EQ(o.plan_layout, "sorted");
  // With a plan, a bad layout is refused by validation, naming it.
  o.backing = "/b";
  o.mountpoint = "/m";
  o.cache_dir = "/c";
  o.plan_layout = "bogus";
  Status st = ValidateMountOptions(&o);
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("--layout"), std::string::npos) << st.message();
}

// --plan-uid: a uid or a user's name, into the plan's config or plan auto's watcher.
TEST(MountOptions, PlanUidTakesAUidOrAName) {
  MountOptions o;
  ASSERT_TRUE(Apply({"plan=sequential", "plan_uid=1234"}, &o).ok());
  EXPECT_EQ(o.plan_uid, 1234u);
  o.backing = "/b";
  o.mountpoint = "/m";
  o.cache_dir = "/c";
  ASSERT_TRUE(ValidateMountOptions(&o).ok());
  ASSERT_TRUE(o.plan_config.has_value());
  EXPECT_EQ(o.plan_config->uid, 1234u);
  MountOptions a;
  ASSERT_TRUE(Apply({"plan=auto", "plan_uid=root"}, &a).ok());
  EXPECT_EQ(a.plan_uid, 0u);
  a.backing = "/b";
  a.mountpoint = "/m";
  a.cache_dir = "/c";
  ASSERT_TRUE(ValidateMountOptions(&a).ok());
  ASSERT_TRUE(a.plan_auto.has_value());
  EXPECT_EQ(a.plan_auto->uid, 0u);
  MountOptions none;
  ASSERT_TRUE(Apply({"plan=sequential"}, &none).ok());
  EXPECT_EQ(none.plan_uid, Opener::kNoUid);
  for (const char* bad :
       {"plan_uid=no-such-user-here", "plan_uid=4294967295", "plan_uid=99999999999", "plan_uid="}) {
    Status st = Apply({"plan=sequential", bad});
    ASSERT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("plan-uid"), std::string::npos) << st.message();
  }
  EXPECT_EQ(*ParseUserId("nobody"), 65534u);
}

// --open-mode no-open: what it excludes is refused with the reason, and --kept-files needs it.
TEST(MountOptions, NoOpenModeAndWhatItExcludes) {
  MountOptions o;
  EXPECT_EQ(o.open_mode, OpenMode::kOpen);
  EXPECT_EQ(o.kept_files, kDefaultKeptFiles);
  ASSERT_TRUE(Apply({"open_mode=no-open", "kept_files=64"}, &o).ok());
  EXPECT_EQ(o.open_mode, OpenMode::kNoOpen);
  EXPECT_EQ(o.kept_files, 64u);
  EXPECT_FALSE(Apply({"open_mode=noopen"}).ok());
  EXPECT_FALSE(Apply({"open_mode=no-open", "kept_files=0"}).ok());
  Status st = Apply({"kept_files=64"});
  ASSERT_FALSE(st.ok());
  EXPECT_NE(st.message().find("needs --open-mode no-open"), std::string::npos) << st.message();
  for (const char* item : {"hold_ahead=on", "held_copies=0"}) {
    st = Apply({"open_mode=no-open", item});
    ASSERT_FALSE(st.ok()) << item;
    EXPECT_NE(st.message().find("excludes"), std::string::npos) << st.message();
  }
  for (const char* item : {"passthrough=on", "revalidate=open"}) {
    MountOptions v;
    v.backing = "/b";
    v.mountpoint = "/m";
    v.cache_dir = "/c";
    ASSERT_TRUE(Apply({"open_mode=no-open", item}, &v).ok()) << item;
    st = ValidateMountOptions(&v);
    ASSERT_FALSE(st.ok()) << item;
    EXPECT_NE(st.message().find("--open-mode no-open excludes"), std::string::npos) << st.message();
  }
  MountOptions v;
  v.backing = "/b";
  v.mountpoint = "/m";
  v.cache_dir = "/c";
  ASSERT_TRUE(Apply({"open_mode=no-open", "passthrough=auto", "revalidate=never"}, &v).ok());
  EXPECT_TRUE(ValidateMountOptions(&v).ok());
}

TEST(FuseUringOption, ModeAndMountOption) {
  EXPECT_EQ(*ParseFuseUringMode("auto"), FuseUringMode::kAuto);
  EXPECT_EQ(*ParseFuseUringMode("on"), FuseUringMode::kOn);
  EXPECT_EQ(*ParseFuseUringMode("off"), FuseUringMode::kOff);
  EXPECT_FALSE(ParseFuseUringMode("yes").ok());
  MountOptions o;
  EXPECT_EQ(o.fuse_uring, FuseUringMode::kAuto);
  ASSERT_TRUE(ApplyMountOption("fuse_uring=off", &o).ok());
  EXPECT_EQ(o.fuse_uring, FuseUringMode::kOff);
  Status bad = ApplyMountOption("fuse_uring=maybe", &o);
  EXPECT_FALSE(bad.ok());
  EXPECT_NE(bad.message().find("fuse_uring"), std::string::npos);
  EXPECT_EQ(o.fuse_uring_threads, 2);
  ASSERT_TRUE(ApplyMountOption("fuse_uring_threads=1", &o).ok());
  EXPECT_EQ(o.fuse_uring_threads, 1);
  EXPECT_FALSE(ApplyMountOption("fuse_uring_threads=0", &o).ok());
  EXPECT_FALSE(ApplyMountOption("fuse_uring_threads=x", &o).ok());
}

TEST(ListAheadOption, ParsesOnOffAndACount) {
  MountOptions o;
  EXPECT_EQ(o.list_ahead, kDefaultListAheadNames);
  ASSERT_TRUE(ApplyMountOption("list_ahead=off", &o).ok());
  EXPECT_EQ(o.list_ahead, 0u);
  ASSERT_TRUE(ApplyMountOption("list_ahead=on", &o).ok());
  EXPECT_EQ(o.list_ahead, kDefaultListAheadNames);
  ASSERT_TRUE(ApplyMountOption("list_ahead=1000000", &o).ok());
  EXPECT_EQ(o.list_ahead, 1000000u);
  for (const char* bad : {"list_ahead=yes", "list_ahead=-1", "list_ahead="}) {
    Status st = ApplyMountOption(bad, &o);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("list_ahead"), std::string::npos) << st.message();
  }
}

TEST(HeldCopiesOption, DefaultBoundRangeAndRounding) {
  MountOptions o;
  EXPECT_EQ(o.held_copies, KernelPassthrough::kDefaultHeldCopies);
  ASSERT_TRUE(ApplyMountOption("held_copies=0", &o).ok());
  EXPECT_EQ(o.held_copies, 0u);
  ASSERT_TRUE(ApplyMountOption("held_copies=100", &o).ok());
  EXPECT_EQ(o.held_copies, 100u);
  for (const char* bad : {"held_copies=-1", "held_copies=lots", "held_copies=16777217"}) {
    Status st = ApplyMountOption(bad, &o);
    EXPECT_FALSE(st.ok()) << bad;
    EXPECT_NE(st.message().find("held_copies"), std::string::npos) << st.message();
  }
  // Each of the 64 shards holds an equal share.
  EXPECT_EQ(KernelPassthrough::EffectiveHeldCopies(0), 0u);
  EXPECT_EQ(KernelPassthrough::EffectiveHeldCopies(1), 64u);
  EXPECT_EQ(KernelPassthrough::EffectiveHeldCopies(64), 64u);
  EXPECT_EQ(KernelPassthrough::EffectiveHeldCopies(100), 128u);
  EXPECT_EQ(KernelPassthrough::EffectiveHeldCopies(65536), 65536u);
}

TEST(HoldAheadOption, OnByDefaultAndOnlyOnOrOff) {
  MountOptions o;
  EXPECT_TRUE(o.hold_ahead);
  ASSERT_TRUE(ApplyMountOption("hold_ahead=off", &o).ok());
  EXPECT_FALSE(o.hold_ahead);
  ASSERT_TRUE(ApplyMountOption("hold_ahead=on", &o).ok());
  EXPECT_TRUE(o.hold_ahead);
  EXPECT_FALSE(ApplyMountOption("hold_ahead=yes", &o).ok());
}

TEST(SchedOption, ParsesBatchAndNormalOnly) {
  EXPECT_EQ(*ParseSchedPolicy("batch"), SchedPolicy::kBatch);
  EXPECT_EQ(*ParseSchedPolicy("normal"), SchedPolicy::kNormal);
  for (const char* bad : {"", "fifo", "BATCH", "idle"}) {
    auto r = ParseSchedPolicy(bad);
    ASSERT_FALSE(r.ok()) << bad;
    EXPECT_EQ(r.status().code(), EINVAL);
  }
  MountOptions o;
  EXPECT_EQ(o.sched, SchedPolicy::kNormal);
  ASSERT_TRUE(ApplyMountOption("sched=batch", &o).ok());
  EXPECT_EQ(o.sched, SchedPolicy::kBatch);
  EXPECT_FALSE(ApplyMountOption("sched=rr", &o).ok());
}

}  // namespace
}  // namespace clairfs
