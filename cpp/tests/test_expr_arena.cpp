// ExprArena (expr_arena.hpp): hash-consed byte expressions and their Brzozowski derivatives.
//
// Invariants tested:
// - hash-consing: equal (normalized) constructions give the same id; ids are dense, never
//   reused, and children have smaller ids than their parents.
// - the constructors' laws: right-nested (associative) concatenation with unit/zero laws;
//   alternation flattened, sorted, deduplicated, NOTHING dropped, byte sets merged; the
//   repetition laws; tagged(NOTHING) = NOTHING; (a-b)-c == a-(b|c).
// - derivatives: for every string w of length <= 4 over {a,b,c}, the derivative by w is
//   nullable iff the oracle (regex_oracle.hpp) matches w, and is NOTHING iff no extension of
//   w matches (every node other than NOTHING matches some string); intersections and
//   differences decide emptiness (NOTHING exactly when empty), within the search budget
//   (LimitError max_dfa_states past it, and the arena stays usable).
// - cuts(node): bytes in one class (between two cuts) have derivatives with equal languages
//   (checked against the oracle, so the per-class memo cannot hide a wrong cut); first_bytes
//   holds every byte with a live derivative.
// - UTF-8 leaves (imported as records): exactly the encodings of the set's code points are
//   accepted, no invalid UTF-8; inside_character after a lead byte; analytic cuts.
// - tags: end_marks lists the tags reachable through nullable nodes; untagged strips them;
//   derivatives keep them. text_depth on JSON-string-text repetitions.
// - text_until(stop): exactly the valid UTF-8 strings whose first occurrence of stop is at
//   their end (multi-byte and self-overlapping stops); a prefix is NOTHING exactly when it
//   is not a valid UTF-8 prefix or holds stop before its end; invalid stops are refused.
// - decimal_multiple(p, k): exactly the digit strings with at most one '.' whose value is a
//   multiple of p / 10^k (moduli past 64 bits included); a state is NOTHING exactly when no
//   completion reaches a multiple; intersected with a number syntax, emptiness follows the
//   leaf's hint (a search that would run away without it stays within a small budget).
#include <algorithm>
#include <map>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "regex_oracle.hpp"
#include "runner.hpp"
#include "tokamata/expr_arena.hpp"
#include "tokamata/token_row.hpp"  // LimitError

using namespace tokamata;
using namespace tokamata_test;

