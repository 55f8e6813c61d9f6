// CanonicalTokenizer (canonical_filter.hpp): pretokenization, open regions, BPE encoding and
// the bigram test of byte-level BPE tokenizers, from tables computed in Python.
//
// The split patterns (src/tokamata/vocab/pretokenize.py), alternatives in order, each tried
// at the current character (leftmost-first), runs greedy:
//   gpt-2:  's|'t|'re|'ve|'m|'ll|'d | ?L+ | ?N+ | ?O+ | \s+(?!\S) | \s+
//   llama3: (?i:'s|'t|'re|'ve|'m|'ll|'d) | [^\r\nLN]?L+ | N{1,3} | ?O+[\r\n]* | \s*[\r\n]+
//           | \s+(?!\S) | \s+
//   qwen2:  llama3's with N{1}
// where L = \p{L}, N = \p{N}, O = [^\s\p{L}\p{N}]. Backtracking reduces to: \s+(?!\S) takes a
// whitespace run, less its last character when a non-space follows (and fails on a run of
// one); \s*[\r\n]+ ends after the run's last \r or \n. The scanner is checked against the
// `regex` module on random texts (tests/unit/test_canonical_native.py).
#include <algorithm>
#include <cstring>
#include <stdexcept>

#include "tokamata/canonical_filter.hpp"

