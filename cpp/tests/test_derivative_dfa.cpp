// DerivativeDfa (derivative_dfa.hpp) plugged into LazyDfa/RegexCore (token_row.hpp) the way the
// bindings' make_native_core does it, and walk_trie.
//
// Invariants tested:
// - a token row of state s is exactly the set of trie tokens whose bytes lead s to a live
//   state (checked token by token through a second DerivativeDfa's step() over the same arena,
//   and against the brute-force regex matcher), plus accepting == the state's nullability; EOS,
//   special, empty and padding ids are never in a row; num_allowed counts the row's bits.
// - after row(s) was walked, advance(s, t) of an allowed token never meets UNKNOWN and gives the
//   state of the derivative by t's bytes; on an unexpanded DFA advance() is UNKNOWN and
//   advance_expanding() computes the same state (logic_error for a dead token).
// - rows are computed once (same pointer again) and shared across cores through the
//   SharedRowCache by key = key_base + untagged expression id; a core whose row came from
//   there expands along the token on consume.
// - expansion by the rule of LazyByteDfa.expand_for_core: an ASCII request computes every own
//   interval starting below 0x80, a non-ASCII one the whole row, mid-character only the
//   requested interval; classes coarser than one per byte give the same rows.
// - walk_trie ORs into the row and reports (node, state) for every live node with children
//   whose state accepts, in DFS order.
// - start(nodes) is the state of the arena alternation of the nodes (order, repeats and NOTHING
//   do not matter; kDead when nothing is left), and register_states tells the core's LazyDfa
//   of the states it lacks (lexer_starts.hpp's start states).
// - limits: more states than max_states (DerivativeDfa or LazyDfa) and time past max_seconds
//   raise LimitError(name, value, bound).
#include <algorithm>
#include <deque>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "fixtures.hpp"
#include "regex_oracle.hpp"
#include "runner.hpp"
#include "tokamata/derivative_dfa.hpp"
#include "tokamata/expr_arena.hpp"
#include "tokamata/token_row.hpp"

using namespace tokamata;
using namespace tokamata_test;

namespace {

// Every string of 1..3 bytes over {a,b,c}, then "d", "ad", "é", "" (text), then EOS and another
// special token, then three padding ids.
Vocabulary dfa_vocabulary() {
  std::vector<std::string> texts;
  for (const std::string& s : all_strings("abc", 3)) {
    if (!s.empty()) texts.push_back(s);
  }
  for (const char* extra : {"d", "ad", "\xC3\xA9", ""}) texts.push_back(extra);
  return make_vocabulary(texts, {"<eos>", "<x>"}, 3);
}

int32_t eos_of(const Vocabulary& v) {
  return static_cast<int32_t>(std::find(v.tokens.begin(), v.tokens.end(), "<eos>") - v.tokens.begin());
}

struct NamedRegex {
  std::string name;
  Regex regex;
};

// Expressions over {a,b,c} whose live prefixes all complete within 3 bytes.
std::vector<NamedRegex> row_table(RegexBuilder& b) {
  const Regex a = b.literal("a"), bb = b.literal("b"), c = b.literal("c");
  return {
      {"(ab|c)*c", b.concat(b.star(b.alt(b.literal("ab"), c)), c)},
      {"a(b|c)*a?", b.concat(a, b.concat(b.star(b.set("bc")), b.optional(a)))},
      {"(aa|b)*", b.star(b.alt(b.literal("aa"), bb))},
      {"(a|b){2,3}c?", b.concat(b.repeat(b.set("ab"), 2, 3), b.optional(c))},
      {"((a|b)*c) & (a(a|b|c)*)", b.intersect(b.concat(b.star(b.set("ab")), c), b.concat(a, b.star(b.set("abc"))))},
      {"tag1(ab+) | tag2(b?c)", b.alt(b.tagged(b.concat(a, b.plus(bb)), 1), b.tagged(b.concat(b.optional(bb), c), 2))},
  };
}

std::string token_string(const TokenTrie& trie, int32_t token) {
  return std::string(reinterpret_cast<const char*>(trie.token_data(token)), static_cast<size_t>(trie.token_length(token)));
}

// Whether `bytes` lead `node` to a live state, by the oracle DFA's step().
bool live_by_step(DerivativeDfa& oracle_dfa, int32_t node, const std::string& bytes) {
  int32_t s = oracle_dfa.intern_state(node);
  for (unsigned char c : bytes) {
    s = oracle_dfa.step(s, c);
    if (s < 0) return false;
  }
  return true;
}

std::vector<uint32_t> expected_row(const TokenTrie& trie, DerivativeDfa& oracle_dfa, int32_t node) {
  std::vector<uint32_t> bits(static_cast<size_t>((trie.vocab_size() + 31) / 32), 0u);
  for (int32_t t = 0; t < trie.num_tokens(); ++t) {
    if (trie.in_trie(t) && live_by_step(oracle_dfa, node, token_string(trie, t))) bits[t >> 5] |= 1u << (t & 31);
  }
  return bits;
}

int32_t popcount(const std::vector<uint32_t>& bits) {
  int32_t n = 0;
  for (uint32_t w : bits) n += __builtin_popcount(w);
  return n;
}

}  // namespace

