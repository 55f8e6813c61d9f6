// LazyDfa's compact table (lazy_dfa.hpp) against a dense reference: random DFAs (1-256 classes,
// random class maps, random partitions of each state's classes into slots, random targets),
// expanded in random order through an expander that gives the state's shape (or, for some
// states, none: the dense shape) and one slot or a run of slots at a time. Every lookup (peek,
// step, step_class, a DfaRow view) equals the dense table's entry once computed and is kUnknown
// before; a view taken before the state's row was published reads kUnknown everywhere; equal
// partitions are stored once; a shaped table takes less than the dense one; entries that split
// a slot and states past max_states are refused.
#include <cstdint>
#include <memory>
#include <random>
#include <set>
#include <vector>

#include "runner.hpp"
#include "tokamata/lazy_dfa.hpp"

using namespace tokamata;
using namespace tokamata_test;

namespace {

struct Reference {
  int32_t num_classes = 0;
  uint8_t class_map[256] = {};
  std::vector<std::vector<int32_t>> firsts;   // per state: the first class of each slot
  std::vector<std::vector<int32_t>> targets;  // per state: one target per slot
  std::vector<bool> shaped;                    // the expander gives the state's shape
  int32_t entry(int32_t state, int32_t cls) const {
    const auto& f = firsts[state];
    const size_t slot = static_cast<size_t>(std::upper_bound(f.begin(), f.end(), cls) - f.begin()) - 1;
    return targets[state][slot];
  }
  size_t slot_of(int32_t state, int32_t cls) const {
    const auto& f = firsts[state];
    return static_cast<size_t>(std::upper_bound(f.begin(), f.end(), cls) - f.begin()) - 1;
  }
};

Reference random_reference(std::mt19937& rng, int32_t num_states) {
  Reference ref;
  ref.num_classes = 1 + static_cast<int32_t>(rng() % 256);
  // a class map onto every class: cut points over the bytes
  std::vector<int32_t> starts{0};
  std::set<int32_t> cuts;
  while (static_cast<int32_t>(cuts.size()) < ref.num_classes - 1) cuts.insert(1 + static_cast<int32_t>(rng() % 255));
  starts.insert(starts.end(), cuts.begin(), cuts.end());
  for (int32_t b = 0, c = 0; b < 256; ++b) {
    while (c + 1 < ref.num_classes && starts[c + 1] <= b) ++c;
    ref.class_map[b] = static_cast<uint8_t>(c);
  }
  // a few partitions shared by many states (as key-literal states share theirs), some fresh
  std::vector<std::vector<int32_t>> common;
  for (int k = 0; k < 4; ++k) {
    std::set<int32_t> f{0};
    const int32_t slots = 1 + static_cast<int32_t>(rng() % std::min(ref.num_classes, 6));
    while (static_cast<int32_t>(f.size()) < slots) f.insert(static_cast<int32_t>(rng() % ref.num_classes));
    common.emplace_back(f.begin(), f.end());
  }
  for (int32_t s = 0; s < num_states; ++s) {
    if (rng() % 4 != 0) {
      ref.firsts.push_back(common[rng() % common.size()]);
    } else {
      std::set<int32_t> f{0};
      const int32_t slots = 1 + static_cast<int32_t>(rng() % ref.num_classes);
      while (static_cast<int32_t>(f.size()) < slots) f.insert(static_cast<int32_t>(rng() % ref.num_classes));
      ref.firsts.emplace_back(f.begin(), f.end());
    }
    std::vector<int32_t> t;
    for (size_t i = 0; i < ref.firsts.back().size(); ++i) {
      t.push_back(rng() % 3 == 0 ? kDead : static_cast<int32_t>(rng() % static_cast<uint32_t>(num_states)));
    }
    ref.targets.push_back(std::move(t));
    ref.shaped.push_back(rng() % 5 != 0);
  }
  return ref;
}

}  // namespace

