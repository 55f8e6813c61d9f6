// Grammar masks: token rows that cross lexeme boundaries (seed 000 App. A, seed 001's lexer/parser
// split), on top of a lexer DFA held by a RegexCore.
//
// Invariants:
// - The lexer DFA's states are sets of live terminals (tagged derivatives); a state "accepts" when
//   some terminal may end there, and ends(state) lists those terminals. A parser state is an
//   EarleyCore handle. At a boundary, each terminal ending there is handed to the parser
//   (ignored terminals leave it unchanged) and the next lexeme starts in the lexer state made
//   for the terminals the new parser state allows (start(allowed set id), kDead if none).
// - ends() and start() are computed by the functions given (the native lexer DFA's ends, and
//   lexer_starts.hpp's start states) the first time and cached here; start() returns states
//   the LazyDfa already knows (the start function registers them).
// - events(s) lists, for lexer state s, every trie node (with children) whose path leads s to an
//   accepting state: the places where a lexeme may end strictly inside a token. Computed once per
//   state by a trie walk, cached. With the vocabulary's slices (token_slices.hpp), nodes whose
//   whole subtree the inside row of s allows through slices taken whole may be left out: a
//   crossing there could only add tokens the mask has already.
// - crossing(parser, s) sets the bits of the tokens that end the current lexeme strictly inside
//   themselves and are allowed from there on, possibly crossing several more boundaries.
//   Together with the inside row of s (tokens that keep the current lexeme live) this is the
//   exact token mask of the configuration. The events' children are indexed by (lexer state at
//   the event, child byte); for each group the configurations after the boundary are stepped
//   over the byte once, and only the children whose byte some configuration can take are
//   walked (deduplicated per trie level). So an identifier state with 47k events costs only
//   the children that can start what the parser allows after an identifier.
// - When lexemes may abut densely (an s-expression symbol may end at any byte and the next one
//   start there), the event-indexed walk meets the same (node, configuration) pairs from every
//   event above them. A crossing whose event-indexed walk takes more steps than the trie has
//   nodes gives way to one plain DFS from the root (walk_below), which steps each (node,
//   configuration) once: its cost is bounded by nodes x distinct configurations, and the bits
//   the abandoned walk set are all correct (bits only grow).
// - The first mask asked of a lexer state walks the trie once from the root with all its
//   configurations (plain_walk), instead of walking for the state's events, indexing their
//   children and then crossing: the index (and the subtree data under it) pays off only when
//   several parser states share the lexer state, and costs several full walks to build. So
//   configuration_bits takes the plain walk the first time it meets a lexer state, and the
//   events and index from the second time on (or at once, when slices take part of the state's
//   row whole: the plain walk cannot skip them). Both give exactly inside(state) | crossing.
// - Every walk counts its steps and throws LimitError("max_mask_work") past max_work
//   (Limits.max_mask_work), at once: a mask never runs for seconds.
// - Walks hold the lexer core's compute mutex (they expand the lexer DFA and make its start
//   states, natively) and run without the GIL: nothing in a walk calls back into Python.
#pragma once
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokamata/earley.hpp"
#include "tokamata/token_row.hpp"

namespace tokamata {

struct Config {
  int32_t parser;
  int32_t state;
  bool operator<(const Config& o) const { return parser != o.parser ? parser < o.parser : state < o.state; }
  bool operator==(const Config& o) const { return parser == o.parser && state == o.state; }
};

struct BoundaryEvent {
  uint32_t node;
  int32_t state;
};

// The children of a lexer state's events, grouped by (event state, child byte).
struct EventIndex {
  std::vector<int32_t> states;         // distinct event states
  std::vector<uint32_t> offsets;       // (states.size() * 256 + 1) offsets into children
  std::vector<uint32_t> children;      // child node indices
  std::vector<uint32_t> segments;      // the (group * 256 + byte) with children, ascending
  // events at nodes with big subtrees are not split by child: the configurations after the
  // boundary continue below the node through its cached subtree data
  std::vector<std::pair<uint32_t, uint32_t>> big_events;  // (node, group)
};

// What a lexer state does below one trie node (a node with a big subtree): the tokens whose
// rest keeps the state live without a boundary, and the events (boundaries) below the node.
struct SubtreeData {
  std::vector<int32_t> inside;        // token ids strictly below the node (when few)
  std::vector<uint32_t> inside_bits;  // or the same as a bitset over the vocabulary (when many)
  EventIndex index;
};

// Boundary-event nodes by structural lexer-state key, shared by every grammar over one
// vocabulary (like SharedRowCache; shared_cache.hpp). Holds node indices only: a grammar
// recomputes the lexer states at those nodes by running its DFA along each node's path.
using SharedEventCache = SharedCache<const std::vector<uint32_t>>;

class GrammarCore {
 public:
  using StartFn = std::function<int32_t(int32_t allowed_id)>;
  using EndsFn = std::function<void(int32_t state, std::vector<int32_t>& out)>;

