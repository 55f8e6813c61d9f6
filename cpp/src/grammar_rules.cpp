// Flat grammar rules and their fixed points; see grammar_rules.hpp.
#include "tokamata/grammar_rules.hpp"

#include <stdexcept>

namespace tokamata {

GrammarRules::GrammarRules(std::vector<int32_t> lhs, std::vector<int32_t> rhs_offsets, std::vector<int32_t> rhs,
                           int32_t num_nonterminals, int32_t num_terminals)
    : lhs_(std::move(lhs)), rhs_offsets_(std::move(rhs_offsets)), rhs_(std::move(rhs)),
      num_nonterminals_(num_nonterminals), num_terminals_(num_terminals) {
  if (num_nonterminals_ < 0 || num_terminals_ < 0) throw std::invalid_argument("negative symbol count");
  if (rhs_offsets_.size() != lhs_.size() + 1) throw std::invalid_argument("rhs_offsets must have one entry per rule plus one");
  if (rhs_offsets_.front() != 0 || static_cast<size_t>(rhs_offsets_.back()) != rhs_.size())
    throw std::invalid_argument("rhs_offsets must span the right-hand sides");
  for (size_t r = 0; r < lhs_.size(); ++r) {
    if (rhs_offsets_[r + 1] < rhs_offsets_[r]) throw std::invalid_argument("rhs_offsets must not decrease");
    if (lhs_[r] < 0 || lhs_[r] >= num_nonterminals_) throw std::invalid_argument("rule lhs out of range");
  }
  for (int32_t s : rhs_) {
    if (s >= num_terminals_ || (s < 0 && (s == INT32_MIN || -s - 1 >= num_nonterminals_)))
      throw std::invalid_argument("symbol out of range");
  }
}

std::vector<uint8_t> GrammarRules::derives(bool terminals_block) const {
  const int32_t rules = num_rules();
  std::vector<uint8_t> marked(static_cast<size_t>(num_nonterminals_), 0);
  std::vector<int32_t> missing(static_cast<size_t>(rules), 0);  // unmarked nonterminal occurrences per rule
  // users in CSR form: for nonterminal j, the rules mentioning it (once per occurrence)
  std::vector<int32_t> user_offsets(static_cast<size_t>(num_nonterminals_) + 1, 0);
  std::vector<int32_t> ready;
  for (int32_t r = 0; r < rules; ++r) {
    bool blocked = false;
    for (const int32_t* s = rhs_begin(r); s != rhs_end(r); ++s) {
      if (*s >= 0) blocked = blocked || terminals_block;
      else ++missing[r];
    }
    if (blocked) {
      missing[r] = -1;
      continue;
    }
    for (const int32_t* s = rhs_begin(r); s != rhs_end(r); ++s) {
      if (*s < 0) ++user_offsets[static_cast<size_t>(-*s - 1) + 1];
    }
    if (missing[r] == 0) ready.push_back(r);
  }
  for (size_t j = 0; j < static_cast<size_t>(num_nonterminals_); ++j) user_offsets[j + 1] += user_offsets[j];
  std::vector<int32_t> users(static_cast<size_t>(user_offsets.back()));
  std::vector<int32_t> fill(user_offsets.begin(), user_offsets.end() - 1);
  for (int32_t r = 0; r < rules; ++r) {
    if (missing[r] < 0) continue;
    for (const int32_t* s = rhs_begin(r); s != rhs_end(r); ++s) {
      if (*s < 0) users[static_cast<size_t>(fill[static_cast<size_t>(-*s - 1)]++)] = r;
    }
  }
  while (!ready.empty()) {
    const int32_t nt = lhs_[ready.back()];
    ready.pop_back();
    if (marked[nt]) continue;
    marked[nt] = 1;
    for (int32_t i = user_offsets[nt]; i < user_offsets[nt + 1]; ++i) {
      if (--missing[users[i]] == 0) ready.push_back(users[i]);
    }
  }
  return marked;
}

std::vector<uint8_t> GrammarRules::productive() const { return derives(false); }

std::vector<uint8_t> GrammarRules::nullable() const { return derives(true); }

std::vector<uint8_t> GrammarRules::reachable(int32_t start, const std::vector<uint8_t>& productive) const {
  if (start < 0 || start >= num_nonterminals_) throw std::invalid_argument("start out of range");
  if (productive.size() != static_cast<size_t>(num_nonterminals_)) throw std::invalid_argument("productive has the wrong size");
  std::vector<int32_t> rule_offsets(static_cast<size_t>(num_nonterminals_) + 1, 0);  // rules by lhs, CSR
  for (int32_t r = 0; r < num_rules(); ++r) ++rule_offsets[static_cast<size_t>(lhs_[r]) + 1];
  for (size_t j = 0; j < static_cast<size_t>(num_nonterminals_); ++j) rule_offsets[j + 1] += rule_offsets[j];
  std::vector<int32_t> by_lhs(static_cast<size_t>(num_rules()));
  std::vector<int32_t> fill(rule_offsets.begin(), rule_offsets.end() - 1);
  for (int32_t r = 0; r < num_rules(); ++r) by_lhs[static_cast<size_t>(fill[lhs_[r]]++)] = r;
  std::vector<uint8_t> reached(static_cast<size_t>(num_nonterminals_), 0);
  std::vector<int32_t> stack{start};
  reached[start] = 1;
  while (!stack.empty()) {
    const int32_t nt = stack.back();
    stack.pop_back();
    for (int32_t i = rule_offsets[nt]; i < rule_offsets[nt + 1]; ++i) {
      const int32_t r = by_lhs[i];
      bool usable = true;
      for (const int32_t* s = rhs_begin(r); s != rhs_end(r) && usable; ++s) usable = *s >= 0 || productive[-*s - 1];
      if (!usable) continue;
      for (const int32_t* s = rhs_begin(r); s != rhs_end(r); ++s) {
        if (*s < 0 && !reached[-*s - 1]) {
          reached[-*s - 1] = 1;
          stack.push_back(-*s - 1);
        }
      }
    }
  }
  return reached;
}

}  // namespace tokamata
