// NumPy's SeedSequence and PCG64, i.e. the bit generator behind np.random.default_rng(seed).
//
// SeedSequence(entropy) splits a non-negative integer into 32-bit words, least significant first
// (0 is one word 0), hashes them into a pool of four words and generate_state() derives output
// words from the pool. PCG64 takes generate_state(4, uint64): words 0-1 are the 128-bit initial
// state (word 0 high), words 2-3 the stream (word 2 high), and seeds by pcg's srandom: state = 0,
// inc = (stream << 1) | 1, step, state += initial, step. Each output steps the LCG and applies
// XSL-RR. next32() returns the low half of a 64-bit output and buffers the high half for the next
// call; next64() ignores the buffer.
//
// Any size of seed is supported (the entropy words are passed in by the caller).
// Thread-safety: values with mutable state, one thread at a time. No errors.
#pragma once

#include <cstdint>
#include <vector>

namespace clairfs {

// numpy.random.SeedSequence(entropy) with no spawn key and the default pool size of 4.
class SeedSequence {
 public:
  // `entropy_words`: the seed's 32-bit words, least significant first; an empty vector is
  // treated as the seed 0 (one zero word), as NumPy does.
  explicit SeedSequence(std::vector<uint32_t> entropy_words);
  // generate_state(n_words, uint32).
  std::vector<uint32_t> GenerateState32(uint64_t n_words) const;
  // generate_state(n_words, uint64): pairs of 32-bit words, little-endian.
  std::vector<uint64_t> GenerateState64(uint64_t n_words) const;
  const std::vector<uint32_t>& pool() const { return pool_; }

 private:
  std::vector<uint32_t> pool_;
};

class Pcg64 {
 public:
  // np.random.PCG64(SeedSequence(entropy_words)).
  explicit Pcg64(const std::vector<uint32_t>& entropy_words);
  uint64_t Next64();
  uint32_t Next32();

 private:
  unsigned __int128 state_ = 0;
  unsigned __int128 inc_ = 0;
  bool has_buffered_ = false;
  uint32_t buffered_ = 0;
};

}  // namespace clairfs
