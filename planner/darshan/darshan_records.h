// Decoding of decompressed module regions into records, converting every record version to the
// current one (POSIX 1-4 -> 4, STDIO 1-2 -> 2); DXT_POSIX traces keep their version (1: no
// pthread ids, 2: with them), because Darshan 3.4.x writes and reads only version 1.
//
// Conversions follow darshan-util: counters a version lacks become -1 ("not monitored"), except
// POSIX_RENAMED_FROM (a record id), which becomes 0; POSIX version-1 records that carry stdio
// counters (fopens > 0) cannot be converted and are dropped (counted in `dropped`); the last
// float counters of version 2 and 3 records read as 0, as darshan-util's conversion leaves
// them (see ApplyDarshanUtilTruncation in the .cc). Unlike
// darshan-util, byte order is applied to the stored fields before conversion, so converted
// big-endian logs read correctly.
//
// A region whose length is not a whole number of records, or a DXT record whose segment counts
// exceed the bytes that follow, is an error (EINVAL); messages say what is wrong, the caller adds
// the region name. Pure functions; thread-safe.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "planner/base/status.h"
#include "planner/darshan/darshan_format.h"
#include "planner/darshan/darshan_log.h"

namespace clairfs::darshan {

Status DecodePosixRecords(std::string_view data, uint32_t version, ByteOrder order,
                          std::vector<PosixRecord>* out, size_t* dropped);
Status DecodeStdioRecords(std::string_view data, uint32_t version, ByteOrder order,
                          std::vector<StdioRecord>* out);
Status DecodeDxtRecords(std::string_view data, uint32_t version, ByteOrder order,
                        std::vector<DxtRecord>* out);

// Encoders, appending to `out`: POSIX version 4, STDIO 2, DXT_POSIX `version` (1 or 2; version
// 1 has no pthread ids, so they are not written).
void EncodePosixRecord(const PosixRecord& r, ByteOrder order, std::string* out);
void EncodeStdioRecord(const StdioRecord& r, ByteOrder order, std::string* out);
void EncodeDxtRecord(const DxtRecord& r, uint32_t version, ByteOrder order, std::string* out);

// The DXT_POSIX version a log is written with: the one it was read with, else 1 unless a
// segment carries a pthread id (then 2).
uint32_t DxtPosixVersionToWrite(const DarshanLog& log);

}  // namespace clairfs::darshan