namespace tokamata {

namespace {

constexpr int32_t kLetter = 1, kNumber = 2, kSpace = 4;

// Decodes strict UTF-8 (what Python's bytes.decode accepts): false on anything else.
bool decode_utf8(const uint8_t* s, int32_t n, std::vector<uint32_t>& cps, std::vector<int32_t>& offs) {
  cps.clear();
  offs.clear();
  int32_t i = 0;
  while (i < n) {
    offs.push_back(i);
    const uint8_t b = s[i];
    uint32_t cp;
    int32_t len;
    if (b < 0x80) {
      cp = b;
      len = 1;
    } else if (b >= 0xC2 && b < 0xE0) {
      cp = b & 0x1F;
      len = 2;
    } else if (b >= 0xE0 && b < 0xF0) {
      cp = b & 0x0F;
      len = 3;
    } else if (b >= 0xF0 && b < 0xF5) {
      cp = b & 0x07;
      len = 4;
    } else {
      return false;
    }
    if (i + len > n) return false;
    for (int32_t k = 1; k < len; ++k) {
      const uint8_t c = s[i + k];
      if ((c & 0xC0) != 0x80) return false;
      cp = (cp << 6) | (c & 0x3F);
    }
    if ((len == 3 && (cp < 0x800 || (cp >= 0xD800 && cp < 0xE000))) || (len == 4 && (cp < 0x10000 || cp > 0x10FFFF)))
      return false;
    cps.push_back(cp);
    i += len;
  }
  offs.push_back(n);
  return true;
}

bool is_crlf(uint32_t cp) { return cp == '\r' || cp == '\n'; }

}  // namespace

CanonicalTokenizer::CanonicalTokenizer(int32_t family, bool ignore_merges, std::vector<uint8_t> token_bytes,
                                       std::vector<int64_t> token_offsets, std::vector<uint8_t> has_bytes,
                                       const uint8_t* piece_bytes,
                                       const int64_t* piece_offsets, const int32_t* piece_ids, int64_t num_pieces,
                                       const int32_t* merges, int64_t num_merges, const int32_t* byte_symbols,
                                       const int32_t* classes, int64_t num_ranges, const uint8_t* added_bytes,
                                       const int64_t* added_offsets, const int32_t* added_ids, int64_t num_added,
                                       std::vector<int32_t> eos)
    : family_(family), ignore_merges_(ignore_merges), token_bytes_(std::move(token_bytes)),
      token_offsets_(std::move(token_offsets)), has_bytes_(std::move(has_bytes)) {
  for (int32_t e : eos) {
    if (e < 0) continue;
    if (static_cast<size_t>(e) >= eos_.size()) eos_.resize(static_cast<size_t>(e) + 1, 0);
    eos_[static_cast<size_t>(e)] = 1;
  }
  for (int32_t t = 0; t < num_tokens(); ++t) {
    if (length_of(t) == 1 && has_bytes_[t] && bytes_of(t)[0] < 0x80 && !is_eos(t))
      byte_tokens_[bytes_of(t)[0] >> 6] |= uint64_t{1} << (bytes_of(t)[0] & 63);
  }
  if (family < kFamilyGpt2 || family > kFamilyQwen2) throw std::invalid_argument("unknown pretokenizer family");
  piece_id_.reserve(static_cast<size_t>(num_pieces));
  for (int64_t i = 0; i < num_pieces; ++i) {
    std::string piece(reinterpret_cast<const char*>(piece_bytes + piece_offsets[i]),
                      static_cast<size_t>(piece_offsets[i + 1] - piece_offsets[i]));
    longest_piece_ = std::max(longest_piece_, static_cast<int32_t>(piece.size()));
    piece_of_[piece_ids[i]] = std::move(piece);
  }
  piece_store_.assign(reinterpret_cast<const char*>(piece_bytes), static_cast<size_t>(num_pieces > 0 ? piece_offsets[num_pieces] : 0));
  for (int64_t i = 0; i < num_pieces; ++i) {
    piece_id_[std::string_view(piece_store_).substr(static_cast<size_t>(piece_offsets[i]),
                                                     static_cast<size_t>(piece_offsets[i + 1] - piece_offsets[i]))] =
        piece_ids[i];
  }
  piece_bloom_.assign(size_t{1} << (kPieceBloomBits - 6), 0);
  for (const auto& entry : piece_id_) {
    const uint64_t hash = std::hash<std::string_view>()(entry.first);
    for (int32_t k = 0; k < 2; ++k) piece_bloom_[bloom_bit(hash, k) >> 6] |= uint64_t{1} << (bloom_bit(hash, k) & 63);
  }
  size_t capacity = 16;
  merge_shift_ = 60;
  while (capacity < 2 * static_cast<size_t>(std::max<int64_t>(num_merges, 1))) {
    capacity *= 2;
    --merge_shift_;
  }
  merges_.assign(capacity, MergeSlot{});
  for (int64_t r = 0; r < num_merges; ++r) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(merges[3 * r])) << 32) |
                         static_cast<uint32_t>(merges[3 * r + 1]);
    size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> merge_shift_);
    while (merges_[i].key != kNoPair && merges_[i].key != key) i = (i + 1) & (capacity - 1);
    merges_[i] = {key, static_cast<int32_t>(r), merges[3 * r + 2]};  // a pair listed twice keeps its last rank
  }
  std::memcpy(byte_symbols_, byte_symbols, sizeof(byte_symbols_));
  class_ranges_.assign(classes, classes + 3 * num_ranges);
  bmp_classes_.assign(0x10000, 0);
  for (int64_t r = 0; r < num_ranges; ++r) {
    for (int32_t cp = std::max(classes[3 * r], 0); cp < std::min(classes[3 * r + 1], 0x10000); ++cp)
      bmp_classes_[static_cast<size_t>(cp)] = static_cast<uint8_t>(classes[3 * r + 2]);
  }
  std::vector<uint32_t> cps;
  std::vector<int32_t> offs;
  for (int64_t i = 0; i < num_added; ++i) {
    std::string text(reinterpret_cast<const char*>(added_bytes + added_offsets[i]),
                     static_cast<size_t>(added_offsets[i + 1] - added_offsets[i]));
    if (text.empty()) continue;
    if (!decode_utf8(reinterpret_cast<const uint8_t*>(text.data()), static_cast<int32_t>(text.size()), cps, offs))
      throw std::invalid_argument("an added token's text is not UTF-8");
    const int32_t chars = static_cast<int32_t>(cps.size());
    longest_added_chars_ = std::max(longest_added_chars_, chars);
    for (int32_t k = 1; k < chars; ++k) added_prefixes_.insert(text.substr(0, static_cast<size_t>(offs[k])));
    added_chars_.insert(cps.begin(), cps.end());
    added_texts_.push_back(std::move(text));
    added_ids_.push_back(added_ids[i]);
  }
  // character keys (canonical_filter.hpp): the class bits, or the character itself where
  // match_at names it (an apostrophe, a contraction letter in either case, space, CR, LF)
  std::vector<int32_t> signatures;
  for (int32_t b = 0; b < 128; ++b) {
    // (with added texts, also every character of one: added_at and the open region's added
    // prefixes compare bytes)
    bool named = std::strchr("'sStTrRvVeEmMlLdD \r\n", b) != nullptr && b != 0;
    for (const std::string& a : added_texts_) named = named || a.find(static_cast<char>(b)) != std::string::npos;
    const int32_t signature = named ? 256 + b : class_of(static_cast<uint32_t>(b));
    auto it = std::find(signatures.begin(), signatures.end(), signature);
    if (it == signatures.end()) {
      signatures.push_back(signature);
      key_rep_.push_back(static_cast<uint8_t>(b));
      it = signatures.end() - 1;
    }
    char_key_[b] = static_cast<int32_t>(it - signatures.begin());
  }
  if (key_rep_.size() > 64) throw std::invalid_argument("more than 64 character keys (added texts)");
  const size_t words = 3 * static_cast<size_t>(std::max(num_tokens(), 0));
  solo_.reset(new std::atomic<uint64_t>[words]);
  for (size_t w = 0; w < words; ++w) solo_[w].store(0, std::memory_order_relaxed);
  traces_.reset(new std::atomic<const Trace*>[static_cast<size_t>(std::max(num_tokens(), 0))]);
  for (int32_t t = 0; t < num_tokens(); ++t) traces_[static_cast<size_t>(t)].store(nullptr, std::memory_order_relaxed);
  bigram_rows_.reset(new std::atomic<std::atomic<uint64_t>*>[static_cast<size_t>(std::max(num_tokens(), 0))]);
  for (int32_t t = 0; t < num_tokens(); ++t) bigram_rows_[static_cast<size_t>(t)].store(nullptr, std::memory_order_relaxed);
}

