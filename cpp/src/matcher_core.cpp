// The one matcher engine; see matcher_core.hpp.
#include "tokamata/matcher_core.hpp"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace tokamata {

namespace {
void sort_unique(std::vector<Configuration>& v) {
  if (v.size() > 1) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
}

void sort_unique(std::vector<Config>& v) {
  if (v.size() > 1) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
  }
}

// The one token set in the row, or -1 when none or several (the tokens until a second shows).
int32_t only_token(const TokenRow& row) {
  int32_t found = -1;
  const bool several = row.any_token([&](int32_t t) {
    if (found >= 0) return true;
    found = t;
    return false;
  });
  return several ? -1 : found;
}
}  // namespace

ConstraintCore::ConstraintCore(std::shared_ptr<RegexCore> lexer, std::shared_ptr<GrammarCore> grammar,
                               int32_t initial_lexer, bool accepts_empty, std::vector<int32_t> special_offsets,
                               std::vector<int32_t> special_tokens, int64_t max_configurations,
                               size_t mask_cache_size)
    : lexer_(std::move(lexer)), grammar_(std::move(grammar)), initial_{0, initial_lexer, 1},
      accepts_empty_(accepts_empty),
      max_configurations_(max_configurations), mask_cache_size_(std::max<size_t>(mask_cache_size, 1)) {
  if (!lexer_) throw std::invalid_argument("a constraint needs a lexer");
  if (initial_lexer < kDead || initial_lexer >= lexer_->num_states()) throw std::invalid_argument("initial lexer state out of range");
  if (!grammar_ && initial_lexer == kDead) throw std::invalid_argument("a regular constraint needs a live initial state");
  if (special_offsets.empty() || special_offsets.front() != 0 ||
      static_cast<size_t>(special_offsets.back()) != special_tokens.size()) {
    throw std::invalid_argument("special_offsets must run from 0 to len(special_tokens)");
  }
  const size_t num_terminals = special_offsets.size() - 1;
  const size_t words = static_cast<size_t>(num_words());
  set_of_terminal_.assign(num_terminals, -1);
  for (size_t t = 0; t < num_terminals; ++t) {
    if (special_offsets[t] > special_offsets[t + 1]) throw std::invalid_argument("special_offsets must not decrease");
    if (special_offsets[t] == special_offsets[t + 1]) continue;
    TokenRow row(words);
    for (int32_t i = special_offsets[t]; i < special_offsets[t + 1]; ++i) {
      const int32_t token = special_tokens[i];
      if (token < 0 || token >= vocab_size()) throw std::invalid_argument("special token id out of range");
      row.set(token);
    }
    row.seal();
    if (any_set_.empty()) any_set_.assign(words, 0u);
    row.or_into(any_set_.data());
    set_of_terminal_[t] = static_cast<int32_t>(token_sets_.size());
    token_sets_.emplace_back(static_cast<int32_t>(t), std::move(row));
  }
  if (!grammar_ && !token_sets_.empty()) throw std::invalid_argument("a regular constraint has no token-set terminals");
  if (grammar_ && accepts_empty_) throw std::invalid_argument("accepts_empty is for regular constraints");
  if (grammar_) sweep_at_ = std::min<int64_t>(kSweepFloor, std::max<int64_t>(grammar_->parser().max_sets() / 2, 1));
}

// ------------------------------------------------------------------------------ caches

size_t ConstraintCore::num_cached_masks() const {
  std::lock_guard<std::mutex> guard(cache_mu_);
  return masks_.size() + positions_.size();
}

size_t ConstraintCore::num_distinct_masks() const {
  std::lock_guard<std::mutex> guard(cache_mu_);
  std::unordered_set<const TokenRow*> distinct;
  for (const auto& entry : masks_) distinct.insert(entry.second.get());
  for (const auto& entry : positions_) distinct.insert(entry.second.get());
  return distinct.size();
}

size_t ConstraintCore::row_bytes() const {
  size_t total = lexer_->cached_row_bytes();
  std::lock_guard<std::mutex> guard(cache_mu_);
  std::unordered_set<const TokenRow*> distinct;
  for (const auto& entry : masks_) {
    if (distinct.insert(entry.second.get()).second) total += entry.second->memory_bytes();
  }
  for (const auto& entry : positions_) {
    if (distinct.insert(entry.second.get()).second) total += entry.second->memory_bytes();
  }
  if (initial_mask_) total += initial_mask_->memory_bytes();
  return total;
}

