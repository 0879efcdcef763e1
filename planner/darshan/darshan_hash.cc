// lookup8 record ids and Darshan's path cleaning (see darshan_hash.h). The hash is Bob Jenkins'
// public-domain 64-bit hash (1997), written here from its published description.
#include "planner/darshan/darshan_hash.h"

namespace clairfs::darshan {
namespace {

// Reversibly mixes three 64-bit values (Jenkins' mix64 schedule of shifts).
inline void Mix(uint64_t& a, uint64_t& b, uint64_t& c) {
  // clang-format off
  a -= b; a -= c; a ^= (c >> 43);
  b -= c; b -= a; b ^= (a << 9);
  c -= a; c -= b; c ^= (b >> 8);
  a -= b; a -= c; a ^= (c >> 38);
  b -= c; b -= a; b ^= (a << 23);
  c -= a; c -= b; c ^= (b >> 5);
  a -= b; a -= c; a ^= (c >> 35);
  b -= c; b -= a; b ^= (a << 49);
  c -= a; c -= b; c ^= (b >> 11);
  a -= b; a -= c; a ^= (c >> 12);
  b -= c; b -= a; b ^= (a << 18);
  c -= a; c -= b; c ^= (b >> 22);
  // clang-format on
}

// Eight bytes as a little-endian word, whatever the host order (the hash is defined that way).
inline uint64_t Word(const unsigned char* p, size_t n) {
  uint64_t v = 0;
  for (size_t i = 0; i < n; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

}  // namespace

uint64_t Lookup8Hash(std::string_view key, uint64_t level) {
  const auto* k = reinterpret_cast<const unsigned char*>(key.data());
  size_t len = key.size();
  uint64_t a = level;
  uint64_t b = level;
  uint64_t c = 0x9e3779b97f4a7c13ULL;  // the golden ratio, an arbitrary start
  while (len >= 24) {
    a += Word(k, 8);
    b += Word(k + 8, 8);
    c += Word(k + 16, 8);
    Mix(a, b, c);
    k += 24;
    len -= 24;
  }
  // The last 0-23 bytes: up to 8 into a, up to 8 into b, and up to 7 into c above its lowest
  // byte, which is taken by the total length.
  c += key.size();
  if (len > 16) {
    c += Word(k + 16, len - 16) << 8;
  }
  if (len > 8) {
    b += Word(k + 8, len > 16 ? 8 : len - 8);
  }
  a += Word(k, len > 8 ? 8 : len);
  Mix(a, b, c);
  return c;
}

std::string CleanDarshanPath(std::string_view path) {
  std::string out(path);
  if (out.empty() || out[0] == '<') return out;
  // Same order as Darshan: first every "//", then every "/./".
  for (size_t pos; (pos = out.find("//")) != std::string::npos;) out.erase(pos, 1);
  for (size_t pos; (pos = out.find("/./")) != std::string::npos;) out.erase(pos, 2);
  return out;
}

}  // namespace clairfs::darshan