  // max_work: the most steps (a configuration stepped over a trie node's byte, or one handed
  // to a node) one walk may take; past it the walk throws LimitError("max_mask_work").
  GrammarCore(std::shared_ptr<RegexCore> lexer, std::shared_ptr<SharedEventCache> shared,
              std::shared_ptr<EarleyCore> parser, std::vector<uint8_t> ignored, StartFn start, EndsFn ends,
              int64_t max_work = INT64_MAX)
      : lexer_(std::move(lexer)), shared_(std::move(shared)), parser_(std::move(parser)),
        ignored_(std::move(ignored)), start_fn_(std::move(start)), ends_fn_(std::move(ends)), max_work_(max_work) {}

  RegexCore& lexer() { return *lexer_; }
  EarleyCore& parser() { return *parser_; }
  // Both must be called without the GIL.
  const std::vector<BoundaryEvent>& events(int32_t state);
  // ORs the crossing tokens of configuration (parser, state) into bits (and possibly tokens of
  // the inside row of `state`, which the mask has anyway); returns the number of boundaries
  // resolved (for tests and benchmarks).
  int64_t crossing(int32_t parser, int32_t state, uint32_t* bits);
  // ORs into bits the tokens strictly below trie node `node` that some configuration of
  // `configs` (the lexer states after the node's path) keeps alive, crossing boundaries as
  // crossing() does (a token healing prefix ends at `node`); returns the same count.
  int64_t below(uint32_t node, const std::vector<Config>& configs, uint32_t* bits);
  // ORs into bits inside(state) | crossing(parser, state): one plain walk from the trie root the
  // first time the lexer state is met (and slices cannot take part of its row), the inside row
  // and the event-indexed crossing after that. Returns the boundaries resolved.
  int64_t configuration_bits(int32_t parser, int32_t state, uint32_t* bits);
  // ORs into bits inside(state) | crossing(parser, state) of every root, by one DFS of the whole
  // trie stepping all of them together (what configuration_bits does the first time).
  int64_t plain_walk(const std::vector<Config>& roots, uint32_t* bits);
  size_t num_event_lists() const;
  // Steps taken by every walk so far (what Limits.max_mask_work bounds per walk), and the
  // walks that gave way to the plain DFS: for tests and benchmarks.
  int64_t walk_steps() const { return steps_total_.load(std::memory_order_relaxed); }
  int64_t dense_walks() const { return dense_total_.load(std::memory_order_relaxed); }
  // Drops what is remembered about parser states that `live` (one flag per parser handle, from
  // EarleyCore::collect) marks released. The caller holds lexer().compute_mutex().
  void forget_parsers(const std::vector<uint8_t>& live);
  // Plain walks from the trie root that a lexer state's first mask took (plain_walk).
  int64_t plain_walks() const { return plain_total_.load(std::memory_order_relaxed); }
  // The first-mask walk's scratch (its interned configuration sets) is capped, process-wide
  // (default 64 MiB): past the cap that walk gives way to the per-configuration walk from the
  // root (walk_below), exact too. Settable for tests; scratch_fallbacks counts the switches.
  static size_t plain_walk_scratch_cap() { return scratch_cap_storage().load(std::memory_order_relaxed); }
  static void set_plain_walk_scratch_cap(size_t bytes) { scratch_cap_storage().store(bytes, std::memory_order_relaxed); }
  int64_t scratch_fallbacks() const { return scratch_fallbacks_.load(std::memory_order_relaxed); }
  // The three below: the caller holds lexer().compute_mutex().
  // Terminals that may end at lexer state `state` (cached).
  const std::vector<int32_t>& ends_of(int32_t state);
  // The lexer state a lexeme starts in after parser state `parser` (kDead: none; cached per
  // allowed set, asked of the start function the first time).
  int32_t start_of(int32_t parser);
  // The parser state after a lexeme of `terminal` from `parser` (-1: not allowed); ignored
  // terminals leave the parser where it is.
  int32_t after_lexeme(int32_t parser, int32_t terminal) {
    return ignored_[terminal] ? parser : parser_->scan(parser, terminal);
  }
  // The same three without computing anything new: null / kUnknown / EarleyCore::kScanNotBuilt
  // when the answer is not known yet.
  const std::vector<int32_t>* ends_if_known(int32_t state) const {
    return static_cast<size_t>(state) < ends_known_.size() && ends_known_[state] ? &ends_[state] : nullptr;
  }
  int32_t start_if_known(int32_t parser) const {
    const int32_t id = parser_->allowed_id(parser);
    return static_cast<size_t>(id) < start_by_allowed_.size() ? start_by_allowed_[id] : kUnknown;
  }
  int32_t after_lexeme_if_built(int32_t parser, int32_t terminal) const {
    return ignored_[terminal] ? parser : parser_->scan_if_built(parser, terminal);
  }
  // Appends (after, start) for each terminal ending at `state` that the parser takes, whose
  // next lexeme can start (start != kDead).
  void boundary(int32_t parser, int32_t state, std::vector<Config>& out);