TEST(dfa_rows_match_brute_force_and_advance_follows_derivatives) {
  const Vocabulary v = dfa_vocabulary();
  auto trie = v.trie();
  const int32_t eos = eos_of(v);
  for (int index = 0; index < 6; ++index) {
    auto arena = std::make_shared<ExprArena>();
    RegexBuilder b(*arena);
    const NamedRegex entry = row_table(b).at(static_cast<size_t>(index));
    CONTEXT("expression " << entry.name);
    const int64_t key_base = int64_t{1} << 40;
    auto lexer = make_lexer(arena, entry.regex.id, key_base);
    auto oracle_dfa = make_lexer(arena, entry.regex.id);
    auto core = make_native_core(trie, nullptr, lexer, {eos}, 1000);
    const LanguageTable language = language_of(*entry.regex.oracle, "abc", 7);
    // breadth first over the states tokens reach, with a string reaching each
    std::deque<std::pair<int32_t, std::string>> queue{{0, ""}};
    std::map<int32_t, std::string> seen{{0, ""}};
    while (!queue.empty()) {
      const auto [state, prefix] = queue.front();
      queue.pop_front();
      CONTEXT("state " << state << " after " << describe(prefix));
      const int32_t node = lexer->node(state);
      CHECK_EQ(node, derivative_by(*arena, entry.regex.id, prefix));
      CHECK(core->cached_row(state) == nullptr);
      const TokenRow* row = core->compute_row(state);
      CHECK(core->compute_row(state) == row);
      CHECK(core->cached_row(state) == row);
      const std::vector<uint32_t> expected = expected_row(*trie, *oracle_dfa, node);
      CHECK_EQ(set_bits(row->to_words()), set_bits(expected));
      CHECK_EQ(row->num_allowed, popcount(row->to_words()));
      CHECK_EQ(row->accepting, arena->nullable(node));
      CHECK_EQ(row->accepting, matches(*entry.regex.oracle, prefix));
      CHECK(!bit(row->to_words(), eos));
      CHECK_EQ(core->dfa().key(state), key_base + arena->untagged(node));
      for (int32_t t = 0; t < trie->vocab_size(); ++t) {
        const bool text = t < trie->num_tokens() && trie->in_trie(t);
        const std::string bytes = text ? token_string(*trie, t) : "";
        if (text && prefix.size() + bytes.size() <= 4) {  // the matcher agrees (live prefixes complete in 3 bytes)
          const std::string after = prefix + bytes;
          const bool over_abc = after.find_first_not_of("abc") == std::string::npos;
          CHECK_EQ(row->test(t), over_abc && language.live.at(after));
        }
        if (!row->test(t)) continue;
        const int32_t next = core->advance(state, t);
        CHECK(next != kUnknown);
        if (next < 0) continue;
        CHECK_EQ(lexer->node(next), derivative_by(*arena, node, bytes));
        if (!seen.count(next) && prefix.size() < 6) {
          seen.emplace(next, prefix + bytes);
          queue.emplace_back(next, prefix + bytes);
        }
      }
    }
    CHECK_EQ(core->num_cached_rows(), seen.size());
    CHECK_EQ(core->num_states(), lexer->num_states());
  }
}

