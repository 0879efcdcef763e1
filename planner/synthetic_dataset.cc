// SyntheticDataset: spec parsing, naming and the deterministic size models (see the header).
#include "planner/synthetic_dataset.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "planner/base/units.h"

namespace clairfs {
namespace {

constexpr uint64_t kGoldenRatio64 = 0x9E3779B97F4A7C15ULL;
constexpr double kImageNetSigma = 0.7;
constexpr int kIrwinHallTerms = 12;  // sum of 12 uniforms - 6: mean 0, variance 1, |z| <= 6

uint64_t Mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
  return z ^ (z >> 31);
}

// A uniform double in [0, 1) with 53 random bits (exact conversion, no rounding).
double UnitDouble(uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

// exp(x) from + and * only (plus exact scaling by 2^k), so it gives the same bits everywhere
// IEEE doubles are used without contraction into FMA (the build uses -std=c++20, which turns
// contraction off in GCC). std::exp is not required to be correctly rounded, so results could
// differ across libms and change a file size by a byte.
double PortableExp(double x) {
  constexpr double kLn2 = 0.6931471805599453;
  double k = std::floor(x / kLn2 + 0.5);
  double r = x - k * kLn2;  // |r| <= ~0.35
  // Taylor series of exp(r) to degree 14, Horner form: error far below one ulp at |r| < 0.35.
  double sum = 1.0;
  for (int n = 14; n >= 1; --n) sum = 1.0 + sum * r / n;
  return std::ldexp(sum, static_cast<int>(k));
}

std::string PaddedNumber(uint64_t value, int min_width, uint64_t count) {
  // Widen so that every number below `count` has the same width (names then sort by number).
  int digits = 1;
  for (uint64_t v = count > 0 ? count - 1 : 0; v >= 10; v /= 10) ++digits;
  int width = std::max(min_width, digits);
  char buf[32];
  snprintf(buf, sizeof(buf), "%0*llu", width, static_cast<unsigned long long>(value));
  return buf;
}

Result<uint64_t> ParseCount(std::string_view text, std::string_view what) {
  std::string s(text);
  if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos || s.size() > 12) {
    return Status::Invalid("invalid " + std::string(what) + " '" + s + "' (expected a number)");
  }
  return static_cast<uint64_t>(std::stoull(s));
}

}  // namespace

Result<SyntheticSizes> ParseSyntheticSizes(std::string_view text) {
  SyntheticSizes sizes;
  auto bad = [&](const std::string& why) {
    return Status::Invalid("invalid --sizes '" + std::string(text) + "': " + why +
                           " (expected imagenet, imagenet22k, fixed:SIZE or shards:COUNTxSIZE)");
  };
  if (text == "imagenet") {
    sizes.kind = SyntheticSizes::Kind::kImageNet;
    return sizes;
  }
  if (text == "imagenet22k") {
    sizes.kind = SyntheticSizes::Kind::kImageNet22k;
    return sizes;
  }
  if (text.rfind("fixed:", 0) == 0) {
    auto size = ParseSize(text.substr(6));
    if (!size.ok()) return bad(size.status().message());
    sizes.kind = SyntheticSizes::Kind::kFixed;
    sizes.fixed_bytes = *size;
    return sizes;
  }
  if (text.rfind("shards:", 0) == 0) {
    std::string_view rest = text.substr(7);
    size_t x = rest.find_first_of("xX");
    if (x == std::string_view::npos) return bad("missing 'x' between COUNT and SIZE");
    auto count = ParseCount(rest.substr(0, x), "shard count");
    if (!count.ok()) return bad(count.status().message());
    if (*count == 0 || *count > kMaxSyntheticFiles) return bad("shard count must be at least 1");
    auto size = ParseSize(rest.substr(x + 1));
    if (!size.ok()) return bad(size.status().message());
    sizes.kind = SyntheticSizes::Kind::kShards;
    sizes.shard_count = *count;
    sizes.shard_bytes = *size;
    return sizes;
  }
  return bad("unknown size model");
}

std::string FormatSyntheticSizes(const SyntheticSizes& sizes) {
  switch (sizes.kind) {
    case SyntheticSizes::Kind::kImageNet:
      return "imagenet";
    case SyntheticSizes::Kind::kImageNet22k:
      return "imagenet22k";
    case SyntheticSizes::Kind::kFixed:
      return "fixed:" + std::to_string(sizes.fixed_bytes);
    case SyntheticSizes::Kind::kShards:
      return "shards:" + std::to_string(sizes.shard_count) + "x" +
             std::to_string(sizes.shard_bytes);
  }
  return "?";
}

Result<SyntheticLayout> ParseSyntheticLayout(std::string_view text) {
  if (text == "imagefolder") return SyntheticLayout::kImageFolder;
  if (text == "flat") return SyntheticLayout::kFlat;
  return Status::Invalid("invalid --layout '" + std::string(text) +
                         "' (expected imagefolder or flat)");
}

