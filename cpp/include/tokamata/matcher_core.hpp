// The one matcher engine: a constraint's positions (ConstraintCore) and one sequence's place
// in them (MatcherCore), for every kind of constraint (regex, grammar, JSON, JSON Schema).
//
// Invariants:
// - A constraint is a grammar over terminals with a lexer DFA (grammar_walk.hpp). A position
//   is a non-empty, sorted, duplicate-free array of Configurations (parser, lexer, fresh): an
//   Earley set handle, the lexer state of the lexeme in progress (kDead when only special
//   tokens can come next) and whether that lexeme is still empty. Several configurations
//   exist when the output lexes in several ways (a lexeme may end wherever its terminal
//   matches).
// - The strategy says which engine serves positions; it is fixed by the constraint:
//   kRegular (a one-terminal grammar whose sentences are single lexemes, e.g. a regex): the
//   position is always one configuration with parser 0, its mask is the lexer's token row
//   (accepting at the start when the empty output is a sentence) and consume runs the lexer
//   DFA over the token; no parser exists.
//   kEarley: the mask of a configuration is inside(lexer) | crossing(parser, lexer), plus
//   the masks of the fresh configurations after a boundary right here (unless fresh), plus
//   the special tokens the parser allows at such a boundary; consume runs the token's bytes
//   through every configuration, ending lexemes wherever a terminal may end.
// - A mask (a TokenRow) holds the token bits without EOS and `accepting` (EOS allowed: a
//   lexeme boundary here leaves the parser accepting). Masks are computed once per
//   configuration and per position and cached in the constraint (bounded, first in first
//   out; a matcher holds the mask of its position, so eviction never invalidates it). Equal
//   masks are stored once: a new mask equal (bits and acceptance) to a cached one that is
//   still alive is replaced by it before it is cached or returned.
// - Token-set terminals (special tokens, and seed 000's token wildcards such as TEXT_TOKEN:
//   any one text token) are spelled by token ids and consumed whole at a lexeme boundary.
//   Each is a TokenRow built once per constraint; masks OR the rows of the terminals the
//   parser allows with word operations (never a loop over ids). A token-set terminal's ids
//   may be text tokens too: consume then follows both (the union of the text advance and
//   of every token-set terminal the parser takes), so masks stay exact.
// - consume accepts a token iff fill sets its bit: EOS ids (not spelled by a token-set
//   terminal) iff the position accepts, a token of a token-set terminal iff the parser takes
//   that terminal at a boundary, a text token iff its bytes lead some configuration on. An EOS
//   id that a special terminal also spells (`start: "yes" <|eot_id|>` over Llama 3) is set
//   iff either holds; consume gives it to the parser where the parser takes it, and else
//   ends the output (the position accepts): the grammar's own use comes first, and a
//   complete output can always end.
// - After EOS is consumed the matcher is terminated: only EOS ids are set when filling and
//   only rollback changes it. history holds every position since the start, so rollback(n)
//   restores exactly the position n tokens ago (EOS counts as a token).
// - A matcher made with a prefix (token healing) starts in a prefix phase: its output must
//   begin with exactly those bytes, then continue with a sentence. A prefix position is the
//   one configuration {kPrefixPhase, offset, 0} (offset: prefix bytes output so far, less
//   than the prefix's length); its mask (computed per matcher, never in the constraint's
//   caches) is the tokens whose bytes are a prefix of the rest of the prefix, plus those
//   that begin with all of it and whose remaining bytes lead the initial position on (a
//   walk below the rest's trie node: walk_trie for kRegular, GrammarCore::below for
//   kEarley); never EOS or special tokens. A token that ends exactly at the end of the
//   prefix leads to the initial position; one that crosses it, to the initial position
//   advanced by its remaining bytes. So tokens may span the junction, and consume, rollback,
//   copy and fills work across it.
// - forced_tokens: the run of tokens each of which is the only token set at its step (not
//   EOS: a step that accepts, or whose only token is an EOS id, or that has none, ends it),
//   walked on scratch positions through the same masks and advances. forced_bytes: the
//   bytes every continuation of the output begins with: from a position that neither
//   accepts nor allows a special token, the one byte that some configuration's lexer
//   (after a boundary too) can take without dying, again and again. Every configuration of
//   a position can reach a sentence (terminals are non-empty, dead rules are dropped, the
//   Earley sets have the prefix property), so a position is live iff it is non-empty and
//   this is exact. Both stop at the caller's bound and change nothing.
// - Every method that may compute (mask, accepting, advance, fill, consume) must be called
//   without the Python GIL: computing takes the lexer's compute mutex and may call back into
//   Python (new lexer start states), which takes the GIL.
// - Thread safety: a ConstraintCore is shared by any number of threads; a MatcherCore is
//   used by one thread at a time.
// - Long life (kEarley): parser states no live matcher can reach are released
//   (matcher_sweep.cpp). Every MatcherCore registers with its constraint, and holds the
//   constraint's sweep lock (shared) while it computes or changes its history; sweep() takes
//   it exclusively, so no matcher is in a call, collects the parser handles of every live
//   matcher's history and forced run, has EarleyCore::collect release every other set, and
//   drops everything cached under a released handle (masks of configurations and positions,
//   acceptance, dense-walk marks, token-budget bounds and profiles). A warm fill (the mask
//   held by the matcher or cached in the constraint) takes no sweep lock: it changes no
//   history, reads no parser state, and a sweep never drops the cached mask of a live
//   position (known_mask). A sweep runs at the end
//   of a consume, a fill that computed, or a budget fill once the live parser states reach a threshold (twice those live
//   after the last sweep, at least kSweepFloor, at most half of max_parser_states), so
//   released handles never appear in a live position and masks are those of a constraint
//   that never swept (a set built again has the same content).
#pragma once
#include <cstdint>
#include <deque>
#include <memory>
#include <atomic>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokamata/earley.hpp"
#include "tokamata/grammar_walk.hpp"
#include "tokamata/token_row.hpp"