TEST(lazy_dfa_compact_table_equals_the_dense_table) {
  std::mt19937 rng(20261127);
  for (int round = 0; round < 60; ++round) {
    const int32_t num_states = 1 + static_cast<int32_t>(rng() % 200);
    const Reference ref = random_reference(rng, num_states);
    CONTEXT("round " << round << ", " << ref.num_classes << " classes, " << num_states << " states");
    LazyDfa* self = nullptr;
    std::mt19937 expand_rng(static_cast<uint32_t>(round));
    int32_t expansions = 0;
    LazyDfa dfa(ref.class_map, ref.num_classes, num_states, [&](int32_t state, int32_t cls) {
      ++expansions;
      if (ref.shaped[state]) {
        self->set_shape(state, ref.firsts[state].data(), static_cast<int32_t>(ref.firsts[state].size()));
      }
      // the requested slot, and sometimes every slot (a whole row at once)
      const auto& f = ref.firsts[state];
      const bool whole = expand_rng() % 3 == 0;
      for (size_t i = 0; i < f.size(); ++i) {
        const int32_t first = f[i];
        const int32_t last = i + 1 < f.size() ? f[i + 1] - 1 : ref.num_classes - 1;
        if (!whole && !(first <= cls && cls <= last)) continue;
        if (ref.shaped[state]) {
          self->set_entries(state, first, last, ref.targets[state][i]);
        } else {  // no shape: a class at a time or the whole slot, the dense shape takes either
          for (int32_t c = first; c <= last; ++c) self->set_entries(state, c, c, ref.targets[state][i]);
        }
      }
    });
    self = &dfa;
    std::vector<uint8_t> accepting(static_cast<size_t>(num_states));
    std::vector<int64_t> keys(static_cast<size_t>(num_states));
    for (int32_t s = 0; s < num_states; ++s) {
      accepting[s] = static_cast<uint8_t>(rng() % 2);
      keys[s] = s * 7 + 1;
    }
    dfa.add_states(accepting.data(), keys.data(), num_states);
    std::vector<DfaRow> early;  // views taken before anything was expanded
    for (int32_t s = 0; s < num_states; ++s) {
      early.push_back(dfa.row(s));
      CHECK_EQ(dfa.accepting(s), accepting[s] != 0);
      CHECK_EQ(dfa.key(s), keys[s]);
    }
    // random lookups, each compared with the dense table
    std::vector<std::vector<bool>> computed(static_cast<size_t>(num_states));
    for (int32_t s = 0; s < num_states; ++s) computed[s].assign(ref.firsts[s].size(), false);
    for (int k = 0; k < 4 * num_states * 4; ++k) {
      const int32_t s = static_cast<int32_t>(rng() % static_cast<uint32_t>(num_states));
      const int32_t byte = static_cast<int32_t>(rng() % 256);
      const int32_t cls = ref.class_map[byte];
      const int32_t want = ref.entry(s, cls);
      const int32_t peeked = dfa.peek(s, static_cast<uint8_t>(byte));
      if (peeked != kUnknown) CHECK_EQ(peeked, want);
      CHECK_EQ(peeked != kUnknown, static_cast<bool>(computed[s][ref.slot_of(s, cls)]) || peeked != kUnknown);
      const int32_t stepped = k % 2 ? dfa.step(s, static_cast<uint8_t>(byte)) : dfa.step_class(s, cls);
      CHECK_EQ(stepped, want);
      CHECK_EQ(dfa.row(s).at(cls), want);
      computed[s][ref.slot_of(s, cls)] = true;
    }
    // every entry: known ones equal the reference, unknown ones belong to slots never asked
    for (int32_t s = 0; s < num_states; ++s) {
      const DfaRow view = dfa.row(s);
      for (int32_t c = 0; c < ref.num_classes; ++c) {
        const int32_t got = view.at(c);
        if (got == kUnknown) {
          CHECK(!computed[s][ref.slot_of(s, c)]);
        } else {
          CHECK_EQ(got, ref.entry(s, c));
        }
        CHECK_EQ(dfa.step_class(s, c), ref.entry(s, c));
      }
      // a view taken before the row was published still reads kUnknown, never a wrong target
      for (int32_t c = 0; c < ref.num_classes; ++c) CHECK_EQ(early[s].at(c), kUnknown);
    }
    // after everything is known, no expansion happens
    const int32_t before = expansions;
    for (int32_t s = 0; s < num_states; ++s) {
      for (int32_t b = 0; b < 256; ++b) CHECK_EQ(dfa.step(s, static_cast<uint8_t>(b)), ref.entry(s, ref.class_map[b]));
    }
    CHECK_EQ(expansions, before);
    // equal partitions are stored once: at most the distinct partitions, plus the dense shape
    std::set<std::vector<int32_t>> distinct;
    bool any_dense = false;
    for (int32_t s = 0; s < num_states; ++s) {
      if (ref.shaped[s]) distinct.insert(ref.firsts[s]);
      else any_dense = true;
    }
    CHECK(dfa.num_shapes() <= distinct.size() + (any_dense ? 1 : 0));
  }
}

