// SeedSequence and PCG64 (see pcg64.h).
#include "planner/pcg64.h"

#include <cstddef>
#include <utility>

namespace clairfs {
namespace {

constexpr int kPoolSize = 4;
constexpr uint32_t kInitA = 0x43b0d7e5u;
constexpr uint32_t kMultA = 0x931e8875u;
constexpr uint32_t kInitB = 0x8b51f9ddu;
constexpr uint32_t kMultB = 0x58f38dedu;
constexpr uint32_t kMixMultL = 0xca01f9ddu;
constexpr uint32_t kMixMultR = 0x4973f715u;
constexpr int kXShift = 16;

uint32_t HashMix(uint32_t value, uint32_t* hash_const) {
  value ^= *hash_const;
  *hash_const *= kMultA;
  value *= *hash_const;
  value ^= value >> kXShift;
  return value;
}

uint32_t Mix(uint32_t x, uint32_t y) {
  uint32_t result = kMixMultL * x - kMixMultR * y;
  result ^= result >> kXShift;
  return result;
}

constexpr unsigned __int128 Make128(uint64_t high, uint64_t low) {
  return (static_cast<unsigned __int128>(high) << 64) | low;
}

constexpr unsigned __int128 kPcgMultiplier = Make128(0x2360ed051fc65da4ull, 0x4385df649fccf645ull);

}  // namespace

SeedSequence::SeedSequence(std::vector<uint32_t> entropy) : pool_(kPoolSize, 0) {
  if (entropy.empty()) entropy.push_back(0);
  uint32_t hash_const = kInitA;
  for (size_t i = 0; i < pool_.size(); ++i) {
    pool_[i] = HashMix(i < entropy.size() ? entropy[i] : 0u, &hash_const);
  }
  for (size_t src = 0; src < pool_.size(); ++src) {
    for (size_t dst = 0; dst < pool_.size(); ++dst) {
      if (src != dst) pool_[dst] = Mix(pool_[dst], HashMix(pool_[src], &hash_const));
    }
  }
  for (size_t src = pool_.size(); src < entropy.size(); ++src) {
    for (size_t dst = 0; dst < pool_.size(); ++dst) {
      pool_[dst] = Mix(pool_[dst], HashMix(entropy[src], &hash_const));
    }
  }
}

std::vector<uint32_t> SeedSequence::GenerateState32(uint64_t n_words) const {
  std::vector<uint32_t> state(n_words);
  uint32_t hash_const = kInitB;
  for (uint64_t i = 0; i < n_words; ++i) {
    uint32_t value = pool_[i % pool_.size()];
    value ^= hash_const;
    hash_const *= kMultB;
    value *= hash_const;
    value ^= value >> kXShift;
    state[i] = value;
  }
  return state;
}

std::vector<uint64_t> SeedSequence::GenerateState64(uint64_t n_words) const {
  std::vector<uint32_t> words = GenerateState32(2 * n_words);
  std::vector<uint64_t> state(n_words);
  for (uint64_t i = 0; i < n_words; ++i) {
    state[i] = (static_cast<uint64_t>(words[2 * i + 1]) << 32) | words[2 * i];
  }
  return state;
}

Pcg64::Pcg64(const std::vector<uint32_t>& entropy_words) {
  std::vector<uint64_t> words = SeedSequence(entropy_words).GenerateState64(4);
  unsigned __int128 initial_state = Make128(words[0], words[1]);
  unsigned __int128 stream = Make128(words[2], words[3]);
  state_ = 0;
  inc_ = (stream << 1) | 1u;
  state_ = state_ * kPcgMultiplier + inc_;
  state_ += initial_state;
  state_ = state_ * kPcgMultiplier + inc_;
}

uint64_t Pcg64::Next64() {
  state_ = state_ * kPcgMultiplier + inc_;
  uint64_t xored = static_cast<uint64_t>(state_ >> 64) ^ static_cast<uint64_t>(state_);
  unsigned rotation = static_cast<unsigned>(state_ >> 122);
  return (xored >> rotation) | (xored << ((64u - rotation) & 63u));
}

uint32_t Pcg64::Next32() {
  if (has_buffered_) {
    has_buffered_ = false;
    return buffered_;
  }
  uint64_t next = Next64();
  has_buffered_ = true;
  buffered_ = static_cast<uint32_t>(next >> 32);
  return static_cast<uint32_t>(next & 0xffffffffu);
}

}  // namespace clairfs