namespace tokamata {

enum class Strategy : int32_t { kRegular = 0, kEarley = 1 };

struct Configuration {
  int32_t parser;
  int32_t lexer;
  int32_t fresh;  // 0 or 1
  bool operator<(const Configuration& o) const {
    if (parser != o.parser) return parser < o.parser;
    if (lexer != o.lexer) return lexer < o.lexer;
    return fresh < o.fresh;
  }
  bool operator==(const Configuration& o) const {
    return parser == o.parser && lexer == o.lexer && fresh == o.fresh;
  }
};

enum ConsumeStatus : int32_t { kAccepted = 0, kRefused = 1, kOutOfRange = 2 };

// The parser field of a prefix-phase position (its lexer field is the prefix offset).
constexpr int32_t kPrefixPhase = -1;
// next_byte(): no byte, several bytes.
constexpr int32_t kNoByte = -1;
constexpr int32_t kSeveralBytes = -2;
// budget_bound(): no completion exists (or none was found).
constexpr int32_t kNoBound = INT32_MAX;

using MaskPtr = std::shared_ptr<const TokenRow>;

class ConstraintCore {
 public:
  // kRegular: `grammar` is null and the position starts at lexer state `initial_lexer`;
  // accepts_empty: the empty output is a sentence too (the terminal itself is not nullable).
  // kEarley: `grammar` holds the lexer and the parser; the position starts at (0,
  // initial_lexer, fresh). special_offsets/special_tokens: per terminal (CSR), the token ids
  // that spell it (empty for text terminals): the token-set terminals (turned into rows
  // here, once). max_configurations bounds a position's size.
  ConstraintCore(std::shared_ptr<RegexCore> lexer, std::shared_ptr<GrammarCore> grammar, int32_t initial_lexer,
                 bool accepts_empty, std::vector<int32_t> special_offsets, std::vector<int32_t> special_tokens,
                 int64_t max_configurations, size_t mask_cache_size);

  Strategy strategy() const { return grammar_ ? Strategy::kEarley : Strategy::kRegular; }
  const Configuration& initial() const { return initial_; }
  const RegexCore& lexer() const { return *lexer_; }
  int32_t vocab_size() const { return lexer_->trie().vocab_size(); }
  int32_t num_words() const { return lexer_->num_words(); }
  // EOS ids that no token-set terminal spells: consumed as the end of the output.
  bool ends_output(int32_t token) const { return lexer_->is_eos(token) && !in_token_set(token); }
  // Whether some token-set terminal is spelled by `token`.
  bool in_token_set(int32_t token) const {
    return !any_set_.empty() && ((any_set_[token >> 5] >> (token & 31)) & 1u);
  }
  // Every EOS id, those a special terminal spells too (see consume).
  bool is_eos(int32_t token) const { return lexer_->is_eos(token); }

