// The lazy DFA's compact table; see lazy_dfa.hpp.
#include "tokamata/lazy_dfa.hpp"

#include <algorithm>
#include <cstring>
#include <new>

namespace tokamata {

namespace {
constexpr size_t kChunkBytes = 16 * 1024;
}  // namespace

LazyDfa::LazyDfa(const uint8_t* class_map, int32_t num_classes, int32_t max_states, Expander expand)
    : num_classes_(num_classes), max_states_(max_states), expand_(std::move(expand)) {
  if (num_classes <= 0 || num_classes > 256 || max_states <= 0) throw std::invalid_argument("bad DFA sizes");
  std::memcpy(class_map_, class_map, 256);
  for (int b = 0; b < 256; ++b) {
    if (class_map_[b] >= num_classes) throw std::invalid_argument("class map out of range");
  }
  blocks_.resize(static_cast<size_t>(max_states / kBlockStates + 1));
  zero_slots_.assign(static_cast<size_t>(num_classes), 0);
  unknown_row_ = Row{zero_slots_.data(), &unknown_target_};
}

void* LazyDfa::allocate(size_t bytes) {
  const size_t words = (bytes + 7) / 8;
  if (chunk_used_ + words > chunk_size_) {
    const size_t size = std::max(words, kChunkBytes / 8);
    chunks_.emplace_back(new uint64_t[size]);
    chunk_used_ = 0;
    chunk_size_ = size;
    arena_bytes_ += size * 8;
  }
  void* found = chunks_.back().get() + chunk_used_;
  chunk_used_ += words;
  return found;
}

const uint8_t* LazyDfa::intern_shape(const std::string& slots) {
  auto found = shapes_.find(slots);
  if (found != shapes_.end()) return found->second;
  auto* copy = static_cast<uint8_t*>(allocate(slots.size()));
  std::memcpy(copy, slots.data(), slots.size());
  shapes_.emplace(slots, copy);
  return copy;
}

void LazyDfa::publish(int32_t state, const uint8_t* slots, int32_t num_slots) {
  auto* targets = static_cast<std::atomic<int32_t>*>(allocate(sizeof(std::atomic<int32_t>) * static_cast<size_t>(num_slots)));
  for (int32_t i = 0; i < num_slots; ++i) new (targets + i) std::atomic<int32_t>(kUnknown);
  auto* row = static_cast<Row*>(allocate(sizeof(Row)));
  new (row) Row{slots, targets};
  record(state).row.store(row, std::memory_order_release);
}

void LazyDfa::add_states(const uint8_t* accepting, const int64_t* keys, int32_t count) {
  if (count < 0 || num_states_ + count > max_states_) throw LimitError("max_dfa_states", static_cast<double>(num_states_) + count, max_states_);
  for (int32_t i = 0; i < count; ++i) {
    const int32_t s = num_states_ + i;
    auto& block = blocks_[s / kBlockStates];
    if (!block) {
      block.reset(new Record[kBlockStates]);
      for (int32_t k = 0; k < kBlockStates; ++k) {
        block[k].row.store(&unknown_row_, std::memory_order_relaxed);
        block[k].key = kKeyLater;
        block[k].accepting = 0;
      }
    }
    Record& r = block[s % kBlockStates];
    r.accepting = accepting[i];
    r.key = keys[i];
  }
  std::atomic_thread_fence(std::memory_order_release);
  num_states_ += count;
}

void LazyDfa::set_shape(int32_t state, const int32_t* firsts, int32_t count) {
  if (state < 0 || state >= num_states_) throw std::invalid_argument("set_shape: bad state");
  if (record(state).row.load(std::memory_order_relaxed) != &unknown_row_) return;
  if (count <= 0 || count > num_classes_ || firsts[0] != 0) throw std::invalid_argument("set_shape: bad slots");
  std::string slots(static_cast<size_t>(num_classes_), '\0');
  for (int32_t i = 0; i < count; ++i) {
    const int32_t end = i + 1 < count ? firsts[i + 1] : num_classes_;
    if (end <= firsts[i] || end > num_classes_) throw std::invalid_argument("set_shape: slots must increase");
    for (int32_t c = firsts[i]; c < end; ++c) slots[static_cast<size_t>(c)] = static_cast<char>(i);
  }
  publish(state, intern_shape(slots), count);
}

void LazyDfa::set_entries(int32_t state, int32_t first, int32_t last, int32_t target) {
  if (state < 0 || state >= num_states_) throw std::invalid_argument("set_entries: bad state");
  if (first < 0 || last >= num_classes_ || first > last) throw std::invalid_argument("set_entries: bad classes");
  if (target < kDead || target >= num_states_) throw std::invalid_argument("set_entries: bad target");
  if (record(state).row.load(std::memory_order_relaxed) == &unknown_row_) {
    if (!dense_shape_) {
      std::string identity(static_cast<size_t>(num_classes_), '\0');
      for (int32_t c = 0; c < num_classes_; ++c) identity[static_cast<size_t>(c)] = static_cast<char>(c);
      dense_shape_ = intern_shape(identity);
    }
    publish(state, dense_shape_, num_classes_);
  }
  const Row* row = record(state).row.load(std::memory_order_relaxed);
  const uint8_t* slots = row->slots;
  if ((first > 0 && slots[first - 1] == slots[first]) || (last + 1 < num_classes_ && slots[last + 1] == slots[last])) {
    throw std::logic_error("set_entries: the classes split a slot of the state's shape");
  }
  for (int32_t c = first; c <= last; ++c) {
    if (c == first || slots[c] != slots[c - 1]) row->targets[slots[c]].store(target, std::memory_order_release);
  }
}

size_t LazyDfa::memory_bytes() const {
  size_t blocks = 0;
  for (const auto& block : blocks_) blocks += block ? sizeof(Record) * kBlockStates : 0;
  // a shape index entry: its key (num_classes bytes, heap-allocated past the short-string
  // buffer) and a hash node (~ 64 bytes)
  const size_t shapes = shapes_.size() * (static_cast<size_t>(num_classes_) + 64);
  return sizeof(LazyDfa) + blocks_.capacity() * sizeof(blocks_[0]) + blocks + arena_bytes_ + shapes +
         zero_slots_.capacity();
}

}  // namespace tokamata
