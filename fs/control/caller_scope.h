// What a control request's caller may see of a mount's names, sizes and access patterns.
//
// Root and the mount's owner see everything. Anyone else sees what the kernel would let them see
// through the mount, or aggregates only:
//   - on a mount without allow_other the kernel lets nobody else in, so name-bearing reads (ls,
//     per-file stats) are refused with EACCES (PrivateMountError);
//   - on an allow_other mount, `ls` answers as the kernel would under default_permissions
//     (cache/access_check.h against the manifest's attributes): resolving a path needs search on
//     every directory above it, listing a directory needs read and search on it, and a file's
//     cache state (what `user.clairfs.state` tells a reader) needs read on the file; `stats`
//     gives totals, never per-file rows.
// `status` and `heat_status` carry only aggregates and are open to everyone.
//
// Thread-safety: pure functions.
#pragma once

#include <sys/types.h>

#include "cache/access_check.h"
#include "fs/control/control_server.h"

namespace clairfs {

enum class CallerScope {
  kEverything,    // root or the mount's owner
  kThroughMount,  // another user of an allow_other mount
  kNothing,       // another user of a private mount
};

CallerScope ScopeOf(const PeerCredentials& peer, uid_t owner_uid, bool allow_other);

// EACCES: "this mount is private to uid N: it was mounted without allow_other".
Status PrivateMountError(uid_t owner_uid);

Caller CallerOf(const PeerCredentials& peer);

}  // namespace clairfs
