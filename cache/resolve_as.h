// ResolveAs: a dataset path looked up in the manifest as the kernel would resolve it through the
// mount for a given caller (default_permissions): each directory on the way must grant the caller
// search permission before the name in it is looked up, so a name inside a directory the caller
// may not search is EACCES whether it exists or not. The control socket's handlers and the peer
// socket use it to hand a caller only what the mount would.
//
// Paths are relative to the backing root ("" is the root); errors name them escaped
// (ShownPath). Thread-safety: as the manifest's reads (thread-safe).
#pragma once

#include <string>

#include "cache/access_check.h"
#include "cache/manifest.h"
#include "planner/base/status.h"

namespace clairfs {

// How a dataset path appears in replies and messages: escaped, "." for the root.
std::string ShownPath(const std::string& rel);

// The node at `rel`, with no permission check; ENOENT if there is none.
Result<ManifestNode> ResolvePath(const Manifest& manifest, const std::string& rel);
// The node at `rel` if `caller` could reach it through the mount: EACCES naming the directory
// that denies search, ENOTDIR, ENOENT.
Result<ManifestNode> ResolveAs(const Manifest& manifest, const std::string& rel,
                               const Caller& caller);

}  // namespace clairfs
