// CanonicalFilter (canonical_filter.hpp): the canonical filter's states, steps, liveness and
// cached rows, a line-by-line port of src/tokamata/vocab/canonical_filter.py.
#include "tokamata/canonical_filter.hpp"

#include <algorithm>
#include <cstring>
#include <shared_mutex>

namespace tokamata {

namespace {

constexpr size_t kCachedEntries = size_t{1} << 18;  // per cache, as the Python filter
constexpr int64_t kCachedRowWords = int64_t{1} << 23;  // 32 MiB of rows per filter

// The length of the longest prefix of `data` that ends on a character boundary (`data` is a
// valid UTF-8 prefix).
int32_t complete_length(const std::string& data) {
  const int32_t n = static_cast<int32_t>(data.size());
  for (int32_t back = 1; back <= std::min(4, n); ++back) {
    const uint8_t b = static_cast<uint8_t>(data[static_cast<size_t>(n - back)]);
    if (b < 0x80) return back == 1 ? n : n - back + 1;
    if (b >= 0xC0) {
      const int32_t need = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
      return back >= need ? n : n - back;
    }
  }
  return n;
}

int32_t char_length(uint8_t b) { return b < 0x80 ? 1 : b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4; }

}  // namespace

size_t CanonicalFilter::PositionHash::operator()(const std::vector<Configuration>& p) const {
  size_t h = p.size();
  for (const Configuration& c : p) {
    h = h * 1000003u ^ ((static_cast<size_t>(static_cast<uint32_t>(c.parser)) * 0x9E3779B97F4A7C15ull) ^
                        (static_cast<size_t>(static_cast<uint32_t>(c.lexer)) << 1) ^ static_cast<size_t>(c.fresh));
  }
  return h;
}

CanonicalFilter::CanonicalFilter(std::shared_ptr<const CanonicalTokenizer> tokenizer,
                                 std::shared_ptr<ConstraintCore> constraint, int64_t max_search)
    : tok_(std::move(tokenizer)), constraint_(std::move(constraint)), max_search_(max_search) {
  intern(std::string(), {});  // state 0: nothing open
}

CanonicalFilter::State& CanonicalFilter::state_at(int32_t id) {
  if (id < kSolo) return states_[static_cast<size_t>(id)];
  auto it = solo_states_.find(id);
  if (it != solo_states_.end()) return it->second;
  const int32_t t = id - kSolo;
  std::string text(reinterpret_cast<const char*>(tok_->bytes_of(t)), static_cast<size_t>(tok_->length_of(t)));
  const bool stable = text.back() != '\'' && complete_length(text) == static_cast<int32_t>(text.size());
  return solo_states_.emplace(id, State{std::move(text), {t}, 0, 0, stable}).first->second;
}

int32_t CanonicalFilter::intern(std::string text, std::vector<int32_t> tokens) {
  if (tokens.size() == 1 && tok_->has_bytes(tokens[0]) &&
      text.size() == static_cast<size_t>(tok_->length_of(tokens[0])) &&
      std::memcmp(text.data(), tok_->bytes_of(tokens[0]), text.size()) == 0)
    return kSolo + tokens[0];  // (one id per state: the single-token state is always kSolo + t)
  std::string key;
  key.reserve(text.size() + 4 * tokens.size() + 1);
  key.append(text);
  key.push_back('\xff');  // (never a UTF-8 byte)
  key.append(reinterpret_cast<const char*>(tokens.data()), tokens.size() * sizeof(int32_t));
  auto it = state_ids_.find(key);
  if (it != state_ids_.end()) return it->second;
  const int32_t id = static_cast<int32_t>(states_.size());
  const bool stable = !text.empty() && text.back() != '\'' &&
                      complete_length(text) == static_cast<int32_t>(text.size());
  states_.push_back({std::move(text), std::move(tokens), 0, 0, stable});
  state_ids_.emplace(std::move(key), id);
  return id;
}

const std::vector<int32_t>& CanonicalFilter::encoded(const std::string& piece) {
  auto it = encoded_.find(piece);
  if (it != encoded_.end()) return it->second;
  std::vector<int32_t> out;
  tok_->encode_pretoken(reinterpret_cast<const uint8_t*>(piece.data()), static_cast<int32_t>(piece.size()), out);
  if (encoded_.size() >= kCachedEntries) encoded_.clear();
  return encoded_.emplace(piece, std::move(out)).first->second;
}

bool CanonicalFilter::bigram(int32_t a, int32_t b) {
  return a >= 0 && b >= 0 && a < tok_->num_tokens() && b < tok_->num_tokens() && tok_->bigram_cached(a, b);
}

bool CanonicalFilter::advance(const std::string& text, const std::vector<int32_t>& tokens, int32_t tail, int32_t& open,
                              int32_t& first) {
  const int32_t n = static_cast<int32_t>(text.size());
  const int32_t cut = complete_length(text);
  if (cut == 0) {
    open = 0;
    first = 0;
    return true;
  }
  const uint8_t* data = reinterpret_cast<const uint8_t*>(text.data());
  thread_local std::vector<PretokenSpan> spans;  // (advance calls nothing that calls advance)
  thread_local std::vector<int32_t> offsets, cuts;
  int32_t open_start = 0;
  if (!tok_->region(data, cut, spans, open_start)) return false;
  offsets.assign(tokens.size() + 1, 0);
  for (size_t i = 0; i < tokens.size(); ++i) offsets[i + 1] = offsets[i] + tok_->length_of(tokens[i]);
  auto index = [&](int32_t offset) -> int32_t {  // the token starting at `offset`, or -1
    auto it = std::lower_bound(offsets.begin(), offsets.end(), offset);
    return it != offsets.end() && *it == offset ? static_cast<int32_t>(it - offsets.begin()) : -1;
  };
  for (const PretokenSpan& span : spans) {
    if (span.end > open_start) break;
    const int32_t a = index(span.start), b = index(span.end);
    if (a < 0 || b < 0) return false;
    if (span.added >= 0) {
      if (b - a != 1 || tokens[static_cast<size_t>(a)] != span.added) return false;
      continue;
    }
    const std::vector<int32_t>& expected =
        encoded(text.substr(static_cast<size_t>(span.start), static_cast<size_t>(span.end - span.start)));
    if (static_cast<int32_t>(expected.size()) != b - a ||
        !std::equal(expected.begin(), expected.end(), tokens.begin() + a))
      return false;
  }
  const int32_t k = index(open_start);
  if (k < 0) return false;
  // pairs inside the open region: a later text cuts it only where it is cut now, or before its
  // last character when that is whitespace; any other junction stays inside one pretoken
  cuts.clear();
  for (const PretokenSpan& span : spans) cuts.push_back(span.start);
  if (!spans.empty()) {
    int32_t last = cut - 1;
    while (last > 0 && (data[last] & 0xC0) == 0x80) --last;
    int32_t length = 0;
    if (tok_->is_space_char(data, cut, last, length)) cuts.push_back(cut - length);
  }
  std::sort(cuts.begin(), cuts.end());
  const int32_t limit = std::min(cut, n - tail);
  for (size_t i = static_cast<size_t>(k) + 1; i < tokens.size(); ++i) {
    if (offsets[i + 1] > limit) break;
    if (!std::binary_search(cuts.begin(), cuts.end(), offsets[i]) && !bigram(tokens[i - 1], tokens[i])) return false;
  }
  open = open_start;
  first = k;
  return true;
}

int32_t CanonicalFilter::step(int32_t state, int32_t token) {
  if (state == 0) {
    if (!tok_->has_bytes(token)) return -1;
    return tok_->solo_alive(token) ? kSolo + token : -1;  // (CanonicalTokenizer::solo_facts)
  }
  if (state != 0 && state_at(state).boundary_stable && tok_->has_bytes(token)) {
    // a token whose first character closes the open text starts a new open region: its
    // step is the step from nothing open (the closed text's spans and encoding were checked
    // by closes(), the cut after it stays, and the token's text cuts as it cuts alone)
    const uint8_t first = tok_->bytes_of(token)[0];
    if (first < 0x80 && closes_any(state, uint64_t{1} << tok_->char_key(first))) return step(0, token);
  }
  const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(state)) << 32) | static_cast<uint32_t>(token);
  if (const int32_t* found = steps_.find(key)) return *found;
  int32_t out = -1;
  if (tok_->has_bytes(token)) {
    std::string text = state_at(state).text;
    text.append(reinterpret_cast<const char*>(tok_->bytes_of(token)), static_cast<size_t>(tok_->length_of(token)));
    std::vector<int32_t> tokens = state_at(state).tokens;
    tokens.push_back(token);
    int32_t open = 0, first = 0;
    if (advance(text, tokens, 0, open, first)) {
      out = intern(text.substr(static_cast<size_t>(open)),
                   std::vector<int32_t>(tokens.begin() + first, tokens.end()));
    }
  }
  if (steps_.size() < kCachedEntries) steps_.emplace(key, out);
  return out;
}

