// IndexVector (see index_vector.h).
#include "planner/index_vector.h"

#include <numeric>

namespace clairfs {

IndexVector IndexVector::ForMaxValue(uint64_t max_value) {
  IndexVector v;
  v.wide_ = max_value > UINT32_MAX;
  return v;
}

IndexVector IndexVector::Iota(uint64_t size) {
  IndexVector v = ForMaxValue(size == 0 ? 0 : size - 1);
  if (v.wide_) {
    v.wide_values_.resize(size);
    std::iota(v.wide_values_.begin(), v.wide_values_.end(), uint64_t{0});
  } else {
    v.narrow_values_.resize(size);
    std::iota(v.narrow_values_.begin(), v.narrow_values_.end(), uint32_t{0});
  }
  return v;
}

void IndexVector::push_back(uint64_t value) {
  if (!wide_ && value > UINT32_MAX) {
    wide_values_.assign(narrow_values_.begin(), narrow_values_.end());
    narrow_values_ = {};
    wide_ = true;
  }
  if (wide_) {
    wide_values_.push_back(value);
  } else {
    narrow_values_.push_back(static_cast<uint32_t>(value));
  }
}

void IndexVector::reserve(uint64_t count) {
  if (wide_) {
    wide_values_.reserve(count);
  } else {
    narrow_values_.reserve(count);
  }
}

uint64_t IndexVector::MemoryBytes() const {
  return wide_ ? wide_values_.capacity() * sizeof(uint64_t)
               : narrow_values_.capacity() * sizeof(uint32_t);
}

std::vector<uint64_t> IndexVector::ToVector() const {
  std::vector<uint64_t> out;
  out.reserve(size());
  for (uint64_t i = 0; i < size(); ++i) out.push_back((*this)[i]);
  return out;
}

}  // namespace clairfs
