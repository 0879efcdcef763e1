// The mount table of this process's mount namespace (/proc/self/mountinfo), as the daemon, the
// CLI and the tests need it: each mount's mountpoint, with the kernel's octal escapes (\040 for
// a space, \011, \012, \134) undone, its filesystem type ("fuse.clairfs", "ext4", ...), and its
// superblock options ("rw,user_id=1000,group_id=1000,default_permissions,allow_other" for FUSE).
// For a FUSE mount, user_id= is the uid that mounted it: the only uid whose daemon may serve it,
// which is how the CLI tells the mount's own control socket from an impostor's.
//
// Thread-safety: reads the file on each call. Errors: an unreadable table reads as empty; a line
// that does not parse is left out.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace clairfs {

struct MountTableEntry {
  std::string mountpoint;
  std::string fstype;
  std::string super_options;  // comma-separated, as the kernel prints them

  // The value of super option `key` ("user_id" -> "1000"), or "" for a flag that is present
  // ("allow_other"); nullopt when absent.
  std::optional<std::string> SuperOption(std::string_view key) const;
  // user_id= of a FUSE mount; nullopt when absent or not a number.
  std::optional<uid_t> FuseOwner() const;
};

std::vector<MountTableEntry> ReadMountTable();

// One line of mountinfo: "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE
// SUPER_OPTIONS". nullopt if it is not such a line.
std::optional<MountTableEntry> ParseMountinfoLine(std::string_view line);

// The entry mounted last (the visible one) on `canonical_path`, if any.
std::optional<MountTableEntry> FindMount(const std::string& canonical_path);

// Undoes mountinfo's octal escapes.
std::string UnescapeMountinfo(std::string_view field);

}  // namespace clairfs