  // The mask of a position (computed and cached on first use). Without the GIL.
  MaskPtr mask(const Configuration* position, size_t size);
  // The mask if it is cached, else null; never computes (may be called with the GIL).
  MaskPtr cached_mask(const Configuration* position, size_t size) const;
  // Whether a lexeme boundary at the position leaves the parser accepting. Without the GIL.
  bool accepting(const Configuration* position, size_t size);
  // The position after `token` into `out` (sorted, unique; empty: refused). Without the GIL.
  void advance(const Configuration* position, size_t size, int32_t token, std::vector<Configuration>& out);
  // The same when it needs nothing new (lexer transitions, ends, start states and parser
  // sets all built, the lexer not busy): returns false, `out` unspecified, otherwise. Never
  // calls back into Python or waits for a lock held across a callback: may run with the GIL.
  bool advance_if_built(const Configuration* position, size_t size, int32_t token, std::vector<Configuration>& out);

  // The position after the bytes data[0, length): advance() for text that is not one
  // token's (sorted, unique; empty: refused). Without the GIL.
  void advance_bytes(const Configuration* position, size_t size, const uint8_t* data, int64_t length,
                     std::vector<Configuration>& out);
  // The mask of a prefix position whose output must still begin with rest[0, length)
  // (length > 0); not cached here. Without the GIL.
  MaskPtr prefix_mask(const uint8_t* rest, int64_t length);
  // Whether a token-set terminal (a special token, a token wildcard) may come next at the
  // position. Without the GIL.
  bool special_allowed(const Configuration* position, size_t size);
  // The one byte the output can continue with, kNoByte or kSeveralBytes (special tokens and
  // the end of the output not counted). Without the GIL.
  int32_t next_byte(const Configuration* position, size_t size);
  // Every byte the output can continue with (bit b of out[b >> 6]): next_byte's set. Without
  // the GIL.
  void next_bytes(const Configuration* position, size_t size, uint64_t out[4]);
  // Appends to `out` the bytes every continuation from the position begins with, up to
  // `max_bytes` of them. Without the GIL.
  void forced_bytes(const Configuration* position, size_t size, int64_t max_bytes, std::vector<uint8_t>& out);

  size_t num_cached_masks() const;
  // the distinct contents among them (equal masks are stored once)
  size_t num_distinct_masks() const;
  // Bytes held by the distinct cached masks and the lexer's cached rows, in their compact forms
  // (TokenRow::memory_bytes; bases shared by the vocabulary not counted).
  size_t row_bytes() const;

  // Token budgets (matcher_budget.cpp, which states the design): the tokens, EOS included,
  // within which the output can be ended from the position (kNoBound: never), exact for
  // kRegular and an upper bound for kEarley; and the row of the tokens allowed under a budget
  // of `budget` tokens (budget >= 1). Both explore at most max_states positions per search
  // (LimitError "max_budget_states" past it). Without the GIL.
  int32_t budget_bound(const Configuration* position, size_t size, int64_t max_states);
  MaskPtr budget_row(const Configuration* position, size_t size, int32_t budget, int64_t max_states);
  // Long life (matcher_sweep.cpp).
  static constexpr int32_t kSweepFloor = 4096;
  // Whether the live parser states reached the threshold of the next sweep.
  bool sweep_due() const;
  // Releases the parser states no registered matcher holds (see the invariants); returns the
  // number released. Call without holding the sweep lock (and without the GIL).
  int64_t sweep() { return sweep_when(false); }
  // sweep() when it is still due once no matcher is in a call (another thread may have swept).
  int64_t sweep_if_due() { return sweep_when(true); }
  int64_t num_sweeps() const { return sweeps_.load(std::memory_order_relaxed); }
  // For tests: from now on a sweep is due whenever at least `live_states` parser states are
  // live (0: at the end of every consume and fill); a negative value restores the rule above
  // from the next sweep on.
  void set_sweep_threshold(int64_t live_states) {
    fixed_sweep_at_.store(live_states, std::memory_order_relaxed);
    if (live_states >= 0) sweep_at_.store(live_states, std::memory_order_relaxed);
  }
  std::shared_mutex& sweep_mutex() { return sweep_mu_; }
  void register_matcher(const class MatcherCore* m);
  void unregister_matcher(const class MatcherCore* m);
  size_t num_matchers() const;

