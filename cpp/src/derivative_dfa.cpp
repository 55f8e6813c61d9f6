// See derivative_dfa.hpp for the invariants; mirrors automata/dfa.py's LazyByteDfa.
#include "tokamata/derivative_dfa.hpp"
#include "tokamata/token_slices.hpp"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <string>

namespace tokamata {

namespace {
using Lock = std::lock_guard<std::recursive_mutex>;
using Clock = std::chrono::steady_clock;
}  // namespace

DerivativeDfa::DerivativeDfa(std::shared_ptr<ExprArena> arena, const int32_t* class_starts, int32_t num_classes,
                             int64_t key_base, int32_t max_states, double max_seconds)
    : arena_(std::move(arena)), class_starts_(class_starts, class_starts + num_classes), num_classes_(num_classes),
      key_base_(key_base), max_states_(max_states), max_seconds_(max_seconds) {
  if (num_classes <= 0 || num_classes > 256 || class_starts[0] != 0) throw std::invalid_argument("bad class starts");
  for (int32_t i = 1; i < num_classes; ++i) {
    if (class_starts[i] <= class_starts[i - 1] || class_starts[i] > 255) throw std::invalid_argument("class starts must increase");
  }
  int32_t cls = 0;
  for (int32_t b = 0; b < 256; ++b) {
    while (cls + 1 < num_classes && class_starts_[cls + 1] <= b) ++cls;
    class_map_[b] = static_cast<uint8_t>(cls);
  }
}

int32_t DerivativeDfa::num_states() {
  Lock lock(arena_->mutex());
  return static_cast<int32_t>(nodes_.size());
}

int32_t DerivativeDfa::add_state(int32_t node) {
  auto found = index_.find(node);
  if (found != index_.end()) return found->second;
  const int32_t state = static_cast<int32_t>(nodes_.size());
  if (state >= max_states_) {
    throw LimitError("max_dfa_states", static_cast<double>(state + 1), static_cast<double>(max_states_));
  }
  nodes_.push_back(node);
  offsets_.push_back(-1);
  index_.emplace(node, state);
  return state;
}

int32_t DerivativeDfa::intern_state(int32_t node) {
  Lock lock(arena_->mutex());
  if (arena_->check(node) == ExprArena::kNothingId) throw std::invalid_argument("intern_state: NOTHING has no state");
  return add_state(node);
}

int32_t DerivativeDfa::start(const int32_t* nodes, size_t count) {
  Lock lock(arena_->mutex());
  for (size_t i = 0; i < count; ++i) arena_->check(nodes[i]);
  const int32_t node = arena_->alternation(nodes, count);
  return node == ExprArena::kNothingId ? kDead : add_state(node);
}

void DerivativeDfa::register_states(LazyDfa& dfa) {
  Lock lock(arena_->mutex());
  const int32_t known = dfa.num_states();
  const int32_t have = static_cast<int32_t>(nodes_.size());
  if (have > known) {
    std::vector<uint8_t> flags;
    std::vector<int64_t> keys(static_cast<size_t>(have - known), kKeyLater);
    for (int32_t s = known; s < have; ++s) flags.push_back(arena_->nullable(nodes_[s]) ? 1 : 0);
    dfa.add_states(flags.data(), keys.data(), have - known);
  }
}

int32_t DerivativeDfa::node(int32_t state) {
  Lock lock(arena_->mutex());
  if (state < 0 || static_cast<size_t>(state) >= nodes_.size()) throw std::out_of_range("lexer state out of range");
  return nodes_[state];
}

bool DerivativeDfa::accepting(int32_t state) {
  Lock lock(arena_->mutex());
  return arena_->nullable(node(state));
}

int32_t DerivativeDfa::own(int32_t state, uint8_t* starts, int32_t& count) {
  const int32_t node = nodes_[state];
  const std::vector<uint8_t>& cuts = arena_->cuts(node);
  count = static_cast<int32_t>(cuts.size()) + 1;
  starts[0] = 0;
  std::copy(cuts.begin(), cuts.end(), starts + 1);
  int32_t offset = offsets_[state];
  if (offset < 0) {
    offset = static_cast<int32_t>(targets_.size());
    offsets_[state] = offset;
    targets_.resize(targets_.size() + static_cast<size_t>(count), kUnknown);
    if (arena_->inside_character(node)) {  // only continuation bytes can follow
      for (int32_t i = 0; i < count; ++i) {
        const int32_t start = starts[i];
        const int32_t end = i + 1 < count ? starts[i + 1] : 256;
        if (end <= 0x80 || start >= 0xC0) targets_[static_cast<size_t>(offset + i)] = kDead;
      }
    }
  }
  return offset;
}

int32_t DerivativeDfa::target(int32_t state, int32_t offset, int32_t interval, int32_t start_byte) {
  int32_t found = targets_[static_cast<size_t>(offset + interval)];
  if (found != kUnknown) return found;
  const int32_t node = nodes_[state];
  const ExprArena::ByteMask& first = arena_->first_bytes(node);
  if (!((first[start_byte >> 6] >> (start_byte & 63)) & 1)) {
    found = kDead;
  } else {
    const int32_t next = arena_->derivative(node, start_byte);
    found = next == ExprArena::kNothingId ? kDead : add_state(next);
  }
  targets_[static_cast<size_t>(offset + interval)] = found;
  return found;
}

void DerivativeDfa::charge(double seconds) {
  elapsed_ += seconds;
  if (elapsed_ > max_seconds_) throw LimitError("max_compile_seconds", elapsed_, max_seconds_);
}

void DerivativeDfa::expand(LazyDfa& dfa, int32_t state, int32_t cls) {
  Lock lock(arena_->mutex());
  const auto started = Clock::now();
  if (state < 0 || static_cast<size_t>(state) >= nodes_.size()) throw std::out_of_range("expand: bad state");
  uint8_t starts[256];
  int32_t count = 0;
  const int32_t offset = own(state, starts, count);
  {  // the state's own intervals are the slots of its row (published once)
    int32_t firsts[256];
    for (int32_t i = 0; i < count; ++i) firsts[i] = class_map_[starts[i]];
    dfa.set_shape(state, firsts, count);
  }
  const int32_t start_byte = class_starts_[cls];
  const int32_t requested = static_cast<int32_t>(std::upper_bound(starts, starts + count, start_byte) - starts) - 1;
  int32_t computed;
  if (start_byte < 0x80) {
    computed = static_cast<int32_t>(std::lower_bound(starts, starts + count, 0x80) - starts);
    for (int32_t i = 0; i < computed; ++i) target(state, offset, i, starts[i]);
    if (requested >= computed) target(state, offset, requested, starts[requested]);
  } else if (arena_->inside_character(nodes_[state])) {
    computed = 0;  // mid-character: only the continuation byte the walk met
    target(state, offset, requested, starts[requested]);
  } else {
    computed = count;
    for (int32_t i = 0; i < count; ++i) target(state, offset, i, starts[i]);
  }
  register_states(dfa);
  for (int32_t i = 0; i < count; ++i) {
    if (i >= computed && i != requested) continue;
    const int32_t first = class_map_[starts[i]];
    const int32_t last = i + 1 < count ? class_map_[starts[i + 1]] - 1 : num_classes_ - 1;
    dfa.set_entries(state, first, last, targets_[static_cast<size_t>(offset + i)]);
  }
  charge(std::chrono::duration<double>(Clock::now() - started).count());
}

int32_t DerivativeDfa::step(int32_t state, int32_t byte) {
  Lock lock(arena_->mutex());
  if (state < 0 || static_cast<size_t>(state) >= nodes_.size()) throw std::out_of_range("step: bad state");
  if (byte < 0 || byte > 255) throw std::out_of_range("step: bad byte");
  uint8_t starts[256];
  int32_t count = 0;
  const int32_t offset = own(state, starts, count);
  const int32_t interval = static_cast<int32_t>(std::upper_bound(starts, starts + count, byte) - starts) - 1;
  if (targets_[static_cast<size_t>(offset + interval)] != kUnknown) return targets_[static_cast<size_t>(offset + interval)];
  const auto started = Clock::now();
  const int32_t next = target(state, offset, interval, starts[interval]);
  charge(std::chrono::duration<double>(Clock::now() - started).count());
  return next;
}

int64_t DerivativeDfa::key(int32_t state) {
  Lock lock(arena_->mutex());
  return key_base_ + arena_->untagged(node(state));
}

std::vector<int32_t> DerivativeDfa::ends(int32_t state) {
  Lock lock(arena_->mutex());
  return arena_->end_marks(node(state));
}

int32_t DerivativeDfa::text_depth(int32_t state) {
  Lock lock(arena_->mutex());
  return arena_->text_depth(node(state));
}

std::vector<uint8_t> DerivativeDfa::accepting_from(int32_t first) {
  Lock lock(arena_->mutex());
  std::vector<uint8_t> flags;
  for (size_t s = static_cast<size_t>(std::max(first, 0)); s < nodes_.size(); ++s) {
    flags.push_back(arena_->nullable(nodes_[s]) ? 1 : 0);
  }
  return flags;
}

std::shared_ptr<RegexCore> regex_core_over(std::shared_ptr<const TokenTrie> trie, std::shared_ptr<SharedRowCache> shared,
                                           std::shared_ptr<DerivativeDfa> lexer, std::vector<int32_t> eos_ids,
                                           int32_t max_states, std::shared_ptr<const TokenSlices> slices) {
  if (slices && &slices->full() != trie.get()) throw std::invalid_argument("slices were built over another trie");
  auto slot = std::make_shared<LazyDfa*>(nullptr);
  LazyDfa::Expander expander = [lexer, slot](int32_t s, int32_t c) { lexer->expand(**slot, s, c); };
  auto dfa = std::make_unique<LazyDfa>(lexer->class_map(), lexer->num_classes(), max_states, expander);
  *slot = dfa.get();
  dfa->set_key_function([lexer](int32_t s) { return lexer->key(s); });
  const std::vector<uint8_t> flags = lexer->accepting_from(0);
  const std::vector<int64_t> keys(flags.size(), kKeyLater);
  dfa->add_states(flags.data(), keys.data(), static_cast<int32_t>(flags.size()));
  std::function<int32_t(int32_t)> text_depth = [lexer](int32_t s) { return lexer->text_depth(s); };
  return std::make_shared<RegexCore>(std::move(trie), std::move(shared), std::move(dfa), std::move(eos_ids),
                                     std::move(slices), std::move(text_depth));
}

}  // namespace tokamata
