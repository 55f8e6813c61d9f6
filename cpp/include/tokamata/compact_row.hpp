// A token row: a set of token ids over a vocabulary (num_words 32-bit words, bit t of word
// t / 32 for token t), stored compactly once built, and rows by content (DistinctRows).
//
// Invariants:
// - A row is built dense (TokenRow(num_words), then words() / set()), then sealed once with
//   seal(); after that it never changes and is shared across threads. Only a building row's
//   words() may be written; readers of a sealed row use test / copy_to / or_into /
//   for_each_token / any_token / for_each_nonzero_word / to_words, which answer the same for
//   every form (cpp/tests/test_compact_row.cpp compares them with the dense words).
// - seal() keeps the smallest of two forms: dense (every word) or patched: a base (all zeros,
//   all ones, or one of the dense rows the caller offers: a RowBaseSet's, below) and the words
//   that differ from it, as ascending (index, word) pairs.
//   Patched is kept only with at most num_words / 8 patches (a quarter of the dense bytes), so
//   copy_to (a clear or a copy of the base, then the scattered patches) costs about what a
//   dense copy does: with up to num_words / 2 patches (all a smaller form would need) fills of
//   MaskBench masks were 20-40% slower. A row
//   patched over another row holds that row (shared_ptr), which is dense and never patched.
// - memory_bytes() is the row's own storage (its base, shared with other rows, not counted).
// - A RowBaseSet (one per lexer: RegexCore) offers the vocabulary's slice rows
//   (token_slices.hpp) and up to kOwnBases rows of its own: the first rows sealed through it
//   that would stay dense or need more than kManyPatches patches are kept dense and become
//   bases, so later rows equal or close to them (a schema's many string-like states and
//   their masks) are a base copy plus a few patches: fills as fast as a dense copy.
// - The form depends only on the content and on the bases offered, so equal rows sealed with
//   the same bases have the same form; same_bits() and content_hash() compare and hash the
//   content whatever the forms. The hash is a sum over nonzero words of a per-(index, word)
//   mix, kept at seal(): a patched row's is its base's plus its patches' differences, so
//   hashing a new mask costs its patches, not its width.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <unordered_map>
#include <vector>

namespace tokamata {

class TokenRow;
using RowBases = std::vector<std::shared_ptr<const TokenRow>>;

class TokenRow {
 public:
  // A patched row has at most num_words / kPatchDivisor patches.
  static constexpr size_t kPatchDivisor = 8;

  TokenRow() = default;
  explicit TokenRow(size_t num_words) : num_words_(static_cast<uint32_t>(num_words)), words_(num_words, 0u) {}

  bool accepting = false;
  // tokens set, for a lexer DFA's inside rows (token_row.cpp, token_slices.cpp); a grammar
  // mask (matcher_core.cpp) leaves it 0: nothing reads it, and counting it took about 85,000
  // instructions per new Llama 3 mask (a libgcc call per word: no -mpopcnt here)
  int32_t num_allowed = 0;

  // ---- building (before seal)
  uint32_t* words() {
    if (sealed_) throw std::logic_error("a sealed token row is read-only");
    return words_.data();
  }
  void set(int32_t token) { words()[static_cast<uint32_t>(token) >> 5] |= 1u << (token & 31); }
  // Chooses the compact form (see above); `bases` are dense rows of the same width. A form with
  // more than `dense_above` patches is not taken. Returns whether the row stays dense.
  bool seal(const RowBases* bases = nullptr, size_t dense_above = SIZE_MAX);
  // Sealed as it is, dense (a base for others).
  void seal_dense() {
    if (sealed_) throw std::logic_error("a token row is sealed once");
    sealed_ = true;
    sum_ = dense_sum(words_.data(), num_words_);
  }
  // The content's sum of word_mix over nonzero words (form-independent; see above).
  uint64_t content_sum() const { return sealed_ ? sum_ : dense_sum(words_.data(), num_words_); }
  static uint64_t word_mix(size_t i, uint32_t w) {
    if (w == 0) return 0;
    uint64_t x = (static_cast<uint64_t>(w) << 32 | static_cast<uint64_t>(i)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 31)) * 0x94D049BB133111EBull;
    return x ^ (x >> 29);
  }
  bool sealed() const { return sealed_; }

