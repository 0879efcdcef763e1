// Tests of CacheDeviceProbe: a readable probe file leaves the copies served; one that cannot be
// read (here: gone, as on a device whose cache directory vanished) is reported to the store, whose
// copies then stop being served; and the probe thread reports within its interval.
#include "cache/device_probe.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <thread>

#include "cache/testing/test_store.h"
#include "tests/test_util.h"

namespace clairfs {
namespace {

TEST(CacheDeviceProbeTest, AReadableDeviceKeepsCopiesServedAndAFailedProbeStopsThem) {
  testing::TempDir tmp;
  auto s = testing::OpenTestStore(tmp / "cache", Env::Default());
  ASSERT_TRUE(s.ok()) << s.status().message();
  CacheDeviceProbe probe(s->store.get(), s->dir->root() + "/FORMAT");
  Status first = probe.ProbeOnce();
  EXPECT_TRUE(first.ok()) << first.message();
  EXPECT_TRUE(s->store->copies_readable());

  CacheDeviceProbe lost(s->store.get(), s->dir->root() + "/no-such-file");
  Status failed = lost.ProbeOnce();
  EXPECT_EQ(failed.code(), ENOENT);
  EXPECT_NE(failed.message().find("cache device probe: open"), std::string::npos)
      << failed.message();
  EXPECT_FALSE(s->store->copies_readable());
}

TEST(CacheDeviceProbeTest, TheThreadProbesWithinItsIntervalAndStops) {
  testing::TempDir tmp;
  auto s = testing::OpenTestStore(tmp / "cache", Env::Default());
  ASSERT_TRUE(s.ok()) << s.status().message();
  const std::string probe_file = tmp / "probe";
  ASSERT_EQ(testing::Run({"sh", "-c", "echo x > " + probe_file}).exit_code, 0);
  CacheDeviceProbe probe(s->store.get(), probe_file, std::chrono::milliseconds(20));
  probe.Start();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  EXPECT_TRUE(s->store->copies_readable());
  ASSERT_EQ(unlink(probe_file.c_str()), 0);
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(5);
  while (s->store->copies_readable() && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_FALSE(s->store->copies_readable());
  probe.Stop();
}

}  // namespace
}  // namespace clairfs
