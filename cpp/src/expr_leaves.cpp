// The expression arena's three parametric leaves, the counterparts of derivatives.py's
// text_until, boolean.py's decimal_multiple and substrings.py's substring_of: constructors
// (normalized as the Python ones, so that a state reached in either space is one node),
// derivatives, the divisibility leaf's hint for emptiness searches, and the substring leaf's
// first bytes; see expr_arena.hpp for the invariants.
//
// - UNTIL (stop, matched, pending): valid UTF-8 text not containing stop, then stop. matched
//   is the KMP position in stop, pending the rest of the character in progress (NOTHING at a
//   character boundary). The stop string is valid UTF-8, so it ends where a character ends.
// - DECMOD (p, k, phase, r, t): decimal digit strings with at most one '.' whose value is a
//   multiple of p / 10^k. phase 0: integer digits, r = value mod p; phase 1: t < k fraction
//   digits read, r = (value * 10^t) mod p; phase 2: all k fraction digits read (only zeros
//   may follow, r must be 0). A state from which no multiple is reachable is NOTHING. p and
//   r are exact naturals in base 10^9 (Decimal): every step is O(limbs), a state's
//   nullability O(k * limbs), so the cost is bounded by the size of the schema's number.
// - SUBSTRING (automaton, state, pending): the non-empty substrings of a text, in UTF-8.
//   The automaton is the suffix automaton of the text's code points (the online
//   construction, states numbered in creation order as substrings.py numbers them: at most
//   2n states and 3n transitions, linear time with hashed transitions); pending holds the
//   bytes read of the character in progress. A state is live: pending is a proper prefix of
//   a character with a transition; nullable iff pending is empty and the state is not 0.
#include <algorithm>
#include <initializer_list>
#include <stdexcept>
#include <string>

#include "expr_arena_detail.hpp"
#include "tokamata/expr_arena.hpp"

