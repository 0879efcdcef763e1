// Reading /proc/self/mountinfo (see mount_table.h).
#include "fs/mount_table.h"

#include <fstream>
#include <sstream>

namespace clairfs {

std::string UnescapeMountinfo(std::string_view field) {
  std::string out;
  out.reserve(field.size());
  for (size_t i = 0; i < field.size(); ++i) {
    if (field[i] == '\\' && i + 3 < field.size()) {
      out.push_back(static_cast<char>((field[i + 1] - '0') * 64 + (field[i + 2] - '0') * 8 +
                                      (field[i + 3] - '0')));
      i += 3;
    } else {
      out.push_back(field[i]);
    }
  }
  return out;
}

std::vector<MountTableEntry> ReadMountTable() {
  std::vector<MountTableEntry> table;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    // "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTIONS [OPTIONAL...] - FSTYPE SOURCE SUPER_OPTIONS"
    std::istringstream fields(line);
    std::string id, parent, devno, root, mountpoint;
    fields >> id >> parent >> devno >> root >> mountpoint;
    MountTableEntry entry{UnescapeMountinfo(mountpoint), ""};
    size_t dash = line.find(" - ");
    if (dash != std::string::npos) std::istringstream(line.substr(dash + 3)) >> entry.fstype;
    table.push_back(std::move(entry));
  }
  return table;
}

}  // namespace clairfs