MaskPtr ConstraintCore::remember(const Configuration& c, MaskPtr mask) {
  const uint64_t hash = DistinctRows::content_hash(*mask);  // (outside the lock: a dense row is 16 KB)
  std::lock_guard<std::mutex> guard(cache_mu_);
  auto found = masks_.find(c);
  if (found != masks_.end()) return found->second;  // another thread cached it first
  mask = distinct_masks_.intern(std::move(mask), hash);
  masks_.emplace(c, mask);
  mask_order_.push_back(c);
  if (mask_order_.size() > mask_cache_size_) {
    masks_.erase(mask_order_.front());
    mask_order_.pop_front();
  }
  return mask;
}

MaskPtr ConstraintCore::remember(std::vector<Configuration> position, MaskPtr mask) {
  const uint64_t hash = DistinctRows::content_hash(*mask);
  std::lock_guard<std::mutex> guard(cache_mu_);
  auto found = positions_.find(position);
  if (found != positions_.end()) return found->second;
  mask = distinct_masks_.intern(std::move(mask), hash);
  auto it = positions_.emplace(std::move(position), mask).first;
  position_order_.push_back(it->first);
  if (position_order_.size() > mask_cache_size_) {
    positions_.erase(position_order_.front());
    position_order_.pop_front();
  }
  return mask;
}

// ------------------------------------------------------------------------------ masks

void ConstraintCore::boundary_parsers(const Configuration& c, std::vector<int32_t>& out) {
  out.clear();
  if (c.fresh) out.push_back(c.parser);
  if (c.lexer == kDead) return;
  for (int32_t terminal : grammar_->ends_of(c.lexer)) {
    const int32_t after = grammar_->after_lexeme(c.parser, terminal);
    if (after >= 0 && std::find(out.begin(), out.end(), after) == out.end()) out.push_back(after);
  }
}

bool ConstraintCore::configuration_accepting(const Configuration& c) {
  {
    std::lock_guard<std::mutex> guard(cache_mu_);
    auto it = accepting_.find(c);
    if (it != accepting_.end()) return it->second;
  }
  std::vector<int32_t> parsers;
  {
    std::lock_guard<std::mutex> compute(lexer_->compute_mutex());
    boundary_parsers(c, parsers);
  }
  bool found = false;
  for (int32_t p : parsers) found = found || grammar_->parser().accepting(p);
  std::lock_guard<std::mutex> guard(cache_mu_);
  if (accepting_.size() > 16 * mask_cache_size_) accepting_.clear();
  accepting_.emplace(c, found);
  return found;
}

MaskPtr ConstraintCore::configuration_mask(const Configuration& c) {
  {
    std::lock_guard<std::mutex> guard(cache_mu_);
    auto it = masks_.find(c);
    if (it != masks_.end()) return it->second;
  }
  auto mask = std::make_shared<TokenRow>(static_cast<size_t>(num_words()));
  if (c.lexer != kDead) {
    grammar_->configuration_bits(c.parser, c.lexer, mask->words());  // inside | crossing
    if (!c.fresh) {  // the lexeme may end right here: tokens may start the next one
      std::vector<Config> next;
      {
        std::lock_guard<std::mutex> compute(lexer_->compute_mutex());
        grammar_->boundary(c.parser, c.lexer, next);
      }
      for (const Config& n : next) configuration_mask(Configuration{n.parser, n.state, 1})->or_into(mask->words());
    }
  }
  if (!token_sets_.empty()) {  // token-set terminals the parser takes at a boundary here
    std::vector<int32_t> parsers;
    {
      std::lock_guard<std::mutex> compute(lexer_->compute_mutex());
      boundary_parsers(c, parsers);
    }
    std::vector<uint8_t> added(token_sets_.size(), 0);
    for (int32_t p : parsers) {
      for (int32_t t : grammar_->parser().allowed(p)) {
        const int32_t set = set_of_terminal_[t];
        if (set < 0 || added[set]) continue;
        added[set] = 1;
        token_sets_[set].second.or_into(mask->words());
      }
    }
  }
  mask->accepting = configuration_accepting(c);
  return remember(c, lexer_->row_bases().seal(std::move(mask)));
}