namespace tokamata {

using namespace arena_detail;

namespace {

using Decimal = ExprArena::Decimal;
constexpr int64_t kLimb = 1000000000;

bool well_formed(const Decimal& a) {
  for (int32_t limb : a) {
    if (limb < 0 || limb >= kLimb) return false;
  }
  return a.empty() || a.back() != 0;
}

int compare(const Decimal& a, const Decimal& b) {
  if (a.size() != b.size()) return a.size() < b.size() ? -1 : 1;
  for (size_t i = a.size(); i-- > 0;) {
    if (a[i] != b[i]) return a[i] < b[i] ? -1 : 1;
  }
  return 0;
}

void subtract(Decimal& a, const Decimal& b) {  // a -= b, for a >= b
  int64_t borrow = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    int64_t v = int64_t{a[i]} - borrow - (i < b.size() ? b[i] : 0);
    borrow = v < 0 ? 1 : 0;
    a[i] = static_cast<int32_t>(v + borrow * kLimb);
  }
  while (!a.empty() && a.back() == 0) a.pop_back();
}

void shift_in(Decimal& a, int32_t digit, const Decimal& p) {  // a = (10 a + digit) mod p, for a < p
  int64_t carry = digit;
  for (int32_t& limb : a) {
    const int64_t v = int64_t{limb} * 10 + carry;
    limb = static_cast<int32_t>(v % kLimb);
    carry = v / kLimb;
  }
  if (carry) a.push_back(static_cast<int32_t>(carry));
  while (compare(a, p) >= 0) subtract(a, p);  // at most nine times
}

Decimal times_power_mod(Decimal a, int64_t w, const Decimal& p) {  // (a 10^w) mod p, for a < p
  for (; w > 0 && !a.empty(); --w) shift_in(a, 0, p);
  return a;
}

Decimal negate_mod(const Decimal& x, const Decimal& p) {  // (-x) mod p, for x < p
  if (x.empty()) return x;
  Decimal out = p;
  subtract(out, x);
  return out;
}

Decimal reduce(const Decimal& a, const Decimal& m) {  // a mod m: a's decimal digits folded in
  Decimal out;
  for (size_t i = a.size(); i-- > 0;) {
    for (int32_t scale = 100000000; scale > 0; scale /= 10) shift_in(out, a[i] / scale % 10, m);
  }
  return out;
}

int32_t divide(Decimal& a, int32_t m) {  // a /= m; the remainder
  int64_t rest = 0;
  for (size_t i = a.size(); i-- > 0;) {
    const int64_t v = rest * kLimb + a[i];
    a[i] = static_cast<int32_t>(v / m);
    rest = v % m;
  }
  while (!a.empty() && a.back() == 0) a.pop_back();
  return static_cast<int32_t>(rest);
}

int64_t num_digits(const Decimal& a) {  // 0 for zero
  if (a.empty()) return 0;
  int64_t n = 9 * static_cast<int64_t>(a.size() - 1);
  for (int32_t top = a.back(); top; top /= 10) ++n;
  return n;
}

int32_t leading_digit(const Decimal& a) {
  int32_t top = a.empty() ? 0 : a.back();
  while (top >= 10) top /= 10;
  return top;
}

bool power_below(int64_t w, const Decimal& p) {  // 10^w < p
  const int64_t digits = num_digits(p);
  if (digits != w + 1) return digits > w + 1;
  Decimal power(static_cast<size_t>(w / 9), 0);  // p has as many digits as 10^w: p > 10^w unless equal
  int32_t top = 1;
  for (int64_t i = 0; i < w % 9; ++i) top *= 10;
  power.push_back(top);
  return compare(power, p) != 0;
}

// The code points whose UTF-8 spelling starts with data[0..size): lo..hi, whole when data
// spells exactly one; false when no valid spelling starts so (substrings.prefix_range).
bool prefix_range(const uint8_t* data, int32_t size, int32_t& lo, int32_t& hi, bool& whole) {
  const int32_t lead = data[0];
  if (lead < 0x80) {
    lo = hi = lead;
    whole = true;
    return size == 1;
  }
  for (const LeadRange& range : kLeadRanges) {
    if (lead < range.lead_lo || lead > range.lead_hi) continue;
    const int32_t length = range.count + 1;
    if (size > length) return false;
    int64_t value = lead & (0x7F >> length);
    for (int32_t i = 1; i < size; ++i) {
      if (data[i] < 0x80 || data[i] >= 0xC0) return false;
      value = (value << 6) | (data[i] & 0x3F);
    }
    const int32_t shift = 6 * (length - size);
    const int64_t low = std::max<int64_t>(value << shift, range.valid_lo);
    const int64_t high = std::min<int64_t>(((value + 1) << shift) - 1, range.valid_hi);
    if (low > high) return false;
    lo = static_cast<int32_t>(low);
    hi = static_cast<int32_t>(high);
    whole = shift == 0;
    return true;
  }
  return false;
}

int32_t utf8_length(int32_t c) { return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : 4; }

// Transitions of a suffix automaton under construction: (state, code point) -> target, open
// addressing (at most half full), and each state's transitions as a list for cloning.
class Transitions {
 public:
  Transitions() : slots_(1024, kEmpty), targets_(1024, 0) {}
  // The target's slot for (state, c); -1 when absent.
  int64_t find(int32_t state, int32_t c) const {
    const uint64_t key = pack(state, c);
    for (size_t i = hash(key) & (slots_.size() - 1);; i = (i + 1) & (slots_.size() - 1)) {
      if (slots_[i] == key) return static_cast<int64_t>(i);
      if (slots_[i] == kEmpty) return -1;
    }
  }
  int32_t target(int64_t slot) const { return targets_[static_cast<size_t>(slot)]; }
  void retarget(int64_t slot, int32_t target) { targets_[static_cast<size_t>(slot)] = target; }
  void add(int32_t state, int32_t c, int32_t target) {  // (state, c) is absent
    if ((used_ + 1) * 2 > slots_.size()) grow();
    place(pack(state, c), target);
    ++used_;
    if (static_cast<size_t>(state) >= head_.size()) head_.resize(static_cast<size_t>(state) + 1, -1);
    edge_key_.push_back(c);
    edge_next_.push_back(head_[state]);
    head_[state] = static_cast<int32_t>(edge_key_.size() - 1);
  }
  // The code points with a transition from state (unsorted).
  void keys(int32_t state, std::vector<int32_t>& out) const {
    out.clear();
    if (static_cast<size_t>(state) >= head_.size()) return;
    for (int32_t e = head_[state]; e >= 0; e = edge_next_[e]) out.push_back(edge_key_[e]);
  }

