// See expr_arena.hpp for the invariants. Every algorithm here mirrors the Python reference in
// src/tokamata/automata/derivatives.py and boolean.py (tests/unit/test_native_derivatives.py
// compares the two DFAs on random expressions and on real lexers). This file: interning, the
// constructors and the import of Python expressions; expr_derivatives.cpp: byte classes and
// derivatives; expr_facts.cpp: emptiness searches and the facts lexers and slices read;
// expr_leaves.cpp: the text-until, decimal-divisibility and substring leaves.
#include "tokamata/expr_arena.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include "expr_arena_detail.hpp"
#include "tokamata/token_row.hpp"  // LimitError

namespace tokamata {

using namespace arena_detail;

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

size_t ExprArena::memory_bytes() const {
  // O(1): the vectors' capacities, the side tables' bytes as they were added (side_bytes_), and
  // the emptiness memo at its entry count (its keys are short member lists: 32 bytes assumed)
  return sizeof(*this) + nodes_.capacity() * sizeof(Node) + masks_.capacity() * sizeof(ByteMask) +
         firsts_.capacity() * sizeof(ByteMask) + payload_.capacity() * sizeof(int32_t) +
         memo_.capacity() * sizeof(int32_t) + table_.capacity() * sizeof(int32_t) +
         hashes_.capacity() * sizeof(uint64_t) + stops_.capacity() * sizeof(Stop) +
         substrings_.capacity() * sizeof(SuffixAutomaton) + cuts_.capacity() * sizeof(std::vector<uint8_t>) +
         side_bytes_ + emptiness_.size() * (kMapEntryBytes + 32) + emptiness_.bucket_count() * sizeof(void*);
}

uint64_t ExprArena::hash_of(int32_t kind, int32_t a, int32_t b, int32_t c, const int32_t* payload, size_t words) {
  uint64_t h = 0xcbf29ce484222325ULL ^ static_cast<uint64_t>(kind);
  auto add = [&h](uint32_t v) {
    h = (h ^ v) * 0x100000001b3ULL;
    h ^= h >> 29;
  };
  add(static_cast<uint32_t>(a));
  add(static_cast<uint32_t>(b));
  add(static_cast<uint32_t>(c));
  for (size_t i = 0; i < words; ++i) add(static_cast<uint32_t>(payload[i]));
  return h ^ (h >> 32);
}

bool ExprArena::same(int32_t id, int32_t kind, int32_t a, int32_t b, int32_t c, const int32_t* payload,
                     size_t words) const {
  const Node& n = nodes_[id];
  if (n.kind != kind || n.a != a || n.b != b || n.c != c) return false;
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
  return intern(node, nullptr, 0);
}

int32_t ExprArena::tagged(int32_t item, int32_t tag) {
  if (item == kNothingId) return kNothingId;
  Node node;
  node.kind = kTagged;
  node.a = item;
  node.b = tag;
  node.nullable = nodes_[item].nullable;
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

std::vector<int32_t> ExprArena::import_nodes(const int32_t* records, size_t size) {
  std::vector<int32_t> ids;
  size_t at = 0;
  auto need = [&](size_t words) {
    if (at + words > size) throw std::invalid_argument("import: truncated record");
  };
  auto decimal = [&]() {  // n, n limbs (base 10^9, low first, no leading zero limb)
    need(1);
    const int32_t n = records[at++];
    if (n < 0) throw std::invalid_argument("import: bad decimal");
    need(static_cast<size_t>(n));
    Decimal value(records + at, records + at + n);
    at += static_cast<size_t>(n);
    for (int32_t limb : value) {
      if (limb < 0 || limb >= 1000000000) throw std::invalid_argument("import: decimal limbs must be in 0..10^9-1");
    }
    if (!value.empty() && value.back() == 0) throw std::invalid_argument("import: decimal with a leading zero limb");
    return value;
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
        for (int32_t i = 0; i < n; ++i) members.push_back(ref(records[at + i]));
        at += static_cast<size_t>(n);
        if (kind == kAlt) {
          id = alternation(members.data(), members.size());
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
        Node node;  // trusted
        node.kind = kDiff;
        node.a = first;
        node.b = second;
        node.nullable = nodes_[first].nullable && !nodes_[second].nullable;
        id = intern(node, nullptr, 0);
        break;
      }
      case kUntil: {
        need(3);
        const int32_t pending = ref(records[at]), matched = records[at + 1], n = records[at + 2];
        at += 3;
        if (n <= 0) throw std::invalid_argument("import: empty stop string");
        need(static_cast<size_t>(n));
        std::string stop;
        for (int32_t i = 0; i < n; ++i) {
          const int32_t byte = records[at + i];
          if (byte < 0 || byte > 255) throw std::invalid_argument("import: stop bytes must be in 0..255");
          stop.push_back(static_cast<char>(byte));
        }
        at += static_cast<size_t>(n);
        id = text_until(stop, matched, pending);
        break;
      }
      case kDecmod: {
        need(3);
        const int32_t k = records[at], phase = records[at + 1], t = records[at + 2];
        at += 3;
        const Decimal p = decimal();
        const Decimal r = decimal();
        id = decimal_state(p, k, phase, r, t);
        break;
      }
      case kSubstring: {
        need(3);
        const int32_t state = records[at], pending = records[at + 1], n = records[at + 2];
        at += 3;
        if (n <= 0) throw std::invalid_argument("import: empty substring text");
        need(static_cast<size_t>(n));
        id = substring_of(records + at, static_cast<size_t>(n), state, pending);
        at += static_cast<size_t>(n);
        break;
      }
      default:
        throw std::invalid_argument("import: unknown record kind " + std::to_string(kind));
    }
    ids.push_back(id);
  }
  return ids;
}

}  // namespace tokamata