bool CanonicalFilter::complete_locked(int32_t state) {
  if (state >= kSolo) return tok_->solo_complete(state - kSolo);  // (the tokenizer's fact: the same test)
  if (const bool* found = complete_.find(static_cast<uint32_t>(state))) return *found;
  const State& s = state_at(state);
  bool out;
  if (s.text.empty()) {
    out = true;
  } else if (complete_length(s.text) != static_cast<int32_t>(s.text.size())) {
    out = false;
  } else {
    std::vector<int32_t> ids;
    out = tok_->encode(reinterpret_cast<const uint8_t*>(s.text.data()), static_cast<int32_t>(s.text.size()), ids) &&
          ids == s.tokens;
  }
  if (complete_.size() < kCachedEntries) complete_.emplace(static_cast<uint32_t>(state), out);
  return out;
}

bool CanonicalFilter::closes(int32_t state, const std::string& ch) {
  if (state_at(state).text.empty()) return true;
  uint32_t code = 0;
  std::memcpy(&code, ch.data(), std::min<size_t>(4, ch.size()));
  const uint64_t key = pair_key(state, static_cast<int32_t>(code));
  if (const bool* found = closes_.find(key)) return *found;
  const State& s = state_at(state);
  const std::string text = s.text + ch;
  int32_t open = 0, first = 0;
  const bool out = advance(text, s.tokens, static_cast<int32_t>(ch.size()), open, first) &&
                   open == static_cast<int32_t>(text.size() - ch.size());
  if (closes_.size() < kCachedEntries) closes_.emplace(key, out);
  return out;
}