 private:
  static constexpr uint64_t kEmpty = ~uint64_t{0};
  static uint64_t pack(int32_t state, int32_t c) { return (static_cast<uint64_t>(state) << 32) | static_cast<uint32_t>(c); }
  static uint64_t hash(uint64_t key) {  // splitmix64's finalizer
    key = (key ^ (key >> 30)) * 0xbf58476d1ce4e5b9ULL;
    key = (key ^ (key >> 27)) * 0x94d049bb133111ebULL;
    return key ^ (key >> 31);
  }
  void place(uint64_t key, int32_t target) {
    size_t i = hash(key) & (slots_.size() - 1);
    while (slots_[i] != kEmpty) i = (i + 1) & (slots_.size() - 1);
    slots_[i] = key;
    targets_[i] = target;
  }
  void grow() {
    std::vector<uint64_t> old_slots(slots_.size() * 2, kEmpty);
    std::vector<int32_t> old_targets(targets_.size() * 2, 0);
    old_slots.swap(slots_);
    old_targets.swap(targets_);
    for (size_t i = 0; i < old_slots.size(); ++i) {
      if (old_slots[i] != kEmpty) place(old_slots[i], old_targets[i]);
    }
  }
  std::vector<uint64_t> slots_;
  std::vector<int32_t> targets_;
  size_t used_ = 0;
  std::vector<int32_t> head_, edge_key_, edge_next_;
};

// The suffix automaton of code_points[0..n) by the online construction (substrings.py's
// order of states), as sorted transition lists per state, and per state the most bytes a
// path from it spells (the text after the state's first end position).
void build_suffix_automaton(const int32_t* code_points, size_t n, std::vector<int32_t>& offsets,
                            std::vector<int32_t>& keys, std::vector<int32_t>& targets,
                            std::vector<int64_t>& remaining) {
  std::vector<int32_t> length{0}, link{-1}, end{-1};
  length.reserve(2 * n + 1);
  link.reserve(2 * n + 1);
  end.reserve(2 * n + 1);
  Transitions trans;
  std::vector<int32_t> copied;
  int32_t last = 0;
  for (size_t i = 0; i < n; ++i) {
    const int32_t c = code_points[i];
    const int32_t cur = static_cast<int32_t>(length.size());
    length.push_back(length[last] + 1);
    link.push_back(-1);
    end.push_back(static_cast<int32_t>(i));
    int32_t p = last;
    int64_t slot = -1;
    for (; p != -1; p = link[p]) {
      slot = trans.find(p, c);
      if (slot >= 0) break;
      trans.add(p, c, cur);
    }
    if (p == -1) {
      link[cur] = 0;
    } else {
      const int32_t q = trans.target(slot);
      if (length[p] + 1 == length[q]) {
        link[cur] = q;
      } else {
        const int32_t clone = static_cast<int32_t>(length.size());
        length.push_back(length[p] + 1);
        link.push_back(link[q]);
        end.push_back(end[q]);
        trans.keys(q, copied);
        for (auto it = copied.rbegin(); it != copied.rend(); ++it) trans.add(clone, *it, trans.target(trans.find(q, *it)));
        for (; p != -1; p = link[p]) {
          const int64_t at = trans.find(p, c);
          if (at < 0 || trans.target(at) != q) break;
          trans.retarget(at, clone);
        }
        link[q] = link[cur] = clone;
      }
    }
    last = cur;
  }
  std::vector<int64_t> after(n + 1, 0);  // bytes of the first i characters
  for (size_t i = 0; i < n; ++i) after[i + 1] = after[i] + utf8_length(code_points[i]);
  const size_t states = length.size();
  offsets.assign(1, 0);
  offsets.reserve(states + 1);
  remaining.reserve(states);
  for (size_t s = 0; s < states; ++s) {
    trans.keys(static_cast<int32_t>(s), copied);
    std::sort(copied.begin(), copied.end());
    for (int32_t k : copied) {
      keys.push_back(k);
      targets.push_back(trans.target(trans.find(static_cast<int32_t>(s), k)));
    }
    offsets.push_back(static_cast<int32_t>(keys.size()));
    remaining.push_back(end[s] < 0 ? after[n] : after[n] - after[end[s] + 1]);
  }
}

int32_t pending_size(int32_t pending) { return pending >> 24; }

uint8_t pending_byte(int32_t pending, int32_t i) { return static_cast<uint8_t>(pending >> (16 - 8 * i)); }

}  // namespace