namespace {

constexpr int32_t kNothingNode = ExprArena::kNothingId;
constexpr int32_t kEpsilonNode = ExprArena::kEpsilonId;
constexpr int32_t kForever = ExprArena::kUnbounded;

struct NamedRegex {
  std::string name;
  Regex regex;
};

// The derivative table's expressions over {a, b, c}; every live prefix completes within 3 bytes.
std::vector<NamedRegex> derivative_table(RegexBuilder& b) {
  const Regex a = b.literal("a"), bb = b.literal("b"), c = b.literal("c");
  const Regex abc = b.set("abc"), ab = b.set("ab");
  return {
      {"(ab|c)*", b.star(b.alt(b.literal("ab"), c))},
      {"a(b|c)*a?", b.concat(a, b.concat(b.star(b.set("bc")), b.optional(a)))},
      {"(a|b){2,3}c?", b.concat(b.repeat(ab, 2, 3), b.optional(c))},
      {"(a*b)*|c", b.alt(b.star(b.concat(b.star(a), bb)), c)},
      {"(a|ε)(b|ε)c{1,2}", b.concat(b.optional(a), b.concat(b.optional(bb), b.repeat(c, 1, 2)))},
      {"(aa|b)*", b.star(b.alt(b.literal("aa"), bb))},
      {"(ab|ba|c){1,3}", b.repeat(b.alt({b.literal("ab"), b.literal("ba"), c}), 1, 3)},
      {"((a|b)*c) & (a(a|b|c)*)", b.intersect(b.concat(b.star(ab), c), b.concat(a, b.star(abc)))},
      {"(ab)* & (a|b)*", b.intersect(b.star(b.literal("ab")), b.star(ab))},
      {"(a|b|c)* - a*", b.minus(b.star(abc), b.star(a))},
      {"(a|b|c){0,3} - (ab|ba)*", b.minus(b.repeat(abc, 0, 3), b.star(b.alt(b.literal("ab"), b.literal("ba"))))},
      {"a+b+ - ab", b.minus(b.concat(b.plus(a), b.plus(bb)), b.literal("ab"))},
      {"tag1((ab)+) | tag2(ac?)", b.alt(b.tagged(b.plus(b.literal("ab")), 1), b.tagged(b.concat(a, b.optional(c)), 2))},
  };
}

// Strings up to this long decide liveness for the table (completions take at most 3 bytes).
constexpr int kLongest = 7;

bool has(const ExprArena::ByteMask& mask, int byte) { return (mask[byte >> 6] >> (byte & 63)) & 1; }

// The class index of each byte under `cuts`.
std::vector<int> classes_of(const std::vector<uint8_t>& cuts) {
  std::vector<int> cls(256);
  for (int byte = 0; byte < 256; ++byte) {
    cls[byte] = static_cast<int>(std::upper_bound(cuts.begin(), cuts.end(), byte) - cuts.begin());
  }
  return cls;
}

std::string utf8(int32_t cp) {
  std::string out;
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return out;
}

// A UTF-8 leaf imported the way automata/native.py sends it: 3, pending 0, n, n (lo, hi) pairs.
int32_t import_utf8(ExprArena& arena, const std::vector<std::pair<int32_t, int32_t>>& ranges) {
  std::vector<int32_t> records{kUtf8, 0, static_cast<int32_t>(ranges.size())};
  for (const auto& [lo, hi] : ranges) {
    records.push_back(lo);
    records.push_back(hi);
  }
  return arena.import_nodes(records.data(), records.size()).at(0);
}

bool in_ranges(const std::vector<std::pair<int32_t, int32_t>>& ranges, int32_t cp) {
  for (const auto& [lo, hi] : ranges) {
    if (cp >= lo && cp <= hi) return true;
  }
  return false;
}

// Code points to try: everything below 0x3000, the emoji plane's first block, the edges of
// every UTF-8 length and of the surrogates, and a stride through the rest.
// An independent UTF-8 check: -1 invalid, else the bytes still missing of the last character.
int utf8_missing(const std::string& s) {
  int missing = 0;
  int32_t lo = 0x80, hi = 0xBF;  // the range of the next continuation byte
  for (unsigned char c : s) {
    if (missing) {
      if (c < lo || c > hi) return -1;
      --missing;
      lo = 0x80, hi = 0xBF;
      continue;
    }
    if (c < 0x80) continue;
    if (c >= 0xC2 && c <= 0xDF) missing = 1;
    else if (c >= 0xE0 && c <= 0xEF) missing = 2;
    else if (c >= 0xF0 && c <= 0xF4) missing = 3;
    else return -1;
    if (c == 0xE0) lo = 0xA0;
    if (c == 0xED) hi = 0x9F;
    if (c == 0xF0) lo = 0x90;
    if (c == 0xF4) hi = 0x8F;
  }
  return missing;
}

// Every string of at most `length` pieces drawn from `pieces`.
std::vector<std::string> all_concatenations(const std::vector<std::string>& pieces, int length) {
  std::vector<std::string> out{""};
  size_t begin = 0;
  for (int n = 0; n < length; ++n) {
    const size_t end = out.size();
    for (size_t i = begin; i < end; ++i) {
      for (const std::string& piece : pieces) out.push_back(out[i] + piece);
    }
    begin = end;
  }
  return out;
}

std::vector<int32_t> decimal_limbs(const std::string& digits) {  // base 10^9, low first
  std::vector<int32_t> limbs;
  for (size_t end = digits.size(); end > 0; end = end >= 9 ? end - 9 : 0) {
    const size_t start = end >= 9 ? end - 9 : 0;
    limbs.push_back(std::stoi(digits.substr(start, end - start)));
  }
  while (!limbs.empty() && limbs.back() == 0) limbs.pop_back();
  return limbs;
}

// The oracle of decimal_multiple(p, k) for small numbers: at most one '.', digits, and
// (digits as an integer) * 10^k divisible by p * 10^(fraction digits).
bool decimal_oracle(const std::string& s, uint64_t p, int k) {
  if (std::count(s.begin(), s.end(), '.') > 1) return false;
  uint64_t value = 0;
  int fraction = 0;
  bool after_point = false;
  for (char c : s) {
    if (c == '.') {
      after_point = true;
      continue;
    }
    if (c < '0' || c > '9') return false;
    value = value * 10 + static_cast<uint64_t>(c - '0');
    fraction += after_point ? 1 : 0;
  }
  for (int i = 0; i < k; ++i) value *= 10;
  uint64_t modulus = p;
  for (int i = 0; i < fraction; ++i) modulus *= 10;
  return value % modulus == 0;
}

std::vector<int32_t> sample_code_points() {
  std::vector<int32_t> out;
  for (int32_t cp = 0; cp < 0x3000; ++cp) out.push_back(cp);
  for (int32_t cp = 0x1F000; cp < 0x20000; ++cp) out.push_back(cp);
  for (int32_t cp : {0xD7FF, 0xE000, 0xFFFF, 0x10000, 0x10FFFF, 0xFFFD}) out.push_back(cp);
  for (int32_t cp = 0x3000; cp <= 0x10FFFF; cp += 0x3F1) out.push_back(cp);
  out.erase(std::remove_if(out.begin(), out.end(), [](int32_t cp) { return cp >= 0xD800 && cp <= 0xDFFF; }), out.end());
  return out;
}

}  // namespace

