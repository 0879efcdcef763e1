// The mount table of this process's mount namespace (/proc/self/mountinfo), as the daemon, the
// CLI and the tests need it: each mount's mountpoint, with the kernel's octal escapes (\040 for
// a space, \011, \012, \134) undone, and its filesystem type ("fuse.clairfs", "ext4", ...).
//
// Thread-safety: reads the file on each call. Errors: an unreadable table reads as empty.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace clairfs {

struct MountTableEntry {
  std::string mountpoint;
  std::string fstype;
};

std::vector<MountTableEntry> ReadMountTable();

// Undoes mountinfo's octal escapes.
std::string UnescapeMountinfo(std::string_view field);

}  // namespace clairfs
