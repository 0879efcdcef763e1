// PlanSpec: the parsed form of a plan spec string, e.g. "torch-distributed:seed=42,world=8".
//
// Accepted strings (nothing else):
//   torch-distributed:seed=S,world=R[,ranks=A-B][,drop_last=0|1][,shuffle=0|1][,epochs=E]
//                     [,start_epoch=F][,set_epoch=0|1]
//   torch-random:seed=S[,epochs=E][,persistent_workers=0|1]
//   numpy:seed=S[,epochs=E][,reseed=none|epoch]
//   numpy-rng:seed=S[,epochs=E]
//   sequential[:epochs=E]
//   list:FILE
// set_epoch=0: the job never calls sampler.set_epoch, so every epoch repeats the order of epoch
// start_epoch (DistributedSampler seeds each epoch with seed + its epoch attribute).
// Epoch numbers are absolute (the value passed to set_epoch). A plan covers epochs
// [start_epoch, epochs) like `for epoch in range(start_epoch, epochs)`; without `epochs` it never
// ends. Seeds are decimal integers and accepted exactly as the library accepts them: torch
// -2^63..2^64-1 (negatives as two's complement), numpy legacy 0..2^32-1, numpy-rng any
// non-negative integer (up to kMaxSeedDigits decimal digits, far beyond 2^128). See
// docs/PLANNER.md for what each kind reproduces.
//
// Errors: ParsePlanSpec returns EINVAL with one message naming the problem (unknown kind or key,
// duplicate key, missing seed or world, bad number, rank outside the world, ...). The list file
// is not read here (see list_plan.h).
// Thread-safety: values.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "planner/base/status.h"

namespace clairfs {

enum class SamplerKind { kTorchDistributed, kTorchRandom, kNumpy, kNumpyRng, kSequential, kList };

// "torch-distributed", "torch-random", ...
const char* SamplerKindName(SamplerKind kind);

// An arbitrary-size decimal integer as written in the spec.
struct SeedInteger {
  bool negative = false;
  std::vector<uint32_t> magnitude;  // 32-bit words, least significant first; empty for 0
  std::string text;                 // as written

  // The value if it fits in a signed 128-bit integer.
  std::optional<__int128> ToInt128() const;
};

enum class NumpyReseed { kNone, kEpoch };

struct PlanSpec {
  SamplerKind kind = SamplerKind::kSequential;
  std::string text;  // the spec as given, for messages

  SeedInteger seed;
  uint32_t world = 1;
  uint32_t first_rank = 0;  // ranks this plan is asked about: [first_rank, last_rank]
  uint32_t last_rank = 0;
  bool drop_last = false;
  bool shuffle = true;
  bool set_epoch = true;  // torch-distributed: false when the job never calls set_epoch
  bool persistent_workers = false;
  NumpyReseed reseed = NumpyReseed::kNone;
  uint64_t start_epoch = 0;
  std::optional<uint64_t> end_epoch;  // `epochs=E`: one past the last epoch
  std::string list_file;              // list:FILE

  // True if `epoch` is inside [start_epoch, end_epoch).
  bool CoversEpoch(uint64_t epoch) const {
    return epoch >= start_epoch && (!end_epoch || epoch < *end_epoch);
  }
};

// Longest seed accepted, in decimal digits (about 2^33000).
constexpr size_t kMaxSeedDigits = 10000;

Result<PlanSpec> ParsePlanSpec(std::string_view text);

// The canonical text of a parsed spec: the kind, then the keys it sets in the order of the forms
// above, each only where it differs from the default (ranks only when not the whole world), seeds
// in plain decimal. ParsePlanSpec(FormatPlanSpec(s)) gives back s (but for `text`).
std::string FormatPlanSpec(const PlanSpec& spec);
// The decimal digits of `seed` ("-" first when negative), whatever digits it was written with.
std::string FormatSeedInteger(const SeedInteger& seed);
// The job's plan that every node of a torch-distributed job shares: FormatPlanSpec of the spec
// with all ranks of the world (other kinds: FormatPlanSpec).
std::string FormatJobPlanSpec(const PlanSpec& spec);

// Parses a decimal integer ("-12", "340282366920938463463374607431768211455"); no sign other than
// a leading '-', no spaces, no hex. Errors name `what`.
Result<SeedInteger> ParseSeedInteger(std::string_view text, std::string_view what);
// Parses a non-negative decimal integer no larger than `max`.
Result<uint64_t> ParseDecimalU64(std::string_view text, uint64_t max, std::string_view what);

}  // namespace clairfs
