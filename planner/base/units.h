// Parsing and printing of sizes, counts and bandwidths as the CLI accepts and shows them.
//
// Sizes are binary: "800G" = 800 GiB, "1.5T", "512M", "64K", "2P", or plain bytes ("1048576");
// an optional trailing "B"/"iB" is accepted ("800GiB", "512MB" is 512 MiB), letters in any case.
// Exactly that: digits, an optional fraction (a fraction of a byte is refused), a unit. No sign
// (so no "-0"), no exponent ("1e3"), no hex, no spaces, nothing above 2^64-1 bytes; the value is
// computed exactly (no floating point), a fraction of a unit rounds to the nearest byte.
// Counts are plain decimal integers in a stated range: no sign, no spaces, no exponent.
// Bandwidths are decimal megabytes per second ("200" = 200 MB/s = 200e6 bytes/s).
// Errors are EINVAL and name the offending text; callers add the flag.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "planner/base/status.h"

namespace clairfs {

Result<uint64_t> ParseSize(std::string_view text);
// A decimal integer from `min` to `max`.
Result<uint64_t> ParseCount(std::string_view text, uint64_t min, uint64_t max);
// MB/s (decimal) as bytes per second; 0 means unlimited.
Result<uint64_t> ParseBandwidthMBps(std::string_view text);
// "1.5 GiB", "110.0 KiB", "12 B".
std::string FormatBytes(uint64_t bytes);
// "200.0 MB/s" from bytes per second.
std::string FormatRate(double bytes_per_second);

}  // namespace clairfs
