// An Earley recognizer over terminal ids, with immutable sets addressed by int handles.
//
// Invariants (the Python wrapper grammar/earley.py documents the same contract):
// - Handle 0 is the set before any terminal; scan(h, t) is the set after terminal t, or -1
//   when t cannot come next. Sets never change once built (only their scan memo grows).
// - Sets are hash-consed by kernel: equal kernels are the same handle (a set's closure is a
//   function of its kernel, since predicted items point at the set itself). Sets are also
//   hash-consed by content: two kernels whose closures have the same open items (items
//   expecting a symbol, with their origins) and the same acceptance are one handle, since
//   scans, completions into the set and allowed terminals read nothing else. So the number
//   of sets reachable is bounded by the distinct open-item sets, not by the distinct
//   lexeme sequences (abutting lexemes would otherwise give exponentially many).
// - A set stores its earlier-origin items (kernel and completions) as one array sorted by the
//   symbol after the dot, and its predicted items as a shared Predicted block per set of
//   predicted nonterminals (also sorted by symbol): lookups are binary searches, and building
//   a set allocates a handful of arrays.
// - Nullable nonterminals are advanced over when predicted (Aycock-Horspool).
// - Every nonterminal is productive (check_grammar, over GrammarRules), so allowed(h) is exactly the set of
//   terminals after which the parse is still extendable to a sentence.
// - All operations lock one mutex and never call back into Python; limits (items per set,
//   live sets) throw LimitError (LimitExceeded in Python).
// - collect(roots) releases every set that neither a root nor (transitively) the origin of an
//   item of a kept set is: a set reads only its origins' sets (completion), so the kept sets
//   and every scan from them are unchanged. Kept handles stay as they are; released handles
//   are reused by later sets, so whoever caches anything by handle must drop what collect
//   reports released (ConstraintCore::sweep does, for its own and GrammarCore's caches).
//   Memos that name a released set (scan children, kernels with a released origin, content
//   keys) are dropped with it, and a set built again after a release has the same content
//   as before (closures are functions of the kernel), so answers do not depend on sweeps.
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "tokamata/grammar_rules.hpp"

namespace tokamata {

constexpr int32_t kEndOfRule = INT32_MIN;

// Rows of int32 values stored flat (one allocation, not one per row): row i is
// values[offsets[i], offsets[i + 1]). Rows are appended in order with close_row().
struct FlatRows {
  std::vector<int32_t> offsets{0};
  std::vector<int32_t> values;
  size_t size() const { return offsets.size() - 1; }
  const int32_t* begin(size_t row) const { return values.data() + offsets[row]; }
  const int32_t* end(size_t row) const { return values.data() + offsets[row + 1]; }
  void close_row() { offsets.push_back(static_cast<int32_t>(values.size())); }
};

struct EarleyTables {
  std::vector<int32_t> next_symbol;  // per position: terminal >= 0, nonterminal -(j+1), kEndOfRule
  std::vector<int32_t> lhs_of;       // per position
  FlatRows prefix_positions;         // per nonterminal
  FlatRows prediction_closure;       // per nonterminal, sorted
  std::vector<uint8_t> nullable;                         // per nonterminal
  int32_t start = 0;
  int32_t num_terminals = 0;
};

// The recognizer's tables for ``rules`` with start symbol ``start``: positions in rule order,
// nullable nonterminals, each nonterminal's prefix positions (up to the first symbol that is
// a terminal or a non-nullable nonterminal) and its prediction closure.
EarleyTables earley_tables(const GrammarRules& rules, int32_t start);

class EarleyCore {
 public:
  EarleyCore(EarleyTables tables, int64_t max_items, int64_t max_sets);

