// A brute-force regular-expression matcher, the oracle of the arena and DFA tests, and
// a builder that makes each test expression twice: as an ExprArena node and as an oracle tree.
//
// Invariants:
// - matches(tree, s) decides full-string membership by trying every split (exponential; the
//   tests use strings of at most a few bytes). Repetition r{low,high} is decided by the sets of
//   positions reachable after exactly k items, k up to low + |s| for an unbounded high (more
//   items than that only add empty ones, which can be dropped down to max(low, nonempty)).
// - The oracle shares nothing with the arena: no normalization, no derivatives, no laws.
// - Regex::id is the arena's node for the same expression; building never reads the arena's
//   answers back (except the ids themselves).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "tokamata/expr_arena.hpp"

namespace tokamata_test {

struct OracleNode {
  enum Kind { kNothing, kEpsilon, kSet, kConcat, kAlt, kRepeat, kAnd, kDiff, kTagged } kind = kNothing;
  std::array<bool, 256> bytes{};  // kSet
  std::shared_ptr<const OracleNode> a, b;
  int low = 0, high = 0;  // kRepeat (high -1: unbounded)
};
using Oracle = std::shared_ptr<const OracleNode>;

inline bool matches(const OracleNode& node, std::string_view s) {
  switch (node.kind) {
    case OracleNode::kNothing:
      return false;
    case OracleNode::kEpsilon:
      return s.empty();
    case OracleNode::kSet:
      return s.size() == 1 && node.bytes[static_cast<unsigned char>(s[0])];
    case OracleNode::kTagged:
      return matches(*node.a, s);
    case OracleNode::kAlt:
      return matches(*node.a, s) || matches(*node.b, s);
    case OracleNode::kAnd:
      return matches(*node.a, s) && matches(*node.b, s);
    case OracleNode::kDiff:
      return matches(*node.a, s) && !matches(*node.b, s);
    case OracleNode::kConcat:
      for (size_t k = 0; k <= s.size(); ++k) {
        if (matches(*node.a, s.substr(0, k)) && matches(*node.b, s.substr(k))) return true;
      }
      return false;
    case OracleNode::kRepeat: {
      const size_t n = s.size();
      const int most = node.high < 0 ? node.low + static_cast<int>(n) : node.high;
      std::vector<bool> reach(n + 1, false);  // positions after exactly k items
      reach[0] = true;
      for (int k = 0;; ++k) {
        if (k >= node.low && reach[n]) return true;
        if (k == most) return false;
        std::vector<bool> next(n + 1, false);
        bool any = false;
        for (size_t i = 0; i <= n; ++i) {
          if (!reach[i]) continue;
          for (size_t j = i; j <= n; ++j) {
            if (!next[j] && matches(*node.a, s.substr(i, j - i))) next[j] = any = true;
          }
        }
        if (!any) return false;
        reach.swap(next);
      }
    }
  }
  return false;
}

// Every string over `alphabet` of length 0..max_length, shortest first.
inline std::vector<std::string> all_strings(const std::string& alphabet, int max_length) {
  std::vector<std::string> out{""};
  size_t begin = 0;
  for (int length = 1; length <= max_length; ++length) {
    const size_t end = out.size();
    for (size_t i = begin; i < end; ++i) {
      for (char c : alphabet) out.push_back(out[i] + c);
    }
    begin = end;
  }
  return out;
}

// Membership of every string over `alphabet` of length <= longest, and which of them are live
// prefixes (some extension of length <= longest is a member).
struct LanguageTable {
  std::map<std::string, bool> member, live;
};
inline LanguageTable language_of(const OracleNode& oracle, const std::string& alphabet, int longest) {
  LanguageTable t;
  const std::vector<std::string> strings = all_strings(alphabet, longest);
  for (const std::string& s : strings) t.member[s] = matches(oracle, s);
  for (auto it = strings.rbegin(); it != strings.rend(); ++it) {
    bool live = t.member[*it];
    if (static_cast<int>(it->size()) < longest) {
      for (char ch : alphabet) live = live || t.live[*it + ch];
    }
    t.live[*it] = live;
  }
  return t;
}

struct Regex {
  int32_t id;
  Oracle oracle;
};

// Builds each expression in the arena and in the oracle at once.
class RegexBuilder {
 public:
  explicit RegexBuilder(tokamata::ExprArena& arena) : arena_(arena) {}

