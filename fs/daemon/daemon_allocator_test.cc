// ConfigureDaemonAllocator: once set, an allocation above the threshold is its own mapping even
// after a much larger one was freed (which, by default, raises the threshold past it).
#include "fs/daemon/daemon_allocator.h"

#include <gtest/gtest.h>

#ifdef __GLIBC__
#include <malloc.h>
#include <unistd.h>

#include <cstdlib>
#endif

namespace clairfs {
namespace {

#ifdef __GLIBC__
// Through a volatile pointer, so that the compiler cannot drop a malloc and free pair.
void* volatile g_block = nullptr;

// Exit codes of the check, run in a process of its own.
constexpr int kMapped = 0;
constexpr int kAllocationFailed = 2;
constexpr int kNotMapped = 3;
constexpr int kNotUnmapped = 4;

int CheckThresholdStaysFixed() {
  ConfigureDaemonAllocator();
  g_block = malloc(8 << 20);
  if (g_block == nullptr) return kAllocationFailed;
  free(g_block);  // by default: the threshold rises to 8 MiB
  const size_t mapped_before = mallinfo2().hblks;
  g_block = malloc(kDaemonMmapThresholdBytes + (64 << 10));
  if (g_block == nullptr) return kAllocationFailed;
  const bool mapped = mallinfo2().hblks == mapped_before + 1;
  free(g_block);
  if (!mapped) return kNotMapped;
  return mallinfo2().hblks == mapped_before ? kMapped : kNotUnmapped;
}

// In a process of its own: the "threadsafe" style runs the test binary again for this test
// alone. In the test binary's heap, a free chunk left by an earlier test would serve the
// allocation whatever the threshold (the check failed so when the whole binary ran in one
// process).
TEST(DaemonAllocatorDeathTest, BuffersAboveTheThresholdStayMappingsAfterALargerOneIsFreed) {
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_EXIT(_exit(CheckThresholdStaysFixed()), ::testing::ExitedWithCode(kMapped), "");
}
#endif

}  // namespace
}  // namespace clairfs
