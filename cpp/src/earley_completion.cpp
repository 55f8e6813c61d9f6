// Shortest completions of Earley sets (for token budgets' witnesses, matcher_budget.cpp).
//
// Invariants:
// - min_cost_[A] is the fewest terminals a derivation of nonterminal A yields, and
//   min_rule_[A] the first position of a rule whose symbols add up to it (a Bellman-Ford
//   fixpoint over the rules, each terminal counting one; built once, under mu_). Every
//   nonterminal is productive, so every cost is finite.
// - The completion of a set h is the cheapest of: for each item of h (its earlier-origin
//   entries, and its predicted items, whose origin is h), the minimal derivation of the rest
//   of the item's rule, then what completes its parent: Parent(o, A) for the item's origin o
//   and left-hand side A is 0 for the start symbol at set 0 (the sentence is complete), else
//   the cheapest item of set o whose dot is before A, its rest after A, and its own parent.
//   Each such continuation is a sentence's suffix (the items of a set are exactly those the
//   prefix supports), so the terminal sequence returned is a continuation the parser takes.
//   Parent values are memoized per call; a value asked for while being computed counts as
//   unreachable on that path (a cycle never shortens a completion), so the result may be a
//   non-shortest completion in rare left-recursive cases, never a wrong one.
// - Expansion is bounded by max_length terminals (a false return past it).
#include <algorithm>
#include <functional>
#include <unordered_map>

#include "tokamata/earley.hpp"

