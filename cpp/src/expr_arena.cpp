// See expr_arena.hpp for the invariants. Every algorithm here mirrors the Python reference in
// src/tokamata/automata/derivatives.py and boolean.py (tests/unit/test_native_derivatives.py
// compares the two DFAs on random expressions and on real lexers).
#include "tokamata/expr_arena.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include "tokamata/token_row.hpp"  // LimitError

namespace tokamata {

namespace {

constexpr int32_t kUnknownId = -2;

struct LeadRange {  // lead byte range, continuation count, valid code points
  int32_t lead_lo, lead_hi, count, valid_lo, valid_hi;
};
constexpr LeadRange kLeadRanges[3] = {
    {0xC2, 0xDF, 1, 0x80, 0x7FF},
    {0xE0, 0xEF, 2, 0x800, 0xFFFF},
    {0xF0, 0xF4, 3, 0x10000, 0x10FFFF},
};
// the characters a JSON string takes unescaped (slices._TEXT_CHARACTERS)
constexpr int32_t kTextCharacters[4][2] = {{0x20, 0x21}, {0x23, 0x5B}, {0x5D, 0xD7FF}, {0xE000, 0x10FFFF}};
constexpr int64_t kLongLength = int64_t{1} << 60;  // lengths saturate here (only finiteness matters)

bool mask_has(const ExprArena::ByteMask& mask, int32_t byte) { return (mask[byte >> 6] >> (byte & 63)) & 1; }

void set_range(ExprArena::ByteMask& mask, int32_t lo, int32_t hi) {
  for (int32_t b = lo; b <= hi; ++b) mask[b >> 6] |= uint64_t{1} << (b & 63);
}

ExprArena::ByteMask continuation_mask() {
  ExprArena::ByteMask mask{0, 0, 0, 0};
  set_range(mask, 0x80, 0xBF);
  return mask;
}

}  // namespace

ExprArena::ExprArena() {
  Node nothing;
  intern(nothing, nullptr, 0);
  Node epsilon;
  epsilon.kind = kEpsilon;
  epsilon.nullable = true;
  intern(epsilon, nullptr, 0);
}

int32_t ExprArena::check(int32_t node) const {
  if (node < 0 || static_cast<size_t>(node) >= nodes_.size()) throw std::out_of_range("expression id out of range");
  return node;
}

uint64_t ExprArena::hash_of(int32_t kind, int32_t a, int32_t b, int32_t c, const int32_t* payload, size_t words) {
  uint64_t h = 0xcbf29ce484222325ULL ^ static_cast<uint64_t>(kind);
  auto add = [&h](uint32_t v) {
    h = (h ^ v) * 0x100000001b3ULL;
    h ^= h >> 29;
  };
  add(static_cast<uint32_t>(a));
  add(static_cast<uint32_t>(b));
  add(static_cast<uint32_t>(kind == kForeign ? 0 : c));
  for (size_t i = 0; i < words; ++i) add(static_cast<uint32_t>(payload[i]));
  return h ^ (h >> 32);
}

bool ExprArena::same(int32_t id, int32_t kind, int32_t a, int32_t b, int32_t c, const int32_t* payload,
                     size_t words) const {
  const Node& n = nodes_[id];
  if (n.kind != kind || n.a != a || n.b != b) return false;
  if (kind != kForeign && n.c != c) return false;
  if (kind == kBytes) return std::memcmp(masks_[n.offset].data(), payload, sizeof(ByteMask)) == 0;
  if (n.count != words) return false;
  return words == 0 || std::memcmp(payload_.data() + n.offset, payload, words * sizeof(int32_t)) == 0;
}

int32_t ExprArena::lookup(uint64_t hash, int32_t kind, int32_t a, int32_t b, int32_t c, const int32_t* payload,
                          size_t words) const {
  if (table_.empty()) return -1;
  const size_t mask = table_.size() - 1;
  for (size_t i = hash & mask;; i = (i + 1) & mask) {
    const int32_t id = table_[i];
    if (id < 0) return -1;
    if (hashes_[id] == hash && same(id, kind, a, b, c, payload, words)) return id;
  }
}

void ExprArena::insert(int32_t id) {
  if ((table_used_ + 1) * 2 > table_.size()) {  // grow: at most half full
    std::vector<int32_t> old;
    old.swap(table_);
    table_.assign(std::max<size_t>(1024, old.size() * 2), -1);
    table_used_ = 0;
    for (int32_t kept : old) {
      if (kept >= 0) insert(kept);
    }
  }
  const size_t mask = table_.size() - 1;
  size_t i = hashes_[id] & mask;
  while (table_[i] >= 0) i = (i + 1) & mask;
  table_[i] = id;
  ++table_used_;
}

int32_t ExprArena::intern(Node node, const int32_t* payload, size_t words) {
  const uint64_t hash = hash_of(node.kind, node.a, node.b, node.c, payload, words);
  const int32_t found = lookup(hash, node.kind, node.a, node.b, node.c, payload, words);
  if (found >= 0) return found;
  const int32_t id = static_cast<int32_t>(nodes_.size());
  if (node.kind == kBytes) {
    ByteMask mask;
    std::memcpy(mask.data(), payload, sizeof(ByteMask));
    node.offset = static_cast<uint32_t>(masks_.size());
    masks_.push_back(mask);
  } else if (words) {
    node.offset = static_cast<uint32_t>(payload_.size());
    node.count = static_cast<uint32_t>(words);
    payload_.insert(payload_.end(), payload, payload + words);
  }
  nodes_.push_back(node);
  hashes_.push_back(hash);
  insert(id);
  return id;
}

bool ExprArena::exists(ExprKind kind, const std::vector<int32_t>& members) {
  if (kind == kDiff) {
    return lookup(hash_of(kind, members[0], members[1], 0, nullptr, 0), kind, members[0], members[1], 0, nullptr, 0) >= 0;
  }
  return lookup(hash_of(kind, 0, 0, 0, members.data(), members.size()), kind, 0, 0, 0, members.data(),
                members.size()) >= 0;
}

// ------------------------------------------------------------------ constructors

int32_t ExprArena::byte_set(const ByteMask& mask) {
  if (!(mask[0] | mask[1] | mask[2] | mask[3])) return kNothingId;
  Node node;
  node.kind = kBytes;
  return intern(node, reinterpret_cast<const int32_t*>(mask.data()), sizeof(ByteMask) / sizeof(int32_t));
}

int32_t ExprArena::make_utf8(const int32_t* ranges, size_t num_ranges, int32_t pending) {
  if (num_ranges == 0) return kNothingId;
  Node node;
  node.kind = kUtf8;
  node.a = pending;
  return intern(node, ranges, 2 * num_ranges);
}

int32_t ExprArena::concat(int32_t first, int32_t second) {
  if (first == kNothingId || second == kNothingId) return kNothingId;
  if (first == kEpsilonId) return second;
  if (second == kEpsilonId) return first;
  if (nodes_[first].kind == kConcat) {  // keep concatenation right-nested, without recursion
    std::vector<int32_t> heads;
    while (nodes_[first].kind == kConcat) {
      heads.push_back(nodes_[first].a);
      first = nodes_[first].b;
    }
    int32_t node = concat(first, second);
    for (auto it = heads.rbegin(); it != heads.rend(); ++it) node = concat(*it, node);
    return node;
  }
  Node node;
  node.kind = kConcat;
  node.a = first;
  node.b = second;
  node.nullable = nodes_[first].nullable && nodes_[second].nullable;
  node.has_foreign = nodes_[first].has_foreign || nodes_[second].has_foreign;
  return intern(node, nullptr, 0);
}

int32_t ExprArena::alternation(const int32_t* members, size_t count) {
  std::vector<int32_t> found;
  found.reserve(count + 4);
  ByteMask mask{0, 0, 0, 0};
  bool any_bytes = false;
  auto take = [&](int32_t member) {
    const Node& n = nodes_[member];
    if (n.kind == kBytes) {
      const ByteMask& m = masks_[n.offset];
      for (int i = 0; i < 4; ++i) mask[i] |= m[i];
      any_bytes = true;
    } else if (n.kind != kNothing) {
      found.push_back(member);
    }
  };
  for (size_t i = 0; i < count; ++i) {
    const Node& n = nodes_[members[i]];
    if (n.kind == kAlt) {
      for (uint32_t j = 0; j < n.count; ++j) take(payload_[n.offset + j]);
    } else {
      take(members[i]);
    }
  }
  if (any_bytes) found.push_back(byte_set(mask));
  std::sort(found.begin(), found.end());
  found.erase(std::unique(found.begin(), found.end()), found.end());
  if (found.empty()) return kNothingId;
  if (found.size() == 1) return found[0];
  Node node;
  node.kind = kAlt;
  for (int32_t member : found) {
    node.nullable = node.nullable || nodes_[member].nullable;
    node.has_foreign = node.has_foreign || nodes_[member].has_foreign;
  }
  return intern(node, found.data(), found.size());
}

int32_t ExprArena::repeat(int32_t item, int32_t low, int32_t high) {
  if (high != kUnbounded && high < low) return kNothingId;
  if (item == kNothingId) return low == 0 ? kEpsilonId : kNothingId;
  if (item == kEpsilonId || high == 0) return kEpsilonId;
  if (nodes_[item].nullable) low = 0;  // r{m,n} == r{0,n} when r matches the empty string
  if (low == 1 && high == 1) return item;
  const Node& inner = nodes_[item];
  if (inner.kind == kRepeat && inner.b == 0 && inner.c == kUnbounded && low <= 1 && high == kUnbounded) {
    return item;  // (r*)* == (r*)+ == r*
  }
  Node node;
  node.kind = kRepeat;
  node.a = item;
  node.b = low;
  node.c = high;
  node.nullable = low == 0 || inner.nullable;
  node.has_foreign = inner.has_foreign;
  return intern(node, nullptr, 0);
}

int32_t ExprArena::tagged(int32_t item, int32_t tag) {
  if (item == kNothingId) return kNothingId;
  Node node;
  node.kind = kTagged;
  node.a = item;
  node.b = tag;
  node.nullable = nodes_[item].nullable;
  node.has_foreign = nodes_[item].has_foreign;
  return intern(node, nullptr, 0);
}

int32_t ExprArena::intersection(const int32_t* items, size_t count) {
  std::vector<int32_t> members;
  for (size_t i = 0; i < count; ++i) {
    const int32_t item = items[i];
    if (item == kNothingId) return kNothingId;
    const Node n = nodes_[item];
    if (n.kind == kAnd) {
      members.insert(members.end(), payload_.begin() + n.offset, payload_.begin() + n.offset + n.count);
    } else {
      members.push_back(item);
    }
  }
  if (members.empty()) throw std::logic_error("intersection of no expressions");
  std::sort(members.begin(), members.end());
  members.erase(std::unique(members.begin(), members.end()), members.end());
  const std::vector<int32_t> snapshot = members;
  for (int32_t member : snapshot) {  // (a - b) & a == a - b
    if (nodes_[member].kind != kDiff) continue;
    auto it = std::lower_bound(members.begin(), members.end(), nodes_[member].a);
    if (it != members.end() && *it == nodes_[member].a) members.erase(it);
  }
  if (members.size() == 1) return members[0];
  if (!non_empty(kAnd, members)) return kNothingId;
  Node node;
  node.kind = kAnd;
  node.nullable = true;
  for (int32_t member : members) node.nullable = node.nullable && nodes_[member].nullable;
  return intern(node, members.data(), members.size());
}

int32_t ExprArena::difference(int32_t first, int32_t second) {
  if (first == kNothingId || first == second) return kNothingId;
  if (second == kNothingId) return first;
  if (nodes_[first].kind == kDiff) {  // (a - b) - c == a - (b | c)
    const int32_t both[2] = {nodes_[first].b, second};
    const int32_t head = nodes_[first].a;
    return difference(head, alternation(both, 2));
  }
  const Node s = nodes_[second];
  if (s.kind == kAlt) {
    for (uint32_t i = 0; i < s.count; ++i) {
      if (payload_[s.offset + i] == first) return kNothingId;
    }
  }
  if (!non_empty(kDiff, {first, second})) return kNothingId;
  Node node;
  node.kind = kDiff;
  node.a = first;
  node.b = second;
  node.nullable = nodes_[first].nullable && !nodes_[second].nullable;
  return intern(node, nullptr, 0);
}

int32_t ExprArena::any_continuation(int32_t count) {
  int32_t node = kEpsilonId;
  const int32_t continuation = byte_set(continuation_mask());
  for (int32_t i = 0; i < count; ++i) node = concat(continuation, node);
  return node;
}

int32_t ExprArena::utf8_pending(const std::vector<int32_t>& ranges, int32_t pending, int64_t interval_lo) {
  if (ranges.empty()) return kNothingId;
  const int64_t width = int64_t{1} << (6 * pending);
  if (ranges.size() == 2 && ranges[0] == interval_lo && ranges[1] == interval_lo + width - 1) {
    return any_continuation(pending);
  }
  return make_utf8(ranges.data(), ranges.size() / 2, pending);
}

// ------------------------------------------------------------------ import

int32_t ExprArena::foreign(const int32_t* records, size_t& at, size_t size) {
  if (at + 15 > size) throw std::invalid_argument("import: truncated facts");
  const int32_t* f = records + at;
  Node node;
  node.kind = kForeign;
  node.a = f[0];
  node.nullable = f[1] != 0;
  node.has_foreign = true;
  Facts facts;
  facts.inside = f[2] != 0;
  facts.infinite = f[3] != 0;
  facts.longest = f[4] < 0 ? -1 : f[4];
  facts.depth = f[5];
  facts.text_infinite = f[6] != 0;
  ByteMask first;
  std::memcpy(first.data(), f + 7, sizeof(ByteMask));
  at += 15;
  if (at >= size) throw std::invalid_argument("import: truncated cuts");
  const int32_t num_cuts = records[at++];
  if (num_cuts < 0 || at + static_cast<size_t>(num_cuts) > size) throw std::invalid_argument("import: bad cuts");
  std::vector<uint8_t> cuts;
  for (int32_t i = 0; i < num_cuts; ++i) {
    const int32_t c = records[at + i];
    if (c < 1 || c > 255 || (i && c <= records[at + i - 1])) throw std::invalid_argument("import: cuts must increase in 1..255");
    cuts.push_back(static_cast<uint8_t>(c));
  }
  at += static_cast<size_t>(num_cuts);
  const size_t before = nodes_.size();
  const int32_t id = intern(node, nullptr, 0);
  if (nodes_.size() != before) {
    Node& made = nodes_[id];
    made.c = static_cast<int32_t>(facts_.size());
    facts_.push_back(facts);
    made.cuts = static_cast<int32_t>(cuts_.size());
    cuts_.push_back(std::move(cuts));
    made.first = static_cast<int32_t>(firsts_.size());
    firsts_.push_back(first);
  }
  return id;
}

std::vector<int32_t> ExprArena::import_nodes(const int32_t* records, size_t size) {
  std::vector<int32_t> ids;
  size_t at = 0;
  auto need = [&](size_t words) {
    if (at + words > size) throw std::invalid_argument("import: truncated record");
  };
  // AND and DIFF records say whether they are foreign (FACTS follow); they must be exactly
  // when a member holds a foreign node
  auto native_or_foreign = [&](bool foreign_member) {
    need(1);
    const bool foreign_record = records[at++] != 0;
    if (foreign_record != foreign_member) throw std::invalid_argument("import: AND/DIFF foreign flag disagrees with its members");
    return foreign_record;
  };
  auto ref = [&](int32_t r) {
    if (r >= 0) return check(r);
    const size_t i = static_cast<size_t>(-1 - static_cast<int64_t>(r));
    if (i >= ids.size()) throw std::invalid_argument("import: reference to a later record");
    return ids[i];
  };
  while (at < size) {
    const int32_t kind = records[at++];
    int32_t id = kNothingId;
    switch (kind) {
      case kNothing:
        id = kNothingId;
        break;
      case kEpsilon:
        id = kEpsilonId;
        break;
      case kBytes: {
        need(8);
        ByteMask mask;
        std::memcpy(mask.data(), records + at, sizeof(ByteMask));
        at += 8;
        id = byte_set(mask);
        break;
      }
      case kUtf8: {
        need(2);
        const int32_t pending = records[at], n = records[at + 1];
        at += 2;
        if (pending < 0 || pending > 3 || n <= 0) throw std::invalid_argument("import: bad UTF-8 leaf");
        need(2 * static_cast<size_t>(n));
        for (int32_t i = 0; i < n; ++i) {
          const int32_t lo = records[at + 2 * i], hi = records[at + 2 * i + 1];
          if (lo < 0 || hi < lo || hi > kMaxCodePoint || (i && lo <= records[at + 2 * i - 1])) {
            throw std::invalid_argument("import: UTF-8 ranges must be sorted, disjoint code points");
          }
        }
        id = make_utf8(records + at, static_cast<size_t>(n), pending);
        at += 2 * static_cast<size_t>(n);
        break;
      }
      case kConcat: {
        need(2);
        const int32_t first = ref(records[at]), second = ref(records[at + 1]);
        at += 2;
        id = concat(first, second);
        break;
      }
      case kAlt:
      case kAnd: {
        need(1);
        const int32_t n = records[at++];
        if (n <= 0) throw std::invalid_argument("import: empty member list");
        need(static_cast<size_t>(n));
        std::vector<int32_t> members;
        bool foreign_member = false;
        for (int32_t i = 0; i < n; ++i) {
          members.push_back(ref(records[at + i]));
          foreign_member = foreign_member || nodes_[members.back()].has_foreign;
        }
        at += static_cast<size_t>(n);
        if (kind == kAlt) {
          id = alternation(members.data(), members.size());
        } else if (native_or_foreign(foreign_member)) {
          id = foreign(records, at, size);
        } else {
          std::sort(members.begin(), members.end());
          members.erase(std::unique(members.begin(), members.end()), members.end());
          if (members.size() == 1) {
            id = members[0];
          } else {
            Node node;  // trusted: Python decided it is non-empty
            node.kind = kAnd;
            node.nullable = true;
            for (int32_t member : members) node.nullable = node.nullable && nodes_[member].nullable;
            id = intern(node, members.data(), members.size());
          }
        }
        break;
      }
      case kRepeat: {
        need(3);
        const int32_t item = ref(records[at]), low = records[at + 1], high = records[at + 2];
        at += 3;
        if (low < 0 || high < kUnbounded) throw std::invalid_argument("import: bad repetition bounds");
        id = repeat(item, low, high);
        break;
      }
      case kTagged: {
        need(2);
        const int32_t item = ref(records[at]), tag = records[at + 1];
        at += 2;
        id = tagged(item, tag);
        break;
      }
      case kDiff: {
        need(2);
        const int32_t first = ref(records[at]), second = ref(records[at + 1]);
        at += 2;
        if (native_or_foreign(nodes_[first].has_foreign || nodes_[second].has_foreign)) {
          id = foreign(records, at, size);
        } else {
          Node node;  // trusted
          node.kind = kDiff;
          node.a = first;
          node.b = second;
          node.nullable = nodes_[first].nullable && !nodes_[second].nullable;
          id = intern(node, nullptr, 0);
        }
        break;
      }
      case kForeign:
        id = foreign(records, at, size);
        break;
      default:
        throw std::invalid_argument("import: unknown record kind " + std::to_string(kind));
    }
    ids.push_back(id);
  }
  return ids;
}

// ------------------------------------------------------------------ byte classes

void ExprArena::intersect(int32_t node, int64_t lo, int64_t hi, std::vector<int32_t>& out) const {
  out.clear();
  const Node& n = nodes_[node];
  const int32_t* ranges = payload_.data() + n.offset;
  const int32_t num = static_cast<int32_t>(n.count / 2);
  int32_t left = 0, right = num;  // first range whose upper end is >= lo
  while (left < right) {
    const int32_t mid = (left + right) / 2;
    if (ranges[2 * mid + 1] < lo) left = mid + 1; else right = mid;
  }
  for (int32_t i = left; i < num; ++i) {
    const int64_t a = ranges[2 * i], b = ranges[2 * i + 1];
    if (a > hi) break;
    out.push_back(static_cast<int32_t>(a > lo ? a : lo));
    out.push_back(static_cast<int32_t>(b < hi ? b : hi));
  }
}

const std::vector<uint8_t>& ExprArena::cuts(int32_t node) {
  if (nodes_[node].cuts < 0) {
    std::vector<uint8_t> found = compute_cuts(node);
    nodes_[node].cuts = static_cast<int32_t>(cuts_.size());
    cuts_.push_back(std::move(found));
  }
  return cuts_[nodes_[node].cuts];
}

std::vector<uint8_t> ExprArena::compute_cuts(int32_t node) {
  const Node n = nodes_[node];
  std::vector<uint8_t> out;
  auto merge = [&](int32_t member) {
    const std::vector<uint8_t>& more = cuts(member);
    std::vector<uint8_t> merged;
    merged.reserve(out.size() + more.size());
    std::set_union(out.begin(), out.end(), more.begin(), more.end(), std::back_inserter(merged));
    out.swap(merged);
  };
  switch (n.kind) {
    case kNothing:
    case kEpsilon:
    case kForeign:  // given when made
      break;
    case kBytes: {
      const ByteMask& mask = masks_[n.offset];
      for (int32_t b = 1; b < 256; ++b) {
        if (mask_has(mask, b) != mask_has(mask, b - 1)) out.push_back(static_cast<uint8_t>(b));
      }
      break;
    }
    case kUtf8:
      out = utf8_cuts(node);
      break;
    case kConcat:
      out = cuts(n.a);
      if (nodes_[n.a].nullable) merge(n.b);
      break;
    case kAlt:
    case kAnd:
      for (uint32_t i = 0; i < n.count; ++i) merge(payload_[n.offset + i]);
      break;
    case kDiff:
      merge(n.a);
      merge(n.b);
      break;
    case kRepeat:
    case kTagged:
      out = cuts(n.a);
      break;
  }
  return out;
}

std::vector<uint8_t> ExprArena::utf8_cuts(int32_t node) const {
  // outcome per byte: -1 nothing, -2 ASCII, -3 ends a code point, -10 - k the full interval
  // with k continuation bytes left, b >= 0 a proper subset (a class of its own)
  constexpr int32_t kAbsent = -1, kAscii = -2, kEnd = -3, kFull = -10;
  const Node& n = nodes_[node];
  const int32_t pending = n.a;
  const int32_t* ranges = payload_.data() + n.offset;
  const int32_t num = static_cast<int32_t>(n.count / 2);
  std::vector<uint8_t> out;
  if (pending == 1) {  // the last continuation byte: runs of the set within its 64-code-point block
    const int32_t base = ranges[0] & ~0x3F;
    for (int32_t i = 0; i < num; ++i) {
      out.push_back(static_cast<uint8_t>(0x80 + ranges[2 * i] - base));
      const int32_t end = 0x81 + ranges[2 * i + 1] - base;
      if (end < 256) out.push_back(static_cast<uint8_t>(end));
    }
    return out;
  }
  std::array<int32_t, 256> outcome;
  outcome.fill(kAbsent);
  std::vector<int32_t> sub;
  auto mark = [&](int32_t byte_lo, int32_t byte_hi, int64_t width, int64_t base, int64_t valid_lo, int64_t valid_hi,
                  int32_t remaining) {
    const int64_t span_lo = std::max<int64_t>(byte_lo * width + base, valid_lo);
    const int64_t span_hi = std::min<int64_t>(byte_hi * width + base + width - 1, valid_hi);
    intersect(node, span_lo, span_hi, sub);
    for (size_t i = 0; i < sub.size(); i += 2) {
      const int64_t lo = sub[i], hi = sub[i + 1];
      for (int64_t b = (lo - base) / width; b <= (hi - base) / width; ++b) {
        const int64_t start = b * width + base;
        if (remaining == 0) outcome[b] = kEnd;
        else if (lo <= start && hi >= start + width - 1) outcome[b] = kFull - remaining;
        else outcome[b] = static_cast<int32_t>(b);
      }
    }
  };
  if (pending == 0) {
    for (int32_t i = 0; i < num; ++i) {
      const int32_t lo = ranges[2 * i], hi = ranges[2 * i + 1];
      if (lo >= 0x80) break;
      for (int32_t b = lo; b <= std::min(hi, 0x7F); ++b) outcome[b] = kAscii;
    }
    for (const LeadRange& lead : kLeadRanges) {
      const int64_t width = int64_t{1} << (6 * lead.count);
      const int64_t base = static_cast<int64_t>(lead.lead_lo & (0x3F >> lead.count)) * width - lead.lead_lo * width;
      mark(lead.lead_lo, lead.lead_hi, width, base, lead.valid_lo, lead.valid_hi, lead.count);
    }
  } else {
    const int64_t prefix = static_cast<int64_t>(ranges[0]) >> (6 * pending);
    const int64_t width = int64_t{1} << (6 * (pending - 1));
    const int64_t base = (prefix << 6) * width - 0x80 * width;
    mark(0x80, 0xBF, width, base, 0, kMaxCodePoint, pending - 1);
  }
  for (int32_t b = 1; b < 256; ++b) {
    if (outcome[b] != outcome[b - 1]) out.push_back(static_cast<uint8_t>(b));
  }
  return out;
}

const ExprArena::ByteMask& ExprArena::first_bytes(int32_t node) {
  if (nodes_[node].first >= 0) return firsts_[nodes_[node].first];
  const Node n = nodes_[node];
  ByteMask found{0, 0, 0, 0};
  auto add = [&](const ByteMask& more) {
    for (int i = 0; i < 4; ++i) found[i] |= more[i];
  };
  switch (n.kind) {
    case kNothing:
    case kEpsilon:
    case kForeign:  // given when made
      break;
    case kConcat: {  // the head, and what follows while heads are nullable
      int32_t part = node;
      bool ended = false;
      while (nodes_[part].kind == kConcat) {
        const int32_t head = nodes_[part].a;
        add(first_bytes(head));
        if (!nodes_[head].nullable) {
          ended = true;
          break;
        }
        part = nodes_[part].b;
      }
      if (!ended) add(first_bytes(part));
      break;
    }
    case kBytes:
      found = masks_[n.offset];
      break;
    case kAlt:
      for (uint32_t i = 0; i < n.count; ++i) add(first_bytes(payload_[n.offset + i]));
      break;
    case kUtf8:
      if (n.a > 0) {
        found = continuation_mask();
      } else {
        set_range(found, 0xC2, 0xF4);
        for (uint32_t i = 0; i < n.count; i += 2) {
          const int32_t lo = payload_[n.offset + i], hi = payload_[n.offset + i + 1];
          if (lo >= 0x80) break;
          set_range(found, lo, std::min(hi, 0x7F));
        }
      }
      break;
    case kRepeat:
    case kTagged:
      found = first_bytes(n.a);
      break;
    case kAnd:
      found = {~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}, ~uint64_t{0}};
      for (uint32_t i = 0; i < n.count; ++i) {
        const ByteMask& more = first_bytes(payload_[n.offset + i]);
        for (int k = 0; k < 4; ++k) found[k] &= more[k];
      }
      break;
    case kDiff:
      found = first_bytes(n.a);
      break;
  }
  nodes_[node].first = static_cast<int32_t>(firsts_.size());
  firsts_.push_back(found);
  return firsts_.back();
}