  int32_t scan(int32_t handle, int32_t terminal);
  // scan() without building a set: the memoized child, -1 when the terminal cannot come
  // next, or kScanNotBuilt when the child set does not exist yet.
  static constexpr int32_t kScanNotBuilt = -2;
  int32_t scan_if_built(int32_t handle, int32_t terminal) const;
  bool accepting(int32_t handle) const;
  // Id of the set's allowed-terminal set (equal sets share ids) and the terminals themselves.
  int32_t allowed_id(int32_t handle) const;
  std::vector<int32_t> allowed(int32_t handle) const;
  std::vector<int32_t> allowed_by_id(int32_t id) const;
  // Live sets (the limit max_parser_states counts these).
  int32_t num_sets() const;
  // Appends to `out` a continuation of fewest terminals from set `handle` to an accepting set
  // (minimal derivations of the rest of one of its items, then of each parent item's rest up
  // to the start item; earley_completion.cpp). Returns false, `out` unspecified, when none is
  // found within max_length terminals. Token budgets use it for their witnesses.
  bool shortest_completion(int32_t handle, int64_t max_length, std::vector<int32_t>& out);
  // The same without the lock (a recent value; for the sweep trigger on the hot path).
  int32_t num_sets_hint() const { return live_hint_.load(std::memory_order_relaxed); }
  int64_t max_sets() const { return max_sets_; }
  // Sets built so far, released ones included (never decreases).
  int64_t num_built() const;
  // Handles ever allotted, live or free (the size of the handle table).
  int32_t num_handles() const;
  // Releases the sets unreachable from `roots` (plus handle 0) through origins; returns one
  // flag per handle (size num_handles()): 1 live, 0 free.
  std::vector<uint8_t> collect(const std::vector<int32_t>& roots);

 private:
  struct Item {
    int32_t position;
    int32_t origin;
  };
  struct Entry {  // an item with the symbol after its dot
    int32_t symbol;
    Item item;
  };
  struct Predicted {
    std::vector<std::pair<int32_t, int32_t>> by_symbol;  // (symbol after the dot, position), sorted
    std::vector<int32_t> terminals;                      // the terminal symbols, sorted, unique
  };
  struct Set {
    std::vector<Entry> entries;  // earlier-origin items that expect a symbol, sorted by symbol
    const Predicted* predicted = nullptr;
    bool accepting = false;
    int32_t allowed_id = 0;
    std::vector<std::pair<int32_t, int32_t>> children;  // (terminal, handle): the scan memo
    std::string content_key;  // its key in by_content_
  };

  void close(std::vector<Item>& stack, int32_t here, std::vector<int32_t>& roots, Set& out);
  const Predicted* predicted_for(std::vector<int32_t>& roots);
  int32_t intern_allowed(std::vector<int32_t> terminals);
  void check(int32_t handle) const;
  bool first_time(int64_t key);

  EarleyTables t_;
  int64_t max_items_;
  int64_t max_sets_;
  mutable std::mutex mu_;
  std::vector<std::unique_ptr<Set>> sets_;  // null: a released handle (in free_)
  std::vector<int32_t> free_;
  int32_t live_ = 0;
  std::atomic<int32_t> live_hint_{0};  // live_, written after each change
  int64_t built_ = 0;
  std::unordered_map<std::string, int32_t> by_kernel_;
  std::unordered_map<std::string, int32_t> by_content_;  // (accepting, open items) -> handle
  std::unordered_map<std::string, const Predicted*> predicted_by_roots_;
  std::unordered_map<std::string, std::unique_ptr<Predicted>> predicted_;
  std::vector<std::vector<int32_t>> allowed_sets_;
  // minimal derivations (earley_completion.cpp): per nonterminal, the fewest terminals it
  // derives (INT32_MAX: none) and the first position of a rule that derives them
  std::vector<int32_t> min_cost_, min_rule_;
  std::unordered_map<std::string, int32_t> allowed_ids_;
  // scratch of one closure: an open-addressing set of item keys, stale by epoch
  std::vector<std::pair<uint64_t, int64_t>> seen_;
  size_t seen_count_ = 0;
  uint64_t epoch_ = 0;
};

}  // namespace tokamata
