// DarshanLog lookups: modules, names, mount points, run time (see darshan_log.h).
#include "planner/darshan/darshan_log.h"

namespace clairfs::darshan {

const ModuleRegion* DarshanLog::FindModule(int module_id) const {
  for (const ModuleRegion& m : modules) {
    if (m.module_id == module_id) return &m;
  }
  return nullptr;
}

const RawModule* DarshanLog::FindRawModule(int module_id) const {
  for (const RawModule& m : raw_modules) {
    if (m.module_id == module_id) return &m;
  }
  return nullptr;
}

std::string DarshanLog::ModulesNotHeld() const {
  std::string names;
  for (const ModuleRegion& m : modules) {
    if (m.length == 0 || m.held) continue;
    names += (names.empty() ? "" : ", ") + ModuleLabel(m.module_id);
  }
  return names;
}

void DarshanLog::DropModulesNotDecoded() {
  std::erase_if(modules, [this](const ModuleRegion& m) {
    return FindRawModule(m.module_id) != nullptr || (m.length > 0 && !m.held);
  });
  raw_modules.clear();
}

const std::string* DarshanLog::FindName(uint64_t id) const {
  auto it = names.find(id);
  return it == names.end() ? nullptr : &it->second;
}

const MountEntry* DarshanLog::MountFor(std::string_view name) const {
  // A plain string prefix, not a path-component match: that is what darshan-parser does, and
  // dump must print the same mount column.
  for (const MountEntry& m : mounts) {
    if (name.substr(0, m.path.size()) == m.path) return &m;
  }
  return nullptr;
}

double DarshanLog::RunTimeSeconds() const {
  if (version == FormatVersion::k341) {
    return (static_cast<double>(job.end_time_sec) + static_cast<double>(job.end_time_nsec) / 1e9) -
           (static_cast<double>(job.start_time_sec) +
            static_cast<double>(job.start_time_nsec) / 1e9);
  }
  // In doubles: the fields come from untrusted input and must not overflow.
  return static_cast<double>(job.end_time_sec) - static_cast<double>(job.start_time_sec) + 1;
}

}  // namespace clairfs::darshan