bool CanonicalFilter::closes_any(int32_t state, uint64_t keys) {
  if (state >= kSolo) {  // (the tokenizer's facts: no state materialized)
    for (; keys; keys &= keys - 1) {
      if (tok_->solo_closes(state - kSolo, __builtin_ctzll(keys))) return true;
    }
    return false;
  }
  if (states_[static_cast<size_t>(state)].text.empty()) return keys != 0;
  {
    const State& s = states_[static_cast<size_t>(state)];
    if (keys & s.close_known & s.close_value) return true;
    keys &= ~s.close_known;
  }
  for (; keys; keys &= keys - 1) {
    const int32_t k = __builtin_ctzll(keys);
    const State& s = states_[static_cast<size_t>(state)];
    const std::string text = s.text + static_cast<char>(tok_->key_rep(k));
    int32_t open = 0, first = 0;
    const bool out = advance(text, s.tokens, 1, open, first) && open == static_cast<int32_t>(s.text.size());
    State& w = states_[static_cast<size_t>(state)];  // (advance interns nothing: s stays valid)
    w.close_known |= uint64_t{1} << k;
    if (out) {
      w.close_value |= uint64_t{1} << k;
      return true;
    }
  }
  return false;
}

int32_t CanonicalFilter::position_id(const std::vector<Configuration>& position) {
  auto it = position_ids_.find(position);
  if (it != position_ids_.end()) return it->second;
  const int32_t id = static_cast<int32_t>(positions_.size());
  positions_.push_back({position, nullptr, 0, {}, false});
  position_ids_.emplace(position, id);
  return id;
}

int32_t CanonicalFilter::move(int32_t position, int32_t token) {
  const uint64_t key = pair_key(position, token);
  if (const int32_t* found = moves_.find(key)) return *found;
  std::vector<Configuration> next;
  const std::vector<Configuration>& at = positions_[static_cast<size_t>(position)].configurations;
  constraint_->advance(at.data(), at.size(), token, next);
  const int32_t out = next.empty() ? -1 : position_id(next);
  moves_.emplace(key, out);
  return out;
}

