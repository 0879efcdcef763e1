// FileTable: a hash table from a file number (uint32, below UINT32_MAX) to a small value, for
// the per-node copy tables of the cluster simulator, where a node-based std::unordered_map spent
// a third of a run in cache misses. Open addressing with linear probing in two flat arrays, a
// power-of-two size kept at most half full, deletion by backward shift (no tombstones).
//
// Pointers from Find are valid until the next Insert or Erase. Thread-safety: none.
#pragma once

#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

namespace clairfs {

template <typename T>
class FileTable {
 public:
  FileTable() { Resize(16); }

  size_t size() const { return size_; }
  bool Contains(uint32_t file) const { return keys_[SlotOf(file)] == file; }
  T* Find(uint32_t file) {
    const size_t slot = SlotOf(file);
    return keys_[slot] == file ? &values_[slot] : nullptr;
  }
  // `file` must not be in the table.
  void Insert(uint32_t file, T value) {
    if (2 * (size_ + 1) > keys_.size()) Resize(2 * keys_.size());
    const size_t slot = SlotOf(file);
    keys_[slot] = file;
    values_[slot] = std::move(value);
    ++size_;
  }
  // True if `file` was there.
  bool Erase(uint32_t file) {
    size_t hole = SlotOf(file);
    if (keys_[hole] != file) return false;
    const size_t mask = keys_.size() - 1;
    // Backward shift: move later entries of the probe run into the hole unless their home slot
    // lies cyclically after the hole and at or before their own slot.
    for (size_t next = (hole + 1) & mask; keys_[next] != kEmpty; next = (next + 1) & mask) {
      const size_t home = HomeOf(keys_[next]);
      const bool stays =
          hole < next ? (home > hole && home <= next) : (home > hole || home <= next);
      if (stays) continue;
      keys_[hole] = keys_[next];
      values_[hole] = std::move(values_[next]);
      hole = next;
    }
    keys_[hole] = kEmpty;
    --size_;
    return true;
  }

 private:
  static constexpr uint32_t kEmpty = UINT32_MAX;

  size_t HomeOf(uint32_t file) const {
    return static_cast<size_t>((uint64_t{file} * 0x9E3779B97F4A7C15ULL) >> shift_);
  }
  // The slot holding `file`, else the empty slot where it would go.
  size_t SlotOf(uint32_t file) const {
    const size_t mask = keys_.size() - 1;
    size_t slot = HomeOf(file);
    while (keys_[slot] != kEmpty && keys_[slot] != file) slot = (slot + 1) & mask;
    return slot;
  }
  void Resize(size_t slots) {
    std::vector<uint32_t> old_keys(slots, kEmpty);
    std::vector<T> old_values(slots);
    old_keys.swap(keys_);
    old_values.swap(values_);
    shift_ = 64;
    for (size_t s = slots; s > 1; s >>= 1) --shift_;
    size_ = 0;
    for (size_t i = 0; i < old_keys.size(); ++i) {
      if (old_keys[i] != kEmpty) Insert(old_keys[i], std::move(old_values[i]));
    }
  }

  std::vector<uint32_t> keys_;
  std::vector<T> values_;
  size_t size_ = 0;
  int shift_ = 60;  // 64 - log2(slots)
};

}  // namespace clairfs