MaskPtr ConstraintCore::regular_mask(const Configuration& c) {
  MaskPtr row = lexer_->shared_row(c.lexer);
  if (!c.fresh || !accepts_empty_ || row->accepting) return row;
  std::lock_guard<std::mutex> guard(cache_mu_);
  if (!initial_mask_) {
    auto accepting = std::make_shared<TokenRow>(*row);
    accepting->accepting = true;
    initial_mask_ = std::move(accepting);
  }
  return initial_mask_;
}

MaskPtr ConstraintCore::mask(const Configuration* position, size_t size) {
  if (size == 0) throw std::logic_error("mask of an empty position");
  if (!grammar_) return regular_mask(position[0]);
  if (size == 1) return configuration_mask(position[0]);
  std::vector<Configuration> key(position, position + size);
  {
    std::lock_guard<std::mutex> guard(cache_mu_);
    auto it = positions_.find(key);
    if (it != positions_.end()) return it->second;
  }
  auto mask = std::make_shared<TokenRow>(static_cast<size_t>(num_words()));
  for (size_t i = 0; i < size; ++i) {
    MaskPtr part = configuration_mask(position[i]);
    part->or_into(mask->words());
    mask->accepting = mask->accepting || part->accepting;
  }
  return remember(std::move(key), lexer_->row_bases().seal(std::move(mask)));
}

MaskPtr ConstraintCore::cached_mask(const Configuration* position, size_t size) const {
  if (!grammar_) {
    if (position[0].fresh && accepts_empty_) {
      std::lock_guard<std::mutex> guard(cache_mu_);
      return initial_mask_;
    }
    return lexer_->cached_shared_row(position[0].lexer);
  }
  std::lock_guard<std::mutex> guard(cache_mu_);
  if (size == 1) {
    auto it = masks_.find(position[0]);
    return it == masks_.end() ? nullptr : it->second;
  }
  auto it = positions_.find(std::vector<Configuration>(position, position + size));
  return it == positions_.end() ? nullptr : it->second;
}

bool ConstraintCore::accepting(const Configuration* position, size_t size) {
  if (!grammar_) {
    if (position[0].fresh && accepts_empty_) return true;
    if (const TokenRow* row = lexer_->cached_row(position[0].lexer)) return row->accepting;
    std::lock_guard<std::mutex> compute(lexer_->compute_mutex());
    return lexer_->dfa().accepting(position[0].lexer);
  }
  for (size_t i = 0; i < size; ++i) {
    if (configuration_accepting(position[i])) return true;
  }
  return false;
}

// ------------------------------------------------------------------------------ consuming

void ConstraintCore::advance(const Configuration* position, size_t size, int32_t token,
                             std::vector<Configuration>& out) {
  out.clear();
  const TokenTrie& trie = lexer_->trie();
  const bool text = token < trie.num_tokens() && trie.in_trie(token);
  if (!grammar_) {
    if (!text) return;
    const int32_t state = position[0].lexer;
    const TokenRow* row = lexer_->cached_row(state);
    if (!row) row = lexer_->compute_row(state);
    if (!row->test(token)) return;
    int32_t next = lexer_->advance(state, token);
    if (next == kUnknown) next = lexer_->advance_expanding(state, token);
    out.push_back(Configuration{0, next, 0});
    return;
  }
  std::lock_guard<std::mutex> compute(lexer_->compute_mutex());
  if (in_token_set(token)) {  // the token spells token-set terminals (and maybe text too)
    std::vector<int32_t> parsers;
    for (size_t i = 0; i < size; ++i) {
      boundary_parsers(position[i], parsers);
      for (int32_t after : parsers) {
        for (const auto& [terminal, row] : token_sets_) {
          if (!row.test(token)) continue;
          const int32_t p = grammar_->parser().scan(after, terminal);
          if (p >= 0) out.push_back(Configuration{p, grammar_->start_of(p), 1});
        }
      }
    }
  }
  if (text) advance_text<false>(position, size, trie.token_data(token), trie.token_length(token), out);
  sort_unique(out);
}