 private:
  struct BudgetEntry {
    int32_t bound;  // tokens, EOS included
    int32_t first;  // the first token of the witness that gives it (-1: EOS, or none kept)
  };
  struct BudgetProfile {
    MaskPtr mask;                                        // the plain mask of the position
    std::vector<std::pair<int32_t, TokenRow>> groups;    // tokens by the bound after them, ascending
    int32_t covered_below = 0;  // every token of the mask is in a group whose bound is < this
  };
  // (under budget_mu_)
  int32_t bound_locked(const std::vector<Configuration>& position, int64_t max_states);
  void explore_regular(const std::vector<Configuration>& position, int64_t max_states);
  int32_t regular_step(int32_t state, int32_t token);  // kRegular: the state after an allowed token
  void witness(const std::vector<Configuration>& position, int64_t max_states);
  // a completion (bytes, and 256 + id for token-set tokens) from minimal derivations
  // (only_single: only bytes that are tokens by themselves)
  bool plan_completion(const std::vector<Configuration>& position, int64_t max_states, bool only_single,
                       std::vector<int32_t>& steps);
  // the same by breadth-first search over bytes
  bool search_completion(const std::vector<Configuration>& position, int64_t max_states, bool only_single,
                         std::vector<int32_t>& steps);
  // tokenizes a completion, checks it and records the bounds along it
  bool record_witness(const std::vector<Configuration>& position, const std::vector<int32_t>& steps);
  std::shared_ptr<const BudgetProfile> profile_locked(const std::vector<Configuration>& position, int64_t max_states);
  struct ConfigurationHash {
    size_t operator()(const Configuration& c) const {
      return (static_cast<size_t>(static_cast<uint32_t>(c.parser)) * 0x9E3779B97F4A7C15ull) ^
             (static_cast<size_t>(static_cast<uint32_t>(c.lexer)) << 1) ^ static_cast<size_t>(c.fresh);
    }
  };
  struct PositionHash {
    size_t operator()(const std::vector<Configuration>& p) const {
      size_t h = p.size();
      for (const Configuration& c : p) h = h * 1000003u ^ ConfigurationHash()(c);
      return h;
    }
  };

  int64_t sweep_when(bool only_if_due);
  MaskPtr regular_mask(const Configuration& c);
  MaskPtr configuration_mask(const Configuration& c);
  bool configuration_accepting(const Configuration& c);
  // Parser states where the configuration's lexeme can end right now (the caller holds the
  // lexer's compute mutex).
  void boundary_parsers(const Configuration& c, std::vector<int32_t>& out);
  // One mechanism for both advances: kBuiltOnly reads what exists and returns false at the
  // first thing that would have to be computed. The caller holds the lexer's compute mutex.
  template <bool kBuiltOnly>
  bool advance_text(const Configuration* position, size_t size, const uint8_t* data, int64_t length,
                    std::vector<Configuration>& out);
  // Cache a computed mask; returns the mask to use: an equal one already cached, or `mask`.
  MaskPtr remember(const Configuration& c, MaskPtr mask);
  MaskPtr remember(std::vector<Configuration> position, MaskPtr mask);

  std::shared_ptr<RegexCore> lexer_;
  std::shared_ptr<GrammarCore> grammar_;  // null for kRegular
  Configuration initial_;
  bool accepts_empty_;
  MaskPtr initial_mask_;  // kRegular with accepts_empty: the initial state's row, accepting
  // per terminal: its index in token_sets_ (-1: a text terminal); per token-set terminal:
  // its terminal and its ids as a row; any_set_: their union (empty when there are none)
  std::vector<int32_t> set_of_terminal_;
  std::vector<std::pair<int32_t, TokenRow>> token_sets_;
  std::vector<uint32_t> any_set_;
  int64_t max_configurations_;
  size_t mask_cache_size_;

