// torch.randperm reproductions (see torch_randperm.h).
#include "planner/torch_randperm.h"

#include <utility>

namespace clairfs {
namespace {

template <typename T>
void LegacyShuffle(std::vector<T>& r, TorchGenerator& generator) {
  const uint64_t n = r.size();
  if (n < 2) return;
  for (uint64_t i = 0; i < n - 1; ++i) {
    uint64_t z = generator.Random() % (n - i);
    std::swap(r[i], r[i + z]);
  }
}

template <typename T>
void InsideOutFill(std::vector<T>& r, uint64_t n, TorchGenerator& generator) {
  r.resize(n);
  for (uint64_t i = 0; i < n; ++i) {
    uint64_t z = generator.Random64() % (i + 1);
    r[i] = r[z];
    r[z] = static_cast<T>(i);
  }
}

}  // namespace

RandpermAlgorithm RandpermAlgorithmFor(uint64_t n, bool modern_torch) {
  return modern_torch && n >= kTorchInsideOutThreshold ? RandpermAlgorithm::kInsideOut
                                                       : RandpermAlgorithm::kLegacy;
}

IndexVector Randperm(uint64_t n, TorchGenerator& generator, RandpermAlgorithm algorithm) {
  if (algorithm == RandpermAlgorithm::kLegacy) {
    IndexVector r = IndexVector::Iota(n);
    if (r.wide()) {
      LegacyShuffle(r.wide_values(), generator);
    } else {
      LegacyShuffle(r.narrow(), generator);
    }
    return r;
  }
  IndexVector r = IndexVector::ForMaxValue(n == 0 ? 0 : n - 1);
  if (r.wide()) {
    InsideOutFill(r.wide_values(), n, generator);
  } else {
    InsideOutFill(r.narrow(), n, generator);
  }
  return r;
}

void SkipRandperm(uint64_t n, TorchGenerator& generator, RandpermAlgorithm algorithm) {
  if (algorithm == RandpermAlgorithm::kLegacy) {
    if (n >= 2) generator.Discard(n - 1);
  } else {
    generator.Discard(2 * n);
  }
}

}  // namespace clairfs