TEST(dfa_advance_expanding_on_an_unexpanded_dfa) {
  const Vocabulary v = dfa_vocabulary();
  auto trie = v.trie();
  auto arena = std::make_shared<ExprArena>();
  RegexBuilder b(*arena);
  const Regex regex = b.concat(b.star(b.alt(b.literal("ab"), b.literal("c"))), b.literal("c"));  // (ab|c)*c
  auto lexer = make_lexer(arena, regex.id);
  auto core = make_native_core(trie, nullptr, lexer, {eos_of(v)}, 1000);
  struct Row {
    std::string token;
    bool live;
  };
  const std::vector<Row> table = {{"a", true}, {"ab", true}, {"abc", true}, {"cc", true}, {"c", true},
                                  {"b", false}, {"ba", false}, {"d", false}, {"ad", false}};
  auto id_of = [&v](const std::string& token) {
    return static_cast<int32_t>(std::find(v.tokens.begin(), v.tokens.end(), token) - v.tokens.begin());
  };
  for (const Row& row : table) CHECK_EQ(core->advance(0, id_of(row.token)), kUnknown);  // nothing expanded yet
  for (const Row& row : table) {
    CONTEXT("token " << describe(row.token));
    const int32_t t = id_of(row.token);
    if (!row.live) {
      CHECK_THROWS(core->advance_expanding(0, t), std::logic_error);
      continue;
    }
    const int32_t next = core->advance_expanding(0, t);
    CHECK(next >= 0);
    if (next >= 0) CHECK_EQ(lexer->node(next), derivative_by(*arena, regex.id, row.token));
    CHECK_EQ(core->advance(0, t), next);  // the path is expanded now
  }
  CHECK(core->cached_row(0) == nullptr);  // no walk happened
}

TEST(dfa_rows_are_shared_by_key_across_cores) {
  const Vocabulary v = dfa_vocabulary();
  auto trie = v.trie();
  auto arena = std::make_shared<ExprArena>();
  RegexBuilder b(*arena);
  const Regex regex = b.star(b.alt(b.literal("aa"), b.literal("b")));  // (aa|b)*
  auto shared = std::make_shared<SharedRowCache>(100);
  auto first = make_native_core(trie, shared, make_lexer(arena, regex.id, 1000), {eos_of(v)}, 1000);
  auto second_lexer = make_lexer(arena, regex.id, 1000);
  auto second = make_native_core(trie, shared, second_lexer, {eos_of(v)}, 1000);
  auto other_lexer = make_lexer(arena, regex.id, 2000);
  auto other = make_native_core(trie, shared, other_lexer, {eos_of(v)}, 1000);
  const TokenRow* row = first->compute_row(0);
  CHECK_EQ(shared->size(), 1u);
  CHECK(second->compute_row(0) == row);  // the same row object, from the shared cache
  const TokenRow* own = other->compute_row(0);  // another key base: computed again
  CHECK(own != row);
  CHECK_EQ(own->to_words(), row->to_words());
  CHECK_EQ(shared->size(), 2u);
  const int32_t aab = static_cast<int32_t>(std::find(v.tokens.begin(), v.tokens.end(), "aab") - v.tokens.begin());
  CHECK(bit(row->to_words(), aab));
  CHECK_EQ(second->advance(0, aab), kUnknown);  // the second core never walked
  const int32_t next = second->advance_expanding(0, aab);
  CHECK(next >= 0);
  if (next >= 0) CHECK_EQ(second_lexer->node(next), derivative_by(*arena, regex.id, "aab"));
}

TEST(shared_row_cache_evicts_only_rows_nobody_holds) {
  SharedRowCache tiny(2);
  auto held = std::make_shared<TokenRow>();
  tiny.insert(1, held);                          // a core holds row 1
  tiny.insert(2, std::make_shared<TokenRow>());  // row 2: only the cache
  CHECK_EQ(tiny.size(), 2u);
  tiny.insert(3, std::make_shared<TokenRow>());  // full: row 2 makes room, row 1 stays
  CHECK_EQ(tiny.size(), 2u);
  CHECK(tiny.find(1) == held);
  CHECK(tiny.find(2) == nullptr);
  CHECK(tiny.find(3) != nullptr);
  CHECK_EQ(tiny.evictions(), 1u);
  auto kept = tiny.find(3);                      // now both rows are held: nothing is added
  tiny.insert(4, std::make_shared<TokenRow>());
  CHECK(tiny.find(4) == nullptr);
  CHECK_EQ(tiny.size(), 2u);
  kept.reset();                                  // row 3 is free again, but was just found:
  tiny.insert(5, std::make_shared<TokenRow>());  // a second chance, then evicted
  CHECK(tiny.find(5) != nullptr);
  CHECK(tiny.find(3) == nullptr);
  SharedRowCache none(0);                        // a zero bound holds nothing
  none.insert(1, std::make_shared<TokenRow>());
  CHECK_EQ(none.size(), 0u);
}