const MaskPtr& CanonicalFilter::mask_of(int32_t position) {
  Position& p = positions_[static_cast<size_t>(position)];
  if (!p.mask) p.mask = constraint_->mask(p.configurations.data(), p.configurations.size());
  return p.mask;
}

bool CanonicalFilter::accepting_at(int32_t position) {
  Position& p = positions_[static_cast<size_t>(position)];
  if (p.accepting < 0) {
    p.accepting = (p.mask ? p.mask->accepting : constraint_->accepting(p.configurations.data(), p.configurations.size()))
                      ? 1 : 0;
  }
  return p.accepting > 0;
}

uint64_t CanonicalFilter::byte_keys(int32_t position) {
  Position& p = positions_[static_cast<size_t>(position)];
  if (!p.byte_keys_known) {
    uint64_t bytes[4];
    constraint_->next_bytes(p.configurations.data(), p.configurations.size(), bytes);
    uint64_t keys = 0;
    for (int32_t w = 0; w < 2; ++w) {
      for (uint64_t bits = bytes[w] & tok_->byte_tokens(w); bits; bits &= bits - 1)
        keys |= uint64_t{1} << tok_->char_key(static_cast<uint8_t>(w * 64 + __builtin_ctzll(bits)));
    }
    p.byte_keys = keys;
    p.byte_keys_known = true;
  }
  return p.byte_keys;
}

const CanonicalFilter::Position& CanonicalFilter::next_chars(int32_t position) {
  Position& p = positions_[static_cast<size_t>(position)];
  if (p.chars_known) return p;
  std::vector<std::string> chars;
  uint64_t keys = 0;
  const MaskPtr held = mask_of(position);
  const TokenRow& mask = *held;
  const int32_t limit = std::min<int32_t>(tok_->num_tokens(), static_cast<int32_t>(mask.num_words()) * 32);
  mask.for_each_token([&](int32_t t) {
    if (t >= limit || tok_->is_eos(t) || !tok_->has_bytes(t)) return;
    const uint8_t* b = tok_->bytes_of(t);
    if (b[0] < 0x80) {
      keys |= uint64_t{1} << tok_->char_key(b[0]);
      return;
    }
    const int32_t need = char_length(b[0]);
    if (tok_->length_of(t) >= need) chars.emplace_back(reinterpret_cast<const char*>(b), static_cast<size_t>(need));
  });
  std::sort(chars.begin(), chars.end());
  chars.erase(std::unique(chars.begin(), chars.end()), chars.end());
  // one character per group: the others of its group close exactly the states it closes (and
  // none where the bytes are no valid character: such a text is not UTF-8, or cuts before them)
  uint32_t groups = 0;
  size_t kept = 0;
  for (size_t i = 0; i < chars.size(); ++i) {
    const int32_t g = tok_->char_group(reinterpret_cast<const uint8_t*>(chars[i].data()),
                                       static_cast<int32_t>(chars[i].size()));
    if (g == -2 || (g >= 0 && ((groups >> g) & 1u))) continue;
    if (g >= 0) groups |= 1u << g;
    if (kept != i) chars[kept] = std::move(chars[i]);
    ++kept;
  }
  chars.resize(kept);
  Position& q = positions_[static_cast<size_t>(position)];  // (no position was added meanwhile)
  q.chars = std::move(chars);
  q.first_keys = keys;
  q.chars_known = true;
  return q;
}

bool CanonicalFilter::live_after(int32_t position, int32_t state, int32_t token, int64_t& budget) {
  const int32_t after = step(state, token);
  if (after < 0) return false;
  const int32_t next = move(position, token);
  if (next < 0) return false;
  // iterative deepening: the same answer as one unbounded depth-first search (a state is
  // live iff some path reaches a live state), but a shallow way out is found before a deep
  // branch (a whitespace run that grows forever) eats the budget
  for (int32_t depth = 1;; depth *= 2) {
    std::unordered_set<uint64_t> stack;
    bool looped = false, cut = false;
    if (viable(next, after, budget, stack, looped, depth, cut)) return true;
    if (!cut) return false;
  }
}