bool ConstraintCore::advance_if_built(const Configuration* position, size_t size, int32_t token,
                                      std::vector<Configuration>& out) {
  out.clear();
  const TokenTrie& trie = lexer_->trie();
  if (!grammar_ || in_token_set(token) || token >= trie.num_tokens() || !trie.in_trie(token)) return false;
  std::unique_lock<std::mutex> compute(lexer_->compute_mutex(), std::try_to_lock);
  if (!compute.owns_lock()) return false;
  if (!advance_text<true>(position, size, trie.token_data(token), trie.token_length(token), out)) return false;
  sort_unique(out);
  return true;
}

template <bool kBuiltOnly>
bool ConstraintCore::advance_text(const Configuration* position, size_t size, const uint8_t* data, int64_t length,
                                  std::vector<Configuration>& out) {
  thread_local std::vector<Config> current, following;
  current.clear();
  for (size_t i = 0; i < size; ++i) {
    if (position[i].lexer != kDead) current.push_back(Config{position[i].parser, position[i].lexer});
  }
  sort_unique(current);
  LazyDfa& dfa = lexer_->dfa();
  for (int64_t i = 0; i < length && !current.empty(); ++i) {
    const uint8_t byte = data[i];
    following.clear();
    for (const Config& c : current) {
      const int32_t next = kBuiltOnly ? dfa.peek(c.state, byte) : dfa.step(c.state, byte);
      if (kBuiltOnly && next == kUnknown) return false;
      if (next != kDead) following.push_back(Config{c.parser, next});
      const std::vector<int32_t>* ends = kBuiltOnly ? grammar_->ends_if_known(c.state) : &grammar_->ends_of(c.state);
      if (!ends) return false;
      for (int32_t terminal : *ends) {
        const int32_t after = kBuiltOnly ? grammar_->after_lexeme_if_built(c.parser, terminal)
                                         : grammar_->after_lexeme(c.parser, terminal);
        if (kBuiltOnly && after == EarleyCore::kScanNotBuilt) return false;
        if (after < 0) continue;
        const int32_t start = kBuiltOnly ? grammar_->start_if_known(after) : grammar_->start_of(after);
        if (kBuiltOnly && start == kUnknown) return false;
        if (start == kDead) continue;
        const int32_t resumed = kBuiltOnly ? dfa.peek(start, byte) : dfa.step(start, byte);
        if (kBuiltOnly && resumed == kUnknown) return false;
        if (resumed != kDead) following.push_back(Config{after, resumed});
      }
    }
    sort_unique(following);
    if (static_cast<int64_t>(following.size()) > max_configurations_) {
      if (kBuiltOnly) return false;  // raised by the computing advance, without the GIL
      throw LimitError("max_lexer_configurations", static_cast<double>(following.size()),
                       static_cast<double>(max_configurations_));
    }
    current.swap(following);
  }
  for (const Config& c : current) out.push_back(Configuration{c.parser, c.state, 0});
  return true;
}

void ConstraintCore::advance_bytes(const Configuration* position, size_t size, const uint8_t* data, int64_t length,
                                   std::vector<Configuration>& out) {
  out.clear();
  if (length == 0) {
    out.assign(position, position + size);
    return;
  }
  std::lock_guard<std::mutex> compute(lexer_->compute_mutex());
  if (!grammar_) {
    LazyDfa& dfa = lexer_->dfa();
    int32_t state = position[0].lexer;
    for (int64_t i = 0; i < length && state != kDead; ++i) state = dfa.step(state, data[i]);
    if (state != kDead) out.push_back(Configuration{0, state, 0});
    return;
  }
  advance_text<false>(position, size, data, length, out);
  sort_unique(out);
}

// ------------------------------------------------------------------------------ token healing