TEST(dfa_expansion_computes_the_requested_run_of_intervals) {
  auto arena = std::make_shared<ExprArena>();
  RegexBuilder b(*arena);
  const int32_t records[] = {kUtf8, 0, 1, 0xE9, 0xE9};  // é
  const int32_t e_acute = arena->import_nodes(records, 5).at(0);
  const int32_t members[2] = {b.literal("ab").id, e_acute};
  const int32_t node = arena->alternation(members, 2);  // ab | é
  auto lexer = make_lexer(arena, node);
  auto core = make_native_core(make_vocabulary({"a"}, {}, 0).trie(), nullptr, lexer, {}, 100);
  LazyDfa& dfa = core->dfa();
  for (int byte = 0; byte < 256; ++byte) CHECK_EQ(dfa.peek(0, static_cast<uint8_t>(byte)), kUnknown);
  const int32_t after_a = dfa.step(0, 'a');
  CHECK(after_a >= 0);
  // an ASCII request computes every own interval that starts below 0x80 ...
  for (int byte : std::initializer_list<int>{0, 'b', 'z', 0x7F, 0x80, 0xC2}) {
    CONTEXT("byte " << byte);
    CHECK_EQ(dfa.peek(0, static_cast<uint8_t>(byte)), kDead);
  }
  // ... and leaves the non-ASCII intervals (é's lead byte, the bytes after it) unknown
  CHECK_EQ(dfa.peek(0, 0xC3), kUnknown);
  CHECK_EQ(dfa.peek(0, 0xC4), kUnknown);
  const int32_t lead = dfa.step(0, 0xC3);  // a non-ASCII request computes the whole row
  CHECK(lead >= 0);
  CHECK_EQ(dfa.peek(0, 0xC4), kDead);
  CHECK_EQ(dfa.peek(0, 0xFF), kDead);
  // inside a character only the requested continuation interval is computed
  const int32_t done = dfa.step(lead, 0xA9);
  CHECK(done >= 0);
  if (done >= 0) CHECK(dfa.accepting(done));
  CHECK_EQ(dfa.peek(lead, 0xAA), kUnknown);
  CHECK_EQ(dfa.peek(lead, 0x80), kUnknown);
  CHECK_EQ(dfa.peek(lead, 'a'), kUnknown);
  CHECK_EQ(dfa.step(lead, 0xAA), kDead);
  CHECK_EQ(dfa.step(lead, 'a'), kDead);
}

TEST(dfa_coarse_classes_give_the_same_rows) {
  const Vocabulary v = dfa_vocabulary();
  auto trie = v.trie();
  for (int index = 0; index < 6; ++index) {
    auto arena = std::make_shared<ExprArena>();
    RegexBuilder b(*arena);
    const NamedRegex entry = row_table(b).at(static_cast<size_t>(index));
    CONTEXT("expression " << entry.name);
    auto fine = make_native_core(trie, nullptr, make_lexer(arena, entry.regex.id), {eos_of(v)}, 1000);
    const int32_t starts[] = {0, 'a', 'b', 'c', 'd'};  // the cuts of every state of these expressions
    auto coarse_lexer = std::make_shared<DerivativeDfa>(arena, starts, 5, 0, 1000, 60.0);
    CHECK_EQ(coarse_lexer->num_classes(), 5);
    coarse_lexer->intern_state(entry.regex.id);
    auto coarse = make_native_core(trie, nullptr, coarse_lexer, {eos_of(v)}, 1000);
    // compare the rows of the states both reach by the same tokens
    std::vector<std::pair<int32_t, int32_t>> pending{{0, 0}};
    std::map<int32_t, int32_t> seen{{0, 0}};
    while (!pending.empty()) {
      const auto [f, c] = pending.back();
      pending.pop_back();
      const TokenRow* fine_row = fine->compute_row(f);
      const TokenRow* coarse_row = coarse->compute_row(c);
      CHECK_EQ(set_bits(coarse_row->to_words()), set_bits(fine_row->to_words()));
      CHECK_EQ(coarse_row->accepting, fine_row->accepting);
      for (int32_t t : set_bits(fine_row->to_words())) {
        const int32_t nf = fine->advance(f, t), nc = coarse->advance(c, t);
        if (nf < 0 || nc < 0) {
          FAIL("an allowed token led nowhere");
          continue;
        }
        if (!seen.count(nf)) {
          seen.emplace(nf, nc);
          pending.emplace_back(nf, nc);
        }
      }
    }
  }
}

