// Hash-consed byte-level regular expressions with memoized Brzozowski derivatives: the
// native counterpart of src/tokamata/automata/derivatives.py and boolean.py, in which a
// grammar's lexer DFA is expanded without calling back into Python.
//
// Invariants:
// - A node is identified by its id: two ids are equal iff the (normalized) nodes are, so an
//   id keys a DFA state. Ids are dense and never reused; children have smaller ids than
//   their parents.
// - Constructors normalize exactly as the Python ones do (right-nested concatenation;
//   flattened, sorted, deduplicated alternation with its byte sets merged into one; unit and
//   zero laws; the repetition laws; flattened intersections, (a-b)-c == a-(b|c)), which keeps
//   the derivatives of any node finitely many. Every node other than NOTHING matches some
//   string: intersections and differences built here decide emptiness by a search of the
//   product of their members' derivatives, bounded by search_budget (LimitError
//   max_dfa_states), in boolean.py's order (the divisibility leaves' hints, the first bytes of
//   their shortest completions, are tried first, smallest first). That order is a function of
//   the members' structure, never of their ids (which follow import order, so what the
//   process built before): a search's outcome under its budget does not depend on history.
// - Nodes come from Python by import_nodes (post-order records, see there) or as
//   derivatives. Every kind of derivatives.py, boolean.py and substrings.py is native, the
//   three parametric leaves included (expr_leaves.cpp): UNTIL (text until a stop string: a
//   stop index into a side table of stop strings, the KMP position, and the rest of the
//   character in progress), DECMOD (decimal divisibility: k, phase and fraction digits read
//   as fields, the modulus p and the remainder r as base-10^9 numbers in the payload, so any
//   p Python accepts is exact) and SUBSTRING (the non-empty substrings of a text: an index
//   into a side table of suffix automata over the text's code points, built here in linear
//   time, keyed by the code points so equal texts share one; the automaton state; the bytes
//   read of the character in progress). Nothing calls back into Python.
// - cuts(node) are the bytes (1..255) where the node's derivative may change; the derivative
//   is memoized per node and per class between two cuts.
// - Not thread-safe by itself: every caller holds mutex() (recursive, so that locked entry
//   points may nest). Nothing under it waits for the Python GIL; the bindings still drop the
//   GIL before taking it, since a lexer expansion may hold it for long.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace tokamata {

enum ExprKind : uint8_t {  // the numbers of derivatives.py's Kind
  kNothing = 0,
  kEpsilon = 1,
  kBytes = 2,
  kUtf8 = 3,
  kConcat = 4,
  kAlt = 5,
  kRepeat = 6,
  kTagged = 7,
  kUntil = 8,
  kAnd = 9,
  kDiff = 10,
  kDecmod = 11,
  kSubstring = 12,
};

class ExprArena {
 public:
  using ByteMask = std::array<uint64_t, 4>;
  // A natural number in base 10^9, least significant limb first, no leading zero limbs
  // (zero: empty): DECMOD's modulus and remainder.
  using Decimal = std::vector<int32_t>;
  static constexpr int32_t kNothingId = 0;
  static constexpr int32_t kEpsilonId = 1;
  static constexpr int32_t kUnbounded = -1;
  static constexpr int32_t kMaxCodePoint = 0x10FFFF;
  static constexpr int32_t kTextUnlimited = 1 << 30;  // slices.UNLIMITED

  ExprArena();

  std::recursive_mutex& mutex() { return mutex_; }
  // Product states an intersection/difference emptiness search may visit (Limits.max_dfa_states).
  void set_search_budget(int64_t budget) { search_budget_ = budget; }
  int64_t search_budget() const { return search_budget_; }

