// Slices of the vocabulary and the sliced trie walk; see token_slices.hpp for the invariants.
#include "tokamata/token_slices.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

namespace tokamata {

namespace {
// The search gives up (keeping the depth proven so far) past this many (A state, DFA state)
// pairs, or past this many transitions it had to compute through the expander: a state whose
// language is bounded (a string of at most 300 characters) would otherwise have its whole
// length explored, where the walk only follows real tokens.
constexpr size_t kMaxPairs = 4096;
constexpr int32_t kMaxExpansions = 48;

uint64_t pack(int32_t a, int32_t s) {
  return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(s);
}
}  // namespace

TokenSlices::TokenSlices(std::shared_ptr<const TokenTrie> full, const int32_t* automaton, int32_t num_states,
                         const int32_t* bounds, int32_t num_bounds)
    : full_(std::move(full)), num_states_(num_states) {
  if (num_states <= 0) throw std::invalid_argument("slice automaton: no states");
  if (num_bounds < 0) throw std::invalid_argument("slice bounds: negative count");
  automaton_.assign(automaton, automaton + static_cast<size_t>(num_states) * 256);
  for (int32_t target : automaton_) {
    if (target < kDead || target >= num_states) throw std::invalid_argument("slice automaton: target out of range");
  }
  for (int32_t i = 0; i < num_bounds; ++i) {
    if (bounds[i] <= 0 || (i > 0 && bounds[i] <= bounds[i - 1])) {
      throw std::invalid_argument("slice bounds must be positive and ascending");
    }
  }
  moves_.resize(static_cast<size_t>(num_states));
  for (int32_t a = 0; a < num_states; ++a) {
    for (int b = 0; b < 256; ++b) {
      const int32_t target = automaton_[static_cast<size_t>(a) * 256 + b];
      if (target < 0) continue;
      auto it = std::find_if(moves_[a].begin(), moves_[a].end(), [&](const auto& m) { return m.first == target; });
      if (it == moves_[a].end()) {
        moves_[a].emplace_back(target, std::vector<uint8_t>{});
        it = moves_[a].end() - 1;
      }
      it->second.push_back(static_cast<uint8_t>(b));
    }
  }
  // each text token's slice: 0..num_bounds by length if sliceable, -1 for the rest
  const TokenTrie& trie = *full_;
  const int32_t n = trie.num_tokens();
  std::vector<int32_t> slice_of(static_cast<size_t>(n), -2);  // -2: not in the trie
  for (int32_t t = 0; t < n; ++t) {
    if (!trie.in_trie(t)) continue;
    const uint8_t* data = trie.token_data(t);
    const int64_t len = trie.token_length(t);
    int32_t a = 0;
    for (int64_t i = 0; i < len && a >= 0; ++i) a = automaton_[static_cast<size_t>(a) * 256 + data[i]];
    if (a < 0) {
      slice_of[t] = -1;
      continue;
    }
    slice_of[t] = static_cast<int32_t>(std::lower_bound(bounds, bounds + num_bounds, len) - bounds);
    max_needed_ = std::max<int32_t>(max_needed_, static_cast<int32_t>(len));
  }
  std::vector<uint8_t> member(static_cast<size_t>(n));
  std::vector<uint32_t> through(static_cast<size_t>((trie.vocab_size() + 31) / 32), 0u);
  int32_t tokens_through = 0;
  for (int32_t k = 0; k <= num_bounds; ++k) {
    for (int32_t t = 0; t < n; ++t) member[t] = slice_of[t] == k;
    TokenSlice slice = make_slice(member);
    for (int32_t t = 0; t < n; ++t) {
      if (!member[t]) continue;
      through[t >> 5] |= 1u << (t & 31);
      slice.max_length = std::max<int32_t>(slice.max_length, static_cast<int32_t>(trie.token_length(t)));
      ++tokens_through;
    }
    auto row = std::make_shared<TokenRow>(through.size());
    std::copy(through.begin(), through.end(), row->words());
    row->num_allowed = tokens_through;
    row->seal_dense();
    slice.through = row;
    bases_.push_back(std::move(row));
    slices_.push_back(std::move(slice));
  }
  for (int32_t t = 0; t < n; ++t) member[t] = slice_of[t] == -1;
  rest_ = make_slice(member);
}

TokenSlice TokenSlices::make_slice(const std::vector<uint8_t>& member) const {
  const TokenTrie& full = *full_;
  auto trie = std::make_shared<TokenTrie>(full.bytes_data(), full.offsets_data(), member.data(), full.num_tokens(),
                                          full.vocab_size());
  trie->drop_token_bytes();
  TokenSlice slice;
  // Both tries list children in byte order, so each full-trie parent is scanned once.
  const TrieNode* sub = trie->nodes().data();
  const TrieNode* nodes = full.nodes().data();
  const size_t count = trie->nodes().size();
  slice.to_full.assign(count, 0);
  struct Open {
    size_t end;       // end of the sub-trie node's subtree
    uint32_t node;    // the full-trie node
    uint32_t cursor;  // the next full-trie child to look at
  };
  std::vector<Open> stack{{count, 0, 1}};
  for (size_t p = 1; p < count; ++p) {
    while (p >= stack.back().end) stack.pop_back();
    Open& parent = stack.back();
    const uint32_t end = parent.node + nodes[parent.node].subtree_size;
    uint32_t child = parent.cursor;
    while (child < end && nodes[child].byte != sub[p].byte) child += nodes[child].subtree_size;
    if (child >= end) throw std::logic_error("slice trie: a node missing from the full trie");
    parent.cursor = child + nodes[child].subtree_size;
    slice.to_full[p] = child;
    stack.push_back(Open{p + sub[p].subtree_size, child, child + 1});
  }
  slice.trie = std::move(trie);
  return slice;
}

int32_t TokenSlices::depth(LazyDfa& dfa, int32_t state, const TextDepth* text_depth) const {
  if (max_needed_ == 0) return 0;
  // most states die on one of these sliceable bytes (the walk takes those transitions anyway):
  // then nothing is taken whole, and neither the shape test nor the search is needed
  for (uint8_t probe : {uint8_t(' '), uint8_t('e'), uint8_t('0')}) {
    if (automaton_[probe] >= 0 && dfa.step(state, probe) < 0) return 0;
  }
  if (text_depth && *text_depth) {
    const int32_t proven = (*text_depth)(state);
    if (proven > 0) return std::min(proven, max_needed_);
  }
  const uint8_t* class_map = dfa.class_map();
  std::vector<int32_t> stamp(static_cast<size_t>(dfa.num_classes()), 0);
  int32_t current = 0;
  std::vector<std::pair<int32_t, int32_t>> frontier{{0, state}}, next;
  std::unordered_set<uint64_t> seen{pack(0, state)};
  int32_t expansions = 0;
  for (int32_t d = 0; d < max_needed_; ++d) {
    next.clear();
    for (const auto& [a, s] : frontier) {
      for (const auto& [target, bytes] : moves_[a]) {
        ++current;  // one stamp per (pair, successor): each byte class is stepped once
        for (uint8_t b : bytes) {
          const int32_t cls = class_map[b];
          if (stamp[cls] == current) continue;
          stamp[cls] = current;
          int32_t s2 = dfa.peek(s, b);
          if (s2 == kUnknown) {
            if (++expansions > kMaxExpansions) return d;
            s2 = dfa.step_class(s, cls);
          }
          if (s2 < 0) return d;
          if (seen.insert(pack(target, s2)).second) {
            if (seen.size() > kMaxPairs) return d;
            next.emplace_back(target, s2);
          }
        }
      }
    }
    if (next.empty()) return max_needed_;  // closed: every A-string of any length is fine
    frontier.swap(next);
  }
  return max_needed_;
}

void walk_sliced(const TokenSlices& slices, LazyDfa& dfa, int32_t state, TokenRow& row,
                 std::vector<std::pair<uint32_t, int32_t>>* accepting_nodes,
                 const TokenSlices::TextDepth* text_depth) {
  const int32_t d = slices.depth(dfa, state, text_depth);
  std::vector<std::pair<uint32_t, int32_t>> found;
  std::vector<std::pair<uint32_t, int32_t>>* out = accepting_nodes ? &found : nullptr;
  // contained slices are a prefix (slices ascend by length): one OR of their union
  const std::vector<TokenSlice>& all = slices.slices();
  size_t contained = 0;
  while (contained < all.size() && all[contained].max_length <= d) ++contained;
  if (contained == 0) {  // nothing to skip: one walk of the full trie (its root fans out once)
    walk_trie(slices.full(), dfa, state, row, accepting_nodes);
    return;
  }
  {
    const TokenSlice& whole = all[contained - 1];
    whole.through->or_into(row.words());
    row.num_allowed += whole.through->num_allowed;
  }
  for (size_t k = contained; k < all.size(); ++k) {
    if (all[k].trie->nodes().size() > 1) walk_trie(*all[k].trie, dfa, state, row, out, all[k].to_full.data());
  }
  if (slices.rest().trie->nodes().size() > 1) {
    walk_trie(*slices.rest().trie, dfa, state, row, out, slices.rest().to_full.data());
  }
  if (accepting_nodes && !found.empty()) {
    std::sort(found.begin(), found.end());
    found.erase(std::unique(found.begin(), found.end(),
                            [](const auto& x, const auto& y) { return x.first == y.first; }),
                found.end());
    accepting_nodes->insert(accepting_nodes->end(), found.begin(), found.end());
  }
}

}  // namespace tokamata
