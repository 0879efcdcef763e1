// The kernel's permission check for a node of the mount (see access_check.h).
#include "cache/access_check.h"

#include <algorithm>
#include <cstdint>
#include <optional>

namespace clairfs {
namespace {

// posix_acl_xattr format (include/uapi/linux/posix_acl_xattr.h): a u32 version, then entries.
constexpr uint32_t kAclVersion = 2;
constexpr size_t kAclHeaderBytes = 4;
constexpr size_t kAclEntryBytes = 8;
constexpr uint16_t kUserObj = 0x01, kUser = 0x02, kGroupObj = 0x04, kGroup = 0x08, kMask = 0x10,
                   kOther = 0x20;
constexpr uint16_t kPermBits = 07;

struct AclEntry {
  uint16_t tag;
  uint16_t perm;
  uint32_t id;
};

uint16_t Le16(const char* p) {
  return static_cast<uint16_t>(static_cast<uint8_t>(p[0]) | static_cast<uint8_t>(p[1]) << 8);
}

// The entries of an access ACL, an empty vector for a header without entries (the kernel reads
// that as no ACL), or nullopt when the value is malformed. Validity as posix_acl_valid() checks
// it: perms within rwx, USER_OBJ, USER..., GROUP_OBJ, GROUP..., MASK, OTHER in that order, a
// mask present when there is a named entry.
std::optional<std::vector<AclEntry>> ParseAcl(const std::string& raw) {
  if (raw.size() < kAclHeaderBytes || (raw.size() - kAclHeaderBytes) % kAclEntryBytes != 0) {
    return std::nullopt;
  }
  if (GetFixed32(raw.data()) != kAclVersion) return std::nullopt;
  std::vector<AclEntry> entries;
  for (size_t off = kAclHeaderBytes; off < raw.size(); off += kAclEntryBytes) {
    const char* p = raw.data() + off;
    entries.push_back(AclEntry{Le16(p), Le16(p + 2), GetFixed32(p + 4)});
  }
  if (entries.empty()) return entries;
  enum { kWantUserObj, kInUsers, kInGroups, kWantOther, kDone } state = kWantUserObj;
  bool needs_mask = false;
  for (const AclEntry& e : entries) {
    if (e.perm & ~kPermBits) return std::nullopt;
    switch (e.tag) {
      case kUserObj:
        if (state != kWantUserObj) return std::nullopt;
        state = kInUsers;
        break;
      case kUser:
        if (state != kInUsers) return std::nullopt;
        needs_mask = true;
        break;
      case kGroupObj:
        if (state != kInUsers) return std::nullopt;
        state = kInGroups;
        break;
      case kGroup:
        if (state != kInGroups) return std::nullopt;
        needs_mask = true;
        break;
      case kMask:
        if (state != kInGroups) return std::nullopt;
        state = kWantOther;
        break;
      case kOther:
        if (state != kWantOther && !(state == kInGroups && !needs_mask)) return std::nullopt;
        state = kDone;
        break;
      default:
        return std::nullopt;
    }
  }
  if (state != kDone) return std::nullopt;
  return entries;
}

bool InGroup(const Caller& caller, gid_t gid) {
  return caller.gid == gid ||
         std::find(caller.groups.begin(), caller.groups.end(), gid) != caller.groups.end();
}

// posix_acl_permission(): the caller is not the file's owner.
bool AclGrants(const std::vector<AclEntry>& acl, const NodeAttr& attr, const Caller& caller,
               uint16_t want) {
  // The entry that decided, masked by the ACL's mask entry when one follows it.
  auto masked = [&](size_t i) {
    uint16_t perm = acl[i].perm;
    for (size_t k = i + 1; k < acl.size(); ++k) {
      if (acl[k].tag == kMask) {
        perm &= acl[k].perm;
        break;
      }
    }
    return (perm & want) == want;
  };
  bool group_matched = false;
  for (size_t i = 0; i < acl.size(); ++i) {
    const AclEntry& e = acl[i];
    switch (e.tag) {
      case kUserObj:
        break;  // the owner was decided by the mode bits before
      case kUser:
        if (e.id == caller.uid) return masked(i);
        break;
      case kGroupObj:
        if (InGroup(caller, attr.gid)) {
          group_matched = true;
          if ((e.perm & want) == want) return masked(i);
        }
        break;
      case kGroup:
        if (InGroup(caller, e.id)) {
          group_matched = true;
          if ((e.perm & want) == want) return masked(i);
        }
        break;
      case kMask:
        break;
      case kOther:
        return !group_matched && (e.perm & want) == want;
    }
  }
  return false;  // unreachable for a valid ACL, which ends with OTHER
}

}  // namespace

bool MayAccess(const NodeAttr& attr, const Caller& caller, int mask) {
  const uint16_t want = static_cast<uint16_t>(mask & (R_OK | W_OK | X_OK));
  if (want == 0) return true;
  if (caller.uid == 0) {
    // CAP_DAC_OVERRIDE (and CAP_DAC_READ_SEARCH): only executing a file needs an x bit.
    return attr.is_dir() || !(want & X_OK) || (attr.mode & 0111) != 0;
  }
  const uint32_t mode = attr.mode;
  if (caller.uid == attr.uid) return (want & ~(mode >> 6) & kPermBits) == 0;
  // The kernel consults an ACL only while the group class bits (the ACL mask) are not all clear.
  if (!attr.acl_access.empty() && (mode & 070) != 0) {
    const auto acl = ParseAcl(attr.acl_access);
    if (!acl) return false;
    if (!acl->empty()) return AclGrants(*acl, attr, caller, want);
  }
  const uint32_t bits = InGroup(caller, attr.gid) ? mode >> 3 : mode;
  return (want & ~bits & kPermBits) == 0;
}

}  // namespace clairfs