// ------------------------------------------------------------------ derivatives

int32_t ExprArena::derivative(int32_t node, int32_t byte) {
  check(node);
  if (byte < 0 || byte > 255) throw std::out_of_range("byte out of range");
  return derive(node, byte);
}

int32_t ExprArena::utf8_derivative(int32_t node, int32_t byte) {
  const int32_t pending = nodes_[node].a;
  std::vector<int32_t> sub;
  if (pending == 0) {
    if (byte < 0x80) {
      intersect(node, byte, byte, sub);
      return sub.empty() ? kNothingId : kEpsilonId;
    }
    for (const LeadRange& lead : kLeadRanges) {
      if (byte < lead.lead_lo || byte > lead.lead_hi) continue;
      const int64_t width = int64_t{1} << (6 * lead.count);
      const int64_t interval_lo = static_cast<int64_t>(byte & (0x3F >> lead.count)) * width;
      const int64_t lo = std::max<int64_t>(interval_lo, lead.valid_lo);
      const int64_t hi = std::min<int64_t>(interval_lo + width - 1, lead.valid_hi);
      intersect(node, lo, hi, sub);
      if (lo != interval_lo || hi != interval_lo + width - 1) {  // partial interval (E0, ED, F0, F4)
        return make_utf8(sub.data(), sub.size() / 2, lead.count);
      }
      return utf8_pending(sub, lead.count, interval_lo);
    }
    return kNothingId;
  }
  if (byte < 0x80 || byte >= 0xC0) return kNothingId;
  const int64_t prefix = static_cast<int64_t>(payload_[nodes_[node].offset]) >> (6 * pending);
  const int32_t remaining = pending - 1;
  const int64_t width = int64_t{1} << (6 * remaining);
  const int64_t interval_lo = ((prefix << 6) | (byte & 0x3F)) * width;
  intersect(node, interval_lo, interval_lo + width - 1, sub);
  if (sub.empty()) return kNothingId;
  if (remaining == 0) return kEpsilonId;
  return utf8_pending(sub, remaining, interval_lo);
}

