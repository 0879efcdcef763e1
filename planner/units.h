// Parsing and printing of sizes and bandwidths as the CLI accepts and shows them.
//
// Sizes are binary: "800G" = 800 GiB, "1.5T", "512M", "64K", or plain bytes ("1048576"); an
// optional trailing "B"/"iB" is accepted ("800GiB"). Bandwidths are decimal megabytes per second
// ("200" = 200 MB/s = 200e6 bytes/s). Errors name the offending text.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "planner/status.h"

namespace clairfs {

Result<uint64_t> ParseSize(std::string_view text);
// MB/s (decimal) as bytes per second; 0 means unlimited.
Result<uint64_t> ParseBandwidthMBps(std::string_view text);
// "1.5 GiB", "110.0 KiB", "12 B".
std::string FormatBytes(uint64_t bytes);
// "200.0 MB/s" from bytes per second.
std::string FormatRate(double bytes_per_second);

}  // namespace clairfs
