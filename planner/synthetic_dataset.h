// SyntheticDataset: the deterministic plan (relative paths and sizes) of a generated dataset.
//
// A SyntheticSpec (layout, file count, classes, size model, seed) always yields the same list of
// files, on any machine and standard library: sizes come from our own SplitMix64 stream and our
// own exp(), never from std::*_distribution. The content of each file is a function of its
// relative path only (synthetic_content.h), so a reader can verify what it read without the spec.
//
// Layouts (index i counts from 0, names sort in index order):
//   imagefolder  class_CCCC/img_IIIIIIII.jpg  files spread evenly over C classes, in blocks:
//                file i is in class floor(i * C / N) (torchvision ImageFolder's shape)
//   flat         file_IIIIIIII.bin
//   shards       shard_SSSS.tar               (only with sizes shards:COUNTxSIZE)
// Number widths are at least 4 (classes, shards) and 8 (files) digits, more if needed.
//
// Size models:
//   imagenet          lognormal, median 110 KiB, sigma 0.7, tail capped at +6 sigma (~7.3 MiB),
//                     floor 2 KiB: like ImageNet-1k JPEGs (median ~110 KB, a few MB at most;
//                     mean ~144 KB, so 14.2 M files would make ~2 TB)
//   imagenet22k       the same shape around a median of 72,000 bytes: mean ~92 KB, so the 14.2 M
//                     files of ImageNet-22k (fall 2011) make ~1.3 TB as the real set does
//   fixed:SIZE        every file SIZE bytes (ParseSize units: 110K, 4M, 1048576)
//   shards:COUNTxSIZE COUNT files of SIZE bytes each (e.g. 4x256M), named shard_SSSS.tar
//
// Thread-safety: pure functions. Errors: EINVAL Status values naming the bad field.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "planner/base/status.h"

namespace clairfs {

enum class SyntheticLayout { kImageFolder, kFlat, kShards };

struct SyntheticSizes {
  enum class Kind { kImageNet, kImageNet22k, kFixed, kShards };
  Kind kind = Kind::kImageNet;
  uint64_t fixed_bytes = 0;  // kFixed
  uint64_t shard_count = 0;  // kShards
  uint64_t shard_bytes = 0;  // kShards
};

struct SyntheticSpec {
  SyntheticLayout layout = SyntheticLayout::kImageFolder;
  uint64_t files = 0;    // ignored for shards (the shard count decides)
  uint64_t classes = 1;  // imagefolder only: 1..files
  SyntheticSizes sizes;
  uint64_t seed = 0;
};

struct SyntheticFile {
  std::string relpath;  // relative to the dataset root, '/'-separated
  uint64_t size = 0;
};

inline constexpr uint64_t kImageNetMedianBytes = 110 * 1024;
inline constexpr uint64_t kImageNet22kMedianBytes = 72'000;
inline constexpr uint64_t kImageNetMinBytes = 2 * 1024;
inline constexpr uint64_t kMaxSyntheticFiles = 100'000'000;

// "imagenet", "imagenet22k", "fixed:110K", "shards:4x256M".
Result<SyntheticSizes> ParseSyntheticSizes(std::string_view text);
// The canonical text of a size model (ParseSyntheticSizes(Format(x)) == x).
std::string FormatSyntheticSizes(const SyntheticSizes& sizes);
// "imagefolder", "flat" ("shards" is implied by the size model, not chosen).
Result<SyntheticLayout> ParseSyntheticLayout(std::string_view text);
const char* SyntheticLayoutName(SyntheticLayout layout);

// The files of the dataset, sorted by relpath. Checks the spec: files in 1..kMaxSyntheticFiles,
// classes in 1..files for imagefolder, shards only with the shards layout and vice versa.
Result<std::vector<SyntheticFile>> PlanSyntheticDataset(const SyntheticSpec& spec);

// The imagenet-model size of file `index` of a dataset with `seed` (exposed for tests).
uint64_t ImageNetLikeSize(uint64_t seed, uint64_t index);
uint64_t ImageNet22kLikeSize(uint64_t seed, uint64_t index);
// The size of file `index` under `sizes` without naming the file (the cluster simulator sizes
// 14 M files this way): what PlanSyntheticDataset gives file `index`.
uint64_t SyntheticSizeOf(const SyntheticSizes& sizes, uint64_t seed, uint64_t index);

// The median of the sizes (the lower middle for an even count); 0 for an empty list.
uint64_t MedianSize(const std::vector<SyntheticFile>& files);
uint64_t TotalSize(const std::vector<SyntheticFile>& files);

}  // namespace clairfs