uint64_t CanonicalTokenizer::solo_facts(int32_t t) const {
  std::atomic<uint64_t>& slot = solo_[3 * static_cast<size_t>(t)];
  uint64_t f = slot.load(std::memory_order_relaxed);
  if (f & kSoloKnown) return f;
  f = kSoloKnown;
  if (has_bytes(t)) {
    const uint8_t* d = bytes_of(t);
    const int32_t n = length_of(t);
    // complete_length (canonical_filter.cpp): the prefix ending on a character boundary
    int32_t cut = n;
    for (int32_t back = 1; back <= std::min(4, n); ++back) {
      const uint8_t b = d[n - back];
      if (b < 0x80) {
        cut = back == 1 ? n : n - back + 1;
        break;
      }
      if (b >= 0xC0) {
        const int32_t need = b < 0xE0 ? 2 : b < 0xF0 ? 3 : 4;
        cut = back >= need ? n : n - back;
        break;
      }
    }
    // CanonicalFilter::advance of (bytes, [t]): one token aligns only with an open region
    // starting at 0 (a decided span inside it would end inside the token)
    std::vector<PretokenSpan> spans;
    int32_t open = 0;
    if (cut == 0 || (region(d, cut, spans, open) && open == 0)) f |= kSoloAlive;
    std::vector<uint32_t> cps;
    std::vector<int32_t> offs;
    if (cut == n && decode_utf8(d, n, cps, offs)) {
      f |= kSoloValid;
      if (!cps.empty() && (class_of(cps.back()) & kSpace)) f |= kSoloSpaceLast;
      std::vector<int32_t> ids;
      encode_pretoken(d, n, ids);
      if (ids.size() == 1 && ids[0] == t) f |= kSoloSelf;
      if (encode(d, n, ids) && ids.size() == 1 && ids[0] == t) f |= kSoloComplete;
    }
  }
  slot.fetch_or(f, std::memory_order_relaxed);
  return f;
}

