// IndexVector: a sequence of sample indices stored as uint32 when every value fits, else uint64.
//
// A 1.28M-sample epoch costs 5 MB as uint32 instead of 10 MB as uint64; datasets with 2^32 or
// more samples switch to 64-bit storage. The width is chosen once from the largest value the
// vector may hold (normally the dataset size) and never changes.
//
// Thread-safety: a value type; concurrent const access is safe. No errors.
#pragma once

#include <cstdint>
#include <vector>

namespace clairfs {

class IndexVector {
 public:
  IndexVector() = default;
  // An identity sequence 0..size-1, stored narrow if size - 1 fits in 32 bits.
  static IndexVector Iota(uint64_t size);
  // An empty vector able to hold values up to `max_value`.
  static IndexVector ForMaxValue(uint64_t max_value);

  bool wide() const { return wide_; }
  uint64_t size() const { return wide_ ? wide_values_.size() : narrow_values_.size(); }
  bool empty() const { return size() == 0; }
  uint64_t operator[](uint64_t i) const { return wide_ ? wide_values_[i] : narrow_values_[i]; }
  void push_back(uint64_t value);
  void reserve(uint64_t count);
  // Bytes held by the storage (for the memory figures in docs/PLANNER.md).
  uint64_t MemoryBytes() const;

  // Direct access for the shuffles, which are templated on the element type.
  std::vector<uint32_t>& narrow() { return narrow_values_; }
  std::vector<uint64_t>& wide_values() { return wide_values_; }

  std::vector<uint64_t> ToVector() const;

 private:
  bool wide_ = false;
  std::vector<uint32_t> narrow_values_;
  std::vector<uint64_t> wide_values_;
};

}  // namespace clairfs