// ------------------------------------------------------------------ text until a stop string

int32_t ExprArena::any_char() {
  if (any_char_ < 0) {
    const int32_t ranges[4] = {0, 0xD7FF, 0xE000, kMaxCodePoint};  // utf8_char: no surrogates
    any_char_ = make_utf8(ranges, 2, 0);
  }
  return any_char_;
}

int32_t ExprArena::text_until(const std::string& stop, int32_t matched, int32_t pending) {
  check(pending);
  if (stop.empty()) throw std::invalid_argument("text_until needs a non-empty stop string");
  if (matched < 0 || static_cast<size_t>(matched) >= stop.size()) throw std::invalid_argument("text_until: bad position");
  auto found = stop_index_.find(stop);
  int32_t index;
  if (found != stop_index_.end()) {
    index = found->second;
  } else {
    int32_t state = any_char();  // valid UTF-8, ending at a character boundary
    for (unsigned char byte : stop) {
      state = derive(state, byte);
      if (state == kNothingId) break;
      if (state == kEpsilonId) state = any_char();
    }
    if (state != any_char()) throw std::invalid_argument("text_until: the stop string must be valid UTF-8");
    Stop entry;  // KMP failure function
    entry.bytes = stop;
    entry.fail.assign(stop.size(), 0);
    for (size_t i = 1, k = 0; i < stop.size(); ++i) {
      while (k && stop[i] != stop[k]) k = static_cast<size_t>(entry.fail[k - 1]);
      if (stop[i] == stop[k]) ++k;
      entry.fail[i] = static_cast<int32_t>(k);
    }
    index = static_cast<int32_t>(stops_.size());
    side_bytes_ += entry.bytes.capacity() + entry.fail.capacity() * sizeof(int32_t) + 2 * stop.size() + kMapEntryBytes;
    stops_.push_back(std::move(entry));
    stop_index_.emplace(stop, index);
  }
  return until_node(index, matched, pending);
}

int32_t ExprArena::until_node(int32_t stop, int32_t matched, int32_t pending) {
  Node node;
  node.kind = kUntil;
  node.a = stop;
  node.b = matched;
  node.c = pending;
  return intern(node, nullptr, 0);
}