TEST(arena_hash_consing_and_normal_forms) {
  ExprArena arena;
  RegexBuilder b(arena);
  const Regex a = b.literal("a"), bb = b.literal("b"), c = b.literal("c");
  const Regex ab = b.literal("ab"), ba = b.literal("ba"), ca = b.literal("ca");
  const Regex nothing = b.nothing(), eps = b.epsilon();
  struct Row {
    const char* law;
    int32_t left, right;
    bool same;
  };
  const std::vector<Row> table = {
      {"equal byte sets", b.set("ab").id, b.set("ba").id, true},
      {"different byte sets", b.set("ab").id, b.set("ac").id, false},
      {"the empty byte set is NOTHING", b.set("").id, kNothingNode, true},
      {"equal concatenations", b.concat(a, bb).id, b.concat(b.literal("a"), b.literal("b")).id, true},
      {"concatenation is associative", b.concat(b.concat(a, bb), c).id, b.concat(a, b.concat(bb, c)).id, true},
      {"concatenation keeps order", b.concat(a, bb).id, b.concat(bb, a).id, false},
      {"epsilon . r == r", b.concat(eps, ab).id, ab.id, true},
      {"r . epsilon == r", b.concat(ab, eps).id, ab.id, true},
      {"NOTHING . r == NOTHING", b.concat(nothing, ab).id, kNothingNode, true},
      {"r . NOTHING == NOTHING", b.concat(ab, nothing).id, kNothingNode, true},
      {"alternation ignores order", b.alt(ab, ba).id, b.alt(ba, ab).id, true},
      {"alternation drops duplicates", b.alt(ab, ab).id, ab.id, true},
      {"alternation drops NOTHING", b.alt(ab, nothing).id, ab.id, true},
      {"alternation is flattened", b.alt(b.alt(ab, ba), ca).id, b.alt(ab, b.alt(ba, ca)).id, true},
      {"alternation merges byte sets", b.alt(a, bb).id, b.set("ab").id, true},
      {"byte sets merge across members", b.alt(b.alt(a, ab), bb).id, b.alt(b.set("ab"), ab).id, true},
      {"alternation of different members", b.alt(ab, ba).id, b.alt(ab, ca).id, false},
      {"r{1,1} == r", b.repeat(ab, 1, 1).id, ab.id, true},
      {"r{0,0} == epsilon", b.repeat(ab, 0, 0).id, kEpsilonNode, true},
      {"NOTHING{0,3} == epsilon", b.repeat(nothing, 0, 3).id, kEpsilonNode, true},
      {"NOTHING{1,3} == NOTHING", b.repeat(nothing, 1, 3).id, kNothingNode, true},
      {"epsilon{2,5} == epsilon", b.repeat(eps, 2, 5).id, kEpsilonNode, true},
      {"r{3,2} == NOTHING", b.repeat(ab, 3, 2).id, kNothingNode, true},
      {"(r*)* == r*", b.star(b.star(ab)).id, b.star(ab).id, true},
      {"(r*)+ == r*", b.plus(b.star(ab)).id, b.star(ab).id, true},
      {"nullable r: r{2,3} == r{0,3}", b.repeat(b.optional(ab), 2, 3).id, b.repeat(b.optional(ab), 0, 3).id, true},
      {"r{2,3} != r{2,4}", b.repeat(ab, 2, 3).id, b.repeat(ab, 2, 4).id, false},
      {"equal repetitions", b.repeat(ab, 2, kForever).id, b.repeat(b.literal("ab"), 2, kForever).id, true},
      {"equal tags", b.tagged(ab, 1).id, b.tagged(ab, 1).id, true},
      {"different tags", b.tagged(ab, 1).id, b.tagged(ab, 2).id, false},
      {"a tag is not its item", b.tagged(ab, 1).id, ab.id, false},
      {"tagged NOTHING == NOTHING", b.tagged(nothing, 1).id, kNothingNode, true},
      {"r & r == r", b.intersect(ab, ab).id, ab.id, true},
      {"r & NOTHING == NOTHING", b.intersect(ab, nothing).id, kNothingNode, true},
      {"r - r == NOTHING", b.minus(ab, ab).id, kNothingNode, true},
      {"r - NOTHING == r", b.minus(ab, nothing).id, ab.id, true},
      {"NOTHING - r == NOTHING", b.minus(nothing, ab).id, kNothingNode, true},
      {"r - (r|s) == NOTHING", b.minus(ab, b.alt(ab, ba)).id, kNothingNode, true},
      {"(a-b) & a == a-b", b.intersect(b.minus(b.star(b.set("ab")), ab), b.star(b.set("ab"))).id,
       b.minus(b.star(b.set("ab")), ab).id, true},
      {"(a-b)-c == a-(b|c)", b.minus(b.minus(b.star(b.set("ab")), ab), ba).id,
       b.minus(b.star(b.set("ab")), b.alt(ab, ba)).id, true},
  };
  for (const Row& row : table) {
    CONTEXT(row.law);
    if (row.same) CHECK_EQ(row.left, row.right);
    else CHECK(row.left != row.right);
  }
}

TEST(arena_ids_are_dense_and_children_come_first) {
  ExprArena arena;
  RegexBuilder b(arena);
  CHECK_EQ(arena.size(), 2u);  // NOTHING and epsilon
  const Regex x = b.set("x");
  CHECK_EQ(x.id, 2);
  const Regex y = b.set("y");
  const size_t before = arena.size();
  const Regex xy = b.concat(x, y);
  CHECK_EQ(arena.size(), before + 1);
  CHECK_EQ(static_cast<size_t>(xy.id), before);
  CHECK(xy.id > x.id && xy.id > y.id);
  b.concat(b.set("x"), b.set("y"));  // nothing new
  CHECK_EQ(arena.size(), before + 1);
  const Regex star = b.star(xy);
  CHECK(star.id > xy.id);
  const Regex both = b.alt(star, b.literal("yx"));
  CHECK(both.id > star.id);
  CHECK_THROWS(arena.check(static_cast<int32_t>(arena.size())), std::out_of_range);
  CHECK_THROWS(arena.check(-1), std::out_of_range);
  CHECK_THROWS(arena.derivative(static_cast<int32_t>(arena.size()), 'a'), std::out_of_range);
  CHECK_THROWS(arena.derivative(xy.id, 256), std::out_of_range);
}

TEST(arena_nullable) {
  ExprArena arena;
  RegexBuilder b(arena);
  const Regex a = b.literal("a");
  struct Row {
    const char* expression;
    Regex regex;
    bool nullable;
  };
  const std::vector<Row> table = {
      {"NOTHING", b.nothing(), false},
      {"epsilon", b.epsilon(), true},
      {"a", a, false},
      {"a*", b.star(a), true},
      {"a+", b.plus(a), false},
      {"a?", b.optional(a), true},
      {"a* a", b.concat(b.star(a), a), false},
      {"a* b?", b.concat(b.star(a), b.optional(b.literal("b"))), true},
      {"a | epsilon", b.alt(a, b.epsilon()), true},
      {"tag(a*)", b.tagged(b.star(a), 4), true},
      {"a* & (a|b)*", b.intersect(b.star(a), b.star(b.set("ab"))), true},
      {"a* - a+", b.minus(b.star(a), b.plus(a)), true},
      {"a* - a?", b.minus(b.star(a), b.optional(a)), false},
  };
  for (const Row& row : table) {
    CONTEXT(row.expression);
    CHECK_EQ(arena.nullable(row.regex.id), row.nullable);
    CHECK_EQ(arena.nullable(row.regex.id), matches(*row.regex.oracle, ""));
  }
}