const char* SyntheticLayoutName(SyntheticLayout layout) {
  switch (layout) {
    case SyntheticLayout::kImageFolder:
      return "imagefolder";
    case SyntheticLayout::kFlat:
      return "flat";
    case SyntheticLayout::kShards:
      return "shards";
  }
  return "?";
}

namespace {

// Lognormal sizes around `median_bytes` (sigma kImageNetSigma, +-6 sigma, floor
// kImageNetMinBytes): the imagenet models differ only in their median.
uint64_t LogNormalSize(uint64_t seed, uint64_t index, uint64_t median_bytes) {
  uint64_t key = Mix(seed ^ 0x73697A6573ULL);  // "sizes": keeps this stream apart from others
  double z = -kIrwinHallTerms / 2.0;
  for (int j = 0; j < kIrwinHallTerms; ++j) {
    z += UnitDouble(Mix(key + (index * kIrwinHallTerms + j + 1) * kGoldenRatio64));
  }
  double bytes = static_cast<double>(median_bytes) * PortableExp(kImageNetSigma * z);
  uint64_t size = static_cast<uint64_t>(std::floor(bytes + 0.5));
  return std::max(size, kImageNetMinBytes);
}

}  // namespace

uint64_t ImageNetLikeSize(uint64_t seed, uint64_t index) {
  return LogNormalSize(seed, index, kImageNetMedianBytes);
}

uint64_t ImageNet22kLikeSize(uint64_t seed, uint64_t index) {
  return LogNormalSize(seed, index, kImageNet22kMedianBytes);
}

uint64_t SyntheticSizeOf(const SyntheticSizes& sizes, uint64_t seed, uint64_t index) {
  switch (sizes.kind) {
    case SyntheticSizes::Kind::kImageNet:
      return ImageNetLikeSize(seed, index);
    case SyntheticSizes::Kind::kImageNet22k:
      return ImageNet22kLikeSize(seed, index);
    case SyntheticSizes::Kind::kFixed:
      return sizes.fixed_bytes;
    case SyntheticSizes::Kind::kShards:
      return sizes.shard_bytes;
  }
  return 0;
}

Result<std::vector<SyntheticFile>> PlanSyntheticDataset(const SyntheticSpec& spec) {
  const bool shards = spec.sizes.kind == SyntheticSizes::Kind::kShards;
  if (shards != (spec.layout == SyntheticLayout::kShards)) {
    return Status::Invalid("sizes shards:COUNTxSIZE go with the shards layout only (got layout " +
                           std::string(SyntheticLayoutName(spec.layout)) + ", sizes " +
                           FormatSyntheticSizes(spec.sizes) + ")");
  }
  const uint64_t count = shards ? spec.sizes.shard_count : spec.files;
  if (count == 0 || count > kMaxSyntheticFiles) {
    return Status::Invalid("--files must be from 1 to " + std::to_string(kMaxSyntheticFiles) +
                           " (got " + std::to_string(count) + ")");
  }
  if (spec.layout == SyntheticLayout::kImageFolder && (spec.classes == 0 || spec.classes > count)) {
    return Status::Invalid("--classes must be from 1 to the number of files (" +
                           std::to_string(count) + "), got " + std::to_string(spec.classes));
  }
  std::vector<SyntheticFile> files;
  files.reserve(count);
  for (uint64_t i = 0; i < count; ++i) {
    SyntheticFile file;
    switch (spec.layout) {
      case SyntheticLayout::kImageFolder: {
        // Block assignment: class c holds files [ceil(c*N/C), ceil((c+1)*N/C)), so class sizes
        // differ by at most one and names sort in index order. i*C fits: both are <= 1e8.
        uint64_t cls = i * spec.classes / count;
        file.relpath = "class_" + PaddedNumber(cls, 4, spec.classes) + "/img_" +
                       PaddedNumber(i, 8, count) + ".jpg";
        break;
      }
      case SyntheticLayout::kFlat:
        file.relpath = "file_" + PaddedNumber(i, 8, count) + ".bin";
        break;
      case SyntheticLayout::kShards:
        file.relpath = "shard_" + PaddedNumber(i, 4, count) + ".tar";
        break;
    }
    file.size = SyntheticSizeOf(spec.sizes, spec.seed, i);
    files.push_back(std::move(file));
  }
  return files;
}

uint64_t MedianSize(const std::vector<SyntheticFile>& files) {
  if (files.empty()) return 0;
  std::vector<uint64_t> sizes;
  sizes.reserve(files.size());
  for (const auto& f : files) sizes.push_back(f.size);
  auto mid = sizes.begin() + static_cast<std::ptrdiff_t>((sizes.size() - 1) / 2);
  std::nth_element(sizes.begin(), mid, sizes.end());
  return *mid;
}

uint64_t TotalSize(const std::vector<SyntheticFile>& files) {
  uint64_t total = 0;
  for (const auto& f : files) total += f.size;
  return total;
}

}  // namespace clairfs