TEST(dfa_walk_trie_reports_accepting_nodes_and_ors_bits) {
  const Vocabulary v = dfa_vocabulary();
  auto trie = v.trie();
  auto arena = std::make_shared<ExprArena>();
  RegexBuilder b(*arena);
  const Regex regex = b.star(b.alt(b.literal("ab"), b.literal("c")));  // (ab|c)*
  auto lexer = make_lexer(arena, regex.id);
  auto core = make_native_core(trie, nullptr, lexer, {eos_of(v)}, 1000);
  TokenRow row(static_cast<size_t>(core->num_words()));
  const int32_t padding = trie->vocab_size() - 1;
  row.set(padding);  // already there: kept
  row.num_allowed = 5;
  std::vector<std::pair<uint32_t, int32_t>> events;
  walk_trie(*trie, core->dfa(), 0, row, &events);
  CHECK(bit(row.to_words(), padding));
  CHECK_EQ(row.num_allowed, 5 + popcount(row.to_words()) - 1);
  // expected events: every node with children whose path leads to an accepting state
  std::vector<std::pair<uint32_t, int32_t>> expected_nodes;
  const auto& nodes = trie->nodes();
  for (uint32_t p = 1; p < nodes.size(); ++p) {
    if (nodes[p].subtree_size <= 1) continue;
    const std::string path = token_string(*trie, trie->node_token(p)).substr(0, static_cast<size_t>(trie->node_depth(p)));
    const int32_t d = derivative_by(*arena, regex.id, path);
    if (d != ExprArena::kNothingId && arena->nullable(d)) expected_nodes.emplace_back(p, d);
  }
  std::vector<std::pair<uint32_t, int32_t>> reported;
  for (const auto& [node, state] : events) reported.emplace_back(node, lexer->node(state));
  CHECK_EQ(reported, expected_nodes);
  CHECK(!expected_nodes.empty());
}

TEST(dfa_states_keys_ends_and_argument_checks) {
  auto arena = std::make_shared<ExprArena>();
  RegexBuilder b(*arena);
  const Regex two = b.alt(b.tagged(b.literal("ab"), 3), b.tagged(b.star(b.literal("a")), 4));
  auto lexer = make_lexer(arena, two.id, 77);
  CHECK_EQ(lexer->intern_state(two.id), 0);  // a node has at most one state
  CHECK_EQ(lexer->num_states(), 1);
  CHECK_THROWS(lexer->intern_state(ExprArena::kNothingId), std::invalid_argument);
  CHECK_THROWS(lexer->node(1), std::out_of_range);
  CHECK_THROWS(lexer->step(0, 256), std::out_of_range);
  CHECK_EQ(lexer->ends(0), (std::vector<int32_t>{4}));
  CHECK(lexer->accepting(0));
  const int32_t after_a = lexer->step(0, 'a');
  CHECK_EQ(lexer->ends(after_a), (std::vector<int32_t>{4}));
  const int32_t after_ab = lexer->step(after_a, 'b');
  CHECK_EQ(lexer->ends(after_ab), (std::vector<int32_t>{3}));
  CHECK_EQ(lexer->step(0, 'b'), kDead);
  CHECK_EQ(lexer->key(0), 77 + arena->untagged(two.id));
  CHECK_EQ(lexer->accepting_from(0), (std::vector<uint8_t>{1, 1, 1}));
  CHECK_EQ(lexer->accepting_from(2), (std::vector<uint8_t>{1}));
  // equal keys for equal languages: the same expression with other tags
  const Regex retagged = b.alt(b.tagged(b.literal("ab"), 5), b.tagged(b.star(b.literal("a")), 6));
  CHECK_EQ(lexer->key(lexer->intern_state(retagged.id)), lexer->key(0));
  const int32_t bad_start[] = {1, 2};
  CHECK_THROWS(DerivativeDfa(arena, bad_start, 2, 0, 10, 1.0), std::invalid_argument);
  const int32_t decreasing[] = {0, 5, 5};
  CHECK_THROWS(DerivativeDfa(arena, decreasing, 3, 0, 10, 1.0), std::invalid_argument);
  const Vocabulary v = dfa_vocabulary();
  CHECK_THROWS(make_native_core(v.trie(), nullptr, make_lexer(arena, two.id), {v.vocab_size}, 10), std::invalid_argument);
}