bool CanonicalFilter::pairs_pass(int32_t state) {
  State& s = state_at(state);
  if (s.pairs < 0) {
    bool ok = true;
    for (size_t i = 1; i < s.tokens.size() && ok; ++i) ok = bigram(s.tokens[i - 1], s.tokens[i]);
    State& w = state_at(state);  // (bigram interns nothing: s stays valid)
    w.pairs = ok ? 1 : 0;
  }
  return state_at(state).pairs > 0;
}

int32_t CanonicalFilter::live_in_pretoken(int32_t position, int32_t state, int32_t token) {
  // Each answer below is the one live_after(position, state, token) gives, read off one cut of
  // the text instead of advance(), encode() and a new interned state:
  // - step(state, token): the open text W plus the token's bytes is one pretoken starting
  //   where W starts, so advance() decides no span and checks the pairs inside it, all but the
  //   pair at a trailing whitespace cut;
  // - viable(next, after): after's text T = W + token is nonempty; its encoding (at the end of
  //   the text, or closed by a next character c when T + c cuts exactly after T) is the one
  //   pretoken T's, which equals the tokens iff every pair passes and T is not a whole piece
  //   (ignore_merges). A "yes" from either is the answer (the search spends no budget on it);
  //   anything else goes to live_after, which searches.
  if (state == 0 || tok_->has_added() || !tok_->has_bytes(token)) return -1;
  if (!state_at(state).boundary_stable) return -1;
  const uint8_t* bytes = tok_->bytes_of(token);
  const int32_t length = tok_->length_of(token);
  if (bytes[0] < 0x80 && closes_any(state, uint64_t{1} << tok_->char_key(bytes[0])))
    return -1;  // (step's own shortcut: a new pretoken starts; cheap already)
  thread_local std::string text;
  thread_local std::vector<PretokenSpan> spans;
  const State& s = state_at(state);
  const int32_t w = static_cast<int32_t>(s.text.size());
  const int32_t previous = s.tokens.back();
  text.assign(s.text);
  text.append(reinterpret_cast<const char*>(bytes), static_cast<size_t>(length));
  const int32_t n = static_cast<int32_t>(text.size());
  const uint8_t* data = reinterpret_cast<const uint8_t*>(text.data());
  if (complete_length(text) != n) return -1;
  int32_t open_start = 0;
  if (!tok_->region(data, n, spans, open_start) || open_start != 0 || spans.size() != 1 || spans[0].added >= 0)
    return -1;
  int32_t last = n - 1;
  while (last > 0 && (data[last] & 0xC0) == 0x80) --last;
  int32_t space = 0;
  const bool cut_before = tok_->is_space_char(data, n, last, space) && n - space == w;
  const bool junction = bigram(previous, token);
  const bool pairs = pairs_pass(state);
  if (!pairs || !(cut_before || junction)) return 0;  // advance() fails: the step is dead
  const int32_t next = move(position, token);
  if (next < 0) return 0;
  if (!junction || tok_->whole_piece(data, n)) return -1;  // (T's encoding is not its tokens)
  if (accepting_at(next)) return 1;  // complete(after)
  auto closes_after = [&](const uint8_t* c, int32_t c_length) {
    const int32_t size = static_cast<int32_t>(text.size());
    text.append(reinterpret_cast<const char*>(c), static_cast<size_t>(c_length));
    int32_t open = 0;
    const bool out = tok_->region(reinterpret_cast<const uint8_t*>(text.data()), size + c_length, spans, open) &&
                     open == n && spans.size() >= 2 && spans[0].start == 0 && spans[0].end == n &&
                     spans[0].added < 0;
    text.resize(static_cast<size_t>(n));
    return out;
  };
  // (the ASCII bytes the engine allows next, then the first characters of its mask's tokens:
  // the mask is computed only when no allowed byte closes)
  uint64_t tried = 0;
  for (int32_t round = 0; round < 2; ++round) {
    const uint64_t keys = (round == 0 ? byte_keys(next) : next_chars(next).first_keys) & ~tried;
    tried |= keys;
    for (uint64_t k = keys; k; k &= k - 1) {
      const uint8_t c = tok_->key_rep(__builtin_ctzll(k));
      if (closes_after(&c, 1)) return 1;
    }
  }
  for (const std::string& ch : next_chars(next).chars) {
    if (closes_after(reinterpret_cast<const uint8_t*>(ch.data()), static_cast<int32_t>(ch.size()))) return 1;
  }
  return -1;
}

