// What a control request's caller may see (see caller_scope.h).
#include "fs/control/caller_scope.h"

namespace clairfs {

CallerScope ScopeOf(const PeerCredentials& peer, uid_t owner_uid, bool allow_other) {
  if (peer.uid == 0 || peer.uid == owner_uid) return CallerScope::kEverything;
  return allow_other ? CallerScope::kThroughMount : CallerScope::kNothing;
}

Status PrivateMountError(uid_t owner_uid) {
  return Status::Error(EACCES, "this mount is private to uid " + std::to_string(owner_uid) +
                                   ": it was mounted without allow_other");
}

Caller CallerOf(const PeerCredentials& peer) { return Caller{peer.uid, peer.gid, peer.groups}; }

}  // namespace clairfs