TEST(arena_derivatives_match_the_brute_force_matcher) {
  ExprArena arena;
  RegexBuilder b(arena);
  const std::string alphabet = "abc";
  for (const NamedRegex& entry : derivative_table(b)) {
    CONTEXT("expression " << entry.name);
    const LanguageTable language = language_of(*entry.regex.oracle, alphabet, kLongest);
    for (const std::string& w : all_strings(alphabet, 4)) {
      CONTEXT("string " << describe(w));
      const int32_t d = derivative_by(arena, entry.regex.id, w);
      CHECK_EQ(arena.nullable(d), language.member.at(w));
      CHECK_EQ(d != kNothingNode, language.live.at(w));
      for (int outside : std::initializer_list<int>{0, 'd', 0x7F, 0xFF}) CHECK_EQ(arena.derivative(d, outside), kNothingNode);
    }
  }
}

TEST(arena_cuts_separate_bytes_whose_derivatives_differ) {
  ExprArena arena;
  RegexBuilder b(arena);
  const std::string alphabet = "abc";
  const std::vector<std::string> suffixes = all_strings(alphabet, 3);
  for (const NamedRegex& entry : derivative_table(b)) {
    CONTEXT("expression " << entry.name);
    for (const std::string& w : all_strings(alphabet, 2)) {
      const int32_t d = derivative_by(arena, entry.regex.id, w);
      if (d == kNothingNode) continue;
      CONTEXT("after " << describe(w));
      // the language of the derivative by each byte, as membership of w + byte + suffix
      auto signature = [&](int byte) {
        std::vector<bool> out;
        for (const std::string& u : suffixes) out.push_back(matches(*entry.regex.oracle, w + static_cast<char>(byte) + u));
        return out;
      };
      std::map<int, std::vector<bool>> by_byte;  // 'a', 'b', 'c' and one byte standing for all others
      for (int byte : {'a', 'b', 'c', 'd'}) by_byte[byte] = signature(byte);
      auto signature_of = [&](int byte) -> const std::vector<bool>& {
        return by_byte.at(alphabet.find(static_cast<char>(byte)) == std::string::npos ? 'd' : byte);
      };
      const std::vector<uint8_t> cuts = arena.cuts(d);
      CHECK(std::is_sorted(cuts.begin(), cuts.end()));
      CHECK(std::adjacent_find(cuts.begin(), cuts.end()) == cuts.end());
      CHECK(cuts.empty() || cuts.front() >= 1);
      const std::vector<int> cls = classes_of(cuts);
      for (int byte = 1; byte < 256; ++byte) {
        if (cls[byte] == cls[byte - 1] && signature_of(byte) != signature_of(byte - 1)) {
          FAIL("bytes " + std::to_string(byte - 1) + " and " + std::to_string(byte) + " share a class, derivatives differ");
        }
      }
      const ExprArena::ByteMask first = arena.first_bytes(d);
      for (int byte = 0; byte < 256; ++byte) {
        if (arena.derivative(d, byte) != kNothingNode && !has(first, byte)) {
          FAIL("first_bytes misses live byte " + std::to_string(byte));
        }
      }
    }
  }
}

TEST(arena_intersection_and_difference_decide_emptiness) {
  ExprArena arena;
  RegexBuilder b(arena);
  const Regex a = b.literal("a"), bb = b.literal("b"), ab = b.set("ab");
  struct Row {
    const char* expression;
    Regex regex;
    bool empty;
  };
  const std::vector<Row> table = {
      {"ab & ac", b.intersect(b.literal("ab"), b.literal("ac")), true},
      {"a+ & b+", b.intersect(b.plus(a), b.plus(bb)), true},
      {"(a|b)* & (b|c)*", b.intersect(b.star(ab), b.star(b.set("bc"))), false},
      {"((a|b)*c) & (a(a|b|c)*)", b.intersect(b.concat(b.star(ab), b.literal("c")), b.concat(a, b.star(b.set("abc")))), false},
      {"(a(a|b)) - (aa|ab)", b.minus(b.concat(a, ab), b.alt(b.literal("aa"), b.literal("ab"))), true},
      {"(a|b)* - ab", b.minus(b.star(ab), b.literal("ab")), false},
      {"(a|b){0,3} - (a|b){0,4}", b.minus(b.repeat(ab, 0, 3), b.repeat(ab, 0, 4)), true},
      {"(a|b){0,4} - (a|b){0,3}", b.minus(b.repeat(ab, 0, 4), b.repeat(ab, 0, 3)), false},
      {"(a|b)* - (a|bb*)*", b.minus(b.star(ab), b.star(b.alt(a, b.concat(bb, b.star(bb))))), true},
      {"(a|b)+ - (a|b)*", b.minus(b.plus(ab), b.star(ab)), true},
      {"(a|b)* - (a|b)+", b.minus(b.star(ab), b.plus(ab)), false},
  };
  for (const Row& row : table) {
    CONTEXT(row.expression);
    CHECK_EQ(row.regex.id == kNothingNode, row.empty);
    bool oracle_empty = true;
    for (const std::string& s : all_strings("abc", 5)) oracle_empty = oracle_empty && !matches(*row.regex.oracle, s);
    CHECK_EQ(oracle_empty, row.empty);  // (the table itself is right)
  }
}

TEST(arena_emptiness_search_respects_its_budget) {
  ExprArena arena;
  RegexBuilder b(arena);
  const Regex ab = b.set("ab");
  const Regex shorter = b.repeat(ab, 0, 3), longer = b.repeat(ab, 0, 4);
  arena.set_search_budget(1);
  try {
    arena.difference(shorter.id, longer.id);
    FAIL("no LimitError from an emptiness search over budget");
  } catch (const LimitError& e) {
    CHECK_EQ(e.name, std::string("max_dfa_states"));
    CHECK_EQ(e.bound, 1.0);
    CHECK(e.value > e.bound);
  }
  arena.set_search_budget(10000);  // the arena is still usable, and the answer is right
  CHECK_EQ(arena.difference(shorter.id, longer.id), kNothingNode);
  CHECK(arena.difference(longer.id, shorter.id) != kNothingNode);
}

