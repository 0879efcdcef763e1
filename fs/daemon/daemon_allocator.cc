// The daemon's allocator settings (see daemon_allocator.h).
#include "fs/daemon/daemon_allocator.h"

#ifdef __GLIBC__
#include <malloc.h>
#endif

namespace clairfs {

void ConfigureDaemonAllocator() {
#ifdef __GLIBC__
  (void)mallopt(M_MMAP_THRESHOLD, static_cast<int>(kDaemonMmapThresholdBytes));
#endif
}

}  // namespace clairfs
