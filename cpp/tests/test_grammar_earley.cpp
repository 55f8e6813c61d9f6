// GrammarRules (grammar_rules.hpp) and EarleyCore (earley.hpp).
//
// Invariants tested:
// - the constructor validates every index (std::invalid_argument), so analyses never read out
//   of range.
// - productive / nullable / reachable are the least fixed points their comments define (a hand
//   grammar with unproductive, mutually recursive and unreachable nonterminals, and pseudo-random
//   grammars against the naive fixed points of grammar_oracle.hpp).
// - earley_tables: positions in rule order, prefix positions up to the first terminal or
//   non-nullable nonterminal, sorted prediction closures.
// - EarleyCore: handle 0 is the empty input; for every terminal string w up to a length, the
//   handle after w exists iff w is a prefix of a sentence, accepting(h) iff w is a sentence,
//   allowed(h) is exactly the terminals t with w t a prefix of a sentence, and scan(h, t) == -1
//   iff t is not allowed (brute-force Recognizer; left recursion, hidden left recursion,
//   empty rules, ambiguity, pseudo-random grammars); scan is memoized (scan_if_built agrees);
//   equal kernels are one handle; limits raise LimitError (max_earley_items, max_parser_states).
#include <algorithm>
#include <stdexcept>
#include <string>
#include <vector>

#include "grammar_oracle.hpp"
#include "runner.hpp"
#include "tokamata/earley.hpp"
#include "tokamata/grammar_rules.hpp"
#include "tokamata/token_row.hpp"  // LimitError

using namespace tokamata;
using namespace tokamata_test;

