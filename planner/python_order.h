// PythonStrLess: the order Python's sorted() gives file names and paths from os.scandir/os.walk.
//
// Python decodes file names from bytes as UTF-8 with the surrogateescape handler (each byte of an
// invalid sequence becomes U+DC80..U+DCFF) and compares str by code point. For valid UTF-8 that
// equals unsigned byte order, but not when invalid bytes are present: byte 0x80 becomes U+DC80,
// which sorts after U+00E9 (bytes C3 A9) and before U+1F600 (bytes F0 9F 98 80). We decode the
// same way and compare code points, so torchvision's ImageFolder order is reproduced for every
// name the filesystem can hold.
//
// Thread-safety: pure functions. No errors (every byte string decodes).
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

namespace clairfs {

// The code points Python sees for a name given as bytes (UTF-8 + surrogateescape).
std::vector<uint32_t> DecodeLikePython(std::string_view bytes);

// a < b as Python compares os.fsdecode(a) < os.fsdecode(b).
bool PythonStrLess(std::string_view a, std::string_view b);

}  // namespace clairfs