  // ---- reading (any form; a building row reads as dense)
  size_t num_words() const { return num_words_; }
  bool dense() const { return kind_ == Kind::kDense; }
  size_t num_patches() const { return dense() ? 0 : index_.size(); }
  size_t memory_bytes() const { return sizeof(TokenRow) + words_.capacity() * 4 + index_.capacity() * 4; }

  // The word at index w (< num_words()).
  uint32_t word(size_t w) const {
    if (kind_ == Kind::kDense) return words_[w];
    const auto it = std::lower_bound(index_.begin(), index_.end(), static_cast<uint32_t>(w));
    if (it != index_.end() && *it == w) return words_[static_cast<size_t>(it - index_.begin())];
    return base_word(w);
  }
  // Whether token t is set (t >= 0; tokens past the row's words are not).
  bool test(int32_t t) const {
    const size_t w = static_cast<uint32_t>(t) >> 5;
    return w < num_words_ && ((word(w) >> (t & 31)) & 1u);
  }
  // out[0..n) = the row's words, then zeros past them.
  void copy_to(uint32_t* out, size_t n) const {
    const size_t m = std::min<size_t>(n, num_words_);
    switch (kind_) {
      case Kind::kDense: std::memcpy(out, words_.data(), m * 4); break;
      case Kind::kZeroBase: std::memset(out, 0, m * 4); break;
      case Kind::kOnesBase: std::memset(out, 0xFF, m * 4); break;
      case Kind::kRowBase: std::memcpy(out, base_->words_.data(), m * 4); break;
    }
    if (kind_ != Kind::kDense) {
      const uint32_t* index = index_.data();
      const uint32_t* values = words_.data();
      for (size_t k = 0, p = index_.size(); k < p && index[k] < m; ++k) out[index[k]] = values[k];
    }
    if (n > m) std::memset(out + m, 0, (n - m) * 4);
  }
  // out[0..num_words()) |= the row's words.
  void or_into(uint32_t* out) const {
    if (kind_ == Kind::kDense) {
      const uint32_t* w = words_.data();
      for (size_t i = 0; i < num_words_; ++i) out[i] |= w[i];
      return;
    }
    const uint32_t* index = index_.data();
    const uint32_t* values = words_.data();
    const size_t p = index_.size();
    if (kind_ == Kind::kZeroBase) {
      for (size_t k = 0; k < p; ++k) out[index[k]] |= values[k];
      return;
    }
    const uint32_t* base = kind_ == Kind::kRowBase ? base_->words_.data() : nullptr;
    size_t i = 0;
    for (size_t k = 0; k <= p; ++k) {
      const size_t end = k < p ? index[k] : num_words_;
      if (base) {
        for (; i < end; ++i) out[i] |= base[i];
      } else {
        std::memset(out + i, 0xFF, (end - i) * 4);
      }
      if (k < p) out[end] |= values[k];
      i = end + 1;
    }
  }
  // f(index, word) for every nonzero word, ascending.
  template <typename F>
  void for_each_nonzero_word(F&& f) const {
    scan_words([&](size_t i, uint32_t x) {
      if (x) f(i, x);
      return false;
    });
  }
  // f(token) for every token set, ascending, until f returns true; whether it did.
  template <typename F>
  bool any_token(F&& f) const {
    return scan_words([&](size_t w, uint32_t x) {
      for (; x; x &= x - 1) {
        if (f(static_cast<int32_t>(w * 32 + static_cast<uint32_t>(__builtin_ctz(x))))) return true;
      }
      return false;
    });
  }
  template <typename F>
  void for_each_token(F&& f) const {
    any_token([&](int32_t t) {
      f(t);
      return false;
    });
  }
  // The lowest token set, or -1.
  int32_t first_token() const {
    int32_t found = -1;
    any_token([&](int32_t t) {
      found = t;
      return true;
    });
    return found;
  }
  std::vector<uint32_t> to_words() const {
    std::vector<uint32_t> out(num_words_);
    copy_to(out.data(), out.size());
    return out;
  }
  // Same width and the same tokens (acceptance not compared).
  bool same_bits(const TokenRow& other) const;

