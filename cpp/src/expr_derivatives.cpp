// The expression arena's byte classes (cuts, first bytes) and derivatives: the counterpart of
// derivatives.py's cuts() and derivative(); see expr_arena.hpp for the invariants.
#include "tokamata/expr_arena.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>
#include <stdexcept>

#include "expr_arena_detail.hpp"
#include "tokamata/token_row.hpp"  // LimitError

namespace tokamata {

using namespace arena_detail;

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
    side_bytes_ += found.capacity();
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
      break;
    case kUntil: {  // the character in progress, and where each stop byte starts and ends
      out = cuts(n.c == kNothingId ? any_char() : n.c);
      std::vector<uint8_t> stop_cuts;
      for (unsigned char b : stops_[n.a].bytes) {
        if (b > 0) stop_cuts.push_back(b);
        if (b < 255) stop_cuts.push_back(static_cast<uint8_t>(b + 1));
      }
      std::sort(stop_cuts.begin(), stop_cuts.end());
      std::vector<uint8_t> merged;
      std::set_union(out.begin(), out.end(), stop_cuts.begin(), stop_cuts.end(), std::back_inserter(merged));
      merged.erase(std::unique(merged.begin(), merged.end()), merged.end());
      out.swap(merged);
      break;
    }
    case kDecmod:  // '.', '/', each digit, ':'
      out = {0x2E, 0x2F};
      for (int32_t b = 0x30; b <= 0x3A; ++b) out.push_back(static_cast<uint8_t>(b));
      break;
    case kSubstring: {  // every live byte a class of its own
      const ByteMask& live = first_bytes(node);
      for (int32_t b = 1; b < 256; ++b) {
        if (mask_has(live, b) || mask_has(live, b - 1)) out.push_back(static_cast<uint8_t>(b));
      }
      break;
    }
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
      break;
    case kUntil:
      found = first_bytes(n.c == kNothingId ? any_char() : n.c);
      break;
    case kDecmod:
      set_range(found, 0x30, 0x39);
      set_range(found, 0x2E, 0x2E);
      break;
    case kSubstring:
      found = substring_first_bytes(node);
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
    case kUntil:
      result = until_derivative(node, byte);
      break;
    case kDecmod:
      result = decmod_derivative(node, byte);
      break;
    case kSubstring:
      result = substring_derivative(node, byte);
      break;
  }
  memo_[nodes_[node].memo + cls] = result;
  return result;
}

}  // namespace tokamata