int32_t ExprArena::until_derivative(int32_t node, int32_t byte) {
  const Node n = nodes_[node];
  const int32_t leaf = derive(n.c == kNothingId ? any_char() : n.c, byte);
  if (leaf == kNothingId) return kNothingId;
  const Stop& stop = stops_[n.a];
  size_t matched = static_cast<size_t>(n.b);
  while (matched && static_cast<unsigned char>(stop.bytes[matched]) != byte) {
    matched = static_cast<size_t>(stop.fail[matched - 1]);
  }
  matched = static_cast<unsigned char>(stop.bytes[matched]) == byte ? matched + 1 : 0;
  if (matched == stop.bytes.size()) return leaf == kEpsilonId ? kEpsilonId : kNothingId;
  return until_node(n.a, static_cast<int32_t>(matched), leaf == kEpsilonId ? kNothingId : leaf);
}

// ------------------------------------------------------------------ substrings of a text

int32_t ExprArena::substring_of(const int32_t* code_points, size_t n, int32_t state, int32_t pending) {
  if (n == 0) throw std::invalid_argument("substring_of needs a non-empty text");
  const std::string key(reinterpret_cast<const char*>(code_points), n * sizeof(int32_t));
  auto found = substring_index_.find(key);
  int32_t index;
  if (found != substring_index_.end()) {
    index = found->second;
  } else {
    for (size_t i = 0; i < n; ++i) {
      const int32_t c = code_points[i];
      if (c < 0 || c > kMaxCodePoint || (c >= 0xD800 && c <= 0xDFFF)) {
        throw std::invalid_argument("substring_of: the text must be code points without surrogates");
      }
    }
    SuffixAutomaton automaton;
    build_suffix_automaton(code_points, n, automaton.offsets, automaton.keys, automaton.targets, automaton.remaining);
    const size_t states = automaton.remaining.size();
    index = static_cast<int32_t>(substrings_.size());
    substring_states_ += states;
    side_bytes_ += (automaton.offsets.capacity() + automaton.keys.capacity() + automaton.targets.capacity()) *
                       sizeof(int32_t) + automaton.remaining.capacity() * sizeof(int64_t) + key.size() + kMapEntryBytes;
    substrings_.push_back(std::move(automaton));
    substring_index_.emplace(key, index);
  }
  const SuffixAutomaton& automaton = substrings_[index];
  if (state < 0 || static_cast<size_t>(state) + 1 >= automaton.offsets.size()) {
    throw std::invalid_argument("substring_of: no such automaton state");
  }
  const int32_t size = pending_size(pending);
  if (size < 0 || size > 3 || (size == 0 && pending != 0) || (pending & ((1 << (8 * (3 - size))) - 1)) != 0) {
    throw std::invalid_argument("substring_of: bad pending bytes");
  }
  if (size > 0) {  // a proper prefix of a character with a transition from the state
    uint8_t data[3];
    for (int32_t i = 0; i < size; ++i) data[i] = pending_byte(pending, i);
    int32_t lo = 0, hi = 0;
    bool whole = false;
    const auto first = automaton.keys.begin() + automaton.offsets[state];
    const auto last = automaton.keys.begin() + automaton.offsets[state + 1];
    if (!prefix_range(data, size, lo, hi, whole) || whole) {
      throw std::invalid_argument("substring_of: the pending bytes are no proper prefix of a character");
    }
    const auto it = std::lower_bound(first, last, lo);
    if (it == last || *it > hi) throw std::invalid_argument("substring_of: a state that is not live");
  }
  return substring_node(index, state, pending);
}

int32_t ExprArena::substring_node(int32_t automaton, int32_t state, int32_t pending) {
  Node node;
  node.kind = kSubstring;
  node.a = automaton;
  node.b = state;
  node.c = pending;
  node.nullable = state != 0 && pending == 0;
  return intern(node, nullptr, 0);
}

