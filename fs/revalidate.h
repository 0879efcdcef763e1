// Revalidate: when the filesystem core asks the backing store again about a listed file
// (--revalidate; what each mode promises is in README.md, "Mount options").
#pragma once

namespace clairfs {

// kNever: the listing at mount is the truth for the mount's life. kOpen: every open (and every
// GETATTR of a file) stats the backing file.
enum class Revalidate { kNever, kOpen };

}  // namespace clairfs
