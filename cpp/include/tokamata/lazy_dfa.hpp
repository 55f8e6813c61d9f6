// A constraint's byte DFA, expanded lazily through a callback, with its transition table stored
// compactly: each state's row is a shape (byte class -> slot, shared by every state with the
// same partition of the classes) and one target per slot.
//
// Invariants:
// - Entries are kDead (-1), kUnknown (-2, not computed yet) or a state; an unknown entry is
//   computed through the expander, which fills a run of classes at once. An entry changes at
//   most once (kUnknown -> value), before any token row that depends on it is published.
// - Every class of one slot has the same target: a slot is one of the state's own byte
//   intervals (the expander gives them by set_shape before the state's first entries; a state
//   whose expander sets entries without a shape gets the dense shape, one slot per class).
//   Shapes are interned per DFA, so equal partitions are stored once.
// - Storage never moves: state records (accepting flag, key, row) live in fixed-size blocks,
//   rows, targets and shapes in chunks of the DFA's own arena. A state's row is published once
//   (release), replacing the DFA's all-unknown row; rows never change shape after that.
// - Readers take a DfaRow (a view of a state's row) and read entries lock-free with acquire, so
//   a reader that sees a target also sees it added. A view taken before the state's row was
//   published reads kUnknown everywhere; its holder asks step_class, which reads the row anew.
// - Writers (add_states, set_shape, set_entries, key) are serialized by the caller: the
//   expander's lock, or the RegexCore's compute mutex.
// - memory_bytes() counts the blocks, the arena and the shape index: what the table holds.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace tokamata {

constexpr int32_t kDead = -1;
constexpr int32_t kUnknown = -2;
constexpr int64_t kKeyLater = INT64_MIN;

// A limit of tokamata.Limits crossed in C++: raised in Python as tokamata.LimitExceeded(name,
// value, bound) by the one exception translator of the bindings, wherever it surfaces.
class LimitError : public std::runtime_error {
 public:
  LimitError(std::string name, double value, double bound)
      : std::runtime_error(name + " " + std::to_string(value) + " " + std::to_string(bound)),
        name(std::move(name)), value(value), bound(bound) {}
  std::string name;
  double value;
  double bound;
};

// A view of one state's row: the entry of class `cls` is targets[slots[cls]].
struct DfaRow {
  const uint8_t* slots = nullptr;
  const std::atomic<int32_t>* targets = nullptr;
  int32_t at(int32_t cls) const { return targets[slots[cls]].load(std::memory_order_acquire); }
};

class LazyDfa {
 public:
  // expand(state, cls) must call set_entries(state, first, last, target) with
  // first <= cls <= last (and add_states first for new states; set_shape before the state's
  // first entries, or the state gets the dense shape).
  using Expander = std::function<void(int32_t state, int32_t cls)>;
  using KeyFunction = std::function<int64_t(int32_t state)>;

  LazyDfa(const uint8_t* class_map, int32_t num_classes, int32_t max_states, Expander expand);
  LazyDfa(const LazyDfa&) = delete;
  LazyDfa& operator=(const LazyDfa&) = delete;

  int32_t num_classes() const { return num_classes_; }
  int32_t num_states() const { return num_states_; }
  bool accepting(int32_t state) const { return record(state).accepting != 0; }
  const uint8_t* class_map() const { return class_map_; }

  // Next state, computing the transition first if needed.
  int32_t step(int32_t state, uint8_t byte) { return step_class(state, class_map_[byte]); }
  int32_t step_class(int32_t state, int32_t cls) {
    int32_t next = row(state).at(cls);
    if (next == kUnknown) {
      expand_(state, cls);
      next = row(state).at(cls);
      if (next == kUnknown) throw std::logic_error("expander left a transition unknown");
    }
    return next;
  }
  // Next state without computing anything; kUnknown if not known.
  int32_t peek(int32_t state, uint8_t byte) const { return row(state).at(class_map_[byte]); }
  // The row of `state` as it is now (num_classes entries, some maybe kUnknown).
  DfaRow row(int32_t state) const {
    const Row* r = record(state).row.load(std::memory_order_acquire);
    return DfaRow{r->slots, r->targets};
  }

  void add_states(const uint8_t* accepting, const int64_t* keys, int32_t count);
  // The state's own partition of the classes: slot i holds classes [firsts[i], firsts[i+1])
  // (firsts[0] == 0, increasing, < num_classes). Publishes the state's row (all kUnknown) if it
  // has none yet; a state that has one keeps it (the expander's partition of a state is fixed).
  void set_shape(int32_t state, const int32_t* firsts, int32_t count);
  // Classes first..last go to `target`; they must be whole slots of the state's shape.
  void set_entries(int32_t state, int32_t first, int32_t last, int32_t target);
  // The state's structural key (computed through the key function if it was deferred).
  int64_t key(int32_t state) {
    int64_t& found = record(state).key;
    if (found == kKeyLater) {
      if (!key_function_) throw std::logic_error("a deferred state key without a key function");
      const int64_t computed = key_function_(state);
      if (computed == kKeyLater) throw std::logic_error("the key function deferred a key again");
      found = computed;
    }
    return found;
  }
  void set_key_function(KeyFunction key_function) { key_function_ = std::move(key_function); }
  // Bytes the table holds: state blocks, the arena (rows, targets, shapes), the shape index.
  size_t memory_bytes() const;
  // Distinct shapes (for tests and reports).
  size_t num_shapes() const { return shapes_.size(); }

 private:
  static constexpr int32_t kBlockStates = 64;
  struct Row {
    const uint8_t* slots;              // num_classes slot indices (an interned shape)
    std::atomic<int32_t>* targets;     // one per slot
  };
  struct Record {
    std::atomic<const Row*> row;
    int64_t key;
    uint8_t accepting;
  };
  const Record& record(int32_t state) const { return blocks_[state / kBlockStates][state % kBlockStates]; }
  Record& record(int32_t state) { return blocks_[state / kBlockStates][state % kBlockStates]; }
  void* allocate(size_t bytes);  // from the arena; 8-byte aligned, never moves
  const uint8_t* intern_shape(const std::string& slots);
  void publish(int32_t state, const uint8_t* slots, int32_t num_slots);

  uint8_t class_map_[256];
  int32_t num_classes_;
  int32_t max_states_;
  int32_t num_states_ = 0;
  std::vector<std::unique_ptr<Record[]>> blocks_;  // sized once for max_states
  std::vector<std::unique_ptr<uint64_t[]>> chunks_;  // the arena
  size_t chunk_used_ = 0, chunk_size_ = 0, arena_bytes_ = 0;
  std::unordered_map<std::string, const uint8_t*> shapes_;
  std::vector<uint8_t> zero_slots_;  // the all-unknown row's shape
  std::atomic<int32_t> unknown_target_{kUnknown};
  Row unknown_row_{};
  const uint8_t* dense_shape_ = nullptr;
  Expander expand_;
  KeyFunction key_function_;
};

}  // namespace tokamata
