// Devices a test builds for its life, always taken down: a tmpfs, and an ext4 file system in an
// image file, loop-mounted, which the test can make die (every call EIO) or unmount under its
// users. Both need root; the ext4 needs mkfs.ext4 (e2fsprogs) and the kernel's loop and ext4.
//
// Thread-safety: single-owner guards.
#pragma once

#include <string>

namespace clairfs::testing {

// A tmpfs of `size` (e.g. "2m") mounted on `path` for the guard's life.
class TmpfsDevice {
 public:
  TmpfsDevice(const std::string& path, const std::string& size);
  ~TmpfsDevice();
  TmpfsDevice(const TmpfsDevice&) = delete;
  TmpfsDevice& operator=(const TmpfsDevice&) = delete;
  const std::string& error() const { return error_; }  // empty when mounted
  const std::string& path() const { return path_; }

 private:
  std::string path_, error_;
  bool mounted_ = false;
};

// An ext4 file system of `size_mib` MiB in an image file, loop-mounted on `path` for the guard's
// life. The destructor clears immutable flags, unmounts (lazily if still busy) and so frees the
// loop device (mounted with autoclear).
class LoopExt4Device {
 public:
  LoopExt4Device(const std::string& image, const std::string& path, int size_mib);
  ~LoopExt4Device();
  LoopExt4Device(const LoopExt4Device&) = delete;
  LoopExt4Device& operator=(const LoopExt4Device&) = delete;
  // Empty when mounted; otherwise why not. missing_tool() says whether a package is missing (a
  // failure under CI) rather than kernel support (outside the project).
  const std::string& error() const { return error_; }
  bool missing_tool() const { return missing_tool_; }
  const std::string& path() const { return path_; }
  // The device dies: EXT4_IOC_SHUTDOWN without flushing the log; every later call on the file
  // system fails with EIO, as on a drive pulled from the node.
  bool Shutdown();
  // The device is unmounted under its users (umount -l: gone from the namespace, open files stay).
  bool LazyUnmount();

 private:
  std::string image_, path_, error_;
  bool mounted_ = false;
  bool missing_tool_ = false;
};

}  // namespace clairfs::testing