  alignas(64) mutable std::mutex cache_mu_;
  std::unordered_map<Configuration, MaskPtr, ConfigurationHash> masks_;
  std::deque<Configuration> mask_order_;
  std::unordered_map<std::vector<Configuration>, MaskPtr, PositionHash> positions_;
  std::deque<std::vector<Configuration>> position_order_;
  std::unordered_map<Configuration, bool, ConfigurationHash> accepting_;
  // every cached mask by content hash: positions with equal masks share one (a JSON Schema
  // constraint's 512 cached masks held 27 to 232 distinct ones); entries of masks no cache
  // or matcher holds any more expire and are purged as the table grows
  DistinctRows distinct_masks_;
  // token budgets: bounds per position (evicted only by a sweep: positions are bounded by the
  // lexer's and the parser's limits), profiles per position (first in first out), and per lexer
  // class the byte witnesses use (a single-byte token where one exists)
  std::mutex budget_mu_;
  std::unordered_map<std::vector<Configuration>, BudgetEntry, PositionHash> bounds_;
  std::unordered_map<std::vector<Configuration>, std::shared_ptr<const BudgetProfile>, PositionHash> profiles_;
  std::deque<std::vector<Configuration>> profile_order_;
  std::vector<int32_t> witness_byte_;
  std::vector<uint8_t> witness_single_;  // per class: its byte is a token by itself
  // long life: matchers alive, the lock that keeps them out of their calls during a sweep
  // (each lock on a cache line of its own: a consume on one core takes sweep_mu_ while a fill
  // on another takes cache_mu_, and neither should move the fields the other reads)
  alignas(64) std::shared_mutex sweep_mu_;
  mutable std::mutex registry_mu_;
  std::unordered_set<const MatcherCore*> matchers_;
  std::atomic<int64_t> sweep_at_{kSweepFloor};
  std::atomic<int64_t> sweeps_{0};
  std::atomic<int64_t> fixed_sweep_at_{-1};  // set_sweep_threshold (-1: the automatic rule)
};

class MatcherCore {
 public:
  // `prefix`: bytes the output must begin with (token healing; empty: none).
  explicit MatcherCore(std::shared_ptr<ConstraintCore> constraint, std::vector<uint8_t> prefix = {});
  MatcherCore(const MatcherCore& other);
  MatcherCore& operator=(const MatcherCore&) = delete;
  ~MatcherCore();
  // Appends the parser handles this matcher holds (its history and its forced run). The
  // caller holds the constraint's sweep lock exclusively.
  void held_parsers(std::vector<int32_t>& out) const;

  // Writes the allowed tokens into out[0, num_words) (bits past the vocabulary cleared).
  void fill(uint32_t* out, int64_t num_words);
  // The same when the position's mask is cached (returns false, writing nothing, when it
  // would have to be computed): a bounded copy that callers may run holding the GIL.
  bool fill_if_cached(uint32_t* out, int64_t num_words);
  ConsumeStatus consume(int32_t token);
  // consume() when nothing has to be computed (the position's mask is cached, and so is
  // everything the advance reads: ConstraintCore::advance_if_built), else -1 and nothing
  // changes; callers may run it holding the GIL.
  int32_t consume_if_cached(int32_t token);
  int32_t rollback(int32_t n);  // returns how many were undone (n, or fewer if history is short)
  // A batch's decoding step (matcher_step.cpp): consume(token) (token < 0: none), then
  // fill(out) when out is not null; all or nothing when either throws. Without the GIL.
  ConsumeStatus step(int32_t token, uint32_t* out, int64_t num_words);
  bool is_accepting();
  bool is_terminated() const { return terminated_; }
  size_t history_length() const { return starts_.size() - 1 + (terminated_ ? 1 : 0); }
  size_t num_configurations() const { return stack_.size() - starts_.back(); }
  // The current position (for tests and the oracle comparisons).
  std::vector<Configuration> position() const {
    return std::vector<Configuration>(stack_.begin() + starts_.back(), stack_.end());
  }
  const ConstraintCore& constraint() const { return *constraint_; }
  std::shared_ptr<ConstraintCore> shared_constraint() const { return constraint_; }
  // At most max_tokens forced tokens from the current position (see above); changes
  // nothing but caches. Without the GIL.
  std::vector<int32_t> forced_tokens(int64_t max_tokens);
  // At most max_bytes forced bytes from the current position. Without the GIL.
  std::vector<uint8_t> forced_bytes(int64_t max_bytes);
  // Speculative drafts (matcher_draft.cpp): rows out + i * stride (num_words words each) for
  // i = 0, 1, ...: row i is what fill() writes after consuming tokens[0, i); it stops after
  // the row of the first token consume() refuses (an id out of range included), or after row
  // n. Returns the rows written: the accepted tokens + 1. `accepting` (null: not wanted)
  // gets, per row written, 1 where EOS is allowed (the output is complete, or terminated).
  // The position is unchanged afterwards, an exception included (what was consumed is
  // rolled back and the mask pointer restored). Without the GIL.
  int64_t fill_draft(const int32_t* tokens, int64_t n, uint32_t* out, int64_t stride, int64_t num_words,
                     uint8_t* accepting);
  // How many of tokens[0, n) consume() accepts in order; the position is unchanged.
  // Without the GIL.
  int64_t validate_draft(const int32_t* tokens, int64_t n);
  // fill() under a budget of `budget` >= 1 tokens, EOS included (ConstraintCore::budget_row;
  // a terminated matcher sets only EOS), and the bound of the current position (0 when
  // terminated). In the prefix phase the bound of a prefix position is one more than the
  // least bound after a token of its mask (prefix positions recursively, then the
  // constraint's), computed per matcher. Without the GIL.
  void fill_budget(uint32_t* out, int64_t num_words, int32_t budget, int64_t max_states);
  int32_t budget_needed(int64_t max_states);