  // Imports nodes given as int32 records in post-order; returns the id of each record. A
  // reference to a child is an arena id (>= 0) or -1 - i for the i-th record of this batch.
  //   BYTES:   2, eight 32-bit words of the mask (low first)
  //   UTF8:    3, pending, n, n (lo, hi) pairs (sorted, disjoint, normalized by Python)
  //   CONCAT:  4, first, second           ALT: 5, n, n members
  //   REPEAT:  6, item, low, high         TAGGED: 7, item, tag
  //   UNTIL:   8, pending (the rest of a character in progress; 0 = NOTHING: none), matched,
  //            n, the n bytes of the stop string (non-empty valid UTF-8)
  //   AND:     9, n, n members            DIFF: 10, first, second
  //   DECMOD:  11, k, phase, t, n, n limbs of p, m, m limbs of r (base 10^9, low first)
  //   SUBSTRING: 12, state, pending (the bytes read of the character in progress: their count
  //            << 24, then the bytes from bit 23 down, first byte highest), n, the n code
  //            points of the text (no surrogates; n > 0)
  // AND and DIFF are trusted to be non-empty (Python decided); UNTIL, DECMOD and SUBSTRING
  // records go through the constructors below (a DECMOD state that cannot be completed is
  // NOTHING; a SUBSTRING state that is not live is refused).
  std::vector<int32_t> import_nodes(const int32_t* records, size_t size);

  int32_t byte_set(const ByteMask& mask);
  int32_t concat(int32_t first, int32_t second);
  int32_t alternation(const int32_t* members, size_t count);
  int32_t repeat(int32_t item, int32_t low, int32_t high);
  int32_t tagged(int32_t item, int32_t tag);
  int32_t intersection(const int32_t* members, size_t count);
  int32_t difference(int32_t first, int32_t second);
  // derivatives.text_until(stop) in the state (matched bytes of stop, pending rest of a
  // character: kNothingId for none); stop must be non-empty valid UTF-8.
  int32_t text_until(const std::string& stop, int32_t matched = 0, int32_t pending = kNothingId);
  // boolean.decimal_multiple(p, k) in the state (phase, remainder r < p, fraction digits t).
  int32_t decimal_state(const Decimal& p, int32_t k, int32_t phase, const Decimal& r, int32_t t);
  int32_t decimal_multiple(uint64_t p, int32_t k);
  // substrings.substring_of(text) (text as n > 0 code points) in the state (automaton state,
  // pending bytes packed as in the import record); invalid_argument for a bad text or a state
  // that is not live.
  int32_t substring_of(const int32_t* code_points, size_t n, int32_t state = 0, int32_t pending = 0);

  int32_t derivative(int32_t node, int32_t byte);
  const std::vector<uint8_t>& cuts(int32_t node);
  const ByteMask& first_bytes(int32_t node);
  // True when every string of the node starts with a UTF-8 continuation byte.
  bool inside_character(int32_t node);
  // Sorted tags of the tagged nodes reachable through nullable nodes (terminals ending here).
  std::vector<int32_t> end_marks(int32_t node);
  // The node without terminal tags (a lexer state's language).
  int32_t untagged(int32_t node);
  // slices.text_depth: every JSON-string-text prefix of at most this many bytes keeps the node
  // non-empty (kTextUnlimited: any); 0 when nothing is proven.
  int32_t text_depth(int32_t node);

  size_t size() const { return nodes_.size(); }
  // What the arena holds, in nodes: its nodes plus the states of its suffix automata (each
  // about a node's memory with its transitions); native.py starts a new arena past a bound.
  size_t footprint() const { return nodes_.size() + substring_states_; }
  // The bytes the arena's tables hold, in O(1) (capacities of its vectors, the side tables' bytes
  // counted as they are added, hash-map entries at an assumed size): what tokamata.caches bounds,
  // an estimate, not the allocator's view.
  size_t memory_bytes() const;
  int32_t check(int32_t node) const;
  bool nullable(int32_t node) const { return nodes_[check(node)].nullable; }

 private:
  struct Node {  // (fields ordered so that it packs into 56 bytes: one per expression, many)
    ExprKind kind = kNothing;
    bool nullable = false;
    int8_t infinite = -1;            // -1 unknown
    int8_t depth_infinite = 0;
    int32_t a = 0, b = 0, c = 0;     // CONCAT (first, second), REPEAT (item, low, high), TAGGED
                                     // (item, tag), UTF8 (pending), DIFF (first, second),
                                     // UNTIL (stop index, matched, pending), DECMOD (k, phase, t),
                                     // SUBSTRING (automaton index, state, pending bytes)
    uint32_t offset = 0, count = 0;  // BYTES: mask index; UTF8: range words; ALT/AND: members;
                                     // DECMOD: p's limb count, p's limbs, r's limbs
    int32_t cuts = -1;               // index into cuts_
    int32_t memo = -1;               // offset into memo_: one entry per class of the node
    int32_t rest = -1;               // REPEAT: the remainder after one item
    int32_t first = -1;              // index into firsts_
    int32_t untagged = -1;
    int32_t depth = -1;              // text depth, -1 unknown
    int64_t longest = -2;            // max length: -2 unknown, -1 unbounded
  };
  static_assert(sizeof(Node) <= 56, "ExprArena::Node grew");
  struct Stop {  // an UNTIL leaf's stop string and its KMP failure function
    std::string bytes;
    std::vector<int32_t> fail;
  };
  struct SuffixAutomaton {  // a SUBSTRING leaf's automaton: transitions of state s are
    std::vector<int32_t> offsets;       // keys/targets[offsets[s] .. offsets[s + 1]),
    std::vector<int32_t> keys, targets;  // sorted by code point
    std::vector<int64_t> remaining;     // the most bytes a path from the state spells
  };

