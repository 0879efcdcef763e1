// Darshan record ids: Bob Jenkins' 64-bit "lookup8" hash of the cleaned absolute path, as the
// Darshan runtime computes them (darshan_hash(path, strlen(path), 0)). clairfs needs the same
// ids so that logs it writes name files the way Darshan's own logs do.
//
// Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace clairfs::darshan {

// lookup8 hash() of `key` with initial value `level`.
uint64_t Lookup8Hash(std::string_view key, uint64_t level);

// The path as Darshan records it: "//" collapsed to "/", "/./" to "/" (symlinks and ".." are
// left alone, as Darshan does). Names starting with '<' (<STDIN>, <STDOUT>, <STDERR>) are
// returned unchanged. `path` must be absolute or special; relative paths are returned as given.
std::string CleanDarshanPath(std::string_view path);

// The record id Darshan gives `name` (already cleaned): Lookup8Hash(name, 0).
inline uint64_t DarshanRecordId(std::string_view name) { return Lookup8Hash(name, 0); }

}  // namespace clairfs::darshan