TEST(arena_tags_end_marks_and_untagged) {
  ExprArena arena;
  RegexBuilder b(arena);
  const Regex a = b.literal("a"), bb = b.literal("b"), c = b.literal("c"), ab = b.literal("ab");
  const Regex two = b.alt(b.tagged(ab, 1), b.tagged(b.concat(a, b.optional(c)), 2));
  struct Row {
    std::string after;
    std::vector<int32_t> marks;
  };
  const std::vector<Row> table = {{"", {}}, {"a", {2}}, {"ab", {1}}, {"ac", {2}}, {"abab", {}}};
  for (const Row& row : table) {
    CONTEXT("after " << describe(row.after));
    const int32_t d = derivative_by(arena, two.id, row.after);
    if (row.after == "abab") {
      CHECK_EQ(d, kNothingNode);
      continue;
    }
    CHECK_EQ(arena.end_marks(d), row.marks);
  }
  struct MarksRow {
    const char* expression;
    Regex regex;
    std::vector<int32_t> marks;
  };
  const std::vector<MarksRow> marks = {
      {"tag3(a*)", b.tagged(b.star(a), 3), {3}},
      {"tag3(a*) | tag1(b?)", b.alt(b.tagged(b.star(a), 3), b.tagged(b.optional(bb), 1)), {1, 3}},
      {"tag5(a?) tag6(b?)", b.concat(b.tagged(b.optional(a), 5), b.tagged(b.optional(bb), 6)), {5, 6}},
      {"tag5(a?) tag6(b)", b.concat(b.tagged(b.optional(a), 5), b.tagged(bb, 6)), {}},
      {"tag7(tag8(a*))", b.tagged(b.tagged(b.star(a), 8), 7), {7, 8}},
      {"(tag5(a?))*", b.star(b.tagged(b.optional(a), 5)), {5}},
      {"(tag5(a))*", b.star(b.tagged(a, 5)), {}},
      {"tag2(a*) | tag2(b*)", b.alt(b.tagged(b.star(a), 2), b.tagged(b.star(bb), 2)), {2}},
  };
  for (const MarksRow& row : marks) {
    CONTEXT(row.expression);
    CHECK_EQ(arena.end_marks(row.regex.id), row.marks);
  }
  // untagged: the language without tags, structurally
  CHECK_EQ(arena.untagged(two.id), b.alt(ab, b.concat(a, b.optional(c))).id);
  CHECK_EQ(arena.untagged(b.tagged(ab, 9).id), ab.id);
  CHECK_EQ(arena.untagged(ab.id), ab.id);
  CHECK_EQ(arena.untagged(derivative_by(arena, two.id, "a")), b.alt(bb, b.optional(c)).id);
  // derivatives keep the tag
  const Regex tagged = b.tagged(b.star(ab), 7);
  CHECK_EQ(arena.derivative(tagged.id, 'a'), b.tagged(b.concat(bb, b.star(ab)), 7).id);
  CHECK_EQ(arena.derivative(tagged.id, 'b'), kNothingNode);
}

TEST(arena_utf8_leaf_accepts_exactly_its_code_points) {
  ExprArena arena;
  const std::vector<std::pair<int32_t, int32_t>> some = {{0x41, 0x42}, {0xE9, 0xE9}, {0x20AC, 0x20AC}, {0x1F600, 0x1F64F}};
  const std::vector<std::pair<int32_t, int32_t>> any = {{0, 0xD7FF}, {0xE000, 0x10FFFF}};
  for (const auto& ranges : {some, any}) {
    const int32_t leaf = import_utf8(arena, ranges);
    CONTEXT("leaf of " << ranges.size() << " ranges");
    CHECK(!arena.inside_character(leaf));
    int wrong = 0;
    for (int32_t cp : sample_code_points()) {
      const std::string bytes = utf8(cp);
      int32_t d = leaf;
      for (size_t i = 0; i < bytes.size() && d != kNothingNode; ++i) {
        d = arena.derivative(d, static_cast<unsigned char>(bytes[i]));
        if (d != kNothingNode && i + 1 < bytes.size() && !arena.inside_character(d)) {
          FAIL("not inside a character after " + std::to_string(i + 1) + " bytes of U+" + std::to_string(cp));
        }
      }
      const bool accepted = d != kNothingNode && arena.nullable(d);
      if (accepted != in_ranges(ranges, cp) && ++wrong <= 5) {
        FAIL("code point " + std::to_string(cp) + (accepted ? " accepted" : " refused"));
      }
    }
    // never invalid UTF-8: stray continuation bytes, C0/C1/F5..FF leads, overlong forms,
    // surrogates, code points past U+10FFFF, a lead byte followed by ASCII
    const std::vector<std::string> invalid = {"\x80", "\xBF", "\xC0\x80", "\xC1\xBF", "\xF5\x80\x80\x80", "\xFF",
                                              "\xE0\x80\x80", "\xF0\x80\x80\x80", "\xED\xA0\x80", "\xF4\x90\x80\x80",
                                              "\xC3" "A", "\xE2\x82" "A"};
    for (const std::string& bytes : invalid) {
      CONTEXT("invalid " << describe(bytes));
      const int32_t d = derivative_by(arena, leaf, bytes);
      CHECK(d == kNothingNode || !arena.nullable(d));
      bool extendable = false;  // and no continuation completes it
      for (int more = 0x80; more < 0xC0 && d != kNothingNode; ++more) {
        const int32_t next = arena.derivative(d, more);
        extendable = extendable || (next != kNothingNode && arena.nullable(next));
      }
      if (bytes.size() >= 3) CHECK(!extendable);
    }
  }
}

