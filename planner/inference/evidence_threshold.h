// The evidence a plan candidate needs before it may be adopted (docs/PLANNER.md, "Plan
// inference").
//
// Model: under a wrong candidate, an observed sample's position is uniform over the n - t
// positions not yet known (a wrong seed's permutation is unrelated to the true one). After its
// anchor, an observation is evidence for the candidate only if it sits at the reader's rank and
// within `window` steps of the reader's furthest step so far: 2 * window + 1 positions, so it
// matches by chance with probability q = (2w + 1) / (n - t). A candidate is adopted when it has
// at least K matches and at most floor(f * N) mismatches among its N decided observations, so a
// wrong one is adopted with probability at most
//   sum over N >= K of  C(N, m_N) * q^m_N,   m_N = max(K, N - floor(f * N)),
// and over all `candidates` at most `candidates` times that (a union bound). K is the smallest
// value that brings this below the target (1e-9); when none up to kMaxEvidence does, the dataset
// is too small to tell the candidates apart.
//
// Thread-safety: pure functions. No errors.
#pragma once

#include <cstdint>

namespace clairfs {

constexpr uint32_t kMaxEvidence = 1000;

struct EvidenceThreshold {
  bool distinguishable = false;  // false: no K <= kMaxEvidence reaches the target
  uint32_t min_evidence = 0;     // K
  double match_probability = 1;  // q
  double bound = 1;              // candidates * tail(K): the false-adoption bound at K
};

// The union-bound tail above for one wrong candidate, K = min_evidence.
double FalseMatchTail(uint32_t min_evidence, double match_probability, double mismatch_fraction);

// K for a dataset of `num_samples`, `candidates` hypotheses, a window of `window` steps,
// `tracked` observations (t above), the allowed mismatch fraction f and the target.
EvidenceThreshold DeriveEvidenceThreshold(uint64_t num_samples, double candidates, uint32_t window,
                                          uint64_t tracked, double mismatch_fraction,
                                          double target);

}  // namespace clairfs