namespace {

struct NamedGrammar {
  std::string name;
  Grammar grammar;
  int32_t start;
  int max_length;  // strings explored
};

// S=0 A=1 B=2 D=3 E=4 G=5 H=6 I=7 J=8 K=9 L=10; terminals a b c d g = 0..4.
Grammar analysis_grammar() {
  Grammar g;
  g.num_nonterminals = 11;
  g.num_terminals = 5;
  g.rules = {
      {0, {nt(1), 1}},      // S -> A b
      {0, {nt(2), 0}},      // S -> B a        (B unproductive: unusable)
      {0, {nt(2), nt(5)}},  // S -> B G        (so G is not reached through it)
      {0, {nt(6)}},         // S -> H
      {1, {0, nt(1)}},      // A -> a A
      {1, {}},              // A -> ε
      {2, {nt(2), 2}},      // B -> B c        (only recursive: unproductive)
      {3, {3}},             // D -> d          (unreachable)
      {4, {nt(1), nt(1)}},  // E -> A A        (nullable through A; unreachable)
      {5, {4}},             // G -> g
      {6, {nt(7)}},         // H -> I          (a chain declared before its end)
      {7, {nt(8)}},         // I -> J
      {8, {0}},             // J -> a
      {9, {nt(10)}},        // K -> L          (mutual recursion: unproductive)
      {10, {nt(9)}},        // L -> K
  };
  return g;
}

std::vector<NamedGrammar> earley_grammars() {
  std::vector<NamedGrammar> out;
  {  // L -> L , x | x          (x = 0, ',' = 1)
    Grammar g{1, 2, {{0, {nt(0), 1, 0}}, {0, {0}}}};
    out.push_back({"left-recursive list", g, 0, 6});
  }
  {  // P -> ( P ) P | ε        ('(' = 0, ')' = 1)
    Grammar g{1, 2, {{0, {0, nt(0), 1, nt(0)}}, {0, {}}}};
    out.push_back({"balanced parentheses", g, 0, 7});
  }
  {  // E -> E + E | E * E | n | ( E )     (n + * ( ) = 0..4)
    Grammar g{1, 5, {{0, {nt(0), 1, nt(0)}}, {0, {nt(0), 2, nt(0)}}, {0, {0}}, {0, {3, nt(0), 4}}}};
    out.push_back({"ambiguous expressions", g, 0, 4});
  }
  {  // S -> A B x | B ; A -> a | ε ; B -> A A | b      (a b x = 0..2)
    Grammar g{3, 3, {{0, {nt(1), nt(2), 2}}, {0, {nt(2)}}, {1, {0}}, {1, {}}, {2, {nt(1), nt(1)}}, {2, {1}}}};
    out.push_back({"nullable everywhere", g, 0, 5});
  }
  {  // S -> A S b | c ; A -> ε | a      (hidden left recursion; a b c = 0..2)
    Grammar g{2, 3, {{0, {nt(1), nt(0), 1}}, {0, {2}}, {1, {}}, {1, {0}}}};
    out.push_back({"hidden left recursion", g, 0, 5});
  }
  {  // S -> T ; T -> a T | a | U ; U -> b      (unit rules, right recursion)
    Grammar g{3, 2, {{0, {nt(1)}}, {1, {0, nt(1)}}, {1, {0}}, {1, {nt(2)}}, {2, {1}}}};
    out.push_back({"unit rules", g, 0, 6});
  }
  return out;
}

// Walks every string up to max_length from `handle`, comparing with the Recognizer.
void explore(EarleyCore& core, const Grammar& g, int32_t start, int32_t handle, std::vector<int32_t>& w, int max_length,
             int& visited) {
  ++visited;
  CONTEXT("after terminals " << describe(w));
  const Recognizer here(g, w);
  CHECK(here.viable(start));
  CHECK_EQ(core.accepting(handle), here.sentence(start));
  std::vector<int32_t> allowed;
  std::vector<int32_t> extended = w;
  extended.push_back(0);
  for (int32_t t = 0; t < g.num_terminals; ++t) {
    extended.back() = t;
    if (Recognizer(g, extended).viable(start)) allowed.push_back(t);
  }
  CHECK_EQ(core.allowed(handle), allowed);
  CHECK_EQ(core.allowed_by_id(core.allowed_id(handle)), allowed);
  for (int32_t t = 0; t < g.num_terminals; ++t) {
    const int32_t before = core.scan_if_built(handle, t);
    const int32_t child = core.scan(handle, t);
    const bool is_allowed = std::find(allowed.begin(), allowed.end(), t) != allowed.end();
    CHECK_EQ(child >= 0, is_allowed);
    CHECK_EQ(child >= -1, true);
    if (child < 0) CHECK_EQ(before, -1);
    else CHECK(before == EarleyCore::kScanNotBuilt || before == child);
    CHECK_EQ(core.scan_if_built(handle, t), child);
    CHECK_EQ(core.scan(handle, t), child);
    if (child >= 0 && static_cast<int>(w.size()) < max_length) {
      w.push_back(t);
      explore(core, g, start, child, w, max_length, visited);
      w.pop_back();
    }
  }
}

uint32_t next_random(uint64_t& seed, uint32_t bound) {
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<uint32_t>((seed >> 33) % bound);
}

Grammar random_grammar(uint64_t& seed) {
  Grammar g;
  g.num_nonterminals = 1 + static_cast<int32_t>(next_random(seed, 3));
  g.num_terminals = 2;
  for (int32_t lhs = 0; lhs < g.num_nonterminals; ++lhs) {
    const uint32_t count = 1 + next_random(seed, 3);
    for (uint32_t r = 0; r < count; ++r) {
      Rule rule{lhs, {}};
      const uint32_t length = next_random(seed, 4);
      for (uint32_t k = 0; k < length; ++k) {
        if (next_random(seed, 2)) rule.rhs.push_back(static_cast<int32_t>(next_random(seed, 2)));
        else rule.rhs.push_back(nt(static_cast<int32_t>(next_random(seed, static_cast<uint32_t>(g.num_nonterminals)))));
      }
      g.rules.push_back(rule);
    }
  }
  return g;
}

}  // namespace

TEST(rules_validate_every_index) {
  struct Row {
    const char* problem;
    std::vector<int32_t> lhs, offsets, rhs;
    int32_t nonterminals, terminals;
  };
  const std::vector<Row> table = {
      {"one offset too few", {0, 0}, {0, 1}, {0}, 1, 1},
      {"offsets not from 0", {0}, {1, 1}, {0}, 1, 1},
      {"offsets not to the end", {0}, {0, 1}, {0, 0}, 1, 1},
      {"offsets decrease", {0, 0}, {0, 2, 1}, {0}, 1, 1},
      {"lhs too big", {1}, {0, 1}, {0}, 1, 1},
      {"lhs negative", {-1}, {0, 1}, {0}, 1, 1},
      {"terminal too big", {0}, {0, 1}, {1}, 1, 1},
      {"nonterminal too big", {0}, {0, 1}, {nt(1)}, 1, 1},
      {"INT32_MIN symbol", {0}, {0, 1}, {INT32_MIN}, 1, 1},
      {"negative counts", {}, {0}, {}, -1, 0},
  };
  for (const Row& row : table) {
    CONTEXT(row.problem);
    CHECK_THROWS(GrammarRules(row.lhs, row.offsets, row.rhs, row.nonterminals, row.terminals), std::invalid_argument);
  }
  const GrammarRules fine({0}, {0, 1}, {0}, 1, 1);
  CHECK_THROWS(fine.reachable(1, {1}), std::invalid_argument);
  CHECK_THROWS(fine.reachable(0, {1, 1}), std::invalid_argument);
}