TEST(arena_utf8_cuts_are_exact_enough) {
  ExprArena arena;
  const std::vector<std::pair<int32_t, int32_t>> ranges = {{0x41, 0x42}, {0xE9, 0xE9}, {0x20AC, 0x20AC}, {0x1F600, 0x1F64F}};
  const int32_t leaf = import_utf8(arena, ranges);
  std::vector<std::string> encodings;
  for (const auto& [lo, hi] : ranges) {
    for (int32_t cp = lo; cp <= hi; ++cp) encodings.push_back(utf8(cp));
  }
  const ExprArena::ByteMask first = arena.first_bytes(leaf);
  for (const std::string& e : encodings) CHECK(has(first, static_cast<unsigned char>(e[0])));
  CHECK(!has(first, 'C'));
  for (const std::string prefix : {"", "\xC3", "\xE2", "\xE2\x82", "\xF0", "\xF0\x9F", "\xF0\x9F\x98"}) {
    CONTEXT("after " << describe(prefix));
    const int32_t d = derivative_by(arena, leaf, prefix);
    CHECK(d != kNothingNode);
    CHECK_EQ(arena.inside_character(d), !prefix.empty());
    // the suffixes each next byte leaves, from the encodings themselves
    std::map<int, std::set<std::string>> rest;
    for (const std::string& e : encodings) {
      if (e.size() > prefix.size() && e.compare(0, prefix.size(), prefix) == 0) {
        rest[static_cast<unsigned char>(e[prefix.size()])].insert(e.substr(prefix.size() + 1));
      }
    }
    const std::set<std::string> none;
    auto rest_of = [&](int byte) -> const std::set<std::string>& {
      auto it = rest.find(byte);
      return it == rest.end() ? none : it->second;
    };
    const std::vector<int> cls = classes_of(arena.cuts(d));
    for (int byte = 1; byte < 256; ++byte) {
      if (cls[byte] == cls[byte - 1] && rest_of(byte) != rest_of(byte - 1)) {
        FAIL("bytes " + std::to_string(byte - 1) + " and " + std::to_string(byte) + " share a class");
      }
    }
    for (int byte = 0; byte < 256; ++byte) {  // and the derivative by each byte is right
      const int32_t next = arena.derivative(d, byte);
      CHECK_EQ(next != kNothingNode, !rest_of(byte).empty());
      if (next != kNothingNode) CHECK_EQ(arena.nullable(next), rest_of(byte).count("") == 1);
    }
  }
}

TEST(arena_text_depth_of_string_text_repetitions) {
  ExprArena arena;
  RegexBuilder b(arena);
  std::string printable, printable_no_del;  // what a JSON string takes unescaped, in ASCII
  for (int c = 0x20; c <= 0x7F; ++c) {
    if (c == '"' || c == '\\') continue;
    printable.push_back(static_cast<char>(c));
    if (c != 0x7F) printable_no_del.push_back(static_cast<char>(c));
  }
  const int32_t non_ascii = import_utf8(arena, {{0x80, 0xD7FF}, {0xE000, 0x10FFFF}});
  const int32_t text_members[2] = {b.set(printable).id, non_ascii};
  const int32_t text = arena.alternation(text_members, 2);
  const int32_t short_members[2] = {b.set(printable_no_del).id, non_ascii};
  const int32_t text_but_del = arena.alternation(short_members, 2);
  const int32_t quote = b.literal("\"").id;
  struct Row {
    const char* expression;
    int32_t node;
    int32_t depth;
  };
  const std::vector<Row> table = {
      {"text*", arena.repeat(text, 0, kForever), ExprArena::kTextUnlimited},
      {"text{0,7}", arena.repeat(text, 0, 7), 7},
      {"text* \"", arena.concat(arena.repeat(text, 0, kForever), quote), ExprArena::kTextUnlimited},
      {"tag(text{0,3})", arena.tagged(arena.repeat(text, 0, 3), 1), 3},
      {"(text but DEL)*", arena.repeat(text_but_del, 0, kForever), 0},
      {"ascii text*", arena.repeat(b.set(printable).id, 0, kForever), 0},
      {"a", b.literal("a").id, 0},
  };
  for (const Row& row : table) {
    CONTEXT(row.expression);
    CHECK_EQ(arena.text_depth(row.node), row.depth);
  }
}

TEST(arena_text_until_accepts_text_up_to_the_first_stop) {
  ExprArena arena;
  const std::string e_acute = "\xC3\xA9", euro = "\xE2\x82\xAC";
  for (const std::string& stop : {std::string("\""), std::string("ab"), std::string("aab"), std::string("**/"),
                                 e_acute + "!", euro, std::string("a") + euro + "a"}) {
    CONTEXT("stop " << describe(stop));
    const int32_t leaf = arena.text_until(stop);
    CHECK(!arena.nullable(leaf));
    CHECK_EQ(arena.text_until(stop), leaf);  // interned
    // pieces: each byte of the stop, 'x', whole and partial characters, stray bytes
    std::set<std::string> piece_set{"x", e_acute, euro, "\xC3", "\xA9", "\xE2\x82", "\xFF"};
    for (char c : stop) piece_set.insert(std::string(1, c));
    const std::vector<std::string> pieces(piece_set.begin(), piece_set.end());
    int wrong = 0;
    for (const std::string& s : all_concatenations(pieces, 4)) {
      const size_t found = s.find(stop);
      const int missing = utf8_missing(s);
      const bool accepted = missing == 0 && found != std::string::npos && found + stop.size() == s.size();
      const bool live = missing >= 0 && (found == std::string::npos || found + stop.size() == s.size());
      const int32_t d = derivative_by(arena, leaf, s);
      if ((d != kNothingNode) != live || (d != kNothingNode && arena.nullable(d) != accepted)) {
        if (++wrong <= 5) FAIL(describe(s) + (live ? " live" : " dead") + (accepted ? ", accepted" : ""));
      }
      if (d != kNothingNode) {  // the facts of the state
        CHECK_EQ(arena.inside_character(d), missing > 0);
        CHECK(arena.text_depth(d) == 0 || d == kEpsilonNode);
      }
    }
  }
  CHECK_THROWS(arena.text_until(""), std::invalid_argument);
  CHECK_THROWS(arena.text_until("\xC3"), std::invalid_argument);  // a lone lead byte
  CHECK_THROWS(arena.text_until("\xED\xA0\x80"), std::invalid_argument);  // a surrogate
  CHECK_THROWS(arena.text_until("ab", 2), std::invalid_argument);  // no such position
}

