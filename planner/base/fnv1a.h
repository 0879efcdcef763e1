// FNV-1a, 64-bit: a fast, stable (never changes between versions or machines) hash of bytes, for
// shard selection and for names derived from paths (control socket names, synthetic content keys).
// Not for anything adversarial: it is not collision-resistant.
#pragma once

#include <cstdint>
#include <string_view>

namespace clairfs {

constexpr uint64_t kFnv1a64Basis = 0xcbf29ce484222325ULL;

constexpr uint64_t Fnv1a64(std::string_view bytes, uint64_t hash = kFnv1a64Basis) {
  for (char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

}  // namespace clairfs
