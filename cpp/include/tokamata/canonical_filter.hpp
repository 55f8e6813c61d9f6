// The canonical filter in C++: which of the engine's allowed tokens keep a token sequence a
// prefix of the tokenizer's own encoding of some text of the language (canonical=True), for
// byte-level BPE with a known split pattern (GPT-2, Llama 3, Qwen 2).
//
// It is the C++ port of src/tokamata/vocab/canonical_filter.py (the Python filter stays the
// test oracle and serves every tokenizer this one does not: canonical_native.py says which).
// Same definitions, same results:
// - CanonicalTokenizer: the tokenizer's tables, shipped from Python as flat arrays (token
//   bytes, pieces, merges with ranks, the byte symbols, a code point class table for \p{L},
//   \p{N}, \s, the non-special added tokens). It pretokenizes (a hand-written scanner per split
//   pattern family, leftmost-first alternation and greedy runs exactly as the `regex` module
//   matches them), cuts a text into its pretokens and open region (pretoken_region.py's
//   rule), encodes pretokens (BPE by rank, ignore_merges) and answers the bigram test (its
//   answers kept per first token: bigram_cached). It never reads user text other than token
//   bytes and output bytes.
// - CanonicalFilter: one per constraint. A filter state is an interned id of (open text, open
//   tokens); state 0 is the empty state; kSolo + t names the single-token state (bytes of t,
//   [t]) without interning, its step from nothing open and its closes() by character key come
//   from the tokenizer's per-token facts (computed once per process). step(state, token)
//   re-cuts the open text and checks what became decided, except where the token's first
//   character closes the state (a boundary that stays decided: then the step is the step from
//   nothing open); rows of allowed tokens are cached per (engine position, state); in a row,
//   a token that continues the open pretoken is decided without a step when the open text
//   plus it is one pretoken (live_in_pretoken: the pair rule of docs/tokenization.md, "One
//   pretoken: pairs decide"); positions one token away get their engine mask only when it is
//   read (accepting and the ASCII bytes allowed next come from the engine without it);
//   liveness is the Python filter's: accept + complete, a next character that decides the
//   open region (ASCII ones by character key, the others one per character group:
//   CanonicalTokenizer::char_group), or a search over next tokens (iterative deepening: depth 1, 2, 4 ... until
//   a way out or a complete search; the same answer as the Python filter's depth-first
//   search, found sooner past runs that grow forever), memoized on (position, state), bounded by
//   max_search states per question (LimitError "max_canonical_search", never a guess).
// - Thread safety: every public method takes the filter's mutex (ConstraintCore has its own);
//   callers release the GIL around them.
// - Long life: questions hold the constraint's sweep lock (shared, before the filter's mutex),
//   since the search's positions are no matcher's roots; the position-keyed caches are
//   dropped when the constraint's sweep count moved (released handles may be reused).
#pragma once
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "tokamata/flat_u64_map.hpp"
#include "tokamata/matcher_core.hpp"

namespace tokamata {

enum CanonicalFamily : int32_t { kFamilyGpt2 = 0, kFamilyLlama3 = 1, kFamilyQwen2 = 2 };

struct PretokenSpan {
  int32_t start, end;  // byte offsets
  int32_t added;       // the added token's id, or -1
};

class CanonicalTokenizer {
 public:
  // token_bytes/token_offsets: every id's bytes (has_bytes[i] == 0: the token has none);
  // pieces: the model vocabulary's pieces as bytes with their ids; merges: (left, right,
  // merged) per rank; byte_symbols: the piece id of each byte; classes: sorted code point
  // ranges (start, end exclusive, bits: 1 letter, 2 number, 4 whitespace); added: the
  // non-special added tokens' texts with their ids.
  CanonicalTokenizer(int32_t family, bool ignore_merges, std::vector<uint8_t> token_bytes,
                     std::vector<int64_t> token_offsets, std::vector<uint8_t> has_bytes, const uint8_t* piece_bytes,
                     const int64_t* piece_offsets, const int32_t* piece_ids, int64_t num_pieces,
                     const int32_t* merges, int64_t num_merges, const int32_t* byte_symbols,
                     const int32_t* classes, int64_t num_ranges, const uint8_t* added_bytes,
                     const int64_t* added_offsets, const int32_t* added_ids, int64_t num_added,
                     std::vector<int32_t> eos);

