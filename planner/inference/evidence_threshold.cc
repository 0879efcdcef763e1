// The evidence threshold K and its false-adoption bound (see evidence_threshold.h).
#include "planner/inference/evidence_threshold.h"

#include <algorithm>
#include <cmath>

namespace clairfs {

double FalseMatchTail(uint32_t min_evidence, double match_probability, double mismatch_fraction) {
  if (match_probability >= 1) return 1;
  if (match_probability <= 0) return 0;
  const double log_q = std::log(match_probability);
  double sum = 0;
  double previous = HUGE_VAL;
  for (uint64_t total = min_evidence; total < uint64_t{min_evidence} + 100000; ++total) {
    uint64_t allowed = static_cast<uint64_t>(std::floor(mismatch_fraction * total));
    uint64_t matches = std::max<uint64_t>(min_evidence, total - std::min(allowed, total));
    double log_term = std::lgamma(total + 1.0) - std::lgamma(matches + 1.0) -
                      std::lgamma(total - matches + 1.0) + matches * log_q;
    double term = std::exp(log_term);
    sum += term;
    // Terms fall geometrically once past the peak; stop when they no longer matter.
    if (term < previous && term < sum * 1e-12) break;
    previous = term;
    if (sum >= 1) return 1;
  }
  return std::min(sum, 1.0);
}

EvidenceThreshold DeriveEvidenceThreshold(uint64_t num_samples, double candidates, uint32_t window,
                                          uint64_t tracked, double mismatch_fraction,
                                          double target) {
  EvidenceThreshold out;
  double free_positions = static_cast<double>(num_samples) - static_cast<double>(tracked);
  if (free_positions <= 0) return out;
  out.match_probability = std::min(1.0, (2.0 * window + 1) / free_positions);
  if (out.match_probability >= 1) return out;
  for (uint32_t k = 1; k <= kMaxEvidence; ++k) {
    double bound = candidates * FalseMatchTail(k, out.match_probability, mismatch_fraction);
    if (bound <= target) {
      out.distinguishable = true;
      out.min_evidence = k;
      out.bound = bound;
      return out;
    }
  }
  return out;
}

}  // namespace clairfs