int32_t ExprArena::substring_derivative(int32_t node, int32_t byte) {
  const Node n = nodes_[node];
  const SuffixAutomaton& automaton = substrings_[n.a];
  const int32_t size = pending_size(n.c);
  uint8_t data[4];
  for (int32_t i = 0; i < size; ++i) data[i] = pending_byte(n.c, i);
  data[size] = static_cast<uint8_t>(byte);
  int32_t lo = 0, hi = 0;
  bool whole = false;
  if (!prefix_range(data, size + 1, lo, hi, whole)) return kNothingId;
  const auto first = automaton.keys.begin() + automaton.offsets[n.b];
  const auto last = automaton.keys.begin() + automaton.offsets[n.b + 1];
  const auto it = std::lower_bound(first, last, lo);
  if (it == last || *it > hi) return kNothingId;
  if (whole) return substring_node(n.a, automaton.targets[static_cast<size_t>(it - automaton.keys.begin())], 0);
  int32_t pending = (size + 1) << 24;
  for (int32_t i = 0; i <= size; ++i) pending |= int32_t{data[i]} << (16 - 8 * i);
  return substring_node(n.a, n.b, pending);
}

ExprArena::ByteMask ExprArena::substring_first_bytes(int32_t node) const {
  const Node& n = nodes_[node];
  const SuffixAutomaton& automaton = substrings_[n.a];
  ByteMask found{0, 0, 0, 0};
  const int32_t* keys = automaton.keys.data();
  int32_t from = automaton.offsets[n.b], to = automaton.offsets[n.b + 1];
  const int32_t size = pending_size(n.c);
  if (size == 0) {
    for (int32_t i = from; i < to; ++i) {
      const int32_t c = keys[i];
      const int32_t lead = c < 0x80      ? c
                           : c < 0x800   ? 0xC0 | (c >> 6)
                           : c < 0x10000 ? 0xE0 | (c >> 12)
                                         : 0xF0 | (c >> 18);
      set_range(found, lead, lead);
    }
    return found;
  }
  uint8_t data[3];
  for (int32_t i = 0; i < size; ++i) data[i] = pending_byte(n.c, i);
  int32_t lo = 0, hi = 0;
  bool whole = false;
  prefix_range(data, size, lo, hi, whole);  // live: a proper prefix
  from = static_cast<int32_t>(std::lower_bound(keys + from, keys + to, lo) - keys);
  to = static_cast<int32_t>(std::upper_bound(keys + from, keys + to, hi) - keys);
  const int32_t shift = 6 * (utf8_length(lo) - size - 1);
  for (int32_t i = from; i < to; ++i) {
    const int32_t byte = 0x80 | ((keys[i] >> shift) & 0x3F);
    set_range(found, byte, byte);
  }
  return found;
}

// ------------------------------------------------------------------ decimal divisibility

int32_t ExprArena::decimal_multiple(uint64_t p, int32_t k) {
  if (p < 1 || k < 0) throw std::invalid_argument("decimal_multiple needs p >= 1 and k >= 0");
  Decimal limbs;
  for (; p; p /= kLimb) limbs.push_back(static_cast<int32_t>(p % kLimb));
  return decimal_state(limbs, k, 0, {}, 0);
}

int32_t ExprArena::decimal_state(const Decimal& p, int32_t k, int32_t phase, const Decimal& r, int32_t t) {
  if (!well_formed(p) || !well_formed(r) || p.empty() || compare(r, p) >= 0 || k < 0 || phase < 0 || phase > 2 ||
      t < 0 || (phase == 1 ? t >= k : t != 0)) {
    throw std::invalid_argument("decimal divisibility: bad state");
  }
  bool nullable = true;
  if (phase == 0) {
    nullable = times_power_mod(r, k, p).empty();
  } else if (phase == 1) {
    const int64_t width = int64_t{k} - t;  // 10^width: the fraction digits still to read
    const Decimal rest = times_power_mod(r, width, p);
    if (power_below(width, p) && num_digits(negate_mod(rest, p)) > width) {
      return kNothingId;  // no completion of the k fraction digits reaches a multiple
    }
    nullable = rest.empty();
  } else if (!r.empty()) {
    return kNothingId;
  }
  Node node;
  node.kind = kDecmod;
  node.a = k;
  node.b = phase;
  node.c = t;
  node.nullable = nullable;
  std::vector<int32_t> words;  // the number of limbs of p, p, r
  words.reserve(1 + p.size() + r.size());
  words.push_back(static_cast<int32_t>(p.size()));
  words.insert(words.end(), p.begin(), p.end());
  words.insert(words.end(), r.begin(), r.end());
  return intern(node, words.data(), words.size());
}