  tokamata::ExprArena& arena() { return arena_; }

  Regex nothing() { return {tokamata::ExprArena::kNothingId, leaf(OracleNode::kNothing)}; }
  Regex epsilon() { return {tokamata::ExprArena::kEpsilonId, leaf(OracleNode::kEpsilon)}; }

  // One byte out of `chars`.
  Regex set(const std::string& chars) {
    tokamata::ExprArena::ByteMask mask{0, 0, 0, 0};
    auto node = std::make_shared<OracleNode>();
    node->kind = OracleNode::kSet;
    for (unsigned char c : chars) {
      mask[c >> 6] |= uint64_t{1} << (c & 63);
      node->bytes[c] = true;
    }
    return {arena_.byte_set(mask), node};
  }
  // The bytes of `text` in a row (the empty string for "").
  Regex literal(const std::string& text) {
    Regex out = epsilon();
    for (size_t i = text.size(); i-- > 0;) out = concat(set(std::string(1, text[i])), out);
    return out;
  }
  Regex concat(const Regex& first, const Regex& second) {
    return {arena_.concat(first.id, second.id), pair(OracleNode::kConcat, first, second)};
  }
  Regex alt(const Regex& first, const Regex& second) {
    const int32_t members[2] = {first.id, second.id};
    return {arena_.alternation(members, 2), pair(OracleNode::kAlt, first, second)};
  }
  Regex alt(const std::vector<Regex>& members) {
    Regex out = members.at(0);
    for (size_t i = 1; i < members.size(); ++i) out = alt(out, members[i]);
    return out;
  }
  Regex repeat(const Regex& item, int low, int high) {
    auto node = std::make_shared<OracleNode>();
    node->kind = OracleNode::kRepeat;
    node->a = item.oracle;
    node->low = low;
    node->high = high;
    return {arena_.repeat(item.id, low, high), node};
  }
  Regex star(const Regex& item) { return repeat(item, 0, tokamata::ExprArena::kUnbounded); }
  Regex plus(const Regex& item) { return repeat(item, 1, tokamata::ExprArena::kUnbounded); }
  Regex optional(const Regex& item) { return repeat(item, 0, 1); }
  Regex intersect(const Regex& first, const Regex& second) {
    const int32_t members[2] = {first.id, second.id};
    return {arena_.intersection(members, 2), pair(OracleNode::kAnd, first, second)};
  }
  Regex minus(const Regex& first, const Regex& second) {
    return {arena_.difference(first.id, second.id), pair(OracleNode::kDiff, first, second)};
  }
  Regex tagged(const Regex& item, int32_t tag) {
    auto node = std::make_shared<OracleNode>();
    node->kind = OracleNode::kTagged;
    node->a = item.oracle;
    return {arena_.tagged(item.id, tag), node};
  }

 private:
  static Oracle leaf(OracleNode::Kind kind) {
    auto node = std::make_shared<OracleNode>();
    node->kind = kind;
    return node;
  }
  static Oracle pair(OracleNode::Kind kind, const Regex& first, const Regex& second) {
    auto node = std::make_shared<OracleNode>();
    node->kind = kind;
    node->a = first.oracle;
    node->b = second.oracle;
    return node;
  }

  tokamata::ExprArena& arena_;
};

// The arena node after the bytes of `w` (NOTHING once dead).
inline int32_t derivative_by(tokamata::ExprArena& arena, int32_t node, const std::string& w) {
  for (unsigned char c : w) {
    if (node == tokamata::ExprArena::kNothingId) break;
    node = arena.derivative(node, c);
  }
  return node;
}

}  // namespace tokamata_test
