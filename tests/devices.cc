// Devices for tests (see devices.h).
#include "tests/devices.h"

#include <fcntl.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>

#include "tests/test_util.h"

namespace clairfs::testing {
namespace {

// EXT4_IOC_SHUTDOWN and its flag that drops the journal unflushed (linux/fs/ext4/ext4.h; not
// in every distribution's uapi headers).
constexpr unsigned long kExt4IocShutdown = _IOR('X', 125, uint32_t);
constexpr uint32_t kExt4GoingFlagsNoLogFlush = 0x2;

}  // namespace

TmpfsDevice::TmpfsDevice(const std::string& path, const std::string& size) : path_(path) {
  MakeDirs(path);
  if (mount("tmpfs", path.c_str(), "tmpfs", 0, ("size=" + size + ",mode=0755").c_str()) != 0) {
    error_ = std::string("cannot mount a tmpfs: ") + strerror(errno);
    return;
  }
  mounted_ = true;
}

TmpfsDevice::~TmpfsDevice() {
  if (mounted_ && umount2(path_.c_str(), 0) != 0) umount2(path_.c_str(), MNT_DETACH);
}

LoopExt4Device::LoopExt4Device(const std::string& image, const std::string& path, int size_mib)
    : image_(image), path_(path) {
  if (Shell("command -v mkfs.ext4 && command -v losetup && command -v chattr").exit_code != 0) {
    error_ = "mkfs.ext4, losetup or chattr is missing (packages e2fsprogs, mount)";
    missing_tool_ = true;
    return;
  }
  MakeDirs(path);
  const int fd = open(image.c_str(), O_CREAT | O_WRONLY | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0 || ftruncate(fd, off_t{size_mib} << 20) != 0) {
    error_ = image + ": " + strerror(errno);
    if (fd >= 0) close(fd);
    return;
  }
  close(fd);
  CommandResult made = Run({"mkfs.ext4", "-q", "-F", "-b", "4096", "-m", "0", image}, 60);
  if (made.exit_code != 0) {
    error_ = "mkfs.ext4 failed: " + made.err;
    return;
  }
  // The kernel's side: loop devices and ext4. Failing here is the machine's, not the project's.
  CommandResult mounted = Run({"mount", "-o", "loop", image, path}, 60);
  if (mounted.exit_code != 0) {
    error_ = "cannot loop-mount an ext4 image (no loop or ext4 support?): " + mounted.err;
    return;
  }
  mounted_ = true;
}

LoopExt4Device::~LoopExt4Device() {
  if (mounted_) {
    Run({"chattr", "-R", "-i", path_}, 60);
    if (Run({"umount", path_}, 60).exit_code != 0) Run({"umount", "-l", path_}, 60);
  }
  unlink(image_.c_str());
}

bool LoopExt4Device::Shutdown() {
  const int fd = open(path_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  uint32_t flags = kExt4GoingFlagsNoLogFlush;
  const bool done = ioctl(fd, kExt4IocShutdown, &flags) == 0;
  close(fd);
  return done;
}

bool LoopExt4Device::LazyUnmount() {
  if (!mounted_) return false;
  if (Run({"umount", "-l", path_}, 60).exit_code != 0) return false;
  mounted_ = false;
  return true;
}

}  // namespace clairfs::testing
