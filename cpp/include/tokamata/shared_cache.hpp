// A bounded map from structural keys to immutable values shared by every constraint over one
// vocabulary (token rows, boundary-event node lists).
//
// Invariants:
// - At most max_entries entries. A full cache makes room with second-chance (CLOCK) eviction:
//   it drops an entry that nobody else holds (the cache owns the value's only reference) and
//   that was not found since the hand last passed it; when every entry is held or recently
//   used, the new value is not added.
// - Values are immutable and keys are structural, so eviction changes what is shared, never a
//   result; holders keep their values alive.
// - Every method takes the cache's mutex: safe from any thread.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace tokamata {

template <class Value>
class SharedCache {
 public:
  explicit SharedCache(size_t max_entries) : max_entries_(max_entries) {}

  std::shared_ptr<Value> find(int64_t key) const {
    std::lock_guard<std::mutex> guard(mu_);
    auto it = entries_.find(key);
    if (it == entries_.end()) return nullptr;
    it->second.used = true;
    return it->second.value;
  }

  void insert(int64_t key, std::shared_ptr<Value> value) {
    std::lock_guard<std::mutex> guard(mu_);
    if (max_entries_ == 0 || entries_.count(key)) return;
    if (entries_.size() < max_entries_) {
      entries_.emplace(key, Entry{std::move(value), false});
      ring_.push_back(key);
      return;
    }
    // two turns of the hand: the first clears `used` bits, the second finds a free entry
    for (size_t looked = 0; looked < 2 * ring_.size(); ++looked) {
      const size_t slot = hand_;
      hand_ = (hand_ + 1) % ring_.size();
      auto it = entries_.find(ring_[slot]);
      if (it->second.used) {
        it->second.used = false;
      } else if (it->second.value.use_count() == 1) {
        entries_.erase(it);
        entries_.emplace(key, Entry{std::move(value), false});
        ring_[slot] = key;
        ++evictions_;
        return;
      }
    }
  }

  size_t size() const {
    std::lock_guard<std::mutex> guard(mu_);
    return entries_.size();
  }

  // entries dropped to make room so far
  size_t evictions() const {
    std::lock_guard<std::mutex> guard(mu_);
    return evictions_;
  }

 private:
  struct Entry {
    std::shared_ptr<Value> value;
    bool used;  // found since the hand last passed it
  };
  size_t max_entries_;
  mutable std::mutex mu_;
  mutable std::unordered_map<int64_t, Entry> entries_;
  std::vector<int64_t> ring_;  // the keys, in the slots the hand visits in turn
  size_t hand_ = 0;
  size_t evictions_ = 0;
};

}  // namespace tokamata