namespace tokamata {

namespace {
constexpr int32_t kInfinite = INT32_MAX;

int32_t add(int32_t a, int32_t b) {
  return (a == kInfinite || b == kInfinite || static_cast<int64_t>(a) + b >= kInfinite) ? kInfinite : a + b;
}
}  // namespace

bool EarleyCore::shortest_completion(int32_t handle, int64_t max_length, std::vector<int32_t>& out) {
  std::lock_guard<std::mutex> guard(mu_);
  check(handle);
  const std::vector<int32_t>& next = t_.next_symbol;
  if (min_cost_.empty()) {  // minimal derivations, once
    const size_t n = t_.nullable.size();
    min_cost_.assign(n, kInfinite);
    min_rule_.assign(n, -1);
    for (bool changed = true; changed;) {
      changed = false;
      for (size_t start = 0; start < next.size();) {
        int32_t cost = 0;
        size_t p = start;
        for (; next[p] != kEndOfRule; ++p) cost = add(cost, next[p] >= 0 ? 1 : min_cost_[static_cast<size_t>(-next[p] - 1)]);
        const size_t lhs = static_cast<size_t>(t_.lhs_of[start]);
        if (cost < min_cost_[lhs]) {
          min_cost_[lhs] = cost;
          min_rule_[lhs] = static_cast<int32_t>(start);
          changed = true;
        }
        start = p + 1;
      }
    }
  }
  auto rest_cost = [&](int32_t position) {
    int32_t cost = 0;
    for (int32_t p = position; next[p] != kEndOfRule; ++p) cost = add(cost, next[p] >= 0 ? 1 : min_cost_[-next[p] - 1]);
    return cost;
  };
  // the items of set o whose dot is before `symbol`: (position, origin)
  auto items_before = [&](int32_t o, int32_t symbol, const std::function<void(int32_t, int32_t)>& f) {
    const Set& set = *sets_[o];
    auto by_symbol_less = [](const Entry& a, int32_t s) { return a.symbol < s; };
    for (auto it = std::lower_bound(set.entries.begin(), set.entries.end(), symbol, by_symbol_less);
         it != set.entries.end() && it->symbol == symbol; ++it)
      f(it->item.position, it->item.origin);
    const auto& predicted = set.predicted->by_symbol;
    for (auto it = std::lower_bound(predicted.begin(), predicted.end(), std::make_pair(symbol, INT32_MIN));
         it != predicted.end() && it->first == symbol; ++it)
      f(it->second, o);
  };
  struct Choice {
    int32_t cost;
    int32_t position;  // the parent item's position (its dot before the nonterminal); -1: accept
    int32_t origin;
  };
  std::unordered_map<int64_t, Choice> memo;  // (set, nonterminal) -> cheapest way on
  constexpr int32_t kBusy = -2;
  std::function<int32_t(int32_t, int32_t)> parent = [&](int32_t o, int32_t nt) -> int32_t {
    const int64_t key = (static_cast<int64_t>(o) << 32) | static_cast<uint32_t>(nt);
    auto found = memo.find(key);
    if (found != memo.end()) return found->second.position == kBusy ? kInfinite : found->second.cost;
    memo[key] = Choice{kInfinite, kBusy, 0};
    Choice best{kInfinite, kBusy, 0};
    if (o == 0 && nt == t_.start) best = Choice{0, -1, 0};
    items_before(o, -nt - 1, [&](int32_t position, int32_t origin) {
      if (best.cost == 0) return;
      const int32_t here = rest_cost(position + 1);
      if (here >= best.cost) return;
      const int32_t cost = add(here, parent(origin, t_.lhs_of[position]));
      if (cost < best.cost) best = Choice{cost, position, origin};
    });
    memo[key] = best;
    return best.cost;
  };
  // the cheapest item of the set itself
  Choice top{kInfinite, kBusy, 0};
  if (sets_[handle]->accepting) top = Choice{0, -1, 0};
  auto consider = [&](int32_t position, int32_t origin) {
    if (top.cost == 0) return;
    const int32_t here = rest_cost(position);
    if (here >= top.cost) return;
    const int32_t cost = add(here, parent(origin, t_.lhs_of[position]));
    if (cost < top.cost) top = Choice{cost, position, origin};
  };
  for (const Entry& e : sets_[handle]->entries) consider(e.item.position, e.item.origin);
  for (const auto& [symbol, position] : sets_[handle]->predicted->by_symbol) consider(position, handle);
  if (top.cost == kInfinite || top.cost > max_length) return false;
  // expansion: the rest of each chosen item, its symbols by minimal derivations
  const size_t limit = out.size() + static_cast<size_t>(top.cost);
  std::vector<int32_t> stack;  // symbols still to expand, last first
  auto expand_rest = [&](int32_t position) {
    std::vector<int32_t> rest;
    for (int32_t p = position; next[p] != kEndOfRule; ++p) rest.push_back(next[p]);
    for (auto it = rest.rbegin(); it != rest.rend(); ++it) stack.push_back(*it);
    while (!stack.empty()) {
      const int32_t symbol = stack.back();
      stack.pop_back();
      if (symbol >= 0) {
        if (out.size() >= limit) return false;  // (a zero-cost cycle would not end)
        out.push_back(symbol);
        continue;
      }
      const int32_t rule = min_rule_[-symbol - 1];
      if (rule < 0) return false;
      std::vector<int32_t> body;
      for (int32_t p = rule; next[p] != kEndOfRule; ++p) body.push_back(next[p]);
      if (stack.size() + body.size() > static_cast<size_t>(max_length) + 64) return false;
      for (auto it = body.rbegin(); it != body.rend(); ++it) stack.push_back(*it);
    }
    return true;
  };
  Choice at = top;
  for (int64_t steps = 0; at.position >= 0; ++steps) {
    if (steps > max_length + 1) return false;
    const bool first = steps == 0;
    if (!expand_rest(first ? at.position : at.position + 1)) return false;
    const int64_t key = (static_cast<int64_t>(at.origin) << 32) | static_cast<uint32_t>(t_.lhs_of[at.position]);
    auto found = memo.find(key);
    if (found == memo.end() || found->second.position == kBusy) return false;
    at = found->second;
  }
  return out.size() <= limit;
}

}  // namespace tokamata
