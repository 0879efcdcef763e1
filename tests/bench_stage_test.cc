// Integration test of `clairfs bench stage --quick --json`: the instrument runs end to end (the
// PFS emulator mounted and unmounted, both engines, `clairfs stage --offline`, `clairfs mount` +
// `clairfs stage --wait`, cp -r and rsync -a) and every file of both trees is staged and verified
// byte for byte by both engines, and of the small tree by both commands. Invariants only, never
// timings.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "tests/test_util.h"

namespace clairfs {
namespace {

using testing::ClairfsBin;
using testing::MountGuard;
using testing::TempDir;

TEST(BenchStageTest, QuickRunStagesAndVerifiesEverythingWithBothEnginesAndTheCommand) {
  TempDir tmp;
  const std::string work = tmp / "work";
  testing::MakeDirs(work);
  MountGuard guard(work + "/mnt");  // in case the command is killed with the emulator mounted
  // ... or with clairfs mounted over it (declared after, so unmounted first).
  MountGuard clairfs_guard(work + "/clairfs-mnt");
  auto run = testing::Run({ClairfsBin(), "bench", "stage", "--quick", "--json", "--files", "150",
                           "--stage-threads", "16", "--dir", work},
                          300);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  auto r = nlohmann::json::parse(run.out);
  const auto& small = r["small"];
  EXPECT_EQ(small["files"], 150u);
  for (const char* engine : {"uring", "threads"}) {
    SCOPED_TRACE(engine);
    const auto& e = small["engines"][engine];
    EXPECT_EQ(e["verified_files"], small["files"]);
    EXPECT_EQ(e["verified_bytes"], small["bytes"]);
    EXPECT_EQ(e["staged_files"], small["files"]);
    const auto& b = r["big"]["engines"][engine];
    EXPECT_EQ(b["verified_files"], r["big"]["files"]);
    EXPECT_EQ(b["verified_bytes"], r["big"]["bytes"]);
  }
  EXPECT_FALSE(small["engines"]["threads"]["uring"].get<bool>());
  // The io_uring engine never held more chunk buffers than files in flight.
  EXPECT_LE(small["engines"]["uring"]["peak_buffers_in_use"].get<int>(), 16);
  for (const char* command : {"offline", "mounted"}) {
    SCOPED_TRACE(command);
    const auto& c = small["commands"][command];
    EXPECT_EQ(c["verified_files"], small["files"]);
    EXPECT_EQ(c["verified_bytes"], small["bytes"]);
  }
  EXPECT_GT(small["median_mount_seconds"].get<double>(), 0);
  for (const char* tool : {"cp -r + sync -f", "rsync -a + sync -f", "uring", "threads",
                           "clairfs stage --offline", "clairfs stage --wait"}) {
    EXPECT_TRUE(small["median_seconds"].contains(tool)) << tool;
  }
}

}  // namespace
}  // namespace clairfs
