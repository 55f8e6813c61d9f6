// Token budgets: the masks that keep a generation capped at n tokens inside the language.
//
// Contract. A budget of n >= 1 tokens means: the matcher may consume at most n more tokens,
// the EOS that ends the output included. Under it a token t is set iff t is allowed and,
// after t, the output can be ended (a sentence, then EOS) within n - 1 tokens; EOS is set
// iff the output is complete now (it costs the one token n >= 1 always leaves). So a
// generation that fills with budget n - k at its k-th step (k tokens generated so far)
// always ends with EOS after a sentence within its n tokens, whenever the first mask was
// not empty. A serving stack whose max_tokens counts the EOS (transformers' max_new_tokens
// does) passes max_tokens - generated; one that stops at its cap without asking for EOS and
// accepts the output as it is there may pass one more (the EOS it never generates).
//
// Design. bound(P) is the number of tokens, EOS included, within which the output can be
// ended from position P (kNoBound: no way known). For every position the profile groups
// the tokens of its plain mask by bound(advance(P, t)); the budget row for n is the union
// of the groups with bound <= n - 1, plus EOS when P accepts, plus (kEarley) the first token
// of P's witness when bound(P) <= n. The two strategies differ only in bound():
// - kRegular: exact. A position is one lexer state; its token successors are the distinct
//   states its allowed tokens lead to (one advance per allowed token, the same advance
//   consume runs). bound() explores every state reachable from P that has no bound yet
//   (at most max_states of them, else LimitError "max_budget_states"), then runs Dijkstra
//   backwards from the accepting states (bound 1: EOS) and the states already bounded. The
//   bounds are the exact fewest-token distances, so the budget row is exactly the set of
//   tokens after which some completion fits: a brute-force search over tokens gives the
//   same rows (tests/property/test_budget.py).
// - kEarley: an upper bound from a concrete completion (a witness). For each configuration of
//   P: finish the lexeme in progress (a breadth-first search in the lexer DFA, one byte per
//   class, to a state where a terminal the parser takes ends), then the fewest terminals
//   that complete the parser's set (EarleyCore::shortest_completion: minimal derivations of
//   the rest of an item and of its parents' rests), each spelled by a shortest lexeme from
//   the start state of the parser's allowed set (a token-set terminal by one of its tokens).
//   Bytes that are tokens by themselves are tried first, then any. A breadth-first search
//   over bytes from P (at most max_states positions) is the fallback. The bytes are tokenized
//   greedily, longest token first over the trie, each token advanced from the previous
//   position exactly as consume does, and kept only when the last position accepts. Its
//   token count plus one (EOS) bounds P, and the suffix from each of its positions bounds
//   that position (kept as the minimum with what that position had, together with the next
//   witness token).
//   Soundness: a token t is set under n only when bound(advance(P, t)) <= n - 1, or when
//   t is the first token of a witness of P of bound(P) <= n tokens; either way a concrete
//   token sequence of at most n - 1 tokens ending in EOS follows t. So every set token
//   leaves a completion within budget (regex and grammar alike).
//   Non-emptiness: when bound(P) <= n the row holds EOS (bound 1, P accepts) or P's first
//   witness token. A generation that starts with budget n >= bound(P0) only ever picks
//   tokens whose bound fits the rest, so no later row is empty. For kRegular, where bounds
//   are exact, a row is empty iff no completion fits at all; for kEarley a row may be empty
//   while a completion that needs fewer tokens than the witness does exists, when the
//   caller asks for a budget under bound(P) (MatcherCore::budget_needed tells).
// In a token-healing prefix phase the matcher bounds its prefix positions itself: one more
// than the least bound after a token of the prefix mask (MatcherCore::prefix_bound).
// Bounds are never evicted (positions are bounded by the lexer's and the parser's live-state
// limits), except by a long-life sweep (matcher_sweep.cpp), which drops the bounds and
// profiles of every position naming a released parser set (no matcher holds such a position,
// and its handle may name another set later; a bound asked for again comes from a new
// witness, as sound as any); they only decrease (kEarley, a shorter witness through a position). Profiles are cached
// per position, first in first out; a profile made before a bound decreased stays sound,
// and the first-token rule keeps the row non-empty. Everything runs under budget_mu_
// (lock order: budget_mu_, then the lexer's compute mutex inside mask/advance), without
// the GIL.
#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <queue>
#include <unordered_map>
#include <stdexcept>