bool CanonicalFilter::starts_fresh(int32_t state, int32_t token) {
  if (state == 0) return true;
  if (!tok_->has_bytes(token) || !state_at(state).boundary_stable) return false;
  const uint8_t first = tok_->bytes_of(token)[0];
  return first < 0x80 && closes_any(state, uint64_t{1} << tok_->char_key(first));
}

bool CanonicalFilter::live_fresh(int32_t position, int32_t token, int64_t& budget) {
  const size_t at = static_cast<size_t>(token >> 5);
  const uint64_t known = uint64_t{1} << (token & 31);
  {
    std::vector<uint64_t>& bits = positions_[static_cast<size_t>(position)].fresh_live;
    if (bits.empty()) {
      bits.assign(static_cast<size_t>(tok_->num_tokens() + 31) / 32, 0);
      row_words_ += 2 * static_cast<int64_t>(bits.size());
    }
    if (bits[at] & known) return (bits[at] & (known << 32)) != 0;
  }
  const bool out = live_after(position, 0, token, budget);
  // (live_after may add positions: positions_ is read again)
  positions_[static_cast<size_t>(position)].fresh_live[at] |= known | (out ? known << 32 : 0);
  return out;
}

bool CanonicalFilter::viable(int32_t position, int32_t state, int64_t& budget, std::unordered_set<uint64_t>& stack,
                             bool& looped, int32_t depth, bool& cut) {
  if (state < kSolo && states_[static_cast<size_t>(state)].text.empty()) return true;
  if (accepting_at(position) && complete_locked(state)) return true;
  // (an ASCII byte the engine allows next that closes the state: known without the mask, the
  // memo table or the budget, as the two lines above; most single-token states end here)
  if (closes_any(state, byte_keys(position))) return true;
  const uint64_t key = pair_key(position, state);
  auto found = viable_.find(key);
  if (found != viable_.end()) return found->second;
  if (stack.count(key)) {
    looped = true;
    return false;
  }
  if (--budget < 0) throw LimitError("max_canonical_search", static_cast<double>(max_search_ + 1),
                                     static_cast<double>(max_search_));
  auto remember = [&](bool value) {
    if (viable_.size() < kCachedEntries) viable_.emplace(key, value);
  };
  const Position& at = next_chars(position);
  if (closes_any(state, at.first_keys)) {  // (by key: the same answer as closes() per character)
    remember(true);
    return true;
  }
  for (const std::string& ch : at.chars) {
    if (closes(state, ch)) {
      remember(true);
      return true;
    }
  }
  if (depth == 0) {  // (not known: a deeper search decides)
    cut = true;
    return false;
  }
  const bool outer = looped;
  looped = false;
  bool below_cut = false;
  stack.insert(key);
  bool live = false;
  const MaskPtr mask = mask_of(position);
  const int32_t limit = tok_->num_tokens();
  live = mask->any_token([&](int32_t t) {
    if (t >= limit || tok_->is_eos(t)) return false;
    const int32_t after = step(state, t);
    if (after < 0) return false;
    const int32_t next = move(position, t);
    if (next < 0) return false;
    return viable(next, after, budget, stack, looped, depth - 1, below_cut);
  });
  stack.erase(key);
  if (live) {
    remember(true);
  } else if (!looped && !below_cut) {
    remember(false);  // (a state met again on its own path is no way out, but not known dead)
  }
  cut = cut || below_cut;
  looped = looped || outer;
  return live;
}

