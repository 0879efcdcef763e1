// CLAIRFS_SIMD_CLONES: builds a hot function twice, for AVX2 and the baseline, and lets the
// loader pick the one the CPU runs (GCC's target_clones, an ifunc).
//
// Only under GCC without TSan: Clang 14 (the fuzz build's compiler) names such clones so that
// other translation units cannot link to them, and under TSan the ifunc's resolver runs before
// the sanitizer's runtime is up (the test binary died at start). Those builds get the baseline.
#pragma once

#if defined(__GNUC__) && !defined(__clang__) && !defined(__SANITIZE_THREAD__)
#define CLAIRFS_SIMD_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define CLAIRFS_SIMD_CLONES
#endif