#include "tokamata/matcher_core.hpp"

namespace tokamata {

namespace {
constexpr size_t kProfileCacheSize = 64;


int32_t plus_one(int32_t b) { return b == kNoBound ? kNoBound : b + 1; }
}  // namespace

int32_t ConstraintCore::regular_step(int32_t state, int32_t token) {
  const int32_t next = lexer_->advance(state, token);  // (the row of `state` allows `token`)
  return next == kUnknown ? lexer_->advance_expanding(state, token) : next;
}

int32_t ConstraintCore::budget_bound(const Configuration* position, size_t size, int64_t max_states) {
  std::lock_guard<std::mutex> guard(budget_mu_);
  return bound_locked(std::vector<Configuration>(position, position + size), max_states);
}

int32_t ConstraintCore::bound_locked(const std::vector<Configuration>& position, int64_t max_states) {
  auto it = bounds_.find(position);
  if (it != bounds_.end()) return it->second.bound;
  if (grammar_) {
    witness(position, max_states);
  } else {
    explore_regular(position, max_states);
  }
  it = bounds_.find(position);
  if (it == bounds_.end()) {  // (no witness found: nothing is known of this position)
    bounds_.emplace(position, BudgetEntry{kNoBound, -1});
    return kNoBound;
  }
  return it->second.bound;
}

void ConstraintCore::explore_regular(const std::vector<Configuration>& start, int64_t max_states) {
  // forward: every state reachable from `start` without a bound yet, and its successors
  std::unordered_map<Configuration, int32_t, ConfigurationHash> index;
  std::vector<Configuration> states{start[0]};
  std::vector<std::vector<int32_t>> successors;  // index in states, or -(1 + bound) for bounded states
  std::vector<uint8_t> accepts;
  index.emplace(start[0], 0);
  std::vector<Configuration> next;
  for (size_t i = 0; i < states.size(); ++i) {
    const Configuration c = states[i];
    MaskPtr row = mask(&c, 1);
    accepts.push_back(row->accepting ? 1 : 0);
    std::vector<int32_t> out;
    std::unordered_map<int32_t, int32_t> seen;  // end lexer state -> entry in out
    row->for_each_token([&](int32_t t) {
      next.assign(1, Configuration{0, regular_step(c.lexer, t), 0});
      if (seen.count(next[0].lexer)) return;
      int32_t entry;
      auto known = bounds_.find(next);
      if (known != bounds_.end()) {
        entry = known->second.bound == kNoBound ? INT32_MIN : -1 - known->second.bound;
      } else {
        auto [at, added] = index.emplace(next[0], static_cast<int32_t>(states.size()));
        if (added) {
          if (static_cast<int64_t>(states.size()) >= max_states)
            throw LimitError("max_budget_states", static_cast<double>(states.size() + 1), static_cast<double>(max_states));
          states.push_back(next[0]);
        }
        entry = at->second;
      }
      seen.emplace(next[0].lexer, entry);
      out.push_back(entry);
    });
    successors.push_back(std::move(out));
  }
  // backward: Dijkstra from the accepting states (1) and the bounded successors (1 + bound)
  const size_t n = states.size();
  std::vector<std::vector<int32_t>> predecessors(n);
  std::vector<int32_t> best(n, kNoBound);
  using Item = std::pair<int32_t, int32_t>;  // (bound, state)
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> queue;
  for (size_t i = 0; i < n; ++i) {
    if (accepts[i]) best[i] = 1;
    for (int32_t s : successors[i]) {
      if (s >= 0) {
        predecessors[static_cast<size_t>(s)].push_back(static_cast<int32_t>(i));
      } else if (s != INT32_MIN) {
        best[i] = std::min(best[i], -1 - s + 1);
      }
    }
    if (best[i] != kNoBound) queue.emplace(best[i], static_cast<int32_t>(i));
  }
  while (!queue.empty()) {
    auto [b, i] = queue.top();
    queue.pop();
    if (b != best[static_cast<size_t>(i)]) continue;
    for (int32_t p : predecessors[static_cast<size_t>(i)]) {
      if (b + 1 < best[static_cast<size_t>(p)]) {
        best[static_cast<size_t>(p)] = b + 1;
        queue.emplace(b + 1, p);
      }
    }
  }
  for (size_t i = 0; i < n; ++i) bounds_[std::vector<Configuration>{states[i]}] = BudgetEntry{best[i], -1};
}

void ConstraintCore::witness(const std::vector<Configuration>& start, int64_t max_states) {
  if (witness_byte_.empty()) {  // per class: a byte with a one-byte token, printable first
    const TokenTrie& trie = lexer_->trie();
    witness_byte_.assign(static_cast<size_t>(lexer_->dfa().num_classes()), -1);
    const uint8_t* class_map = lexer_->dfa().class_map();
    auto single = [&](int b) {
      const uint8_t byte = static_cast<uint8_t>(b);
      const int64_t node = trie.find(&byte, 1);
      return node > 0 && trie.nodes()[static_cast<size_t>(node)].token_count > 0;
    };
    for (int pass = 0; pass < 3; ++pass) {
      for (int b = 0; b < 256; ++b) {
        int32_t& chosen = witness_byte_[class_map[b]];
        if (chosen >= 0) continue;
        const bool printable = b >= 0x20 && b < 0x7f;
        if ((pass == 0 && printable && single(b)) || (pass == 1 && single(b)) || pass == 2) chosen = b;
      }
    }
    witness_single_.clear();
    for (int32_t b : witness_byte_) witness_single_.push_back(single(b) ? 1 : 0);
  }
  // bytes that are tokens by themselves first (a toy vocabulary may lack "0"), then any
  for (int only_single = 1; only_single >= 0; --only_single) {
    std::vector<int32_t> steps;
    if (plan_completion(start, max_states, only_single != 0, steps) && record_witness(start, steps)) return;
  }
  for (int only_single = 1; only_single >= 0; --only_single) {
    std::vector<int32_t> steps;
    if (search_completion(start, max_states, only_single != 0, steps) && record_witness(start, steps)) return;
  }
}

bool ConstraintCore::plan_completion(const std::vector<Configuration>& start, int64_t max_states, bool only_single,
                                     std::vector<int32_t>& best) {
  if (!grammar_) return false;
  std::lock_guard<std::mutex> compute(lexer_->compute_mutex());
  LazyDfa& dfa = lexer_->dfa();
  // the shortest bytes from lexer state `from` to a state where `fits(terminal)` ends a lexeme
  auto lexeme = [&](int32_t from, const std::function<int32_t(int32_t)>& fits, std::vector<int32_t>& bytes) -> int32_t {
    struct Node {
      int32_t state, parent, byte;
    };
    std::vector<Node> nodes{Node{from, -1, -1}};
    std::unordered_map<int32_t, int32_t> seen{{from, 0}};
    for (size_t i = 0; i < nodes.size(); ++i) {
      for (int32_t terminal : grammar_->ends_of(nodes[i].state)) {
        const int32_t after = fits(terminal);
        if (after < 0) continue;
        std::vector<int32_t> path;
        for (int32_t k = static_cast<int32_t>(i); nodes[static_cast<size_t>(k)].parent >= 0; k = nodes[static_cast<size_t>(k)].parent)
          path.push_back(nodes[static_cast<size_t>(k)].byte);
        bytes.insert(bytes.end(), path.rbegin(), path.rend());
        return after;
      }
      for (size_t cls = 0; cls < witness_byte_.size(); ++cls) {
        if (only_single && !witness_single_[cls]) continue;
        const int32_t byte = witness_byte_[cls];
        const int32_t to = dfa.step(nodes[i].state, static_cast<uint8_t>(byte));
        if (to == kDead || seen.count(to)) continue;
        if (static_cast<int64_t>(nodes.size()) >= max_states) return -1;
        seen.emplace(to, static_cast<int32_t>(nodes.size()));
        nodes.push_back(Node{to, static_cast<int32_t>(i), byte});
      }
    }
    return -1;
  };
  bool found = false;
  std::vector<int32_t> terminals, steps;
  for (const Configuration& c : start) {
    steps.clear();
    int32_t parser = c.parser;
    if (!c.fresh && c.lexer != kDead) {  // finish the lexeme in progress as a terminal the parser takes
      parser = lexeme(c.lexer, [&](int32_t t) { return grammar_->after_lexeme(c.parser, t); }, steps);
      if (parser < 0) continue;
    }
    terminals.clear();
    if (!grammar_->parser().shortest_completion(parser, max_states, terminals)) continue;
    bool ok = true;
    for (int32_t terminal : terminals) {
      const int32_t set = set_of_terminal_[static_cast<size_t>(terminal)];
      if (set >= 0) {  // a token-set terminal: one of its tokens
        const int32_t token = token_sets_[static_cast<size_t>(set)].second.first_token();
        parser = token < 0 ? -1 : grammar_->parser().scan(parser, terminal);
        steps.push_back(256 + token);
      } else {
        const int32_t from = grammar_->start_of(parser);
        const int32_t here = parser;
        parser = from == kDead ? -1 : lexeme(from, [&](int32_t t) {
          return t == terminal ? grammar_->after_lexeme(here, t) : -1;
        }, steps);
      }
      if (parser < 0) {
        ok = false;
        break;
      }
    }
    if (ok && (!found || steps.size() < best.size())) {
      best = steps;
      found = true;
    }
  }
  return found;
}

bool ConstraintCore::search_completion(const std::vector<Configuration>& start, int64_t max_states, bool only_single,
                                       std::vector<int32_t>& steps) {
  // breadth-first over bytes (and token-set tokens) to the first accepting position
  struct Node {
    std::vector<Configuration> position;
    int32_t parent;
    int32_t step;  // a byte, or 256 + a token-set token
  };
  std::vector<Node> nodes{Node{start, -1, -1}};
  std::unordered_map<std::vector<Configuration>, int32_t, PositionHash> seen{{start, 0}};
  std::vector<Configuration> next;
  int32_t goal = -1;
  auto visit = [&](size_t from, int32_t step) {
    if (next.empty() || seen.count(next)) return;
    if (static_cast<int64_t>(nodes.size()) >= max_states)
      throw LimitError("max_budget_states", static_cast<double>(nodes.size() + 1), static_cast<double>(max_states));
    seen.emplace(next, static_cast<int32_t>(nodes.size()));
    nodes.push_back(Node{next, static_cast<int32_t>(from), step});
  };
  for (size_t i = 0; i < nodes.size() && goal < 0; ++i) {
    const std::vector<Configuration> here = nodes[i].position;  // (nodes may grow below)
    if (accepting(here.data(), here.size())) {
      goal = static_cast<int32_t>(i);
      break;
    }
    for (size_t cls = 0; cls < witness_byte_.size(); ++cls) {
      if (only_single && !witness_single_[cls]) continue;
      const uint8_t b = static_cast<uint8_t>(witness_byte_[cls]);
      advance_bytes(here.data(), here.size(), &b, 1, next);
      visit(i, witness_byte_[cls]);
    }
    if (!token_sets_.empty() && special_allowed(here.data(), here.size())) {
      for (const auto& [terminal, row] : token_sets_) {
        const int32_t token = row.first_token();
        if (token < 0) continue;
        advance(here.data(), here.size(), token, next);
        visit(i, 256 + token);
      }
    }
  }
  if (goal < 0) return false;
  for (int32_t i = goal; nodes[static_cast<size_t>(i)].parent >= 0; i = nodes[static_cast<size_t>(i)].parent)
    steps.push_back(nodes[static_cast<size_t>(i)].step);
  std::reverse(steps.begin(), steps.end());
  return true;
}

bool ConstraintCore::record_witness(const std::vector<Configuration>& start, const std::vector<int32_t>& steps) {
  // tokenized greedily, each token advanced as consume does
  const TokenTrie& trie = lexer_->trie();
  std::vector<std::vector<Configuration>> positions{start};
  std::vector<int32_t> tokens;
  std::vector<Configuration> next;
  for (size_t i = 0; i < steps.size();) {
    int32_t token = -1;
    size_t length = 1;
    if (steps[i] >= 256) {
      token = steps[i] - 256;
    } else {
      int64_t node = 0;
      for (size_t j = i; j < steps.size() && steps[j] < 256; ++j) {
        const uint8_t b = static_cast<uint8_t>(steps[j]);
        node = trie.find(&b, 1, static_cast<size_t>(node));
        if (node < 0) break;
        const TrieNode& at = trie.nodes()[static_cast<size_t>(node)];
        if (at.token_count > 0) {
          token = trie.token_ids()[static_cast<size_t>(at.token_begin)];
          length = j - i + 1;
        }
      }
      if (token < 0) return false;  // a byte no token spells
    }
    advance(positions.back().data(), positions.back().size(), token, next);
    if (next.empty()) return false;
    positions.push_back(next);
    tokens.push_back(token);
    i += length;
  }
  if (!accepting(positions.back().data(), positions.back().size())) return false;
  const int32_t k = static_cast<int32_t>(tokens.size());
  for (int32_t i = 0; i <= k; ++i) {
    const BudgetEntry entry{k - i + 1, i < k ? tokens[static_cast<size_t>(i)] : -1};
    auto [at, added] = bounds_.emplace(positions[static_cast<size_t>(i)], entry);
    if (!added && entry.bound < at->second.bound) at->second = entry;
  }
  return true;
}

std::shared_ptr<const ConstraintCore::BudgetProfile> ConstraintCore::profile_locked(
    const std::vector<Configuration>& position, int64_t max_states) {
  auto found = profiles_.find(position);
  if (found != profiles_.end()) return found->second;
  auto profile = std::make_shared<BudgetProfile>();
  profile->mask = mask(position.data(), position.size());
  std::map<int32_t, TokenRow> groups;
  std::unordered_map<std::vector<Configuration>, int32_t, PositionHash> local;
  std::vector<Configuration> next;
  bool all = true;
  int32_t highest = 0;
  bound_locked(position, max_states);  // (kEarley: the witness from here first, so its suffix bounds are in)
  std::unordered_map<int32_t, int32_t> local_states;  // end lexer state -> bound (see below)
  auto add = [&](int32_t t, int32_t b) {
    if (b == kNoBound) {
      all = false;
      return;
    }
    auto at = groups.find(b);
    if (at == groups.end()) at = groups.emplace(b, TokenRow(static_cast<size_t>(num_words()))).first;
    at->second.set(t);
    highest = std::max(highest, b);
  };
  // kEarley, one configuration inside a lexeme at a state where no terminal ends: a token
  // whose bytes pass no such state before its last byte crosses no boundary, so it leads to
  // the one configuration (parser, the lexer state after it, not fresh): read under the
  // compute mutex with the lexer's transitions alone; the others go through advance().
  const TokenRow* only = profile->mask.get();
  TokenRow rest;  // the tokens left for advance()
  if (grammar_ && position.size() == 1 && !position[0].fresh && position[0].lexer != kDead) {
    const Configuration c = position[0];
    std::vector<std::pair<int32_t, int32_t>> inside;  // (token, lexer state after it)
    rest = TokenRow(static_cast<size_t>(num_words()));
    {
      std::lock_guard<std::mutex> compute(lexer_->compute_mutex());
      LazyDfa& dfa = lexer_->dfa();
      const TokenTrie& trie = lexer_->trie();
      const bool boundary_here = dfa.accepting(c.lexer);
      profile->mask->for_each_token([&](int32_t t) {
        bool simple = !boundary_here && !in_token_set(t) && t < trie.num_tokens() && trie.in_trie(t);
        int32_t state = c.lexer;
        if (simple) {
          const uint8_t* data = trie.token_data(t);
          const int64_t length = trie.token_length(t);
          for (int64_t i = 0; i < length && simple; ++i) {
            if (i > 0 && dfa.accepting(state)) simple = false;
            else state = dfa.peek(state, data[i]);
            if (state < 0) simple = false;  // (dead, or not expanded yet)
          }
        }
        if (simple) {
          inside.emplace_back(t, state);
        } else {
          rest.set(t);
        }
      });
    }
    for (const auto& [t, state] : inside) {
      auto it = local_states.find(state);
      int32_t b;
      if (it != local_states.end()) {
        b = it->second;
      } else {
        b = bound_locked(std::vector<Configuration>{Configuration{c.parser, state, 0}}, max_states);
        local_states.emplace(state, b);
      }
      add(t, b);
    }
    rest.seal();
    only = &rest;
  }
  only->for_each_token([&](int32_t t) {
    int32_t b;
    if (!grammar_) {  // one lexer advance per token, the bounds by end state
      const int32_t state = regular_step(position[0].lexer, t);
      auto it = local_states.find(state);
      if (it != local_states.end()) {
        b = it->second;
      } else {
        b = bound_locked(std::vector<Configuration>{Configuration{0, state, 0}}, max_states);
        local_states.emplace(state, b);
      }
    } else {
      advance(position.data(), position.size(), t, next);
      if (next.empty()) return;  // (an EOS id a token-set terminal also spells, read as the end)
      auto it = local.find(next);
      if (it != local.end()) {
        b = it->second;
      } else {
        b = bound_locked(next, max_states);
        local.emplace(next, b);
      }
    }
    add(t, b);
  });
  for (auto& [b, row] : groups) {
    row.seal();
    profile->groups.emplace_back(b, std::move(row));
  }
  profile->covered_below = all ? highest + 1 : 0;
  std::shared_ptr<const BudgetProfile> done = std::move(profile);
  profiles_.emplace(position, done);
  profile_order_.push_back(position);
  if (profile_order_.size() > kProfileCacheSize) {
    profiles_.erase(profile_order_.front());
    profile_order_.pop_front();
  }
  return done;
}

MaskPtr ConstraintCore::budget_row(const Configuration* position, size_t size, int32_t budget, int64_t max_states) {
  if (budget < 1) throw std::invalid_argument("a budget is at least 1 token");
  std::lock_guard<std::mutex> guard(budget_mu_);
  const std::vector<Configuration> key(position, position + size);
  auto profile = profile_locked(key, max_states);
  if (profile->covered_below > 0 && profile->covered_below <= budget) return profile->mask;  // every token fits
  auto row = std::make_shared<TokenRow>(static_cast<size_t>(num_words()));
  row->accepting = profile->mask->accepting;
  for (const auto& [b, group] : profile->groups) {
    if (b > budget - 1) break;
    group.or_into(row->words());
  }
  const BudgetEntry& entry = bounds_.at(key);  // (profile_locked bounded the position)
  if (entry.first >= 0 && entry.bound <= budget) row->set(entry.first);
  row->seal(lexer_->row_bases().snapshot().get());  // (per call: never a base)
  return row;
}

// ------------------------------------------------------------------------------ matcher

void MatcherCore::fill_budget(uint32_t* out, int64_t num_words, int32_t budget, int64_t max_states) {
  {
    const auto held = hold();  // (long life: no sweep while the witnesses' positions are in use)
    fill_budget_held(out, num_words, budget, max_states);
  }
  if (constraint_->sweep_due()) constraint_->sweep_if_due();
}

int32_t MatcherCore::budget_needed(int64_t max_states) {
  int32_t bound;
  {
    const auto held = hold();
    bound = budget_needed_held(max_states);
  }
  if (constraint_->sweep_due()) constraint_->sweep_if_due();
  return bound;
}

void MatcherCore::fill_budget_held(uint32_t* out, int64_t num_words, int32_t budget, int64_t max_states) {
  if (terminated_) {
    write(nullptr, out, num_words);
    return;
  }
  if (in_prefix()) {  // the tokens of the prefix mask whose bound fits (never EOS)
    const Configuration here = stack_[starts_.back()];
    MaskPtr mask = mask_at(&here, 1);
    TokenRow row(static_cast<size_t>(constraint_->num_words()));
    mask->for_each_token([&](int32_t t) {
      if (bound_after_prefix(here.lexer, t, max_states) <= budget - 1) row.set(t);
    });
    row.seal();
    write(&row, out, num_words);
    return;
  }
  MaskPtr row = constraint_->budget_row(stack_.data() + starts_.back(), num_configurations(), budget, max_states);
  write(row.get(), out, num_words);
}

int32_t MatcherCore::budget_needed_held(int64_t max_states) {
  if (terminated_) return 0;
  if (in_prefix()) return prefix_bound(stack_[starts_.back()].lexer, max_states);
  return constraint_->budget_bound(stack_.data() + starts_.back(), num_configurations(), max_states);
}

int32_t MatcherCore::prefix_bound(int32_t offset, int64_t max_states) {
  if (prefix_bounds_.size() <= static_cast<size_t>(offset)) prefix_bounds_.resize(static_cast<size_t>(offset) + 1, kUnknown);
  if (prefix_bounds_[static_cast<size_t>(offset)] != kUnknown) return prefix_bounds_[static_cast<size_t>(offset)];
  const Configuration here{kPrefixPhase, offset, 0};
  MaskPtr mask = mask_at(&here, 1);
  int32_t best = kNoBound;
  mask->for_each_token([&](int32_t t) { best = std::min(best, plus_one(bound_after_prefix(offset, t, max_states))); });
  prefix_bounds_[static_cast<size_t>(offset)] = best;
  return best;
}

int32_t MatcherCore::bound_after_prefix(int32_t offset, int32_t token, int64_t max_states) {
  std::vector<Configuration> next;
  advance_prefix(offset, token, next);
  if (next.empty()) return kNoBound;
  if (next[0].parser == kPrefixPhase) return prefix_bound(next[0].lexer, max_states);  // (a longer offset)
  return constraint_->budget_bound(next.data(), next.size(), max_states);
}

}  // namespace tokamata