MaskPtr ConstraintCore::prefix_mask(const uint8_t* rest, int64_t length) {
  auto mask = std::make_shared<TokenRow>(static_cast<size_t>(num_words()));
  const TokenTrie& trie = lexer_->trie();
  const TrieNode* nodes = trie.nodes().data();
  const int32_t* token_ids = trie.token_ids().data();
  // the tokens on the rest's path: their bytes are a prefix of it
  size_t node = 0;
  int64_t depth = 0;
  for (; depth < length; ++depth) {
    const int64_t child = trie.find(rest + depth, 1, node);
    if (child < 0) break;
    node = static_cast<size_t>(child);
    for (int32_t k = 0; k < nodes[node].token_count; ++k) {
      const int32_t t = token_ids[nodes[node].token_begin + k];
      mask->set(t);
    }
  }
  // the tokens that begin with all of it: their remaining bytes must lead the initial position on
  if (depth == length && nodes[node].subtree_size > 1) {
    if (!grammar_) {
      std::lock_guard<std::mutex> compute(lexer_->compute_mutex());
      walk_trie(trie, lexer_->dfa(), initial_.lexer, *mask, nullptr, nullptr, static_cast<uint32_t>(node));
    } else if (initial_.lexer != kDead) {
      grammar_->below(static_cast<uint32_t>(node), {Config{initial_.parser, initial_.lexer}}, mask->words());
    }
  }
  mask->accepting = false;
  mask->seal(lexer_->row_bases().snapshot().get());  // (a matcher's own mask: never a base)
  return mask;
}

// ------------------------------------------------------------------------------ forced bytes

bool ConstraintCore::special_allowed(const Configuration* position, size_t size) {
  if (!grammar_ || token_sets_.empty()) return false;
  std::vector<int32_t> parsers, all;
  {
    std::lock_guard<std::mutex> compute(lexer_->compute_mutex());
    for (size_t i = 0; i < size; ++i) {
      boundary_parsers(position[i], parsers);
      all.insert(all.end(), parsers.begin(), parsers.end());
    }
  }
  for (int32_t p : all) {
    for (int32_t t : grammar_->parser().allowed(p)) {
      if (set_of_terminal_[t] >= 0) return true;
    }
  }
  return false;
}

int32_t ConstraintCore::next_byte(const Configuration* position, size_t size) {
  uint64_t bytes[4];
  next_bytes(position, size, bytes);
  int32_t found = kNoByte;
  for (int32_t w = 0; w < 4; ++w) {
    if (!bytes[w]) continue;
    if (found != kNoByte || (bytes[w] & (bytes[w] - 1))) return kSeveralBytes;
    found = w * 64 + __builtin_ctzll(bytes[w]);
  }
  return found;
}

void ConstraintCore::next_bytes(const Configuration* position, size_t size, uint64_t out[4]) {
  out[0] = out[1] = out[2] = out[3] = 0;
  std::lock_guard<std::mutex> compute(lexer_->compute_mutex());
  LazyDfa& dfa = lexer_->dfa();
  // the lexer states the next byte is read in: each configuration's, and after a boundary
  // the next lexeme's start state (as advance_text reads a byte)
  std::vector<int32_t> states;
  for (size_t i = 0; i < size; ++i) {
    const Configuration& c = position[i];
    if (c.lexer == kDead) continue;
    states.push_back(c.lexer);
    if (!grammar_) continue;
    for (int32_t terminal : grammar_->ends_of(c.lexer)) {
      const int32_t after = grammar_->after_lexeme(c.parser, terminal);
      if (after < 0) continue;
      const int32_t start = grammar_->start_of(after);
      if (start != kDead) states.push_back(start);
    }
  }
  std::sort(states.begin(), states.end());
  states.erase(std::unique(states.begin(), states.end()), states.end());
  std::vector<uint8_t> live(static_cast<size_t>(dfa.num_classes()), 0);
  for (int32_t s : states) {
    for (size_t cls = 0; cls < live.size(); ++cls) {
      if (!live[cls] && dfa.step_class(s, static_cast<int32_t>(cls)) != kDead) live[cls] = 1;
    }
  }
  const uint8_t* class_map = dfa.class_map();
  for (int32_t b = 0; b < 256; ++b) {
    if (live[class_map[b]]) out[b >> 6] |= uint64_t{1} << (b & 63);
  }
}