TEST(lazy_dfa_shaped_table_is_smaller_than_dense) {
  // 2,000 states over 200 classes, each with three slots (a key literal's next byte): the dense
  // table would take 2,000 * 200 * 4 bytes
  uint8_t class_map[256];
  for (int b = 0; b < 256; ++b) class_map[b] = static_cast<uint8_t>(b < 200 ? b : 199);
  const int32_t n = 2000, classes = 200;
  LazyDfa* self = nullptr;
  LazyDfa dfa(class_map, classes, n, [&](int32_t state, int32_t) {
    const int32_t mid = 40 + state % 50;
    const int32_t firsts[3] = {0, mid, mid + 1};
    self->set_shape(state, firsts, 3);
    self->set_entries(state, 0, mid - 1, kDead);
    self->set_entries(state, mid, mid, (state + 1) % n);
    self->set_entries(state, mid + 1, classes - 1, kDead);
  });
  self = &dfa;
  std::vector<uint8_t> accepting(n, 0);
  std::vector<int64_t> keys(n, 0);
  dfa.add_states(accepting.data(), keys.data(), n);
  for (int32_t s = 0; s < n; ++s) CHECK_EQ(dfa.step_class(s, 40 + s % 50), (s + 1) % n);
  CHECK_EQ(dfa.num_shapes(), static_cast<size_t>(50));
  const size_t dense = static_cast<size_t>(n) * classes * 4;
  CONTEXT("memory_bytes " << dfa.memory_bytes() << " dense " << dense);
  CHECK(dfa.memory_bytes() * 8 < dense);
}

TEST(lazy_dfa_refuses_split_slots_and_states_past_the_bound) {
  uint8_t class_map[256];
  for (int b = 0; b < 256; ++b) class_map[b] = static_cast<uint8_t>(b % 4);
  LazyDfa dfa(class_map, 4, 3, [](int32_t, int32_t) {});
  const uint8_t accepting[3] = {0, 1, 0};
  const int64_t keys[3] = {kKeyLater, 5, 6};
  dfa.add_states(accepting, keys, 3);
  const int32_t firsts[2] = {0, 2};
  dfa.set_shape(0, firsts, 2);
  CHECK_THROWS(dfa.set_entries(0, 1, 2, 1), std::logic_error);  // classes 1..2 split both slots
  CHECK_THROWS(dfa.set_entries(0, 0, 0, 1), std::logic_error);  // half of slot 0
  dfa.set_entries(0, 2, 3, 1);
  CHECK_EQ(dfa.peek(0, 2), 1);
  CHECK_EQ(dfa.peek(0, 0), kUnknown);
  const int32_t bad[2] = {0, 0};
  CHECK_THROWS(dfa.set_shape(1, bad, 2), std::invalid_argument);
  CHECK_THROWS(dfa.key(0), std::logic_error);  // deferred key without a key function
  CHECK_THROWS(dfa.add_states(accepting, keys, 1), LimitError);
}
