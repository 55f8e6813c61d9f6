// The expression arena's emptiness searches (boolean.py) and the facts lexers and slices read
// (automata/analysis.py): lengths, infinity, mid-character, end marks, text depth; see
// expr_arena.hpp for the invariants.
#include "tokamata/expr_arena.hpp"

#include <algorithm>
#include <cstring>
#include <functional>
#include <iterator>
#include <stdexcept>

#include "expr_arena_detail.hpp"
#include "tokamata/token_row.hpp"  // LimitError

namespace tokamata {

using namespace arena_detail;

// ------------------------------------------------------------------ emptiness (boolean.py)

bool ExprArena::infinite(int32_t node) {
  Node& n = nodes_[node];
  if (n.infinite >= 0) return n.infinite != 0;
  const Node copy = n;
  bool found = false;
  switch (copy.kind) {
    case kRepeat:
      found = (copy.c == kUnbounded && copy.a != kEpsilonId) || infinite(copy.a);
      break;
    case kConcat:
      found = infinite(copy.a) || infinite(copy.b);
      break;
    case kAlt:
      for (uint32_t i = 0; i < copy.count && !found; ++i) found = infinite(payload_[copy.offset + i]);
      break;
    case kTagged:
      found = infinite(copy.a);
      break;
    case kDiff:
      found = infinite(copy.a) && max_length(copy.b) >= 0;
      break;
    case kUntil:
    case kDecmod:
      found = true;
      break;
    default:
      break;
  }
  nodes_[node].infinite = found ? 1 : 0;
  return found;
}

int64_t ExprArena::max_length(int32_t node) {
  if (nodes_[node].longest != -2) return nodes_[node].longest;
  const Node n = nodes_[node];
  int64_t result = -1;
  switch (n.kind) {
    case kNothing:
    case kEpsilon:
      result = 0;
      break;
    case kTagged:
      result = max_length(n.a);
      break;
    case kBytes:
      result = 1;
      break;
    case kUtf8:
      result = 4;
      break;
    case kConcat: {
      const int64_t a = max_length(n.a), b = max_length(n.b);
      result = (a < 0 || b < 0) ? -1 : std::min(a + b, kLongLength);
      break;
    }
    case kAlt: {
      result = 0;
      for (uint32_t i = 0; i < n.count; ++i) {
        const int64_t part = max_length(payload_[n.offset + i]);
        if (part < 0) {
          result = -1;
          break;
        }
        result = std::max(result, part);
      }
      break;
    }
    case kRepeat: {
      const int64_t inner = max_length(n.a);
      if (inner >= 0 && n.c != kUnbounded) {
        result = (inner > 0 && n.c > kLongLength / inner) ? kLongLength : inner * n.c;
      }
      break;
    }
    case kAnd:
      for (uint32_t i = 0; i < n.count; ++i) {
        const int64_t part = max_length(payload_[n.offset + i]);
        if (part >= 0 && (result < 0 || part < result)) result = part;
      }
      break;
    case kDiff:
      result = max_length(n.a);
      break;
    case kUntil:
    case kDecmod:  // unbounded
      break;
    case kSubstring:  // exact at a character boundary, else a bound (substrings._facts)
      result = substrings_[n.a].remaining[n.b] - (n.c >> 24);
      break;
  }
  nodes_[node].longest = result;
  return result;
}

bool ExprArena::non_empty(ExprKind kind, const std::vector<int32_t>& members) {
  if (exists(kind, members)) return true;
  auto key_of = [kind](const std::vector<int32_t>& state) {
    std::string key(1, static_cast<char>(kind));
    key.append(reinterpret_cast<const char*>(state.data()), state.size() * sizeof(int32_t));
    return key;
  };
  const std::string key = key_of(members);
  auto known = emptiness_.find(key);
  if (known != emptiness_.end()) return known->second;
  if (kind == kDiff && infinite(members[0]) && max_length(members[1]) >= 0) {
    emptiness_[key] = true;  // longer strings than the subtrahend has are left over
    return true;
  }
  auto accepts = [&](const std::vector<int32_t>& state) {
    if (kind == kAnd) {
      if (state.size() == 1) return true;
      for (int32_t m : state) {
        if (!nodes_[m].nullable) return false;
      }
      return true;
    }
    return state[1] == kNothingId || (nodes_[state[0]].nullable && !nodes_[state[1]].nullable);
  };
  auto representatives = [&](const std::vector<int32_t>& state) {
    std::vector<uint8_t> merged{0};
    for (int32_t m : state) {
      if (m == kNothingId) continue;
      const std::vector<uint8_t>& more = cuts(m);
      std::vector<uint8_t> both;
      std::set_union(merged.begin(), merged.end(), more.begin(), more.end(), std::back_inserter(both));
      merged.swap(both);
    }
    // popped from the end: ascending order of bytes, except '"' (it ends JSON strings,
    // finding witnesses fast) first, and before it the divisibility leaves' hints (the first
    // bytes of their shortest completions: following one shortens the search), smallest
    // first: all of them, so that the order depends on the members, not on their ids
    std::vector<int32_t> order(merged.rbegin(), merged.rend());
    auto quote = std::find(order.begin(), order.end(), 0x22);
    if (quote != order.end()) {
      order.erase(quote);
      order.push_back(0x22);
    }
    std::vector<int32_t> hints;
    for (int32_t m : state) {
      const int32_t byte = hint(m, 4);
      if (byte >= 0) hints.push_back(byte);
    }
    std::sort(hints.begin(), hints.end(), std::greater<int32_t>());
    hints.erase(std::unique(hints.begin(), hints.end()), hints.end());
    order.insert(order.end(), hints.begin(), hints.end());
    return order;
  };
  if (accepts(members)) {
    emptiness_[key] = true;
    return true;
  }
  struct Entry {
    std::string key;
    std::vector<int32_t> state;
    std::vector<int32_t> pending;
  };
  std::unordered_map<std::string, bool> visited_set;  // (a set: the value is unused)
  std::vector<std::string> visited{key};
  visited_set.emplace(key, true);
  std::vector<Entry> path;
  path.push_back({key, members, representatives(members)});
  while (!path.empty()) {
    if (path.back().pending.empty()) {
      path.pop_back();
      continue;
    }
    const int32_t byte = path.back().pending.back();
    path.back().pending.pop_back();
    std::vector<int32_t> next;
    bool dead = false;
    const std::vector<int32_t> state = path.back().state;
    for (int32_t m : state) {
      const int32_t d = derive(m, byte);
      next.push_back(d);
    }
    if (kind == kAnd) {
      for (int32_t m : next) dead = dead || m == kNothingId;
      std::sort(next.begin(), next.end());
      next.erase(std::unique(next.begin(), next.end()), next.end());
    } else {
      dead = next[0] == kNothingId;
    }
    if (dead) continue;
    const std::string next_key = key_of(next);
    if (visited_set.count(next_key)) continue;
    auto cached = emptiness_.find(next_key);
    if (cached != emptiness_.end() && !cached->second) continue;
    if ((cached != emptiness_.end() && cached->second) || exists(kind, next) || accepts(next)) {
      for (const Entry& entry : path) emptiness_[entry.key] = true;
      return true;
    }
    visited_set.emplace(next_key, true);
    visited.push_back(next_key);
    if (static_cast<int64_t>(visited.size()) > search_budget_) {
      throw LimitError("max_dfa_states", static_cast<double>(visited.size()), static_cast<double>(search_budget_));
    }
    path.push_back({next_key, next, representatives(next)});
  }
  for (const std::string& seen : visited) emptiness_[seen] = false;
  return false;
}

// ------------------------------------------------------------------ lexer facts

bool ExprArena::inside_character(int32_t node) {
  const Node& n = nodes_[node];
  switch (n.kind) {
    case kUtf8:
      return n.a > 0;
    case kBytes: {
      const ByteMask& mask = masks_[n.offset];
      const ByteMask cont = continuation_mask();
      for (int i = 0; i < 4; ++i) {
        if (mask[i] & ~cont[i]) return false;
      }
      return true;
    }
    case kConcat:
    case kTagged:
      return inside_character(n.a);
    case kAlt:
      for (uint32_t i = 0; i < n.count; ++i) {
        if (!inside_character(payload_[n.offset + i])) return false;
      }
      return true;
    case kUntil:
      return n.c != kNothingId && inside_character(n.c);
    case kSubstring:  // bytes of a character read, more to come
      return n.c != 0;
    default:
      return false;
  }
}

void ExprArena::collect_marks(int32_t node, std::vector<int32_t>& tags) const {
  const Node& n = nodes_[node];
  if (!n.nullable) return;
  switch (n.kind) {
    case kTagged:
      tags.push_back(n.b);
      collect_marks(n.a, tags);
      break;
    case kConcat:
      collect_marks(n.a, tags);
      collect_marks(n.b, tags);
      break;
    case kAlt:
      for (uint32_t i = 0; i < n.count; ++i) collect_marks(payload_[n.offset + i], tags);
      break;
    case kRepeat:
      collect_marks(n.a, tags);
      break;
    default:
      break;
  }
}

std::vector<int32_t> ExprArena::end_marks(int32_t node) {
  std::vector<int32_t> tags;
  collect_marks(check(node), tags);
  std::sort(tags.begin(), tags.end());
  tags.erase(std::unique(tags.begin(), tags.end()), tags.end());
  return tags;
}

int32_t ExprArena::untagged(int32_t node) {
  if (nodes_[node].untagged >= 0) return nodes_[node].untagged;
  const Node n = nodes_[node];
  int32_t result = node;
  if (n.kind == kTagged) {
    result = untagged(n.a);
  } else if (n.kind == kAlt) {
    const std::vector<int32_t> members(payload_.begin() + n.offset, payload_.begin() + n.offset + n.count);
    bool any_tagged = false;
    for (int32_t m : members) any_tagged = any_tagged || nodes_[m].kind == kTagged;
    if (any_tagged) {
      std::vector<int32_t> bare;
      for (int32_t m : members) bare.push_back(untagged(m));
      result = alternation(bare.data(), bare.size());
    }
  }
  nodes_[node].untagged = result;
  return result;
}

bool ExprArena::covers_text_characters(int32_t node) const {
  std::vector<std::pair<int32_t, int32_t>> ranges;
  const Node& n = nodes_[node];
  auto take = [&](int32_t member) {
    const Node& m = nodes_[member];
    if (m.kind == kBytes) {
      for (int32_t b = 0; b < 0x80; ++b) {
        if (mask_has(masks_[m.offset], b)) ranges.emplace_back(b, b);
      }
    } else if (m.kind == kUtf8 && m.a == 0) {
      for (uint32_t i = 0; i < m.count; i += 2) ranges.emplace_back(payload_[m.offset + i], payload_[m.offset + i + 1]);
    }
  };
  if (n.kind == kAlt) {
    for (uint32_t i = 0; i < n.count; ++i) take(payload_[n.offset + i]);
  } else {
    take(node);
  }
  std::sort(ranges.begin(), ranges.end());
  for (const auto& needed : kTextCharacters) {  // each needed range must lie in the union
    const int32_t lo = needed[0], hi = needed[1];
    int32_t reach = lo - 1;
    for (const auto& range : ranges) {
      if (range.first > reach + 1) {
        if (range.first <= hi) break;
        continue;
      }
      reach = std::max(reach, range.second);
      if (reach >= hi) break;
    }
    if (reach < hi) return false;
  }
  return true;
}

std::pair<int32_t, bool> ExprArena::text_depth_of(int32_t node) {
  if (nodes_[node].depth >= 0) return {nodes_[node].depth, nodes_[node].depth_infinite != 0};
  const Node n = nodes_[node];
  std::pair<int32_t, bool> result{0, false};
  switch (n.kind) {
    case kTagged:
      result = text_depth_of(n.a);
      break;
    case kAlt:
      for (uint32_t i = 0; i < n.count; ++i) {
        const auto part = text_depth_of(payload_[n.offset + i]);
        result.first = std::max(result.first, part.first);
        result.second = result.second || part.second;
      }
      break;
    case kConcat: {
      const auto head = text_depth_of(n.a);
      result = {head.first, head.second || (head.first == kTextUnlimited && infinite(n.b))};
      break;
    }
    case kRepeat:
      if (covers_text_characters(n.a)) {
        result = n.c == kUnbounded ? std::make_pair(kTextUnlimited, true) : std::make_pair(n.c, false);
      }
      break;
    case kDiff:
      if (text_depth_of(n.a).second && max_length(n.b) >= 0) result = {kTextUnlimited, true};
      break;
    default:
      break;
  }
  nodes_[node].depth = result.first;
  nodes_[node].depth_infinite = result.second ? 1 : 0;
  return result;
}

int32_t ExprArena::text_depth(int32_t node) { return std::min(text_depth_of(check(node)).first, kTextUnlimited); }

}  // namespace tokamata