bool CanonicalTokenizer::solo_closes(int32_t t, int32_t key) const {
  const uint64_t f = solo_facts(t);
  const uint64_t bit = uint64_t{1} << key;
  std::atomic<uint64_t>* words = &solo_[3 * static_cast<size_t>(t)];
  if (words[1].load(std::memory_order_acquire) & bit) return (words[2].load(std::memory_order_relaxed) & bit) != 0;
  // CanonicalFilter::closes of (bytes, [t]) by character c: the text then c cuts into the whole
  // text and c (the first pretoken ends at the text's end; c's whitespace run, if any, starts
  // there), the text is valid UTF-8 and t is its encoding
  bool out = false;
  if (!added_texts_.empty()) {
    // added texts cut first (region): CanonicalFilter::advance's own checks on text + c
    if (f & kSoloValid) {
      std::string text(reinterpret_cast<const char*>(bytes_of(t)), static_cast<size_t>(length_of(t)));
      text.push_back(static_cast<char>(key_rep(key)));
      std::vector<PretokenSpan> spans;
      int32_t open = 0;
      const int32_t n = length_of(t);
      if (region(reinterpret_cast<const uint8_t*>(text.data()), n + 1, spans, open) && open == n &&
          spans.size() == 2 && spans[0].start == 0 && spans[0].end == n) {
        out = spans[0].added >= 0 ? spans[0].added == t : (f & kSoloSelf) != 0;
      }
    }
  } else if ((f & kSoloValid) && (f & kSoloSelf)) {
    const uint8_t c = key_rep(key);
    const int32_t cc = class_of(c);
    if (!((f & kSoloSpaceLast) && (cc & kSpace))) {
      thread_local std::vector<uint32_t> cps;
      thread_local std::vector<int32_t> offs, cls;
      decode_utf8(bytes_of(t), length_of(t), cps, offs);
      const int32_t chars = static_cast<int32_t>(cps.size());
      cps.push_back(c);
      cls.resize(cps.size());
      for (size_t i = 0; i < cps.size(); ++i) cls[i] = class_of(cps[i]);
      out = match_at(cps.data(), cls.data(), chars + 1, 0) == chars;
      // (region's rule 4: an apostrophe pretoken before r, v, l stays open)
      if (out && chars == 1 && cps[0] == '\'' && std::strchr("rvlRVL", c) != nullptr) out = false;
    }
  }
  if (out) words[2].fetch_or(bit, std::memory_order_relaxed);
  words[1].fetch_or(bit, std::memory_order_release);  // (after the value)
  return out;
}

int32_t CanonicalTokenizer::class_of(uint32_t cp) const {
  if (cp < 0x10000) return bmp_classes_[cp];
  // ranges sorted by start: the last one starting at or before cp
  size_t lo = 0, hi = class_ranges_.size() / 3;
  while (lo < hi) {
    const size_t mid = (lo + hi) / 2;
    if (static_cast<uint32_t>(class_ranges_[3 * mid]) <= cp) lo = mid + 1; else hi = mid;
  }
  if (lo == 0) return 0;
  const size_t r = lo - 1;
  return cp < static_cast<uint32_t>(class_ranges_[3 * r + 1]) ? class_ranges_[3 * r + 2] : 0;
}