  static uint64_t hash_of(int32_t kind, int32_t a, int32_t b, int32_t c, const int32_t* payload, size_t words);
  bool same(int32_t id, int32_t kind, int32_t a, int32_t b, int32_t c, const int32_t* payload, size_t words) const;
  int32_t lookup(uint64_t hash, int32_t kind, int32_t a, int32_t b, int32_t c, const int32_t* payload,
                 size_t words) const;
  void insert(int32_t id);
  int32_t intern(Node node, const int32_t* payload, size_t words);
  int32_t make_utf8(const int32_t* ranges, size_t num_ranges, int32_t pending);
  int32_t utf8_pending(const std::vector<int32_t>& ranges, int32_t pending, int64_t interval_lo);
  int32_t any_continuation(int32_t count);
  int32_t derive(int32_t node, int32_t byte);
  int32_t utf8_derivative(int32_t node, int32_t byte);
  std::vector<uint8_t> compute_cuts(int32_t node);
  std::vector<uint8_t> utf8_cuts(int32_t node) const;
  void intersect(int32_t node, int64_t lo, int64_t hi, std::vector<int32_t>& out) const;
  int32_t any_char();
  int32_t until_node(int32_t stop, int32_t matched, int32_t pending);
  int32_t until_derivative(int32_t node, int32_t byte);
  int32_t decmod_derivative(int32_t node, int32_t byte);
  int32_t substring_node(int32_t automaton, int32_t state, int32_t pending);
  int32_t substring_derivative(int32_t node, int32_t byte);
  ByteMask substring_first_bytes(int32_t node) const;
  Decimal decmod_modulus(int32_t node) const;
  Decimal decmod_remainder(int32_t node) const;
  int32_t decmod_hint(int32_t node) const;
  int32_t hint(int32_t node, int32_t depth) const;
  bool non_empty(ExprKind kind, const std::vector<int32_t>& members);
  bool exists(ExprKind kind, const std::vector<int32_t>& members);
  bool infinite(int32_t node);
  int64_t max_length(int32_t node);
  std::pair<int32_t, bool> text_depth_of(int32_t node);
  bool covers_text_characters(int32_t node) const;
  void collect_marks(int32_t node, std::vector<int32_t>& tags) const;

  std::recursive_mutex mutex_;
  std::vector<Node> nodes_;
  std::vector<ByteMask> masks_;
  std::vector<ByteMask> firsts_;
  std::vector<Stop> stops_;
  std::unordered_map<std::string, int32_t> stop_index_;
  std::vector<SuffixAutomaton> substrings_;
  std::unordered_map<std::string, int32_t> substring_index_;  // code points (as bytes) -> index
  size_t substring_states_ = 0;
  int32_t any_char_ = -1;
  std::vector<int32_t> payload_;  // UTF8 ranges and ALT/AND members
  std::vector<std::vector<uint8_t>> cuts_;
  std::vector<int32_t> memo_;
  // the intern table: open addressing over node ids (-1: empty), at most half full; a node's
  // hash of (kind, fields, payload) is kept in hashes_
  std::vector<int32_t> table_;
  size_t table_used_ = 0;
  std::vector<uint64_t> hashes_;
  std::unordered_map<std::string, bool> emptiness_;  // (kind, members) -> non-empty
  size_t side_bytes_ = 0;  // cuts_, stops_ and substrings_ entries with their index entries, as added
  static constexpr size_t kMapEntryBytes = 4 * sizeof(void*);  // an unordered_map node and its bucket
  int64_t search_budget_ = 10000;
};

}  // namespace tokamata
