// EarleyCore::shortest_completion (earley_completion.cpp), the token budgets' witnesses.
//
// Invariants tested, at every Earley set reached by terminal strings up to a length, on hand
// grammars (left recursion, hidden left recursion, empty rules, ambiguity, unit rules) and
// pseudo-random ones, against the brute-force Recognizer of grammar_oracle.hpp:
// - the completion c returned from the set after w makes w c a sentence;
// - c is shortest: no string of fewer terminals completes w (enumerated up to 4 terminals);
// - max_length below the shortest completion gives false.
#include <algorithm>
#include <string>
#include <vector>

#include "grammar_oracle.hpp"
#include "runner.hpp"
#include "tokamata/earley.hpp"
#include "tokamata/grammar_rules.hpp"

using namespace tokamata;
using namespace tokamata_test;

namespace {

// The fewest terminals c with w c a sentence, enumerated up to `limit` (-1: none that short).
int shortest_by_enumeration(const Grammar& g, int32_t start, const std::vector<int32_t>& w, int limit) {
  for (int k = 0; k <= limit; ++k) {
    std::vector<int32_t> c(static_cast<size_t>(k), 0);
    for (;;) {
      std::vector<int32_t> whole = w;
      whole.insert(whole.end(), c.begin(), c.end());
      if (Recognizer(g, whole).sentence(start)) return k;
      int i = k - 1;
      while (i >= 0 && c[static_cast<size_t>(i)] == g.num_terminals - 1) c[static_cast<size_t>(i--)] = 0;
      if (i < 0) break;
      ++c[static_cast<size_t>(i)];
    }
  }
  return -1;
}

void check_completions(EarleyCore& core, const Grammar& g, int32_t start, int32_t handle, std::vector<int32_t>& w,
                       int depth, int& checked) {
  CONTEXT("after terminals " << describe(w));
  std::vector<int32_t> c;
  CHECK(core.shortest_completion(handle, 1000, c));
  std::vector<int32_t> whole = w;
  whole.insert(whole.end(), c.begin(), c.end());
  CHECK(Recognizer(g, whole).sentence(start));
  const int best = shortest_by_enumeration(g, start, w, 4);
  if (best >= 0) {
    CHECK_EQ(static_cast<int>(c.size()), best);
    if (best > 0) {
      std::vector<int32_t> cut;
      CHECK(!core.shortest_completion(handle, best - 1, cut));
    }
  }
  ++checked;
  if (depth == 0) return;
  for (int32_t t = 0; t < g.num_terminals; ++t) {
    const int32_t child = core.scan(handle, t);
    if (child < 0) continue;
    w.push_back(t);
    check_completions(core, g, start, child, w, depth - 1, checked);
    w.pop_back();
  }
}

uint32_t next_random(uint64_t& seed, uint32_t bound) {
  seed = seed * 6364136223846793005ull + 1442695040888963407ull;
  return static_cast<uint32_t>((seed >> 33) % bound);
}

}  // namespace

TEST(shortest_completion_on_hand_grammars) {
  struct Case {
    const char* name;
    Grammar grammar;
    int depth;
  };
  const std::vector<Case> cases = {
      {"left-recursive list", Grammar{1, 2, {{0, {nt(0), 1, 0}}, {0, {0}}}}, 5},
      {"balanced parentheses", Grammar{1, 2, {{0, {0, nt(0), 1, nt(0)}}, {0, {}}}}, 6},
      {"ambiguous expressions", Grammar{1, 5, {{0, {nt(0), 1, nt(0)}}, {0, {nt(0), 2, nt(0)}}, {0, {0}}, {0, {3, nt(0), 4}}}}, 4},
      {"nullable everywhere", Grammar{3, 3, {{0, {nt(1), nt(2), 2}}, {0, {nt(2)}}, {1, {0}}, {1, {}}, {2, {nt(1), nt(1)}}, {2, {1}}}}, 4},
      {"hidden left recursion", Grammar{2, 3, {{0, {nt(1), nt(0), 1}}, {0, {2}}, {1, {}}, {1, {0}}}}, 5},
      {"unit rules", Grammar{3, 2, {{0, {nt(1)}}, {1, {0, nt(1)}}, {1, {0}}, {1, {nt(2)}}, {2, {1}}}}, 5},
      {"nested closers", Grammar{2, 3, {{0, {0, nt(1), 1}}, {1, {0, nt(1), 1}}, {1, {2}}}}, 6},
  };
  for (const Case& entry : cases) {
    CONTEXT("grammar " << entry.name);
    EarleyCore core(earley_tables(entry.grammar.flat(), 0), 100000, 100000);
    std::vector<int32_t> w;
    int checked = 0;
    check_completions(core, entry.grammar, 0, 0, w, entry.depth, checked);
    CHECK(checked > entry.depth);
  }
}

TEST(shortest_completion_on_pseudo_random_grammars) {
  uint64_t seed = 1234567;
  int tried = 0;
  for (int round = 0; round < 400 && tried < 80; ++round) {
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
    const std::vector<uint8_t> productive = naive_productive(g);
    if (std::count(productive.begin(), productive.end(), 0)) continue;  // EarleyCore's precondition
    ++tried;
    CONTEXT("grammar " << round);
    EarleyCore core(earley_tables(g.flat(), 0), 100000, 100000);
    std::vector<int32_t> w;
    int checked = 0;
    check_completions(core, g, 0, 0, w, 3, checked);
  }
  CHECK(tried >= 40);
}