TEST(dfa_start_states_are_the_interned_alternation_and_register_with_the_core) {
  auto arena = std::make_shared<ExprArena>();
  RegexBuilder b(*arena);
  const Regex ab = b.tagged(b.literal("ab"), 0), as = b.tagged(b.plus(b.literal("a")), 1), c = b.tagged(b.literal("c"), 2);
  auto lexer = make_lexer(arena, ab.id);  // state 0: one terminal
  const Vocabulary v = dfa_vocabulary();
  auto core = make_native_core(v.trie(), nullptr, lexer, {eos_of(v)}, 1000);
  CHECK_EQ(core->dfa().num_states(), 1);
  // a single member is its own state; members in any order, repeated or with NOTHING, are one state
  CHECK_EQ(lexer->start(std::vector<int32_t>{ab.id}.data(), 1), 0);
  const std::vector<int32_t> three{c.id, ab.id, as.id}, shuffled{as.id, ExprArena::kNothingId, c.id, ab.id, as.id};
  const int32_t state = lexer->start(three.data(), three.size());
  CHECK_EQ(state, 1);
  CHECK_EQ(lexer->start(shuffled.data(), shuffled.size()), state);
  CHECK_EQ(lexer->node(state), arena->alternation(three.data(), three.size()));
  CHECK_EQ(lexer->intern_state(arena->alternation(shuffled.data(), shuffled.size())), state);
  CHECK_EQ(lexer->ends(lexer->step(state, 'a')), (std::vector<int32_t>{1}));
  // nothing to start: dead, and no state added
  const std::vector<int32_t> none{ExprArena::kNothingId};
  CHECK_EQ(lexer->start(none.data(), none.size()), kDead);
  CHECK_EQ(lexer->start(nullptr, 0), kDead);
  CHECK_THROWS(lexer->start(std::vector<int32_t>{-1}.data(), 1), std::out_of_range);
  // the core learns of the new states (with their accepting flags) only when told
  const int32_t before = core->dfa().num_states();
  CHECK(before < lexer->num_states());
  lexer->register_states(core->dfa());
  CHECK_EQ(core->dfa().num_states(), lexer->num_states());
  for (int32_t s = 0; s < lexer->num_states(); ++s) CHECK_EQ(core->dfa().accepting(s), lexer->accepting(s));
  lexer->register_states(core->dfa());  // (nothing new: nothing added)
  CHECK_EQ(core->dfa().num_states(), lexer->num_states());
}

TEST(dfa_limit_errors_name_value_and_bound) {
  const Vocabulary v = dfa_vocabulary();
  auto trie = v.trie();
  {  // the DerivativeDfa's own state bound
    auto arena = std::make_shared<ExprArena>();
    RegexBuilder b(*arena);
    auto lexer = make_lexer(arena, b.repeat(b.literal("a"), 0, 10).id, 0, /*max_states=*/2);
    auto core = make_native_core(trie, nullptr, lexer, {eos_of(v)}, 1000);
    try {
      core->compute_row(0);
      FAIL("no LimitError past DerivativeDfa max_states");
    } catch (const LimitError& e) {
      CHECK_EQ(e.name, std::string("max_dfa_states"));
      CHECK_EQ(e.value, 3.0);
      CHECK_EQ(e.bound, 2.0);
    }
  }
  {  // the LazyDfa's state bound
    auto arena = std::make_shared<ExprArena>();
    RegexBuilder b(*arena);
    auto lexer = make_lexer(arena, b.repeat(b.literal("a"), 0, 10).id);
    auto core = make_native_core(trie, nullptr, lexer, {eos_of(v)}, /*max_states=*/2);
    try {
      core->compute_row(0);
      FAIL("no LimitError past LazyDfa max_states");
    } catch (const LimitError& e) {
      CHECK_EQ(e.name, std::string("max_dfa_states"));
      CHECK_EQ(e.value, 3.0);  // the third state (each expansion here adds one)
      CHECK_EQ(e.bound, 2.0);
    }
    CHECK_EQ(core->dfa().num_states(), 2);
  }
  {  // time: any expansion at all exceeds a negative budget
    auto arena = std::make_shared<ExprArena>();
    RegexBuilder b(*arena);
    auto lexer = make_lexer(arena, b.literal("ab").id, 0, 100, /*max_seconds=*/-1.0);
    try {
      lexer->step(0, 'a');
      FAIL("no LimitError past max_seconds");
    } catch (const LimitError& e) {
      CHECK_EQ(e.name, std::string("max_compile_seconds"));
      CHECK(e.value >= 0.0);
      CHECK_EQ(e.bound, -1.0);
    }
  }
}
