// MayAccess: may this caller read, write or search this node, as the kernel would decide for the
// mount (default_permissions) from the attributes the manifest presents?
//
// It is the kernel's generic_permission() (fs/namei.c) with POSIX ACLs (fs/posix_acl.c):
//   - root may read and write anything, and execute or search a directory always and a file when
//     any of its x bits is set (CAP_DAC_OVERRIDE);
//   - the file's owner gets the owner bits, whatever the ACL says;
//   - otherwise, when the node has an access ACL (NodeAttr::acl_access, the raw
//     "system.posix_acl_access" value) and its group bits are not all clear, the POSIX.1e
//     algorithm decides: a named-user entry for the caller (masked), else the owning group and the
//     named groups the caller is in (any match that grants, masked, grants; a match that does not
//     means deny), else other;
//   - otherwise the mode bits: group bits for the owning group (primary or supplementary), else
//     other bits.
// A malformed ACL (bad size, version other than 2, unknown tag, entries out of order, required
// entries missing, a named entry without a mask) denies everyone but the owner and root while the
// group bits make the kernel consult it.
//
// Thread-safety: pure functions.
#pragma once

#include <sys/types.h>
#include <unistd.h>

#include <vector>

#include "cache/node_attr.h"

namespace clairfs {

struct Caller {
  uid_t uid = 0;
  gid_t gid = 0;
  std::vector<gid_t> groups;  // supplementary groups (may repeat gid)
};

// `mask` is a combination of R_OK, W_OK and X_OK; 0 asks nothing and is always granted.
bool MayAccess(const NodeAttr& attr, const Caller& caller, int mask);

}  // namespace clairfs
