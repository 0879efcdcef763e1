// Page-cache probes (see page_cache_probe.h).
#include "tools/bench/page_cache_probe.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <vector>

namespace clairfs {

Result<uint64_t> CachedBytes() {
  std::ifstream in("/proc/meminfo");
  if (!in) return Status::Error(EIO, "cannot read /proc/meminfo");
  std::string line;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key, unit;
    uint64_t kib = 0;
    if (fields >> key >> kib >> unit && key == "Cached:" && unit == "kB") return kib * 1024;
  }
  return Status::Error(EIO, "/proc/meminfo has no Cached: line in kB");
}

Status DropPages(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  int rc = posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);  // returns the error, sets no errno
  close(fd);
  if (rc != 0) return Status::FromErrno(rc, "posix_fadvise(DONTNEED) " + path);
  return Status::Ok();
}

Result<uint64_t> ResidentBytes(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return Status::FromErrno(errno, "open " + path);
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    int err = errno;
    close(fd);
    return Status::FromErrno(err, "fstat " + path);
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size == 0) {
    close(fd);
    return uint64_t{0};
  }
  void* map = mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
  int map_err = errno;
  close(fd);  // the mapping keeps the file referenced
  if (map == MAP_FAILED) return Status::FromErrno(map_err, "mmap " + path);
  const uint64_t page = static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
  std::vector<unsigned char> resident((size + page - 1) / page);
  int rc = mincore(map, size, resident.data());
  int err = errno;
  munmap(map, size);
  if (rc != 0) return Status::FromErrno(err, "mincore " + path);
  uint64_t bytes = 0;
  for (size_t i = 0; i < resident.size(); ++i) {
    if (resident[i] & 1) bytes += page;
  }
  return bytes;
}

}  // namespace clairfs