void ConstraintCore::forced_bytes(const Configuration* position, size_t size, int64_t max_bytes,
                                  std::vector<uint8_t>& out) {
  std::vector<Configuration> here(position, position + size), next;
  for (int64_t n = 0; n < max_bytes; ++n) {
    if (accepting(here.data(), here.size()) || special_allowed(here.data(), here.size())) return;
    const int32_t byte = next_byte(here.data(), here.size());
    if (byte < 0) return;
    const uint8_t b = static_cast<uint8_t>(byte);
    advance_bytes(here.data(), here.size(), &b, 1, next);
    if (next.empty()) throw std::logic_error("forced_bytes: a live byte led nowhere");
    out.push_back(b);
    here.swap(next);
  }
}

// ------------------------------------------------------------------------------ the matcher

MatcherCore::MatcherCore(std::shared_ptr<ConstraintCore> constraint, std::vector<uint8_t> prefix)
    : constraint_(std::move(constraint)) {
  if (prefix.size() > static_cast<size_t>(INT32_MAX)) throw std::invalid_argument("a prefix of 2**31 bytes or more");
  if (prefix.empty()) {
    stack_.push_back(constraint_->initial());
  } else {
    stack_.push_back(Configuration{kPrefixPhase, 0, 0});
    prefix_ = std::make_shared<const std::vector<uint8_t>>(std::move(prefix));
  }
  starts_.push_back(0);
  constraint_->register_matcher(this);
}

const MaskPtr& MatcherCore::current_mask() {
  if (!mask_) mask_ = mask_at(stack_.data() + starts_.back(), num_configurations());
  return mask_;
}

MaskPtr MatcherCore::mask_at(const Configuration* position, size_t size) {
  if (position[0].parser != kPrefixPhase) return constraint_->mask(position, size);
  const size_t offset = static_cast<size_t>(position[0].lexer);
  if (prefix_masks_.size() <= offset) prefix_masks_.resize(offset + 1);
  MaskPtr& slot = prefix_masks_[offset];
  if (!slot) slot = constraint_->prefix_mask(prefix_->data() + offset, static_cast<int64_t>(prefix_->size() - offset));
  return slot;
}

void MatcherCore::advance_at(const Configuration* position, size_t size, int32_t token,
                             std::vector<Configuration>& out) {
  if (position[0].parser == kPrefixPhase) {
    advance_prefix(position[0].lexer, token, out);
  } else {
    constraint_->advance(position, size, token, out);
  }
}

void MatcherCore::advance_prefix(int32_t offset, int32_t token, std::vector<Configuration>& out) {
  out.clear();
  const TokenTrie& trie = constraint_->lexer().trie();
  if (token >= trie.num_tokens() || !trie.in_trie(token)) return;  // EOS, special tokens, padding
  const uint8_t* data = trie.token_data(token);
  const int64_t length = trie.token_length(token);
  const uint8_t* rest = prefix_->data() + offset;
  const int64_t left = static_cast<int64_t>(prefix_->size()) - offset;
  if (std::memcmp(data, rest, static_cast<size_t>(std::min(length, left))) != 0) return;
  if (length < left) {
    out.push_back(Configuration{kPrefixPhase, offset + static_cast<int32_t>(length), 0});
    return;
  }
  const Configuration initial = constraint_->initial();
  constraint_->advance_bytes(&initial, 1, data + left, length - left, out);  // (length == left: the initial position)
}

void MatcherCore::write(const TokenRow* row, uint32_t* out, int64_t num_words) const {
  const int32_t vocab = constraint_->vocab_size();
  bool eos = terminated_;
  if (terminated_) {
    std::memset(out, 0, static_cast<size_t>(num_words) * 4);
  } else {
    row->copy_to(out, static_cast<size_t>(num_words));  // (a patched row: its base, then the patches)
    eos = row->accepting;
  }
  if (eos) {
    for (int32_t e : constraint_->lexer().eos_ids()) {
      if (e < vocab && (e >> 5) < num_words) out[e >> 5] |= 1u << (e & 31);
    }
  }
}