std::shared_ptr<const CanonicalFilter::Row> CanonicalFilter::row_locked(int32_t position, int32_t state) {
  const uint64_t key = pair_key(position, state);
  auto it = rows_.find(key);
  if (it != rows_.end()) return it->second;
  const MaskPtr mask = mask_of(position);
  auto row = std::make_shared<Row>();
  const size_t words = static_cast<size_t>(constraint_->num_words());
  row->bits.assign(words, 0);
  int64_t budget = max_search_;
  if (mask->accepting && complete_locked(state)) {
    for (int32_t e : constraint_->lexer().eos_ids()) {
      if (e < constraint_->vocab_size() && static_cast<size_t>(e >> 5) < words) row->bits[static_cast<size_t>(e >> 5)] |= 1u << (e & 31);
    }
  }
  const int32_t limit = tok_->num_tokens();
  mask->for_each_token([&](int32_t t) {
    if (static_cast<size_t>(t >> 5) >= words || t >= limit || tok_->is_eos(t)) return;
    int32_t live;
    if (starts_fresh(state, t)) {
      live = live_fresh(position, t, budget) ? 1 : 0;
    } else {
      live = live_in_pretoken(position, state, t);
      if (live < 0) live = live_after(position, state, t, budget) ? 1 : 0;
    }
    if (live) row->bits[static_cast<size_t>(t >> 5)] |= 1u << (t & 31);
  });
  row_words_ += static_cast<int64_t>(words);
  rows_.emplace(key, row);
  return row;
}

void CanonicalFilter::forget_swept() {
  // a sweep released parser states and may reuse their handles: positions met before it may
  // name other states now (the filter's own positions are no matcher's roots)
  const int64_t sweeps = constraint_->num_sweeps();
  if (sweeps == seen_sweeps_) return;
  seen_sweeps_ = sweeps;
  positions_.clear();
  position_ids_.clear();
  moves_.clear();
  viable_.clear();
  rows_.clear();
  row_words_ = 0;
}

void CanonicalFilter::bound_caches() {
  // between questions only (ids held by a search stay valid during it): past the bounds, the
  // position-keyed caches start over; states and steps are kept (their own bounds)
  if (positions_.size() < (size_t{1} << 14) && moves_.size() < (size_t{1} << 20) && row_words_ < kCachedRowWords &&
      viable_.size() < kCachedEntries)
    return;
  positions_.clear();
  position_ids_.clear();
  moves_.clear();
  viable_.clear();
  rows_.clear();
  row_words_ = 0;
}

void CanonicalFilter::fill(MatcherCore& m, int32_t state, uint32_t* out, int64_t num_words) {
  if (m.is_terminated()) {
    m.fill(out, num_words);
    return;
  }
  std::shared_ptr<const Row> row;
  {
    // no sweep while the search holds positions no matcher roots (sweep lock before mu_)
    std::shared_lock<std::shared_mutex> held(constraint_->sweep_mutex());
    std::lock_guard<std::mutex> lock(mu_);
    forget_swept();
    bound_caches();
    row = row_locked(position_id(m.position()), state);
  }
  const int64_t copy = std::min<int64_t>(static_cast<int64_t>(row->bits.size()), num_words);
  std::memcpy(out, row->bits.data(), static_cast<size_t>(copy) * 4);
  if (num_words > copy) std::memset(out + copy, 0, static_cast<size_t>(num_words - copy) * 4);
}

int32_t CanonicalFilter::accept(MatcherCore& m, int32_t state, int32_t token) {
  if (tok_->is_eos(token)) {
    const bool accepting = m.is_accepting();  // (takes the sweep lock itself: before ours)
    std::lock_guard<std::mutex> lock(mu_);
    return accepting && complete_locked(state) ? state : -1;
  }
  if (m.is_terminated()) return -1;
  std::shared_lock<std::shared_mutex> held(constraint_->sweep_mutex());
  std::lock_guard<std::mutex> lock(mu_);
  forget_swept();
  bound_caches();
  const int32_t position = position_id(m.position());
  auto it = rows_.find(pair_key(position, state));
  if (it != rows_.end()) {
    const bool on = token < static_cast<int32_t>(it->second->bits.size()) * 32 &&
                    ((it->second->bits[static_cast<size_t>(token >> 5)] >> (token & 31)) & 1u);
    return on ? step(state, token) : -1;
  }
  const MaskPtr mask = mask_of(position);
  if (!mask->test(token)) return -1;
  int64_t budget = max_search_;
  if (!live_after(position, state, token, budget)) return -1;
  return step(state, token);
}

bool CanonicalFilter::complete(int32_t state) {
  std::lock_guard<std::mutex> lock(mu_);
  return complete_locked(state);
}

int64_t CanonicalFilter::num_states() {
  std::lock_guard<std::mutex> lock(mu_);
  return static_cast<int64_t>(states_.size() + solo_states_.size());
}

}  // namespace tokamata
