// ConfigureDaemonAllocator: once set, an allocation above the threshold is its own mapping even
// after a much larger one was freed (which, by default, raises the threshold past it).
#include "fs/daemon/daemon_allocator.h"

#include <gtest/gtest.h>

#ifdef __GLIBC__
#include <malloc.h>

#include <cstdlib>
#endif

namespace clairfs {
namespace {

#ifdef __GLIBC__
// Through a volatile pointer, so that the compiler cannot drop a malloc and free pair.
void* volatile g_block = nullptr;

TEST(DaemonAllocator, BuffersAboveTheThresholdStayMappingsAfterALargerOneIsFreed) {
  ConfigureDaemonAllocator();
  g_block = malloc(8 << 20);
  ASSERT_NE(g_block, nullptr);
  free(g_block);  // by default: the threshold rises to 8 MiB
  const size_t mapped_before = mallinfo2().hblks;
  g_block = malloc(kDaemonMmapThresholdBytes + (64 << 10));
  ASSERT_NE(g_block, nullptr);
  EXPECT_EQ(mallinfo2().hblks, mapped_before + 1);
  free(g_block);
  EXPECT_EQ(mallinfo2().hblks, mapped_before);
}
#endif

}  // namespace
}  // namespace clairfs