int32_t CanonicalTokenizer::match_at(const uint32_t* cps, const int32_t* cls, int32_t n, int32_t i) const {
  auto run = [&](int32_t from, int32_t bits) {
    while (from < n && (cls[from] & bits)) ++from;
    return from;
  };
  auto other = [&](int32_t j) { return cls[j] == 0; };
  auto other_run = [&](int32_t from) {
    while (from < n && cls[from] == 0) ++from;
    return from;
  };
  const uint32_t c = cps[i];
  const bool fold = family_ != kFamilyGpt2;
  if (c == '\'' && i + 1 < n) {
    auto is = [&](int32_t j, char lower) {
      if (j >= n) return false;
      const uint32_t x = cps[j];
      if (x == static_cast<uint32_t>(lower)) return true;
      if (!fold) return false;
      if (x == static_cast<uint32_t>(lower - 'a' + 'A')) return true;
      return lower == 's' && x == 0x17F;  // (?i) s also matches U+017F LATIN SMALL LETTER LONG S
    };
    if (is(i + 1, 's') || is(i + 1, 't')) return i + 2;
    if ((is(i + 1, 'r') || is(i + 1, 'v')) && is(i + 2, 'e')) return i + 3;
    if (is(i + 1, 'm')) return i + 2;
    if (is(i + 1, 'l') && is(i + 2, 'l')) return i + 3;
    if (is(i + 1, 'd')) return i + 2;
  }
  const bool space_first = c == ' ' && i + 1 < n;
  if (family_ == kFamilyGpt2) {
    if (space_first && (cls[i + 1] & kLetter)) return run(i + 1, kLetter);
    if (cls[i] & kLetter) return run(i, kLetter);
    if (space_first && (cls[i + 1] & kNumber)) return run(i + 1, kNumber);
    if (cls[i] & kNumber) return run(i, kNumber);
    if (space_first && other(i + 1)) return other_run(i + 1);
    if (other(i)) return other_run(i);
  } else {
    if (!is_crlf(c) && !(cls[i] & (kLetter | kNumber)) && i + 1 < n && (cls[i + 1] & kLetter))
      return run(i + 1, kLetter);
    if (cls[i] & kLetter) return run(i, kLetter);
    if (cls[i] & kNumber) {
      const int32_t most = family_ == kFamilyLlama3 ? 3 : 1;
      int32_t j = i;
      while (j < n && j - i < most && (cls[j] & kNumber)) ++j;
      return j;
    }
    int32_t j = -1;
    if (space_first && other(i + 1)) j = other_run(i + 1);
    else if (other(i)) j = other_run(i);
    if (j >= 0) {
      while (j < n && is_crlf(cps[j])) ++j;
      return j;
    }
    if (cls[i] & kSpace) {  // \s*[\r\n]+
      const int32_t e = run(i, kSpace);
      for (int32_t p = e - 1; p >= i; --p) {
        if (is_crlf(cps[p])) return p + 1;
      }
    }
  }
  // \s+(?!\S) | \s+
  const int32_t e = run(i, kSpace);
  if (e == n || e - i < 2) return e;
  return e - 1;
}

void CanonicalTokenizer::pretokenize(const uint32_t* cps, const int32_t* cls, int32_t n,
                                     std::vector<int32_t>& ends) const {
  ends.clear();
  for (int32_t i = 0; i < n;) {
    const int32_t j = match_at(cps, cls, n, i);
    if (j <= i) throw std::logic_error("pretokenizer scanner made no progress");
    ends.push_back(j);
    i = j;
  }
}

int32_t CanonicalTokenizer::added_at(const uint8_t* text, int32_t n, int32_t at) const {
  int32_t best = -1;
  size_t best_len = 0;
  for (size_t k = 0; k < added_texts_.size(); ++k) {
    const std::string& a = added_texts_[k];
    if (a.size() > best_len && at + static_cast<int64_t>(a.size()) <= n &&
        std::memcmp(text + at, a.data(), a.size()) == 0) {
      best = static_cast<int32_t>(k);
      best_len = a.size();
    }
  }
  return best;
}