  int32_t num_tokens() const { return static_cast<int32_t>(token_offsets_.size()) - 1; }
  bool has_bytes(int32_t t) const { return t >= 0 && t < num_tokens() && has_bytes_[t] && length_of(t) > 0; }
  const uint8_t* bytes_of(int32_t t) const { return token_bytes_.data() + token_offsets_[t]; }
  int32_t length_of(int32_t t) const { return static_cast<int32_t>(token_offsets_[t + 1] - token_offsets_[t]); }
  bool is_eos(int32_t t) const { return t >= 0 && static_cast<size_t>(t) < eos_.size() && eos_[static_cast<size_t>(t)]; }

  // The pretokens of a complete UTF-8 text and where its open region starts; false if the
  // text is not valid UTF-8.
  bool region(const uint8_t* text, int32_t n, std::vector<PretokenSpan>& spans, int32_t& open_start) const;
  // The model's tokens for one pretoken's bytes.
  void encode_pretoken(const uint8_t* data, int32_t n, std::vector<int32_t>& out) const;
  // The whole encoding of a complete text (continuation mode); false if not valid UTF-8.
  bool encode(const uint8_t* text, int32_t n, std::vector<int32_t>& out) const;
  // The merges alone turn the symbols of a then b into exactly [a, b].
  bool bigram(int32_t a, int32_t b) const;
  // The merge trace of one token's symbols alone: `whole` when they merge into exactly [t];
  // steps[s]: before the s-th merge (and once more at the end), the first and last symbol
  // and the rank of the merge applied next (INT32_MAX: none).
  struct Trace {
    struct Step {
      int32_t rank, first, last;
    };
    bool whole = false;
    std::vector<Step> steps;
  };
  void trace(int32_t t, Trace& out) const;
  // trace(t), computed once per token on first use (thread-safe, kept while the tokenizer lives)
  const Trace& cached_trace(int32_t t) const;
  ~CanonicalTokenizer();
  CanonicalTokenizer(const CanonicalTokenizer&) = delete;
  CanonicalTokenizer& operator=(const CanonicalTokenizer&) = delete;
  // bigram() from the two tokens' traces: until a merge across the junction fires, each side
  // merges exactly as alone (its lowest-ranked pair is the lowest of its side, leftmost on a
  // tie), so the two traces interleave by rank (a tie goes to a's side: leftmost), and the
  // junction pair (last of a's state, first of b's) fires at the first state where its rank
  // is below a's next and at most b's next (leftmost again). No such state and both tokens
  // whole: [a, b]; one merge lookup per step of either trace, not a pass over all pairs.
  bool bigram_traces(int32_t a, const Trace& ta, int32_t b, const Trace& tb) const;
  // bigram_traces(a, b) remembered per first token: a row per `a` of two bits per `b` (known,
  // passes; one atomic word holds both for 32 tokens), made on first use and kept while the
  // tokenizer lives (process-wide per model, thread-safe), at most kBigramRowBytes of rows in
  // all (past that an answer is computed each time). 0 <= a, b < num_tokens().
  bool bigram_cached(int32_t a, int32_t b) const;
  bool is_space_char(const uint8_t* text, int32_t n, int32_t at, int32_t& length) const;
  // Character keys: two ASCII characters with the same key are the same to the split pattern
  // (same \p{L} / \p{N} / \s class, and neither is one the scanner names: an apostrophe, a
  // contraction letter, a space, CR, LF, a character of an added text), so a text followed by
  // either cuts the same way. At most 64 keys (else std::invalid_argument: the Python filter
  // serves that tokenizer); char_key(b) for b < 128, key_rep(k) one character of key k.
  int32_t char_key(uint8_t b) const { return char_key_[b & 0x7F]; }
  uint8_t key_rep(int32_t k) const { return key_rep_[static_cast<size_t>(k)]; }
  bool has_added() const { return !added_texts_.empty(); }
  // the ASCII bytes that are single-byte tokens (not EOS), as bits of two words
  uint64_t byte_tokens(int32_t word) const { return byte_tokens_[word & 1]; }
  // With ignore_merges, a pretoken whose bytes are a piece encodes to that one piece (the
  // merges are not run): true when that rule applies to these bytes.
  bool whole_piece(const uint8_t* data, int32_t n) const {
    if (!ignore_merges_ || n > longest_piece_) return false;
    const std::string_view bytes(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
    return maybe_piece(std::hash<std::string_view>()(bytes)) && piece_id_.count(bytes) != 0;
  }
  // The group of one whole non-ASCII character `ch` (its UTF-8 bytes): two characters of one
  // group are the same to the split pattern as the last character of any text (same \p{L} /
  // \p{N} / \s class, neither U+017F, which (?i)'s matches, nor a character of an added text),
  // so a text followed by either cuts the same way and CanonicalFilter::closes gives one answer
  // for both (the character keys' rule, for the characters past ASCII). Groups are below 16;
  // -1: a group of its own (U+017F, a character of an added text); -2: not one valid
  // character (no text followed by it has an open region starting after the text: it closes
  // nothing).
  int32_t char_group(const uint8_t* ch, int32_t n) const;

  // Facts of the single-token state (the bytes of t, [t]) of a token with bytes, computed once
  // per token on first use (thread-safe, shared by every filter over this tokenizer); they
  // answer exactly what CanonicalFilter::advance answers for that state:
  // - solo_alive(t): stepping t from nothing open leaves (bytes of t, [t]) open (else dead);
  // - solo_closes(t, k): followed by the character key_rep(k), the text of t is one decided
  //   pretoken and t is its encoding (CanonicalFilter::closes).
  bool solo_alive(int32_t t) const { return (solo_facts(t) & kSoloAlive) != 0; }
  // - solo_complete(t): the text of t is complete and encodes to exactly [t]
  //   (CanonicalFilter::complete of that state)
  bool solo_complete(int32_t t) const { return (solo_facts(t) & kSoloComplete) != 0; }
  bool solo_closes(int32_t t, int32_t key) const;

 private:
  int32_t class_of(uint32_t cp) const;
  void pretokenize(const uint32_t* cps, const int32_t* cls, int32_t n, std::vector<int32_t>& ends) const;
  int32_t match_at(const uint32_t* cps, const int32_t* cls, int32_t n, int32_t i) const;
  void merge(std::vector<int32_t>& symbols) const;
  // the adjacent pair of `symbols` with the lowest merge rank below `rank`: its index, rank and
  // merged symbol (unchanged when there is none)
  void lowest_merge(const std::vector<int32_t>& symbols, size_t& at, int32_t& rank, int32_t& merged) const;
  bool symbols_of(int32_t t, std::vector<int32_t>& out) const;
  int32_t added_at(const uint8_t* text, int32_t n, int32_t at) const;  // longest added text at `at`, its index
  static constexpr uint64_t kSoloKnown = 1, kSoloAlive = 2, kSoloValid = 4, kSoloSelf = 8, kSoloSpaceLast = 16,
                            kSoloComplete = 32;
  uint64_t solo_facts(int32_t t) const;

  int32_t family_;
  bool ignore_merges_;
  std::vector<uint8_t> token_bytes_;
  std::vector<int64_t> token_offsets_;  // num_tokens + 1
  std::vector<uint8_t> has_bytes_;
  std::unordered_map<int32_t, std::string> piece_of_;
  std::string piece_store_;  // every piece's bytes, as shipped (piece_id_'s keys view into it)
  std::unordered_map<std::string_view, int32_t> piece_id_;
  int32_t longest_piece_ = 0;
  // a Bloom filter of the pieces' byte hashes (two bits of 2^21 per piece, 256 KiB): most texts
  // whole_piece is asked about are no piece, and the filter answers them without piece_id_'s
  // buckets (no false "no"; ~1-2% false "maybe" with Llama 3's 128,000 pieces)
  static constexpr int32_t kPieceBloomBits = 21;
  std::vector<uint64_t> piece_bloom_;
  static uint64_t bloom_bit(uint64_t hash, int32_t k) {
    return (k == 0 ? hash : (hash >> 32) | (hash << 32)) & ((uint64_t{1} << kPieceBloomBits) - 1);
  }
  bool maybe_piece(uint64_t hash) const {
    const uint64_t a = bloom_bit(hash, 0), b = bloom_bit(hash, 1);
    return ((piece_bloom_[a >> 6] >> (a & 63)) & (piece_bloom_[b >> 6] >> (b & 63)) & 1) != 0;
  }
  std::unordered_set<uint32_t> added_chars_;  // the code points of the added texts
  // (left, right) -> (rank, merged): open addressing, linear probing, kNoPair marks a free slot
  static constexpr uint64_t kNoPair = ~uint64_t{0};
  struct MergeSlot {
    uint64_t key = kNoPair;
    int32_t rank = 0, merged = 0;
  };
  std::vector<MergeSlot> merges_;
  int32_t merge_shift_ = 64;
  const MergeSlot* find_merge(uint64_t key) const {
    for (size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> merge_shift_);; i = (i + 1) & (merges_.size() - 1)) {
      const MergeSlot& slot = merges_[i];
      if (slot.key == key) return &slot;
      if (slot.key == kNoPair) return nullptr;
    }
  }
  int32_t byte_symbols_[256];
  std::vector<int32_t> class_ranges_;  // triples
  std::vector<uint8_t> bmp_classes_;   // class_of for code points below 0x10000
  std::vector<std::string> added_texts_;
  std::vector<int32_t> added_ids_;
  std::unordered_set<std::string> added_prefixes_;  // proper prefixes (whole characters)
  int32_t longest_added_chars_ = 0;
  std::vector<uint8_t> eos_;  // per id up to the largest EOS id: 1 for EOS (asked per candidate)
  int32_t char_key_[128];
  std::vector<uint8_t> key_rep_;
  uint64_t byte_tokens_[2] = {0, 0};
  std::unique_ptr<std::atomic<const Trace*>[]> traces_;  // per token, null until computed
  static constexpr int64_t kBigramRowBytes = int64_t{64} << 20;
  std::unique_ptr<std::atomic<std::atomic<uint64_t>*>[]> bigram_rows_;  // per first token, null until made
  mutable std::atomic<int64_t> bigram_row_bytes_{0};
  std::unique_ptr<std::atomic<uint64_t>[]> solo_;  // per token: solo facts (kSolo* bits), keys known, keys closing
};

class CanonicalFilter {
 public:
  CanonicalFilter(std::shared_ptr<const CanonicalTokenizer> tokenizer, std::shared_ptr<ConstraintCore> constraint,
                  int64_t max_search);