TEST(arena_text_until_cuts_and_first_bytes_are_sound) {
  ExprArena arena;
  const int32_t leaf = arena.text_until("*/");
  for (const std::string prefix : {"", "*", "x*", "\xE2", "\xE2\x82"}) {
    CONTEXT("after " << describe(prefix));
    const int32_t d = derivative_by(arena, leaf, prefix);
    CHECK(d != kNothingNode);
    const std::vector<int> cls = classes_of(arena.cuts(d));
    const ExprArena::ByteMask first = arena.first_bytes(d);
    for (int byte = 0; byte < 256; ++byte) {
      const int32_t next = arena.derivative(d, byte);
      if (next != kNothingNode) CHECK(has(first, byte));
      if (byte > 0 && cls[byte] == cls[byte - 1]) {
        // bytes of one class: the same derivative (by the node's own semantics, re-derived)
        CHECK_EQ(next, arena.derivative(d, byte - 1));
      }
    }
    CHECK(cls['*'] != cls['/'] && cls['*'] != cls['x'] && cls['/'] != cls['x']);
  }
}

TEST(arena_substring_of_accepts_exactly_the_substrings) {
  ExprArena arena;
  // "aé€𝄞ab": one, two, three and four UTF-8 bytes, a repeat
  const std::vector<int32_t> text{'a', 0xE9, 0x20AC, 0x1D11E, 'a', 'b'};
  const std::string spelled = "a\xC3\xA9\xE2\x82\xAC\xF0\x9D\x84\x9E" "ab";
  const int32_t leaf = arena.substring_of(text.data(), text.size());
  CHECK(!arena.nullable(leaf));
  CHECK_EQ(arena.substring_of(text.data(), text.size()), leaf);  // one automaton per text
  std::set<std::string> piece_set{"x", "\xC3", "\xA9", "\xE2\x82", "\xFF", "\xF0\x9D"};
  for (size_t i = 0, start = 0; i <= spelled.size(); ++i) {  // every character, whole
    if (i == spelled.size() || (static_cast<unsigned char>(spelled[i]) & 0xC0) != 0x80) {
      if (i > start) piece_set.insert(spelled.substr(start, i - start));
      start = i;
    }
  }
  const std::vector<std::string> pieces(piece_set.begin(), piece_set.end());
  int wrong = 0;
  for (const std::string& s : all_concatenations(pieces, 4)) {
    const int missing = utf8_missing(s);
    const bool inside = !s.empty() && (static_cast<unsigned char>(s[0]) & 0xC0) != 0x80 &&
                        spelled.find(s) != std::string::npos;
    const bool live = s.empty() || (missing >= 0 && inside);
    const bool accepted = !s.empty() && missing == 0 && inside;
    const int32_t d = derivative_by(arena, leaf, s);
    if ((d != kNothingNode) != live || (d != kNothingNode && arena.nullable(d) != accepted)) {
      if (++wrong <= 5) FAIL(describe(s) + (live ? " live" : " dead") + (accepted ? ", accepted" : ""));
    }
    if (d != kNothingNode) {  // exact first bytes, one derivative per class
      CHECK_EQ(arena.inside_character(d), missing > 0);
      const std::vector<int> cls = classes_of(arena.cuts(d));
      const ExprArena::ByteMask first = arena.first_bytes(d);
      for (int byte = 0; byte < 256; ++byte) {
        const int32_t next = arena.derivative(d, byte);
        CHECK_EQ(has(first, byte), next != kNothingNode);
        if (byte > 0 && cls[byte] == cls[byte - 1]) CHECK_EQ(next, arena.derivative(d, byte - 1));
      }
    }
  }
  CHECK_EQ(arena.footprint() - arena.size(), 7u);  // the suffix automaton of 6 characters: 7 states
  const int32_t surrogate = 0xD800;
  CHECK_THROWS(arena.substring_of(text.data(), 0), std::invalid_argument);
  CHECK_THROWS(arena.substring_of(&surrogate, 1), std::invalid_argument);
  CHECK_THROWS(arena.substring_of(text.data(), text.size(), 99), std::invalid_argument);
  CHECK_THROWS(arena.substring_of(text.data(), text.size(), 0, 1 << 24 | 0xC4 << 16), std::invalid_argument);
}

TEST(arena_decimal_multiple_accepts_exactly_the_multiples) {
  ExprArena arena;
  const std::vector<std::string> strings = all_concatenations({"0", "1", "2", "5", "7", "9", "."}, 4);
  // for these p and k, a live state completes within two characters
  const std::vector<std::string> completions =
      all_concatenations({"0", "1", "2", "3", "4", "5", "6", "7", "8", "9", "."}, 2);
  for (uint64_t p : {1ULL, 2ULL, 3ULL, 7ULL, 12ULL, 25ULL, 40ULL, 37ULL}) {
    for (int k = 0; k <= 2; ++k) {
      CONTEXT("p " << p << ", k " << k);
      const int32_t leaf = arena.decimal_multiple(p, k);
      CHECK_EQ(arena.decimal_multiple(p, k), leaf);
      CHECK(arena.nullable(leaf));  // the empty string has value 0
      int wrong = 0;
      for (const std::string& s : strings) {
        const int32_t d = derivative_by(arena, leaf, s);
        bool live = false;
        for (const std::string& more : completions) live = live || decimal_oracle(s + more, p, k);
        const bool accepted = decimal_oracle(s, p, k);
        if ((d != kNothingNode) != live || (d != kNothingNode && arena.nullable(d) != accepted)) {
          if (++wrong <= 5) FAIL(s + (live ? " live" : " dead") + (accepted ? ", accepted" : ""));
        }
      }
    }
  }
  CHECK_THROWS(arena.decimal_multiple(0, 0), std::invalid_argument);
  CHECK_THROWS(arena.decimal_state({7}, 1, 1, {7}, 0), std::invalid_argument);  // remainder not below p
  CHECK_THROWS(arena.decimal_state({7}, 1, 1, {3}, 1), std::invalid_argument);  // t must stay below k in phase 1
}