TEST(rules_productive_nullable_reachable_on_a_hand_grammar) {
  const Grammar g = analysis_grammar();
  const GrammarRules rules = g.flat();
  CHECK_EQ(rules.num_rules(), 15);
  //                                      S  A  B  D  E  G  H  I  J  K  L
  const std::vector<uint8_t> productive = {1, 1, 0, 1, 1, 1, 1, 1, 1, 0, 0};
  const std::vector<uint8_t> nullable = {0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  const std::vector<uint8_t> from_s = {1, 1, 0, 0, 0, 0, 1, 1, 1, 0, 0};
  const std::vector<uint8_t> from_e = {0, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
  const std::vector<uint8_t> from_k_all = {0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 1};
  CHECK_EQ(rules.productive(), productive);
  CHECK_EQ(rules.nullable(), nullable);
  CHECK_EQ(rules.reachable(0, productive), from_s);
  CHECK_EQ(rules.reachable(4, productive), from_e);
  // K -> L is not usable while L is unproductive
  CHECK_EQ(rules.reachable(9, productive), (std::vector<uint8_t>{0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0}));
  // with every nonterminal taken as productive, B and G become reachable from S
  const std::vector<uint8_t> all(11, 1);
  CHECK_EQ(rules.reachable(0, all), (std::vector<uint8_t>{1, 1, 1, 0, 0, 1, 1, 1, 1, 0, 0}));
  CHECK_EQ(rules.reachable(9, all), from_k_all);
}

TEST(rules_match_naive_fixed_points_on_pseudo_random_grammars) {
  uint64_t seed = 12345;
  for (int round = 0; round < 300; ++round) {
    CONTEXT("grammar " << round);
    Grammar g = random_grammar(seed);
    g.num_nonterminals += 1;  // and one nonterminal with no rules at all
    const GrammarRules rules = g.flat();
    const std::vector<uint8_t> productive = naive_productive(g);
    CHECK_EQ(rules.productive(), productive);
    CHECK_EQ(rules.nullable(), naive_nullable(g));
    for (int32_t start = 0; start < g.num_nonterminals; ++start) {
      CHECK_EQ(rules.reachable(start, productive), naive_reachable(g, start, productive));
    }
  }
}

TEST(earley_tables_of_a_nullable_grammar) {
  // S -> A B x | B ; A -> a | ε ; B -> A A | b      (S A B = 0..2; a b x = 0..2)
  const Grammar g = earley_grammars().at(3).grammar;
  const EarleyTables t = earley_tables(g.flat(), 0);
  const int32_t end = kEndOfRule;
  CHECK_EQ(t.next_symbol, (std::vector<int32_t>{nt(1), nt(2), 2, end, nt(2), end, 0, end, end, nt(1), nt(1), end, 1, end}));
  CHECK_EQ(t.lhs_of, (std::vector<int32_t>{0, 0, 0, 0, 0, 0, 1, 1, 1, 2, 2, 2, 2, 2}));
  CHECK_EQ(t.nullable, (std::vector<uint8_t>{1, 1, 1}));
  struct Row {
    int32_t nonterminal;
    std::vector<int32_t> prefix_positions, closure;
  };
  const std::vector<Row> table = {{0, {0, 1, 2, 4}, {0, 1, 2}}, {1, {6}, {1}}, {2, {9, 10, 12}, {1, 2}}};
  CHECK_EQ(t.prefix_positions.size(), 3u);
  CHECK_EQ(t.prediction_closure.size(), 3u);
  for (const Row& row : table) {
    CONTEXT("nonterminal " << row.nonterminal);
    CHECK_EQ(std::vector<int32_t>(t.prefix_positions.begin(row.nonterminal), t.prefix_positions.end(row.nonterminal)),
             row.prefix_positions);
    CHECK_EQ(std::vector<int32_t>(t.prediction_closure.begin(row.nonterminal), t.prediction_closure.end(row.nonterminal)),
             row.closure);
  }
  CHECK_THROWS(earley_tables(g.flat(), 3), std::invalid_argument);
}

TEST(earley_matches_the_recognizer_on_hand_grammars) {
  for (const NamedGrammar& entry : earley_grammars()) {
    CONTEXT("grammar " << entry.name);
    CHECK_EQ(naive_productive(entry.grammar), std::vector<uint8_t>(entry.grammar.num_nonterminals, 1));
    EarleyCore core(earley_tables(entry.grammar.flat(), entry.start), 100000, 100000);
    std::vector<int32_t> w;
    int visited = 0;
    explore(core, entry.grammar, entry.start, 0, w, entry.max_length, visited);
    CHECK(visited > entry.max_length);  // the walk went somewhere
  }
}

TEST(earley_matches_the_recognizer_on_pseudo_random_grammars) {
  uint64_t seed = 987654321;
  int tried = 0;
  for (int round = 0; round < 400 && tried < 120; ++round) {
    const Grammar g = random_grammar(seed);
    const std::vector<uint8_t> productive = naive_productive(g);
    if (std::count(productive.begin(), productive.end(), 0)) continue;  // EarleyCore's precondition
    ++tried;
    CONTEXT("grammar " << round);
    EarleyCore core(earley_tables(g.flat(), 0), 100000, 100000);
    std::vector<int32_t> w;
    int visited = 0;
    explore(core, g, 0, 0, w, 4, visited);
  }
  CHECK(tried >= 60);
}

TEST(earley_equal_kernels_are_one_handle) {
  // L -> L , x | x: after "x,x" the kernel is {L -> L , x . (origin 0)} however long the list
  const Grammar g = earley_grammars().at(0).grammar;
  EarleyCore core(earley_tables(g.flat(), 0), 1000, 1000);
  const int32_t x = 0, comma = 1;
  std::vector<int32_t> after_item, after_comma;  // handles after each "x" and each ","
  int32_t h = 0;
  for (int i = 0; i < 40; ++i) {
    h = core.scan(h, x);
    after_item.push_back(h);
    h = core.scan(h, comma);
    after_comma.push_back(h);
  }
  // "x" and "x,x" have different kernels but the same content (open items and acceptance):
  // states are deduplicated by content, so they are one handle, as every later "x" is
  CHECK_EQ(core.num_sets(), 3);
  for (size_t i = 1; i < after_item.size(); ++i) CHECK_EQ(after_item[i], after_item[0]);
  for (size_t i = 1; i < after_comma.size(); ++i) CHECK_EQ(after_comma[i], after_comma[0]);
  CHECK(core.accepting(after_item[0]));
  CHECK(!core.accepting(after_comma[0]));
  CHECK(!core.accepting(0));
  CHECK_EQ(core.scan(after_comma[0], comma), -1);
  CHECK_THROWS(core.accepting(3), std::out_of_range);
  CHECK_THROWS(core.scan(-1, x), std::out_of_range);
  CHECK_THROWS(core.allowed_by_id(1000), std::out_of_range);
}

TEST(earley_limits_raise_limit_errors) {
  const Grammar g = earley_grammars().at(0).grammar;
  {
    EarleyCore core(earley_tables(g.flat(), 0), /*max_items=*/1, 1000);
    try {
      core.scan(0, 0);
      FAIL("no LimitError past max_items");
    } catch (const LimitError& e) {
      CHECK_EQ(e.name, std::string("max_earley_items"));
      CHECK_EQ(e.bound, 1.0);
      CHECK(e.value > e.bound);
    }
    CHECK_EQ(core.num_sets(), 1);  // nothing half-built was kept
  }
  {
    EarleyCore core(earley_tables(g.flat(), 0), 1000, /*max_sets=*/2);
    const int32_t first = core.scan(0, 0);
    CHECK_EQ(first, 1);
    try {
      core.scan(first, 1);
      FAIL("no LimitError past max_sets");
    } catch (const LimitError& e) {
      CHECK_EQ(e.name, std::string("max_parser_states"));
      CHECK_EQ(e.value, 3.0);
      CHECK_EQ(e.bound, 2.0);
    }
    CHECK_EQ(core.scan(0, 0), first);  // memoized scans still answer
    CHECK_EQ(core.scan(first, 0), -1);
  }
}