 private:
  const std::vector<BoundaryEvent>& events_locked(int32_t state);
  // (parser, lexer state at a boundary) -> the configurations after it, memoized per walk
  class Targets;
  // Runs one walk (crossing, below) under the compute mutex with a fresh boundary memo.
  int64_t with_targets(const std::function<void(Targets&)>& walk);
  bool sliced(int32_t state);
  std::unordered_set<int32_t> walked_plain_;  // lexer states whose first mask took plain_walk
  const EventIndex& index_locked(int32_t state);
  const SubtreeData* subtree_data(uint32_t node, int32_t state);
  EventIndex build_index(const std::vector<BoundaryEvent>& events) const;
  void walk_below(uint32_t node, std::vector<Config>& buf, uint32_t* bits, Targets& targets);
  void cross_groups(const EventIndex& index, int32_t parser, uint32_t* bits, Targets& targets, int depth);
  void cross_at(uint32_t node, const std::vector<Config>& configs, uint32_t* bits, Targets& targets, int depth);
  // Counts `steps` of work: throws LimitError past max_work_, and Dense past dense_cap_.
  void spend(int64_t steps) {
    work_ += steps;
    if (work_ > dense_cap_) spent();
  }
  [[noreturn]] void spent();
  struct Dense {};

  int64_t max_work_;
  int64_t work_ = 0;        // steps of the current walk
  int64_t dense_cap_ = 0;   // the event-indexed walk gives way to the plain one past this
  std::unordered_set<uint64_t> dense_;  // (parser, state) whose crossing went dense; compute mutex
  std::atomic<int64_t> steps_total_{0};
  std::atomic<int64_t> dense_total_{0};
  std::atomic<int64_t> plain_total_{0};

  std::shared_ptr<RegexCore> lexer_;
  std::shared_ptr<SharedEventCache> shared_;
  std::shared_ptr<EarleyCore> parser_;
  std::vector<uint8_t> ignored_;  // per terminal
  StartFn start_fn_;
  EndsFn ends_fn_;
  // under the lexer's compute mutex:
  std::vector<std::vector<int32_t>> ends_;
  std::vector<uint8_t> ends_known_;
  std::vector<int32_t> start_by_allowed_;  // kUnknown until asked
  mutable std::mutex events_mu_;
  std::unordered_map<int32_t, std::unique_ptr<std::vector<BoundaryEvent>>> events_;
  std::unordered_map<int32_t, std::unique_ptr<EventIndex>> index_;  // under the compute mutex
  std::unordered_map<uint64_t, std::unique_ptr<SubtreeData>> subtrees_;  // (node, state), ditto
  // scratch of one crossing, under the compute mutex: (node, configuration) pairs already
  // handled (an open-addressing table; entries of older crossings have an older epoch) and the
  // buffers of the leaf walks (walk_below never recurses)
  struct Visit {
    uint64_t epoch = 0;
    uint32_t node = 0;
    int32_t parser = 0, state = 0;
  };
  bool first_visit(uint32_t node, const Config& c);
  std::vector<Visit> visits_;
  size_t visit_count_ = 0;
  uint64_t epoch_ = 0;
  std::vector<Config> walk_buf_;
  std::atomic<int64_t> scratch_fallbacks_{0};
  static std::atomic<size_t>& scratch_cap_storage();
  struct WalkItem {
    int32_t parser, state;
    DfaRow row;  // the DFA row of `state`
  };
  std::vector<WalkItem> walk_items_;
  std::vector<uint32_t> walk_levels_;
};

}  // namespace tokamata
