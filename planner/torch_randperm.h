// torch.randperm on the CPU generator, and the other draws torch's samplers make from it.
//
// TorchGenerator is `torch.Generator()` (CPU): an Mt19937 seeded by manual_seed with the low 32
// bits of the seed. Randperm reproduces aten's randperm_cpu:
//   - kLegacy (torch 1.13, and every later version for n < 214,748,364): r[i] = i, then for
//     i in 0 .. n-2: z = random() % (n - i); swap(r[i], r[i + z]). Exactly n-1 32-bit draws.
//   - kInsideOut (torch >= 2.6/2.7 for n >= 214,748,364): for i in 0 .. n-1:
//     z = random64() % (i + 1); r[i] = r[z]; r[z] = i. Two 32-bit draws per element.
// RandpermAlgorithmFor() picks between them by torch version; the planner defaults to the
// installed torch 1.13 behaviour (see docs/PLANNER.md).
//
// Thread-safety: TorchGenerator is a value with mutable state, one thread at a time. No errors.
#pragma once

#include <cstdint>

#include "planner/index_vector.h"
#include "planner/mt19937.h"

namespace clairfs {

// Smallest n for which torch >= 2.6/2.7 switches randperm to the inside-out shuffle
// (std::numeric_limits<uint32_t>::max() / 20).
constexpr uint64_t kTorchInsideOutThreshold = 214748364;

enum class RandpermAlgorithm {
  kLegacy,     // swap with random() % (n - i); torch 1.13 (all n) and later torch for small n
  kInsideOut,  // inside-out with random64() % (i + 1); torch >= 2.6/2.7 for large n
};

// The algorithm torch uses for `n`: kLegacy for torch 1.x always; kInsideOut for
// `modern_torch` (>= 2.6/2.7) when n >= kTorchInsideOutThreshold.
RandpermAlgorithm RandpermAlgorithmFor(uint64_t n, bool modern_torch);

class TorchGenerator {
 public:
  explicit TorchGenerator(uint64_t seed) : engine_(seed) {}
  // Generator.manual_seed(seed); negative seeds arrive as two's complement.
  void ManualSeed(uint64_t seed) { engine_.Seed(seed); }
  uint32_t Random() { return engine_.Next32(); }
  uint64_t Random64() { return engine_.Next64(); }
  // torch.empty((), dtype=torch.int64).random_(generator=g): random64() % 2^63.
  int64_t RandomInt64() { return static_cast<int64_t>(Random64() % (uint64_t{1} << 63)); }
  // Skips `count` 32-bit draws (used to replay epochs whose order is not needed).
  void Discard(uint64_t count) { engine_.Discard(count); }

 private:
  Mt19937 engine_;
};

// torch.randperm(n, generator=g) with the given algorithm.
IndexVector Randperm(uint64_t n, TorchGenerator& generator,
                     RandpermAlgorithm algorithm = RandpermAlgorithm::kLegacy);
// Consumes exactly the draws Randperm(n, generator, algorithm) would, without building it.
void SkipRandperm(uint64_t n, TorchGenerator& generator,
                  RandpermAlgorithm algorithm = RandpermAlgorithm::kLegacy);

}  // namespace clairfs