ExprArena::Decimal ExprArena::decmod_modulus(int32_t node) const {
  const Node& n = nodes_[node];
  const auto start = payload_.begin() + n.offset + 1;
  return Decimal(start, start + payload_[n.offset]);
}

ExprArena::Decimal ExprArena::decmod_remainder(int32_t node) const {
  const Node& n = nodes_[node];
  return Decimal(payload_.begin() + n.offset + 1 + payload_[n.offset], payload_.begin() + n.offset + n.count);
}

int32_t ExprArena::decmod_derivative(int32_t node, int32_t byte) {
  const Node n = nodes_[node];
  const int32_t k = n.a, phase = n.b, t = n.c;
  const Decimal p = decmod_modulus(node);
  Decimal r = decmod_remainder(node);
  if (byte == '.') {
    if (phase != 0) return kNothingId;
    return decimal_state(p, k, k > 0 ? 1 : 2, r, 0);
  }
  if (byte < '0' || byte > '9') return kNothingId;
  const int32_t digit = byte - '0';
  if (phase == 2) return digit == 0 ? decimal_state(p, k, 2, {}, 0) : kNothingId;
  shift_in(r, digit, p);
  if (phase == 0) return decimal_state(p, k, 0, r, 0);
  return t + 1 == k ? decimal_state(p, k, 2, r, 0) : decimal_state(p, k, 1, r, t + 1);
}

int32_t ExprArena::decmod_hint(int32_t node) const {
  const Node& n = nodes_[node];
  const int32_t k = n.a, phase = n.b, t = n.c;
  if (phase == 2) return '0';
  const Decimal p = decmod_modulus(node);
  const Decimal r = decmod_remainder(node);
  Decimal target;
  int64_t width;
  if (phase == 0) {
    Decimal modulus = p;  // p / gcd(p, 10^k): the fraction may supply k factors of 2 and of 5
    for (int32_t factor : {2, 5}) {
      for (int32_t i = 0; i < k; ++i) {
        Decimal quotient = modulus;
        if (divide(quotient, factor) != 0) break;
        modulus.swap(quotient);
      }
    }
    Decimal y = reduce(r, modulus);
    if (y.empty()) return -1;  // a multiple already
    // the fewest digits that can complete a multiple: following the hint shortens it
    for (width = 1;; ++width) {
      shift_in(y, 0, modulus);
      target = negate_mod(y, modulus);
      if (num_digits(target) <= width) break;
    }
  } else {
    width = int64_t{k} - t;
    const Decimal rest = times_power_mod(r, width, p);
    if (rest.empty()) return -1;
    target = negate_mod(rest, p);
  }
  // the first digit of target written with width digits
  return '0' + (num_digits(target) >= width ? leading_digit(target) : 0);
}

int32_t ExprArena::hint(int32_t node, int32_t depth) const {
  const Node& n = nodes_[node];
  if (n.kind == kDecmod) return decmod_hint(node);
  if (depth == 0) return -1;
  if (n.kind == kConcat) {
    const int32_t found = hint(n.a, depth - 1);
    return found < 0 && nodes_[n.a].nullable ? hint(n.b, depth - 1) : found;
  }
  int32_t smallest = -1;  // (the smallest of the members' hints: independent of their id order)
  if (n.kind == kAnd || n.kind == kAlt) {
    for (uint32_t i = 0; i < n.count; ++i) {
      const int32_t found = hint(payload_[n.offset + i], depth - 1);
      if (found >= 0 && (smallest < 0 || found < smallest)) smallest = found;
    }
  }
  return smallest;
}

}  // namespace tokamata