  // The matcher's canonical row (engine row narrowed) into out[0, num_words).
  void fill(MatcherCore& m, int32_t state, uint32_t* out, int64_t num_words);
  // The state after `token` if the filter allows it at m's position, else -1 (EOS: `state`).
  int32_t accept(MatcherCore& m, int32_t state, int32_t token);
  // The open text encodes to exactly the open tokens.
  bool complete(int32_t state);
  int64_t num_states();

 private:
  struct State {
    std::string text;
    std::vector<int32_t> tokens;
    // closes(state, character of key k), known where close_known has bit k (character keys)
    uint64_t close_known = 0, close_value = 0;
    // a boundary an ASCII character decides after this text stays decided whatever follows
    // it (complete UTF-8, not ending in an apostrophe: a contraction 're, 've, 'll would
    // look two characters past it; an added text that could span it keeps it open)
    bool boundary_stable = false;
    int8_t pairs = -1;  // every adjacent pair of `tokens` passes the bigram test (-1: not known yet)
  };
  struct PositionHash {
    size_t operator()(const std::vector<Configuration>& p) const;
  };
  struct Row {
    std::vector<uint32_t> bits;
  };
  // an engine position met by the filter, interned: its mask (computed when first read:
  // mask_of) and first characters; accepting and the keys of its next ASCII bytes come from
  // the engine without the mask (a position met one token away is often never a row's)
  struct Position {
    std::vector<Configuration> configurations;
    MaskPtr mask;
    uint64_t first_keys = 0;         // the keys of its tokens' ASCII first characters
    // the distinct whole non-ASCII first characters of its tokens, one per character group
    // (CanonicalTokenizer::char_group: the rest of a group close what it closes)
    std::vector<std::string> chars;
    bool chars_known = false;
    int8_t accepting = -1;           // (-1: not known yet)
    bool byte_keys_known = false;
    uint64_t byte_keys = 0;  // keys of the ASCII bytes that can come next: a subset of first_keys
    // live_fresh's answers, two bits per token (known, live) in one word per 32 tokens; made
    // when a row at this position first asks (counted in row_words_)
    std::vector<uint64_t> fresh_live;
  };
  static uint64_t pair_key(int32_t a, int32_t b) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(a)) << 32) | static_cast<uint32_t>(b);
  }

  // ids from kSolo on name single-token states (the bytes of t, [t]), kSolo + t: no interning,
  // their facts come from the tokenizer (solo_*); materialized only when their text is read
  static constexpr int32_t kSolo = 1 << 30;
  State& state_at(int32_t id);
  int32_t intern(std::string text, std::vector<int32_t> tokens);
  int32_t step(int32_t state, int32_t token);
  // Re-cut `text` (spelled by `tokens`, then `tail` bytes no token covers yet) and check what
  // became decided: false when dead, else where the open region starts (byte, token index).
  bool advance(const std::string& text, const std::vector<int32_t>& tokens, int32_t tail, int32_t& open,
               int32_t& first);
  const std::vector<int32_t>& encoded(const std::string& piece);
  bool bigram(int32_t a, int32_t b);
  bool complete_locked(int32_t state);
  bool closes(int32_t state, const std::string& ch);
  // some ASCII character of a key in `keys` closes the state (closes() by character key)
  bool closes_any(int32_t state, uint64_t keys);
  int32_t position_id(const std::vector<Configuration>& position);
  int32_t move(int32_t position, int32_t token);  // the engine's position after token, or -1
  const Position& next_chars(int32_t position);
  const MaskPtr& mask_of(int32_t position);
  bool accepting_at(int32_t position);
  // keys of the ASCII bytes the engine allows next that are tokens themselves: each such byte's
  // token is allowed (every position is live), so these are keys of first_keys too
  uint64_t byte_keys(int32_t position);
  bool live_after(int32_t position, int32_t state, int32_t token, int64_t& budget);
  // live_after() without stepping or interning, for a token that continues the open
  // pretoken: 1 live, 0 dead, -1 when its shortcut does not apply (then live_after decides).
  // It applies when the open text plus the token is one undecided pretoken and the rules for
  // one pretoken are local (docs/tokenization.md, "One pretoken: pairs decide"): the step is
  // the bigram test of the new pair (plus the pairs already open), and the text's encoding is
  // its tokens iff every pair passes and (ignore_merges) the text is not a piece itself.
  int32_t live_in_pretoken(int32_t position, int32_t state, int32_t token);
  bool pairs_pass(int32_t state);  // State::pairs, computed once
  // step(state, token) is step(0, token): nothing is open, or the token's ASCII first character
  // closes a boundary-stable state (step's shortcut)
  bool starts_fresh(int32_t state, int32_t token);
  // live_after(position, state, token) for any state where starts_fresh holds: one answer per
  // (position, token) whatever the state (step and move do not read it), kept in the
  // position's fresh_live bits, so rows at one position with other states read it back
  bool live_fresh(int32_t position, int32_t token, int64_t& budget);
  bool viable(int32_t position, int32_t state, int64_t& budget, std::unordered_set<uint64_t>& stack, bool& looped,
              int32_t depth, bool& cut);
  std::shared_ptr<const Row> row_locked(int32_t position, int32_t state);
  void bound_caches();  // (between questions: ids stay valid during one)
  void forget_swept();  // drops the position-keyed caches after a sweep of the constraint

  std::shared_ptr<const CanonicalTokenizer> tok_;
  std::shared_ptr<ConstraintCore> constraint_;
  int64_t max_search_;
  std::mutex mu_;
  std::vector<State> states_;
  std::unordered_map<int32_t, State> solo_states_;  // materialized kSolo states (node-stable)
  std::unordered_map<std::string, int32_t> state_ids_;
  // (the memo tables a row asks per candidate: flat, flat_u64_map.hpp)
  FlatU64Map<int32_t> steps_;  // (state, token) -> state or -1
  FlatU64Map<bool> complete_;  // state -> complete
  FlatU64Map<bool> closes_;    // (state, character as a number) -> closes
  std::unordered_map<std::string, std::vector<int32_t>> encoded_;
  std::vector<Position> positions_;
  std::unordered_map<std::vector<Configuration>, int32_t, PositionHash> position_ids_;
  FlatU64Map<int32_t> moves_;  // (position, token) -> position or -1
  std::unordered_map<uint64_t, bool> viable_;    // (position, state)
  std::unordered_map<uint64_t, std::shared_ptr<const Row>> rows_;  // (position, state)
  int64_t row_words_ = 0;
  int64_t seen_sweeps_ = 0;  // the constraint's sweep count the position caches belong to
};

}  // namespace tokamata