 private:
  enum class Kind : uint8_t { kDense, kZeroBase, kOnesBase, kRowBase };

  static uint64_t dense_sum(const uint32_t* w, size_t n) {
    uint64_t sum = 0;
    for (size_t i = 0; i < n; ++i) sum += word_mix(i, w[i]);
    return sum;
  }
  uint32_t base_word(size_t w) const {
    switch (kind_) {
      case Kind::kOnesBase: return ~0u;
      case Kind::kRowBase: return base_->words_[w];
      default: return 0u;
    }
  }
  // f(index, word) for the words in order, until f returns true (whether it did); a
  // zero-based row visits its patches only (the other words are zero)
  template <typename F>
  bool scan_words(F&& f) const {
    switch (kind_) {
      case Kind::kDense:
        for (size_t i = 0; i < num_words_; ++i) {
          if (f(i, words_[i])) return true;
        }
        return false;
      case Kind::kZeroBase:
        for (size_t k = 0; k < index_.size(); ++k) {
          if (f(static_cast<size_t>(index_[k]), words_[k])) return true;
        }
        return false;
      default: {
        size_t k = 0;
        for (size_t i = 0; i < num_words_; ++i) {
          const bool patched = k < index_.size() && index_[k] == i;
          if (f(i, patched ? words_[k++] : base_word(i))) return true;
        }
        return false;
      }
    }
  }

  uint32_t num_words_ = 0;
  Kind kind_ = Kind::kDense;
  bool sealed_ = false;
  std::vector<uint32_t> words_;  // dense: every word; patched: the patch values
  std::vector<uint32_t> index_;  // patched: the patch indices, ascending
  std::shared_ptr<const TokenRow> base_;  // kRowBase: a dense row
  uint64_t sum_ = 0;                      // content_sum(), set by seal
};

// The bases rows of one lexer are sealed over (see above). Thread-safe.
class RowBaseSet {
 public:
  static constexpr size_t kOwnBases = 8;
  static constexpr size_t kManyPatches = 64;

  explicit RowBaseSet(RowBases fixed = {}) : bases_(std::make_shared<const RowBases>(std::move(fixed))) {}
  // Seals `row` over the bases (a new base when it qualifies); returns it.
  std::shared_ptr<const TokenRow> seal(std::shared_ptr<TokenRow> row);
  std::shared_ptr<const RowBases> snapshot() const {
    std::lock_guard<std::mutex> guard(mu_);
    return bases_;
  }

 private:
  mutable std::mutex mu_;
  std::shared_ptr<const RowBases> bases_;  // own bases first (the likeliest near rows), then fixed
  size_t own_ = 0;
};

// Rows by content: equal rows (bits and acceptance) stored once. intern(row) returns an
// equal row that is still alive (held by a cache or a matcher), else `row`, which becomes
// findable; entries of rows nobody holds expire and are purged as the table grows (amortized:
// each purge sets the next one at twice what is left). Not thread-safe: callers lock.
class DistinctRows {
 public:
  static uint64_t content_hash(const TokenRow& row);
  std::shared_ptr<const TokenRow> intern(std::shared_ptr<const TokenRow> row, uint64_t hash);
  size_t size() const { return rows_.size(); }

 private:
  std::unordered_multimap<uint64_t, std::weak_ptr<const TokenRow>> rows_;
  size_t purge_at_ = 64;
};

}  // namespace tokamata