TEST(arena_decimal_multiple_with_moduli_past_64_bits) {
  ExprArena arena;
  // 10^20 (three limbs) and 123456789012345678901 (a multiple is that times 3)
  const std::string huge = "123456789012345678901", tripled = "370370367037037036703";
  const int32_t hundred = arena.decimal_state(decimal_limbs("1" + std::string(20, '0')), 0, 0, {}, 0);
  const int32_t odd = arena.decimal_state(decimal_limbs(huge), 2, 0, {}, 0);
  struct Row {
    int32_t leaf;
    std::string text;
    bool accepted;
  };
  const std::vector<Row> table = {
      {hundred, "1" + std::string(20, '0'), true},        {hundred, "1" + std::string(19, '0'), false},
      {hundred, "7" + std::string(20, '0') + ".000", true}, {hundred, "7" + std::string(20, '0') + ".01", false},
      {hundred, "0.0", true},                              {hundred, "2" + std::string(21, '0'), true},
      {odd, huge.substr(0, 19) + "." + huge.substr(19), true},  // p / 10^2 itself
      {odd, tripled.substr(0, 19) + "." + tripled.substr(19), true},
      {odd, tripled.substr(0, 19) + "." + tripled.substr(19) + "0", true},
      {odd, tripled.substr(0, 19) + "." + tripled.substr(19) + "1", false},
      {odd, tripled, true},  // 100 times a multiple
      {odd, huge, true},
      {odd, "1" + huge, false},
  };
  for (const Row& row : table) {
    CONTEXT(row.text);
    const int32_t d = derivative_by(arena, row.leaf, row.text);
    CHECK_EQ(d != kNothingNode && arena.nullable(d), row.accepted);
  }
  // phase 2 of p / 10^2 after one fraction digit with a remainder no digit can clear: dead
  CHECK_EQ(derivative_by(arena, odd, "1.5"), kNothingNode);
}

TEST(arena_decimal_emptiness_search_follows_the_hint) {
  ExprArena arena;
  RegexBuilder b(arena);
  const Regex digit = b.set("0123456789");
  const Regex integer = b.concat(b.set("123456789"), b.star(digit));  // no leading zero
  const Regex number = b.concat(integer, b.optional(b.concat(b.literal("."), b.plus(digit))));
  // without the hint, the depth-first search runs down 1, 10, 100, ... (never a multiple)
  arena.set_search_budget(64);
  for (uint64_t p : {999983ULL, 1000003ULL, 104729ULL}) {
    for (int k : {0, 3}) {
      CONTEXT("p " << p << ", k " << k);
      const int32_t leaf = arena.decimal_multiple(p, k);
      const int32_t members[2] = {number.id, leaf};
      const int32_t both = arena.intersection(members, 2);
      CHECK(both != kNothingNode);
      // and the product's derivatives stay decidable within the budget
      const int32_t after = derivative_by(arena, both, "12");
      CHECK(after != kNothingNode);
      CHECK_EQ(derivative_by(arena, both, std::to_string(p)) != kNothingNode, true);
      CHECK(arena.nullable(derivative_by(arena, both, std::to_string(p * 7))));
      CHECK(!arena.nullable(derivative_by(arena, both, std::to_string(p * 7 + 1))));
    }
  }
  // an empty product is still found empty: multiples of 4 spelled with odd last digits
  arena.set_search_budget(10000);
  const int32_t odd_tail[2] = {b.concat(b.star(digit), b.set("13579")).id, arena.decimal_multiple(4, 0)};
  CHECK_EQ(arena.intersection(odd_tail, 2), kNothingNode);
}

TEST(arena_text_until_intersections_and_differences) {
  ExprArena arena;
  RegexBuilder b(arena);
  const int32_t until = arena.text_until("ab");
  const Regex short_text = b.repeat(b.set("abx"), 0, 4);
  const int32_t members[2] = {until, short_text.id};
  const int32_t both = arena.intersection(members, 2);
  const int32_t without_x = arena.difference(until, b.concat(b.star(b.set("abx")), b.concat(b.literal("x"), b.star(b.set("abx")))).id);
  const std::vector<std::string> strings = all_concatenations({"a", "b", "x", "\xC3\xA9"}, 5);
  int wrong = 0;
  for (const std::string& s : strings) {
    const size_t found = s.find("ab");
    const bool until_ok = utf8_missing(s) == 0 && found != std::string::npos && found + 2 == s.size();
    const bool short_ok = s.size() <= 4 && s.find_first_not_of("abx") == std::string::npos;
    const bool in_subtrahend = s.find('x') != std::string::npos && s.find_first_not_of("abx") == std::string::npos;
    const int32_t d1 = derivative_by(arena, both, s), d2 = derivative_by(arena, without_x, s);
    if ((d1 != kNothingNode && arena.nullable(d1)) != (until_ok && short_ok) && ++wrong <= 5) FAIL("& " + describe(s));
    if ((d2 != kNothingNode && arena.nullable(d2)) != (until_ok && !in_subtrahend) && ++wrong <= 5) FAIL("- " + describe(s));
  }
  const int32_t none[2] = {until, b.literal("ba").id};
  CHECK_EQ(arena.intersection(none, 2), kNothingNode);
}