int32_t CanonicalTokenizer::char_group(const uint8_t* ch, int32_t n) const {
  // (match_at reads a character other than ASCII only through its class, and U+017F; added
  // texts compare bytes: a character of none of them never starts, ends or continues one)
  thread_local std::vector<uint32_t> cps;
  thread_local std::vector<int32_t> offs;
  if (n < 2 || ch[0] < 0x80 || !decode_utf8(ch, n, cps, offs) || cps.size() != 1) return -2;
  if (cps[0] == 0x17F || (!added_chars_.empty() && added_chars_.count(cps[0]))) return -1;
  return class_of(cps[0]) & (kLetter | kNumber | kSpace);
}

bool CanonicalTokenizer::is_space_char(const uint8_t* text, int32_t n, int32_t at, int32_t& length) const {
  thread_local std::vector<uint32_t> cps;
  thread_local std::vector<int32_t> offs;
  int32_t end = at + 1;
  while (end < n && (text[end] & 0xC0) == 0x80) ++end;
  if (!decode_utf8(text + at, end - at, cps, offs) || cps.size() != 1) return false;
  length = end - at;
  return (class_of(cps[0]) & kSpace) != 0;
}

bool CanonicalTokenizer::region(const uint8_t* text, int32_t n, std::vector<PretokenSpan>& spans,
                                int32_t& open_start) const {
  // (scratch per thread: region calls nothing that calls region)
  thread_local std::vector<uint32_t> cps;
  thread_local std::vector<int32_t> offs, cls, ends;
  spans.clear();
  open_start = 0;
  if (!decode_utf8(text, n, cps, offs)) return false;
  const int32_t chars = static_cast<int32_t>(cps.size());
  cls.resize(static_cast<size_t>(chars));
  for (int32_t i = 0; i < chars; ++i) cls[static_cast<size_t>(i)] = class_of(cps[static_cast<size_t>(i)]);
  auto stretch = [&](int32_t from, int32_t to) {  // chars [from, to) of ordinary text
    if (from >= to) return;
    pretokenize(cps.data() + from, cls.data() + from, to - from, ends);
    int32_t at = from;
    for (int32_t e : ends) {
      spans.push_back({offs[static_cast<size_t>(at)], offs[static_cast<size_t>(from + e)], -1});
      at = from + e;
    }
  };
  int32_t from = 0;
  if (!added_texts_.empty()) {
    for (int32_t i = 0; i < chars;) {
      const int32_t k = added_at(text, n, offs[static_cast<size_t>(i)]);
      if (k < 0) {
        ++i;
        continue;
      }
      stretch(from, i);
      const int32_t start = offs[static_cast<size_t>(i)];
      const int32_t end = start + static_cast<int32_t>(added_texts_[static_cast<size_t>(k)].size());
      spans.push_back({start, end, added_ids_[static_cast<size_t>(k)]});
      while (i < chars && offs[static_cast<size_t>(i)] < end) ++i;
      from = i;
    }
  }
  stretch(from, chars);
  if (spans.empty()) return true;
  auto span_start = [&](int32_t offset) {
    for (size_t k = spans.size(); k-- > 0;) {
      if (spans[k].start <= offset) return spans[k].start;
    }
    return 0;
  };
  auto trailing_space = [&](int32_t end_char) {  // first char of the whitespace run ending at end_char
    int32_t i = end_char;
    while (i > 0 && (cls[static_cast<size_t>(i - 1)] & kSpace)) --i;
    return i;
  };
  int32_t first = spans.back().start;
  if (spans.size() >= 2) {  // pretoken_region.py rule 4: 're, 've, 'll failed only at the end
    const PretokenSpan& quote = spans[spans.size() - 2];
    const PretokenSpan& last = spans.back();
    if (quote.added < 0 && last.added < 0 && quote.end - quote.start == 1 && text[quote.start] == '\'' &&
        last.end - last.start == 1 && std::strchr("rvlRVL", text[last.start]) != nullptr && text[last.start] != 0)
      first = quote.start;
  }
  const int32_t ws = trailing_space(chars);
  if (ws < chars) first = std::min(first, span_start(offs[static_cast<size_t>(ws)]));
  if (!added_texts_.empty()) {
    for (int32_t k = std::min(longest_added_chars_ - 1, chars); k > 0; --k) {
      const int32_t at = offs[static_cast<size_t>(chars - k)];
      if (added_prefixes_.count(std::string(reinterpret_cast<const char*>(text + at), static_cast<size_t>(n - at)))) {
        first = std::min(first, span_start(offs[static_cast<size_t>(trailing_space(chars - k))]));
        break;
      }
    }
  }
  open_start = first;
  return true;
}