 private:
  const MaskPtr& current_mask();
  // Sets mask_ when the current position's mask is known without computing (the matcher's
  // own, a prefix mask, or the constraint's cached one) and releases retired_; false
  // otherwise. Needs no sweep lock (reads no parser state).
  bool known_mask();
  // The constraint's sweep lock, shared (kEarley; nothing for kRegular, which never sweeps);
  // try_only: not waiting (for callers that may hold the GIL).
  std::shared_lock<std::shared_mutex> hold(bool try_only = false) const;
  ConsumeStatus consume_held(int32_t token);
  bool is_accepting_held();
  // The mask of any position, and the advance from it: prefix positions here, the others in
  // the constraint.
  MaskPtr mask_at(const Configuration* position, size_t size);
  void advance_at(const Configuration* position, size_t size, int32_t token, std::vector<Configuration>& out);
  void advance_prefix(int32_t offset, int32_t token, std::vector<Configuration>& out);
  bool in_prefix() const { return stack_[starts_.back()].parser == kPrefixPhase; }
  // Consumes an EOS id as the end of the output: accepted iff the position accepts.
  ConsumeStatus end_output();
  void write(const TokenRow* row, uint32_t* out, int64_t num_words) const;
  void fill_budget_held(uint32_t* out, int64_t num_words, int32_t budget, int64_t max_states);
  int32_t budget_needed_held(int64_t max_states);
  // token budgets in the prefix phase (matcher_budget.cpp)
  int32_t prefix_bound(int32_t offset, int64_t max_states);
  int32_t bound_after_prefix(int32_t offset, int32_t token, int64_t max_states);
  std::vector<int32_t> prefix_bounds_;  // by prefix offset, kUnknown until computed

  std::shared_ptr<ConstraintCore> constraint_;
  std::vector<Configuration> stack_;  // every position since the start, oldest first
  std::vector<uint32_t> starts_;      // where each position begins in stack_
  bool terminated_ = false;
  MaskPtr mask_;                      // of the current position, once known
  // The mask before the last consume, kept until the next fill releases it: a server consumes
  // on one thread and fills on a pool's worker, and a reference count dropped by the consume
  // and taken again by the fill moves the mask's control block between the two cores every
  // step; the fill takes the new reference and drops the old one on its own core.
  MaskPtr retired_;
  std::vector<Configuration> scratch_;
  std::shared_ptr<const std::vector<uint8_t>> prefix_;  // null: no prefix phase
  std::vector<MaskPtr> prefix_masks_;                   // by prefix offset, once computed
  // the last forced run: its tokens, the positions before each and after the last
  // (forced_positions_[forced_starts_[i], forced_starts_[i + 1])), from depth forced_depth_
  // (starts_.size() then); complete unless cut by a bound
  std::vector<int32_t> forced_;
  std::vector<Configuration> forced_positions_;
  std::vector<uint32_t> forced_starts_;
  size_t forced_depth_ = 0;
  bool forced_complete_ = false;
};

}  // namespace tokamata