bool MatcherCore::known_mask() {
  // (no sweep lock: a sweep reads only this matcher's history and forced run, which nothing
  // here changes, and drops only cache entries naming parser handles no registered matcher
  // holds, never this position's; cached_mask reads the caches under their own mutex)
  if (!mask_) {
    if (in_prefix()) {
      const size_t offset = static_cast<size_t>(stack_[starts_.back()].lexer);
      if (offset >= prefix_masks_.size() || !prefix_masks_[offset]) return false;
      mask_ = prefix_masks_[offset];
    } else {
      mask_ = constraint_->cached_mask(stack_.data() + starts_.back(), num_configurations());
      if (!mask_) return false;
    }
  }
  retired_.reset();  // (here, on the filling thread: see retired_)
  return true;
}

void MatcherCore::fill(uint32_t* out, int64_t num_words) {
  if (terminated_ || known_mask()) {  // warm: nothing to compute, no sweep lock
    write(terminated_ ? nullptr : mask_.get(), out, num_words);
    return;
  }
  {
    const auto held = hold();
    write(current_mask().get(), out, num_words);
  }
  retired_.reset();
  if (constraint_->sweep_due()) constraint_->sweep_if_due();
}

bool MatcherCore::fill_if_cached(uint32_t* out, int64_t num_words) {
  if (!terminated_ && !known_mask()) return false;
  write(terminated_ ? nullptr : mask_.get(), out, num_words);
  return true;
}

bool MatcherCore::is_accepting() {
  const auto held = hold();
  return is_accepting_held();
}

bool MatcherCore::is_accepting_held() {
  if (terminated_) return true;
  if (mask_) return mask_->accepting;
  if (in_prefix()) return false;
  return constraint_->accepting(stack_.data() + starts_.back(), num_configurations());
}

ConsumeStatus MatcherCore::consume(int32_t token) {
  ConsumeStatus status;
  {
    const auto held = hold();
    status = consume_held(token);
  }
  if (status == kAccepted && constraint_->sweep_due()) constraint_->sweep_if_due();
  return status;
}

ConsumeStatus MatcherCore::consume_held(int32_t token) {
  if (token < 0 || token >= constraint_->vocab_size()) return kOutOfRange;
  if (terminated_) return kRefused;
  if (constraint_->ends_output(token)) return end_output();
  // an EOS id a special terminal spells too: the parser first, else the end of the output
  const bool eos = constraint_->is_eos(token);
  if (mask_ && !mask_->test(token)) return eos ? end_output() : kRefused;
  advance_at(stack_.data() + starts_.back(), num_configurations(), token, scratch_);
  if (scratch_.empty()) return eos ? end_output() : kRefused;
  starts_.push_back(static_cast<uint32_t>(stack_.size()));
  stack_.insert(stack_.end(), scratch_.begin(), scratch_.end());
  retired_ = std::move(mask_);  // (released by the next fill, on the thread that fills)
  return kAccepted;
}

ConsumeStatus MatcherCore::end_output() {
  if (!is_accepting_held()) return kRefused;
  terminated_ = true;
  return kAccepted;
}

int32_t MatcherCore::consume_if_cached(int32_t token) {
  // (a sweep that is due waits for the next consume(): this one may run with the GIL)
  const auto held = hold(true);
  if (constraint_->strategy() == Strategy::kEarley && !held.owns_lock()) return -1;
  if (token < 0 || token >= constraint_->vocab_size()) return kOutOfRange;
  if (terminated_) return kRefused;
  if (in_prefix()) return -1;  // (consume() computes prefix masks and advances)
  if (!mask_) mask_ = constraint_->cached_mask(stack_.data() + starts_.back(), num_configurations());
  if (constraint_->ends_output(token)) {
    if (!mask_) return -1;
    if (!mask_->accepting) return kRefused;
    terminated_ = true;
    return kAccepted;
  }
  if (constraint_->is_eos(token)) return -1;  // spelled by a special terminal too: consume() decides
  if (mask_ && !mask_->test(token)) return kRefused;
  if (constraint_->strategy() == Strategy::kRegular) {
    if (!mask_) return -1;  // (the lexer's advance needs the token known to be allowed)
    const int32_t next = constraint_->lexer().advance(stack_.back().lexer, token);
    if (next == kUnknown) return -1;
    scratch_.assign(1, Configuration{0, next, 0});
  } else if (!constraint_->advance_if_built(stack_.data() + starts_.back(), num_configurations(), token, scratch_)) {
    return -1;
  }
  if (scratch_.empty()) {
    if (mask_) throw std::logic_error("a token in the mask led nowhere");
    return kRefused;
  }
  starts_.push_back(static_cast<uint32_t>(stack_.size()));
  stack_.insert(stack_.end(), scratch_.begin(), scratch_.end());
  retired_ = std::move(mask_);  // (released by the next fill, on the thread that fills)
  return kAccepted;
}

