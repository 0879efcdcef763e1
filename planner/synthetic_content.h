// Synthetic file content: bytes that can be regenerated and checked from the file's name alone.
//
// Every file of a synthetic dataset (see synthetic_dataset.h) has this content:
//
//   offset 0..7    the magic "CLFSSYN1"
//   offset 8..15   the file size, 64-bit little-endian
//   offset 16..    a keyed counter-mode stream: byte o is byte (o % 8) (little-endian) of
//                  SplitMix64(key + (o / 8 + 1) * 0x9E3779B97F4A7C15), key = PathKey(relpath)
//
// A file shorter than 16 bytes holds the first `size` bytes of that header. So a reader that knows
// only the relative path (e.g. "class_0003/img_00000042.jpg", no leading "./" or "/") can check
// every byte and the length, without the original and without the generator's spec: a truncated,
// extended, renamed or corrupted file fails. Generation and verification are random-access and run
// at several GB/s on one core (two multiplies per 8 bytes, no table).
//
// Thread-safety: pure functions; SyntheticVerifier is a value used by one thread at a time.
// Errors: verification failures are Status values with EILSEQ (content) naming the path and the
// first wrong offset; nothing throws.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "planner/base/status.h"

namespace clairfs {

inline constexpr size_t kSyntheticHeaderBytes = 16;
inline constexpr char kSyntheticMagic[] = "CLFSSYN1";  // 8 bytes, no terminator in files

// The 64-bit key of a relative path (FNV-1a then a SplitMix64 finaliser).
uint64_t SyntheticPathKey(std::string_view relpath);

// Writes bytes [offset, offset + len) of the synthetic file `relpath` of size `file_size` into
// `buf`. Bytes past `file_size` are generated as if the file were longer (callers should not ask
// for them; the header still says `file_size`).
void FillSyntheticBytes(std::string_view relpath, uint64_t file_size, uint64_t offset, char* buf,
                        size_t len);

// The file size recorded in a header, from at least the first 16 bytes of a file; an error if the
// magic is wrong or fewer than 16 bytes are given.
Result<uint64_t> SyntheticSizeFromHeader(std::string_view first_bytes);

// Checks a whole file's content in one call.
Status VerifySyntheticFile(std::string_view relpath, std::string_view data);

// Checks a file read in pieces, in order: Update() with each piece, then Finish() at end of file.
// The first error sticks (later calls return it again).
class SyntheticVerifier {
 public:
  explicit SyntheticVerifier(std::string_view relpath);

  Status Update(const char* data, size_t len);
  // Checks that the length read equals the size in the header.
  Status Finish();
  uint64_t bytes_checked() const { return offset_; }

 private:
  Status Mismatch(uint64_t offset, const std::string& what);

  std::string relpath_;
  uint64_t key_;
  uint64_t offset_ = 0;
  char header_[kSyntheticHeaderBytes] = {};  // the first bytes seen, until the size is known
  uint64_t expected_size_ = 0;
  bool size_known_ = false;
  Status error_;
};

}  // namespace clairfs
