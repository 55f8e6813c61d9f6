// The trie walk and the per-state row cache; see token_row.hpp.
#include "tokamata/token_row.hpp"

#include "tokamata/token_slices.hpp"

#include <algorithm>
#include <cstring>

namespace tokamata {

void walk_trie(const TokenTrie& trie, LazyDfa& dfa, int32_t state, TokenRow& row,
               std::vector<std::pair<uint32_t, int32_t>>* accepting_nodes, const uint32_t* node_map,
               uint32_t root) {
  // Seed 001's non-recursive walk. The stack holds the state and DFA row of each open trie
  // level; a transition is computed only when the walk takes it.
  const TrieNode* nodes = trie.nodes().data();
  // (below a root, the last node's pops may take `top` under 0: the loop ends there)
  const size_t n = root + nodes[root].subtree_size;
  const int32_t* token_ids = trie.token_ids().data();
  const uint8_t* class_map = dfa.class_map();
  uint32_t* bits = row.words();
  const size_t depth = static_cast<size_t>(trie.max_depth()) + 2;
  std::vector<DfaRow> rows(depth);
  std::vector<int32_t> states(depth);
  int32_t top = 0;
  states[0] = state;
  rows[0] = dfa.row(state);
  size_t p = root + 1;
  int32_t allowed = 0;
  while (p < n) {
    const TrieNode& node = nodes[p];
    const int32_t cls = class_map[node.byte];
    int32_t next = rows[top].at(cls);
    if (next == kUnknown) {
      next = dfa.step_class(states[top], cls);
      rows[top] = dfa.row(states[top]);  // the row may have been published by that expansion
    }
    if (next >= 0) {
      for (int32_t k = 0; k < node.token_count; ++k) {
        const int32_t t = token_ids[node.token_begin + k];
        bits[t >> 5] |= 1u << (t & 31);
        ++allowed;
      }
      if (node.subtree_size > 1) {
        if (accepting_nodes && dfa.accepting(next)) {
          accepting_nodes->emplace_back(node_map ? node_map[p] : static_cast<uint32_t>(p), next);
        }
        ++top;
        states[top] = next;
        rows[top] = dfa.row(next);
      } else {
        top -= node.num_parents - 1;
      }
      p += 1;
    } else {
      p += node.subtree_size;
      top -= node.num_parents - 1;
    }
  }
  row.num_allowed += allowed;
}

RegexCore::RegexCore(std::shared_ptr<const TokenTrie> trie, std::shared_ptr<SharedRowCache> shared,
                     std::unique_ptr<LazyDfa> dfa, std::vector<int32_t> eos_ids,
                     std::shared_ptr<const TokenSlices> slices, std::function<int32_t(int32_t)> text_depth)
    : trie_(std::move(trie)), shared_(std::move(shared)), dfa_(std::move(dfa)), eos_ids_(std::move(eos_ids)),
      slices_(std::move(slices)), text_depth_(std::move(text_depth)),
      row_bases_(slices_ ? RowBases(slices_->bases().rbegin(), slices_->bases().rend()) : RowBases()) {
  if (slices_ && &slices_->full() != trie_.get()) throw std::invalid_argument("slices of another trie");
  for (int32_t e : eos_ids_) {
    if (e < 0 || e >= trie_->vocab_size()) throw std::invalid_argument("EOS id out of range");
  }
}

bool RegexCore::is_eos(int32_t token) const {
  return std::find(eos_ids_.begin(), eos_ids_.end(), token) != eos_ids_.end();
}

const TokenRow* RegexCore::cached_row(int32_t state) const {
  std::lock_guard<std::mutex> guard(cache_mu_);
  auto it = rows_.find(state);
  return it == rows_.end() ? nullptr : it->second.get();
}

std::shared_ptr<const TokenRow> RegexCore::cached_shared_row(int32_t state) const {
  std::lock_guard<std::mutex> guard(cache_mu_);
  auto it = rows_.find(state);
  return it == rows_.end() ? nullptr : it->second;
}

const TokenRow* RegexCore::compute_row(int32_t state) {
  std::lock_guard<std::mutex> compute_guard(compute_mu_);
  if (const TokenRow* row = cached_row(state)) return row;
  const int64_t key = dfa_->key(state);
  std::shared_ptr<const TokenRow> row = shared_ ? shared_->find(key) : nullptr;
  if (!row) {
    auto fresh = std::make_shared<TokenRow>(static_cast<size_t>(num_words()));
    if (slices_) {
      walk_sliced(*slices_, *dfa_, state, *fresh, nullptr, text_depth());
    } else {
      walk_trie(*trie_, *dfa_, state, *fresh);
    }
    fresh->accepting = dfa_->accepting(state);
    row = row_bases_.seal(std::move(fresh));
    if (shared_) shared_->insert(key, row);
  }
  const TokenRow* published = row.get();
  std::lock_guard<std::mutex> guard(cache_mu_);
  rows_.emplace(state, std::move(row));
  return published;
}

std::shared_ptr<const TokenRow> RegexCore::shared_row(int32_t state) {
  compute_row(state);
  std::lock_guard<std::mutex> guard(cache_mu_);
  return rows_.at(state);
}

const TokenRow* RegexCore::publish_row(int32_t state, std::shared_ptr<const TokenRow> row) {
  if (shared_) shared_->insert(dfa_->key(state), row);
  std::lock_guard<std::mutex> guard(cache_mu_);
  return rows_.emplace(state, std::move(row)).first->second.get();
}

int32_t RegexCore::advance_expanding(int32_t state, int32_t token) {
  std::lock_guard<std::mutex> compute_guard(compute_mu_);
  const uint8_t* data = trie_->token_data(token);
  const int64_t len = trie_->token_length(token);
  for (int64_t i = 0; i < len; ++i) {
    state = dfa_->step(state, data[i]);
    if (state < 0) throw std::logic_error("advance: token not allowed by the DFA");
  }
  return state;
}

int32_t RegexCore::advance(int32_t state, int32_t token) const {
  const uint8_t* data = trie_->token_data(token);
  const int64_t len = trie_->token_length(token);
  for (int64_t i = 0; i < len; ++i) {
    state = dfa_->peek(state, data[i]);
    if (state == kUnknown) return kUnknown;
    if (state < 0) throw std::logic_error("advance: token not allowed by the DFA");
  }
  return state;
}

void RegexCore::register_states(int32_t known, const uint8_t* accepting, const int64_t* keys, int32_t count) {
  std::lock_guard<std::mutex> compute_guard(compute_mu_);
  const int32_t have = dfa_->num_states();
  if (known > have) throw std::logic_error("register_states: states missing before index known");
  const int32_t skip = have - known;
  if (skip < count) dfa_->add_states(accepting + skip, keys + skip, count - skip);
}

size_t RegexCore::cached_row_bytes() const {
  std::lock_guard<std::mutex> guard(cache_mu_);
  size_t total = 0;
  for (const auto& entry : rows_) total += entry.second->memory_bytes();
  return total;
}

size_t RegexCore::num_cached_rows() const {
  std::lock_guard<std::mutex> guard(cache_mu_);
  return rows_.size();
}

}  // namespace tokamata
