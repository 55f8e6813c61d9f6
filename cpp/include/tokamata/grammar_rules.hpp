// A grammar's rules as flat arrays, and the fixed points the parser and the checks need.
//
// Invariants:
// - Rule r is lhs[r] -> rhs[rhs_offsets[r] .. rhs_offsets[r + 1]); a symbol s >= 0 is
//   terminal s, s < 0 is nonterminal -s - 1 (the same encoding as grammar/ir.py).
// - The constructor validates every index (throws std::invalid_argument), so the analyses
//   below never read out of range; each is a work list, linear in the grammar's size.
// - Nothing here parses user text or calls into Python.
#pragma once
#include <cstdint>
#include <vector>

namespace tokamata {

class GrammarRules {
 public:
  GrammarRules(std::vector<int32_t> lhs, std::vector<int32_t> rhs_offsets, std::vector<int32_t> rhs,
               int32_t num_nonterminals, int32_t num_terminals);

  int32_t num_rules() const { return static_cast<int32_t>(lhs_.size()); }
  int32_t num_nonterminals() const { return num_nonterminals_; }
  int32_t num_terminals() const { return num_terminals_; }
  int32_t lhs(int32_t rule) const { return lhs_[rule]; }
  const int32_t* rhs_begin(int32_t rule) const { return rhs_.data() + rhs_offsets_[rule]; }
  const int32_t* rhs_end(int32_t rule) const { return rhs_.data() + rhs_offsets_[rule + 1]; }

  // Per nonterminal: it derives some terminal string.
  std::vector<uint8_t> productive() const;
  // Per nonterminal: it derives the empty string.
  std::vector<uint8_t> nullable() const;
  // Per nonterminal: reachable from start through rules whose symbols are all productive.
  std::vector<uint8_t> reachable(int32_t start, const std::vector<uint8_t>& productive) const;

 private:
  // The least fixed point of "lhs is marked once every nonterminal of a rule is marked", over
  // the rules with no terminal when terminals_block (nullable) or all rules (productive).
  std::vector<uint8_t> derives(bool terminals_block) const;

  std::vector<int32_t> lhs_;
  std::vector<int32_t> rhs_offsets_;
  std::vector<int32_t> rhs_;
  int32_t num_nonterminals_;
  int32_t num_terminals_;
};

}  // namespace tokamata
