// FlatU64Map: a memo table keyed by 64-bit keys (two int32 ids packed), for the canonical
// filter, which asks its tables once or more per candidate token of a row (std::unordered_map
// spent a node per entry: a cache miss per lookup, a rehash per doubling, a free per entry).
//
// Invariants: one flat array (open addressing, linear probing) whose capacity is zero or a
// power of two, at most half full (it doubles past that); an inserted key keeps the value it
// was first given (emplace, as the tables it replaces); clear() frees the array; the key
// kEmpty (~0: two ids of -1 packed) is never stored (find answers nullptr, emplace ignores
// it). Not thread-safe (its owner's mutex guards it).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace tokamata {

template <class V>
class FlatU64Map {
 public:
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  const V* find(uint64_t key) const {
    if (slots_.empty() || key == kEmpty) return nullptr;
    for (size_t i = index(key);; i = (i + 1) & (slots_.size() - 1)) {
      const Slot& s = slots_[i];
      if (s.key == key) return &s.value;
      if (s.key == kEmpty) return nullptr;
    }
  }

  // Stores value under key unless the key is there already (then nothing changes).
  void emplace(uint64_t key, V value) {
    if (key == kEmpty) return;
    if (2 * (size_ + 1) > slots_.size()) grow();
    for (size_t i = index(key);; i = (i + 1) & (slots_.size() - 1)) {
      Slot& s = slots_[i];
      if (s.key == key) return;
      if (s.key == kEmpty) {
        s.key = key;
        s.value = value;
        ++size_;
        return;
      }
    }
  }

  size_t size() const { return size_; }

  void clear() {
    std::vector<Slot>().swap(slots_);
    size_ = 0;
    shift_ = 64;
  }

 private:
  struct Slot {
    uint64_t key = kEmpty;
    V value{};
  };
  size_t index(uint64_t key) const {
    key ^= key >> 31;
    key *= 0x7FB5D329728EA185ull;
    key ^= key >> 27;
    return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    const size_t capacity = old.empty() ? 64 : 2 * old.size();
    slots_.assign(capacity, Slot{});
    shift_ = 64;
    for (size_t c = capacity; c > 1; c >>= 1) --shift_;
    for (const Slot& s : old) {
      if (s.key == kEmpty) continue;
      size_t i = index(s.key);
      while (slots_[i].key != kEmpty) i = (i + 1) & (capacity - 1);
      slots_[i] = s;
    }
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
  int32_t shift_ = 64;
};

}  // namespace tokamata