void CanonicalTokenizer::lowest_merge(const std::vector<int32_t>& sym, size_t& at, int32_t& rank,
                                      int32_t& merged) const {
  for (size_t i = 0; i + 1 < sym.size(); ++i) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(sym[i])) << 32) | static_cast<uint32_t>(sym[i + 1]);
    const MergeSlot* found = find_merge(key);
    if (found && found->rank < rank) {
      rank = found->rank;
      merged = found->merged;
      at = i;
    }
  }
}

void CanonicalTokenizer::merge(std::vector<int32_t>& sym) const {
  while (sym.size() > 1) {
    int32_t best_rank = INT32_MAX, best_merged = -1;
    size_t best = 0;
    lowest_merge(sym, best, best_rank, best_merged);
    if (best_merged < 0) return;
    sym[best] = best_merged;
    sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
}

void CanonicalTokenizer::encode_pretoken(const uint8_t* data, int32_t n, std::vector<int32_t>& out) const {
  out.clear();
  const std::string_view bytes(reinterpret_cast<const char*>(data), static_cast<size_t>(n));
  if (ignore_merges_ && n <= longest_piece_ && maybe_piece(std::hash<std::string_view>()(bytes))) {
    auto it = piece_id_.find(bytes);
    if (it != piece_id_.end()) {
      out.push_back(it->second);
      return;
    }
  }
  for (int32_t i = 0; i < n; ++i) {
    if (byte_symbols_[data[i]] >= 0) out.push_back(byte_symbols_[data[i]]);
  }
  merge(out);
}

bool CanonicalTokenizer::encode(const uint8_t* text, int32_t n, std::vector<int32_t>& out) const {
  out.clear();
  std::vector<PretokenSpan> spans;
  int32_t open = 0;
  if (!region(text, n, spans, open)) return false;
  std::vector<int32_t> part;
  for (const PretokenSpan& s : spans) {
    if (s.added >= 0) {
      out.push_back(s.added);
      continue;
    }
    encode_pretoken(text + s.start, s.end - s.start, part);
    out.insert(out.end(), part.begin(), part.end());
  }
  return true;
}

bool CanonicalTokenizer::symbols_of(int32_t t, std::vector<int32_t>& out) const {
  auto it = piece_of_.find(t);
  if (it == piece_of_.end()) return false;
  for (unsigned char b : it->second) {
    if (byte_symbols_[b] >= 0) out.push_back(byte_symbols_[b]);
  }
  return true;
}

void CanonicalTokenizer::trace(int32_t t, Trace& out) const {
  out.steps.clear();
  out.whole = false;
  std::vector<int32_t> sym;
  if (!symbols_of(t, sym) || sym.empty()) return;
  for (;;) {  // merge()'s loop, recording each state's ends and next rank
    int32_t best_rank = INT32_MAX, best_merged = -1;
    size_t best = 0;
    lowest_merge(sym, best, best_rank, best_merged);
    out.steps.push_back({best_merged < 0 ? INT32_MAX : best_rank, sym.front(), sym.back()});
    if (best_merged < 0) break;
    sym[best] = best_merged;
    sym.erase(sym.begin() + static_cast<std::ptrdiff_t>(best) + 1);
  }
  out.whole = sym.size() == 1 && sym[0] == t;
}

CanonicalTokenizer::~CanonicalTokenizer() {
  for (int32_t t = 0; t < num_tokens(); ++t) {
    delete traces_[static_cast<size_t>(t)].load(std::memory_order_relaxed);
    delete[] bigram_rows_[static_cast<size_t>(t)].load(std::memory_order_relaxed);
  }
}

bool CanonicalTokenizer::bigram_cached(int32_t a, int32_t b) const {
  std::atomic<std::atomic<uint64_t>*>& slot = bigram_rows_[static_cast<size_t>(a)];
  std::atomic<uint64_t>* row = slot.load(std::memory_order_acquire);
  if (!row) {
    const size_t words = static_cast<size_t>(num_tokens() + 31) / 32;
    const int64_t bytes = static_cast<int64_t>(words * sizeof(uint64_t));
    if (bigram_row_bytes_.load(std::memory_order_relaxed) + bytes > kBigramRowBytes)
      return bigram_traces(a, cached_trace(a), b, cached_trace(b));
    std::unique_ptr<std::atomic<uint64_t>[]> made(new std::atomic<uint64_t>[words]);
    for (size_t w = 0; w < words; ++w) made[w].store(0, std::memory_order_relaxed);
    std::atomic<uint64_t>* expected = nullptr;
    if (slot.compare_exchange_strong(expected, made.get(), std::memory_order_acq_rel)) {
      bigram_row_bytes_.fetch_add(bytes, std::memory_order_relaxed);
      row = made.release();
    } else {
      row = expected;  // (another thread's)
    }
  }
  std::atomic<uint64_t>& word = row[static_cast<size_t>(b) >> 5];
  const uint64_t known = uint64_t{1} << (b & 31);
  const uint64_t bits = word.load(std::memory_order_relaxed);
  if (bits & known) return (bits & (known << 32)) != 0;
  const bool out = bigram_traces(a, cached_trace(a), b, cached_trace(b));
  word.fetch_or(known | (out ? known << 32 : 0), std::memory_order_relaxed);  // (both bits at once)
  return out;
}

const CanonicalTokenizer::Trace& CanonicalTokenizer::cached_trace(int32_t t) const {
  std::atomic<const Trace*>& slot = traces_[static_cast<size_t>(t)];
  const Trace* found = slot.load(std::memory_order_acquire);
  if (found) return *found;
  auto made = std::make_unique<Trace>();
  trace(t, *made);
  const Trace* expected = nullptr;
  if (slot.compare_exchange_strong(expected, made.get(), std::memory_order_acq_rel)) return *made.release();
  return *expected;  // (another thread's, the same)
}

bool CanonicalTokenizer::bigram_traces(int32_t, const Trace& ta, int32_t, const Trace& tb) const {
  if (!ta.whole || !tb.whole) return false;
  size_t s = 0, u = 0;
  int32_t x = -1, y = -1, junction = INT32_MAX;
  for (;;) {
    const Trace::Step& l = ta.steps[s];
    const Trace::Step& r = tb.steps[u];
    if (l.last != x || r.first != y) {
      x = l.last;
      y = r.first;
      const MergeSlot* m = find_merge((static_cast<uint64_t>(static_cast<uint32_t>(x)) << 32) | static_cast<uint32_t>(y));
      junction = m ? m->rank : INT32_MAX;
    }
    if (junction < l.rank && junction <= r.rank) return false;
    if (l.rank == INT32_MAX && r.rank == INT32_MAX) return true;
    if (l.rank <= r.rank) ++s; else ++u;
  }
}

bool CanonicalTokenizer::bigram(int32_t a, int32_t b) const {
  thread_local std::vector<int32_t> sym;
  sym.clear();
  if (!symbols_of(a, sym)) return false;
  const size_t na = sym.size();
  if (!symbols_of(b, sym) || na == 0 || sym.size() == na) return false;
  merge(sym);
  return sym.size() == 2 && sym[0] == a && sym[1] == b;
}

}  // namespace tokamata