int32_t ExprArena::derive(int32_t node, int32_t byte) {
  const std::vector<uint8_t>& node_cuts = cuts(node);
  const int32_t cls = static_cast<int32_t>(std::upper_bound(node_cuts.begin(), node_cuts.end(), byte) - node_cuts.begin());
  if (nodes_[node].memo < 0) {
    const size_t classes = node_cuts.size() + 1;
    nodes_[node].memo = static_cast<int32_t>(memo_.size());
    memo_.insert(memo_.end(), classes, kUnknownId);
  }
  if (memo_[nodes_[node].memo + cls] != kUnknownId) return memo_[nodes_[node].memo + cls];
  const Node n = nodes_[node];  // a copy: making nodes may move the vector
  int32_t result = kNothingId;
  switch (n.kind) {
    case kNothing:
    case kEpsilon:
      break;
    case kBytes:
      result = mask_has(masks_[n.offset], byte) ? kEpsilonId : kNothingId;
      break;
    case kUtf8:
      result = utf8_derivative(node, byte);
      break;
    case kConcat: {
      result = concat(derive(n.a, byte), n.b);
      if (nodes_[n.a].nullable) {
        const int32_t other = derive(n.b, byte);
        if (other != kNothingId) {
          if (result == kNothingId) {
            result = other;
          } else {
            const int32_t both[2] = {result, other};
            result = alternation(both, 2);
          }
        }
      }
      break;
    }
    case kAlt: {  // only members that can read the byte (payload_ may grow: read by index)
      std::vector<int32_t> live;
      for (uint32_t i = 0; i < n.count; ++i) {
        const int32_t member = payload_[n.offset + i];
        if (!mask_has(first_bytes(member), byte)) continue;
        const int32_t next = derive(member, byte);
        if (next != kNothingId) live.push_back(next);
      }
      result = live.empty() ? kNothingId : live.size() == 1 ? live[0] : alternation(live.data(), live.size());
      break;
    }
    case kTagged:
      result = tagged(derive(n.a, byte), n.b);
      break;
    case kRepeat: {
      const int32_t head = derive(n.a, byte);
      if (head != kNothingId) {
        if (nodes_[node].rest < 0) {
          const int32_t rest = repeat(n.a, std::max(n.b - 1, 0), n.c == kUnbounded ? kUnbounded : n.c - 1);
          nodes_[node].rest = rest;
        }
        result = concat(head, nodes_[node].rest);
      }
      break;
    }
    case kAnd: {
      std::vector<int32_t> derived;
      derived.reserve(n.count);
      for (uint32_t i = 0; i < n.count; ++i) derived.push_back(derive(payload_[n.offset + i], byte));
      result = intersection(derived.data(), derived.size());
      break;
    }
    case kDiff: {
      const int32_t first = derive(n.a, byte);
      const int32_t second = derive(n.b, byte);
      result = difference(first, second);
      break;
    }
    case kForeign:
      if (!foreign_derivative_) throw std::logic_error("no derivative callback for foreign expressions");
      result = check(foreign_derivative_(n.a, byte));
      break;
  }
  memo_[nodes_[node].memo + cls] = result;
  return result;
}

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
    case kForeign:
      found = facts_[copy.c].infinite;
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
    case kForeign:
      result = facts_[n.c].longest;
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
    // finding witnesses fast) first
    std::vector<int32_t> order(merged.rbegin(), merged.rend());
    auto quote = std::find(order.begin(), order.end(), 0x22);
    if (quote != order.end()) {
      order.erase(quote);
      order.push_back(0x22);
    }
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
    case kForeign:
      return facts_[n.c].inside;
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
    case kForeign:
      result = {facts_[n.c].depth, facts_[n.c].text_infinite};
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
