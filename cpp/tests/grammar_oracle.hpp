// Grammars for the tests, written as rules of symbols, and brute-force answers about them.
//
// Invariants:
// - A symbol s >= 0 is terminal s, s < 0 is nonterminal -s - 1 (grammar_rules.hpp's encoding);
//   nt(j) writes nonterminal j.
// - The fixed points (productive, nullable, reachable) are naive: iterate over all rules until
//   nothing changes. They share no code with GrammarRules' work lists.
// - Recognizer decides, for one terminal string w, which symbols derive each substring
//   w[i:j] exactly and which derive a string that w[i:] is a prefix of (a least fixed point by
//   iteration, correct for every grammar: left recursion, empty rules, ambiguity). The prefix
//   answers assume every nonterminal is productive (as EarleyCore does).
#pragma once

#include <cstdint>
#include <vector>

#include "tokamata/grammar_rules.hpp"

namespace tokamata_test {

constexpr int32_t nt(int32_t j) { return -j - 1; }

struct Rule {
  int32_t lhs;
  std::vector<int32_t> rhs;
};

struct Grammar {
  int32_t num_nonterminals = 0;
  int32_t num_terminals = 0;
  std::vector<Rule> rules;

  tokamata::GrammarRules flat() const {
    std::vector<int32_t> lhs, offsets{0}, rhs;
    for (const Rule& r : rules) {
      lhs.push_back(r.lhs);
      rhs.insert(rhs.end(), r.rhs.begin(), r.rhs.end());
      offsets.push_back(static_cast<int32_t>(rhs.size()));
    }
    return tokamata::GrammarRules(lhs, offsets, rhs, num_nonterminals, num_terminals);
  }
};

inline std::vector<uint8_t> naive_productive(const Grammar& g) {
  std::vector<uint8_t> marked(static_cast<size_t>(g.num_nonterminals), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (const Rule& r : g.rules) {
      bool all = true;
      for (int32_t s : r.rhs) all = all && (s >= 0 || marked[nt(s)]);
      if (all && !marked[r.lhs]) marked[r.lhs] = changed = true;
    }
  }
  return marked;
}

inline std::vector<uint8_t> naive_nullable(const Grammar& g) {
  std::vector<uint8_t> marked(static_cast<size_t>(g.num_nonterminals), 0);
  for (bool changed = true; changed;) {
    changed = false;
    for (const Rule& r : g.rules) {
      bool all = true;
      for (int32_t s : r.rhs) all = all && s < 0 && marked[nt(s)];
      if (all && !marked[r.lhs]) marked[r.lhs] = changed = true;
    }
  }
  return marked;
}

inline std::vector<uint8_t> naive_reachable(const Grammar& g, int32_t start, const std::vector<uint8_t>& productive) {
  std::vector<uint8_t> marked(static_cast<size_t>(g.num_nonterminals), 0);
  marked[start] = 1;
  for (bool changed = true; changed;) {
    changed = false;
    for (const Rule& r : g.rules) {
      if (!marked[r.lhs]) continue;
      bool usable = true;
      for (int32_t s : r.rhs) usable = usable && (s >= 0 || productive[nt(s)]);
      if (!usable) continue;
      for (int32_t s : r.rhs) {
        if (s < 0 && !marked[nt(s)]) marked[nt(s)] = changed = true;
      }
    }
  }
  return marked;
}

class Recognizer {
 public:
  Recognizer(const Grammar& g, const std::vector<int32_t>& w) : g_(g), w_(w), n_(static_cast<int>(w.size())) {
    const size_t cells = static_cast<size_t>(g.num_nonterminals) * (n_ + 1) * (n_ + 1);
    exact_.assign(cells, 0);
    prefix_.assign(static_cast<size_t>(g.num_nonterminals) * (n_ + 1), 0);
    for (bool changed = true; changed;) {  // exact derivations
      changed = false;
      for (const Rule& r : g.rules) {
        for (int i = 0; i <= n_; ++i) {
          std::vector<uint8_t> reach = after(r.rhs, r.rhs.size(), i);
          for (int j = i; j <= n_; ++j) {
            if (reach[j] && !exact(nt(r.lhs), i, j)) exact_[cell(r.lhs, i, j)] = changed = true;
          }
        }
      }
    }
    for (bool changed = true; changed;) {  // w[i:] is a prefix of something the symbol derives
      changed = false;
      for (const Rule& r : g.rules) {
        for (int i = 0; i <= n_; ++i) {
          if (prefix_[static_cast<size_t>(r.lhs) * (n_ + 1) + i]) continue;
          bool found = r.rhs.empty() && i == n_;
          std::vector<uint8_t> reach(n_ + 1, 0);
          reach[i] = 1;
          for (size_t m = 0; m < r.rhs.size() && !found; ++m) {
            for (int p = 0; p <= n_ && !found; ++p) found = reach[p] && prefix(r.rhs[m], p);
            reach = step(reach, r.rhs[m]);
          }
          if (found) prefix_[static_cast<size_t>(r.lhs) * (n_ + 1) + i] = changed = true;
        }
      }
    }
  }

  // symbol derives w[i:j]
  bool exact(int32_t symbol, int i, int j) const {
    if (symbol >= 0) return j == i + 1 && w_[i] == symbol;
    return exact_[cell(nt(symbol), i, j)] != 0;
  }
  // w[i:] is a prefix of a string the symbol derives
  bool prefix(int32_t symbol, int i) const {
    if (symbol >= 0) return i == n_ || (i == n_ - 1 && w_[i] == symbol);
    return prefix_[static_cast<size_t>(nt(symbol)) * (n_ + 1) + i] != 0;
  }
  bool sentence(int32_t start) const { return exact(nt(start), 0, n_); }
  bool viable(int32_t start) const { return prefix(nt(start), 0); }

 private:
  size_t cell(int32_t j, int i, int k) const {
    return (static_cast<size_t>(j) * (n_ + 1) + i) * (n_ + 1) + k;
  }
  std::vector<uint8_t> step(const std::vector<uint8_t>& reach, int32_t symbol) const {
    std::vector<uint8_t> next(n_ + 1, 0);
    for (int p = 0; p <= n_; ++p) {
      if (!reach[p]) continue;
      for (int q = p; q <= n_; ++q) {
        if (exact(symbol, p, q)) next[q] = 1;
      }
    }
    return next;
  }
  std::vector<uint8_t> after(const std::vector<int32_t>& rhs, size_t count, int i) const {
    std::vector<uint8_t> reach(n_ + 1, 0);
    reach[i] = 1;
    for (size_t m = 0; m < count; ++m) reach = step(reach, rhs[m]);
    return reach;
  }

  const Grammar& g_;
  std::vector<int32_t> w_;
  int n_;
  std::vector<uint8_t> exact_, prefix_;
};

}  // namespace tokamata_test
