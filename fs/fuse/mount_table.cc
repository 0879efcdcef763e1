// Reading /proc/self/mountinfo (see mount_table.h).
#include "fs/fuse/mount_table.h"

#include <charconv>
#include <fstream>

namespace clairfs {
namespace {

// The next space-separated field of `line` from `*pos`, or "" at the end.
std::string_view NextField(std::string_view line, size_t* pos) {
  while (*pos < line.size() && line[*pos] == ' ') ++*pos;
  const size_t start = *pos;
  while (*pos < line.size() && line[*pos] != ' ') ++*pos;
  return line.substr(start, *pos - start);
}

}  // namespace

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

std::optional<MountTableEntry> ParseMountinfoLine(std::string_view line) {
  size_t pos = 0;
  for (int i = 0; i < 4; ++i) {
    if (NextField(line, &pos).empty()) return std::nullopt;  // ID PARENT MAJ:MIN ROOT
  }
  std::string_view mountpoint = NextField(line, &pos);
  if (mountpoint.empty()) return std::nullopt;
  // Optional fields end with a lone "-".
  std::string_view field;
  do {
    field = NextField(line, &pos);
    if (field.empty()) return std::nullopt;
  } while (field != "-");
  MountTableEntry entry;
  entry.mountpoint = UnescapeMountinfo(mountpoint);
  entry.fstype = std::string(NextField(line, &pos));
  NextField(line, &pos);  // source
  entry.super_options = std::string(NextField(line, &pos));
  if (entry.fstype.empty()) return std::nullopt;
  return entry;
}

std::optional<std::string> MountTableEntry::SuperOption(std::string_view key) const {
  std::string_view options = super_options;
  while (!options.empty()) {
    const size_t comma = options.find(',');
    std::string_view item = options.substr(0, comma);
    options = comma == std::string_view::npos ? std::string_view() : options.substr(comma + 1);
    const size_t eq = item.find('=');
    if (item.substr(0, eq) != key) continue;
    return eq == std::string_view::npos ? std::string() : std::string(item.substr(eq + 1));
  }
  return std::nullopt;
}

std::optional<uid_t> MountTableEntry::FuseOwner() const {
  const std::optional<std::string> value = SuperOption("user_id");
  if (!value || value->empty()) return std::nullopt;
  unsigned long uid = 0;
  auto [end, ec] = std::from_chars(value->data(), value->data() + value->size(), uid);
  if (ec != std::errc() || end != value->data() + value->size()) return std::nullopt;
  return static_cast<uid_t>(uid);
}

std::vector<MountTableEntry> ReadMountTable() {
  std::vector<MountTableEntry> table;
  std::ifstream in("/proc/self/mountinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (auto entry = ParseMountinfoLine(line)) table.push_back(std::move(*entry));
  }
  return table;
}

std::optional<MountTableEntry> FindMount(const std::string& canonical_path) {
  std::optional<MountTableEntry> found;
  for (MountTableEntry& m : ReadMountTable()) {
    if (m.mountpoint == canonical_path) found = std::move(m);
  }
  return found;
}

}  // namespace clairfs