int32_t MatcherCore::rollback(int32_t n) {
  const auto held = hold();
  int32_t undone = 0;
  while (undone < n) {
    if (terminated_) {
      terminated_ = false;
    } else if (starts_.size() > 1) {
      stack_.resize(starts_.back());
      starts_.pop_back();
      mask_.reset();
    } else {
      break;
    }
    ++undone;
  }
  return undone;
}

// ------------------------------------------------------------------------------ forced steps

std::vector<int32_t> MatcherCore::forced_tokens(int64_t max_tokens) {
  const auto held = hold();
  std::vector<int32_t> out;
  if (terminated_ || max_tokens <= 0) return out;
  const size_t depth = starts_.size();
  const size_t here_size = num_configurations();
  const Configuration* here = stack_.data() + starts_.back();
  // the last run, where the current position is one of its positions
  if (depth >= forced_depth_ && depth - forced_depth_ + 1 < forced_starts_.size()) {
    const size_t k = depth - forced_depth_;
    const Configuration* first = forced_positions_.data() + forced_starts_[k];
    if (forced_starts_[k + 1] - forced_starts_[k] == here_size && std::equal(here, here + here_size, first)) {
      const size_t left = forced_.size() - k;
      if (forced_complete_ || left >= static_cast<size_t>(max_tokens)) {
        const size_t take = std::min(left, static_cast<size_t>(max_tokens));
        return std::vector<int32_t>(forced_.begin() + static_cast<std::ptrdiff_t>(k),
                                    forced_.begin() + static_cast<std::ptrdiff_t>(k + take));
      }
    }
  }
  forced_.clear();
  forced_positions_.assign(here, here + here_size);
  forced_starts_.assign({0u, static_cast<uint32_t>(here_size)});
  forced_depth_ = depth;
  forced_complete_ = false;
  try {
    std::vector<Configuration> position(here, here + here_size), next;
    MaskPtr mask = current_mask();
    while (true) {
      if (forced_.size() >= static_cast<size_t>(max_tokens)) break;
      forced_complete_ = true;
      if (mask->accepting) break;
      const int32_t token = only_token(*mask);
      if (token < 0 || constraint_->is_eos(token)) break;
      forced_complete_ = false;
      advance_at(position.data(), position.size(), token, next);
      if (next.empty()) throw std::logic_error("forced_tokens: a token in the mask led nowhere");
      forced_.push_back(token);
      position.swap(next);
      forced_positions_.insert(forced_positions_.end(), position.begin(), position.end());
      forced_starts_.push_back(static_cast<uint32_t>(forced_positions_.size()));
      mask = mask_at(position.data(), position.size());
    }
  } catch (...) {
    forced_.clear();
    forced_starts_.clear();
    throw;
  }
  return forced_;
}

std::vector<uint8_t> MatcherCore::forced_bytes(int64_t max_bytes) {
  const auto held = hold();
  std::vector<uint8_t> out;
  if (terminated_ || max_bytes <= 0) return out;
  const Configuration* here = stack_.data() + starts_.back();
  if (here->parser != kPrefixPhase) {
    constraint_->forced_bytes(here, num_configurations(), max_bytes, out);
    return out;
  }
  // the rest of the prefix, then what the initial position forces
  const size_t offset = static_cast<size_t>(here->lexer);
  const size_t take = std::min(prefix_->size() - offset, static_cast<size_t>(max_bytes));
  out.assign(prefix_->begin() + static_cast<std::ptrdiff_t>(offset),
             prefix_->begin() + static_cast<std::ptrdiff_t>(offset + take));
  const Configuration initial = constraint_->initial();
  constraint_->forced_bytes(&initial, 1, max_bytes - static_cast<int64_t>(take), out);
  return out;
}

}  // namespace tokamata
