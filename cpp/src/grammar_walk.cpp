// Grammar masks across lexeme boundaries; see grammar_walk.hpp.
#include "tokamata/grammar_walk.hpp"

#include "tokamata/token_slices.hpp"

#include <algorithm>
#include <array>
#include <deque>

namespace tokamata {


const std::vector<BoundaryEvent>& GrammarCore::events_locked(int32_t state) {
  {
    std::lock_guard<std::mutex> guard(events_mu_);
    auto it = events_.find(state);
    if (it != events_.end()) return *it->second;
  }
  auto fresh = std::make_unique<std::vector<BoundaryEvent>>();
  LazyDfa& dfa = lexer_->dfa();
  const TokenTrie& trie = lexer_->trie();
  const int64_t key = dfa.key(state);
  std::shared_ptr<const std::vector<uint32_t>> nodes = shared_ ? shared_->find(key) : nullptr;
  if (nodes) {  // rerun the DFA along each event's path (the lexer states are ours)
    fresh->reserve(nodes->size());
    for (uint32_t node : *nodes) {
      const uint8_t* path = trie.token_data(trie.node_token(node));
      int32_t s = state;
      for (int32_t i = 0; i < trie.node_depth(node) && s >= 0; ++i) s = dfa.step(s, path[i]);
      if (s < 0 || !dfa.accepting(s)) throw std::logic_error("shared boundary events disagree with the lexer");
      fresh->push_back(BoundaryEvent{node, s});
    }
  } else {
    // one walk for the events and the inside row (published unless the row is known already)
    auto row = std::make_shared<TokenRow>(static_cast<size_t>(lexer_->num_words()));
    std::vector<std::pair<uint32_t, int32_t>> found;
    if (const TokenSlices* slices = lexer_->slices()) {
      walk_sliced(*slices, dfa, state, *row, &found, lexer_->text_depth());
    } else {
      walk_trie(trie, dfa, state, *row, &found);
    }
    row->accepting = dfa.accepting(state);
    if (!lexer_->cached_row(state)) lexer_->publish_row(state, lexer_->row_bases().seal(std::move(row)));
    fresh->reserve(found.size());
    for (const auto& [node, s] : found) fresh->push_back(BoundaryEvent{node, s});
    if (shared_) {
      auto list = std::make_shared<std::vector<uint32_t>>();
      list->reserve(fresh->size());
      for (const BoundaryEvent& e : *fresh) list->push_back(e.node);
      shared_->insert(key, std::move(list));
    }
  }
  std::lock_guard<std::mutex> guard(events_mu_);
  auto& slot = events_[state];
  if (!slot) slot = std::move(fresh);
  return *slot;
}

const std::vector<BoundaryEvent>& GrammarCore::events(int32_t state) {
  std::lock_guard<std::mutex> compute_guard(lexer_->compute_mutex());
  return events_locked(state);
}

size_t GrammarCore::num_event_lists() const {
  std::lock_guard<std::mutex> guard(events_mu_);
  return events_.size();
}

const std::vector<int32_t>& GrammarCore::ends_of(int32_t state) {
  if (static_cast<size_t>(state) >= ends_known_.size()) {
    ends_known_.resize(static_cast<size_t>(state) + 1, 0);
    ends_.resize(static_cast<size_t>(state) + 1);
  }
  if (!ends_known_[state]) {
    ends_fn_(state, ends_[state]);
    for (int32_t t : ends_[state]) {
      if (t < 0 || static_cast<size_t>(t) >= ignored_.size()) throw std::logic_error("ends: terminal out of range");
    }
    ends_known_[state] = 1;
  }
  return ends_[state];
}

int32_t GrammarCore::start_of(int32_t parser) {
  const int32_t id = parser_->allowed_id(parser);
  if (static_cast<size_t>(id) >= start_by_allowed_.size()) start_by_allowed_.resize(static_cast<size_t>(id) + 1, kUnknown);
  if (start_by_allowed_[id] == kUnknown) {
    const int32_t state = start_fn_(id);
    if (state < kDead || state >= lexer_->dfa().num_states()) throw std::logic_error("start: bad lexer state");
    start_by_allowed_[id] = state;
  }
  return start_by_allowed_[id];
}

void GrammarCore::boundary(int32_t parser, int32_t state, std::vector<Config>& out) {
  for (int32_t terminal : ends_of(state)) {
    const int32_t after = ignored_[terminal] ? parser : parser_->scan(parser, terminal);
    if (after < 0) continue;
    const int32_t start = start_of(after);
    if (start >= 0) out.push_back(Config{after, start});
  }
}

namespace {
// Subtrees at least this big get their (node, state) data cached instead of walked each time.
constexpr uint32_t kBigSubtree = 128;
// At most this many (node, state) entries per grammar; past it, big subtrees are walked.
constexpr size_t kMaxSubtreeEntries = 16384;
// Deeper recursion (boundaries within one token) falls back to the non-recursive walk.
constexpr int kMaxRecursion = 64;
// At most this many configurations remembered as dense (their crossings skip the indexed walk).
constexpr size_t kMaxDenseEntries = 65536;
}  // namespace

// The configurations after a boundary, per (parser, lexer state at the boundary): asked at
// every accepting step of a walk, computed once per walk. An open-addressing table over
// stable storage (a deque: references stay valid while later entries are added), with the
// last answer in front, since a walk asks for the same pair over and over.
class GrammarCore::Targets {
 public:
  explicit Targets(GrammarCore& core) : core_(core), slots_(64) {}
  const std::vector<Config>& operator()(int32_t parser, int32_t state) {
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(parser)) << 32) | static_cast<uint32_t>(state);
    if (key == last_key_) return *last_;
    const size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 40) & mask;
    for (; slots_[i].key != kEmpty; i = (i + 1) & mask) {
      if (slots_[i].key == key) {
        last_key_ = key;
        last_ = &values_[slots_[i].index];
        return *last_;
      }
    }
    std::vector<Config>& out = values_.emplace_back();
    core_.boundary(parser, state, out);
    ++calls;
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    slots_[i] = Slot{key, static_cast<uint32_t>(values_.size() - 1)};
    if (values_.size() * 2 > slots_.size()) grow();
    last_key_ = key;
    last_ = &out;
    return out;
  }
  int64_t calls = 0;

 private:
  static constexpr uint64_t kEmpty = ~0ull;  // (parser handles are never negative)
  struct Slot {
    uint64_t key = kEmpty;
    uint32_t index = 0;
  };
  void grow() {
    std::vector<Slot> old(slots_.size() * 2);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (const Slot& slot : old) {
      if (slot.key == kEmpty) continue;
      size_t i = static_cast<size_t>((slot.key * 0x9E3779B97F4A7C15ull) >> 40) & mask;
      while (slots_[i].key != kEmpty) i = (i + 1) & mask;
      slots_[i] = slot;
    }
  }
  GrammarCore& core_;
  std::vector<Slot> slots_;
  std::deque<std::vector<Config>> values_;
  uint64_t last_key_ = kEmpty;
  const std::vector<Config>* last_ = nullptr;
};

EventIndex GrammarCore::build_index(const std::vector<BoundaryEvent>& events) const {
  const TrieNode* nodes = lexer_->trie().nodes().data();
  EventIndex index;
  std::unordered_map<int32_t, uint32_t> which;
  std::vector<uint32_t> group_of(events.size());
  for (size_t i = 0; i < events.size(); ++i) {
    auto [slot, added] = which.emplace(events[i].state, static_cast<uint32_t>(index.states.size()));
    if (added) index.states.push_back(events[i].state);
    group_of[i] = slot->second;
  }
  // counting sort of the children by (group, byte)
  index.offsets.assign(index.states.size() * 256 + 1, 0);
  for (size_t i = 0; i < events.size(); ++i) {
    if (nodes[events[i].node].subtree_size >= kBigSubtree) {
      index.big_events.emplace_back(events[i].node, group_of[i]);
      continue;
    }
    const uint32_t node = events[i].node, end = node + nodes[node].subtree_size;
    for (uint32_t child = node + 1; child < end; child += nodes[child].subtree_size) {
      index.offsets[group_of[i] * 256u + nodes[child].byte + 1]++;
    }
  }
  for (size_t i = 1; i < index.offsets.size(); ++i) {
    if (index.offsets[i]) index.segments.push_back(static_cast<uint32_t>(i - 1));
    index.offsets[i] += index.offsets[i - 1];
  }
  index.children.resize(index.offsets.back());
  std::vector<uint32_t> fill(index.offsets.begin(), index.offsets.end() - 1);
  for (size_t i = 0; i < events.size(); ++i) {
    if (nodes[events[i].node].subtree_size >= kBigSubtree) continue;
    const uint32_t node = events[i].node, end = node + nodes[node].subtree_size;
    for (uint32_t child = node + 1; child < end; child += nodes[child].subtree_size) {
      index.children[fill[group_of[i] * 256u + nodes[child].byte]++] = child;
    }
  }
  return index;
}

const EventIndex& GrammarCore::index_locked(int32_t state) {
  auto it = index_.find(state);
  if (it != index_.end()) return *it->second;
  auto index = std::make_unique<EventIndex>(build_index(events_locked(state)));
  return *index_.emplace(state, std::move(index)).first->second;
}


const SubtreeData* GrammarCore::subtree_data(uint32_t root, int32_t state) {
  const uint64_t key = (static_cast<uint64_t>(root) << 32) | static_cast<uint32_t>(state);
  auto it = subtrees_.find(key);
  if (it != subtrees_.end()) return it->second.get();
  if (subtrees_.size() >= kMaxSubtreeEntries) return nullptr;
  LazyDfa& dfa = lexer_->dfa();
  const TokenTrie& trie = lexer_->trie();
  const TrieNode* nodes = trie.nodes().data();
  const int32_t* token_ids = trie.token_ids().data();
  const uint8_t* class_map = dfa.class_map();
  auto data = std::make_unique<SubtreeData>();
  std::vector<BoundaryEvent> events;
  std::vector<int32_t> states;
  states.push_back(state);
  const size_t end = root + nodes[root].subtree_size;
  size_t p = root + 1;
  while (p < end) {
    spend(1);
    const TrieNode& node = nodes[p];
    const int32_t next = dfa.step_class(states.back(), class_map[node.byte]);
    if (next >= 0) {
      for (int32_t k = 0; k < node.token_count; ++k) data->inside.push_back(token_ids[node.token_begin + k]);
      if (node.subtree_size > 1) {
        if (dfa.accepting(next)) events.push_back(BoundaryEvent{static_cast<uint32_t>(p), next});
        states.push_back(next);
        p += 1;
        continue;
      }
      p += 1;
    } else {
      p += node.subtree_size;
    }
    for (int32_t k = 1; k < node.num_parents && states.size() > 1; ++k) states.pop_back();
  }
  data->index = build_index(events);
  const size_t words = static_cast<size_t>(lexer_->num_words());
  if (data->inside.size() > words) {  // a bitset is smaller and faster to OR
    data->inside_bits.assign(words, 0u);
    for (int32_t t : data->inside) data->inside_bits[t >> 5] |= 1u << (t & 31);
    data->inside.clear();
    data->inside.shrink_to_fit();
  }
  return subtrees_.emplace(key, std::move(data)).first->second.get();
}

// Walks the subtree below `node` whose configurations (after node's own byte) are
// buf[0, buf.size()), setting the bits of the tokens some configuration keeps alive. The walk
// keeps a stack of trie levels, each with its configurations deduplicated (by a linear scan
// while there are few, the common case: a lexeme in progress and the configurations after a
// boundary at the node; by sorting past that), each with its DFA row pointer at hand, so a
// step is one table load.
void GrammarCore::walk_below(uint32_t root, std::vector<Config>& buf, uint32_t* bits, Targets& targets) {
  constexpr size_t kLinear = 8;
  LazyDfa& dfa = lexer_->dfa();
  const TokenTrie& trie = lexer_->trie();
  const TrieNode* nodes = trie.nodes().data();
  const int32_t* token_ids = trie.token_ids().data();
  const uint8_t* class_map = dfa.class_map();
  std::vector<WalkItem>& items = walk_items_;
  items.clear();
  for (const Config& c : buf) items.push_back(WalkItem{c.parser, c.state, dfa.row(c.state)});
  std::vector<uint32_t>& levels = walk_levels_;  // where each open level's items begin
  levels.clear();
  levels.push_back(0);
  size_t stop = items.size();  // the end of the top level's items
  const size_t end = root + nodes[root].subtree_size;
  size_t p = root + 1;
  while (p < end) {
    const TrieNode& node = nodes[p];
    const int32_t cls = class_map[node.byte];
    const size_t begin = levels.back();
    spend(static_cast<int64_t>(stop - begin));
    const size_t fresh = items.size();
    const bool inner = node.subtree_size > 1;
    bool unsorted = false;
    auto add = [&](int32_t parser, int32_t state) {
      if (items.size() - fresh < kLinear) {
        for (size_t k = fresh; k < items.size(); ++k) {
          if (items[k].state == state && items[k].parser == parser) return;
        }
      } else {
        unsorted = true;
      }
      items.push_back(WalkItem{parser, state, dfa.row(state)});
    };
    for (size_t i = begin; i < stop; ++i) {
      const WalkItem c = items[i];
      int32_t next = c.row.at(cls);
      if (next == kUnknown) {
        next = dfa.step_class(c.state, cls);
        items[i].row = dfa.row(c.state);  // the row may have been published by that expansion
      }
      if (next < 0) continue;
      add(c.parser, next);
      if (inner && dfa.accepting(next)) {
        for (const Config& a : targets(c.parser, next)) add(a.parser, a.state);
      }
    }
    if (items.size() > fresh) {
      if (unsorted) {
        auto less = [](const WalkItem& x, const WalkItem& y) {
          return x.parser != y.parser ? x.parser < y.parser : x.state < y.state;
        };
        auto same = [](const WalkItem& x, const WalkItem& y) { return x.parser == y.parser && x.state == y.state; };
        std::sort(items.begin() + static_cast<std::ptrdiff_t>(fresh), items.end(), less);
        items.erase(std::unique(items.begin() + static_cast<std::ptrdiff_t>(fresh), items.end(), same), items.end());
      }
      for (int32_t k = 0; k < node.token_count; ++k) {
        const int32_t t = token_ids[node.token_begin + k];
        bits[t >> 5] |= 1u << (t & 31);
      }
      if (inner) {
        levels.push_back(static_cast<uint32_t>(fresh));
        stop = items.size();
        p += 1;
        continue;
      }
      p += 1;
    } else {
      p += node.subtree_size;
    }
    for (int32_t k = 1; k < node.num_parents && levels.size() > 1; ++k) {
      stop = levels.back();
      levels.pop_back();
    }
    items.resize(stop);
  }
}

namespace {
// Sets of configurations, interned to ids (each set sorted and deduplicated), with memoized
// transitions per byte class: the configurations of a trie level form one set, and the set of
// the child level is a function of the set and the child's byte. Scratch of one walk.
class ConfigSets {
 public:
  explicit ConfigSets(int32_t num_classes) : classes_(static_cast<size_t>(num_classes)), slots_(64, -1) {
    offsets_.push_back(0);
  }
  // The id of the set of `configs` (sorted and deduplicated in place), kDead when empty.
  int32_t intern(std::vector<Config>& configs) {
    if (configs.empty()) return kDead;
    std::sort(configs.begin(), configs.end());
    configs.erase(std::unique(configs.begin(), configs.end()), configs.end());
    uint64_t hash = configs.size();
    for (const Config& c : configs) {
      hash = (hash ^ static_cast<uint32_t>(c.parser)) * 0x9E3779B97F4A7C15ull;
      hash = (hash ^ static_cast<uint32_t>(c.state)) * 0xC2B2AE3D27D4EB4Full;
    }
    size_t mask = slots_.size() - 1;
    size_t i = static_cast<size_t>(hash >> 20) & mask;
    for (; slots_[i] >= 0; i = (i + 1) & mask) {
      const int32_t id = slots_[i];
      if (hashes_[id] == hash && size(id) == configs.size() &&
          std::equal(configs.begin(), configs.end(), members_.begin() + offsets_[id])) {
        return id;
      }
    }
    const auto id = static_cast<int32_t>(hashes_.size());
    members_.insert(members_.end(), configs.begin(), configs.end());
    offsets_.push_back(static_cast<uint32_t>(members_.size()));
    hashes_.push_back(hash);
    next_.resize(next_.size() + classes_, kUnknown);
    leaf_.resize(leaf_.size() + classes_, -1);
    fixed_.emplace_back();
    moved_.emplace_back();
    slots_[i] = id;
    if (hashes_.size() * 2 > slots_.size()) grow();
    return id;
  }
  size_t size(int32_t id) const { return offsets_[id + 1] - offsets_[id]; }
  // the scratch memory the sets take (members, transitions, leaves, byte sets, hash slots)
  size_t bytes() const {
    return members_.size() * sizeof(Config) + offsets_.size() * 4 + hashes_.size() * 8 + next_.size() * 4 +
           leaf_.size() + (fixed_.size() + moved_.size()) * 32 + slots_.size() * 4;
  }
  const Config* members(int32_t id) const { return members_.data() + offsets_[id]; }
  // the set after a byte of class `cls` (kUnknown: not computed yet; kDead: empty)
  int32_t& next(int32_t id, int32_t cls) { return next_[static_cast<size_t>(id) * classes_ + static_cast<size_t>(cls)]; }
  // whether some configuration takes a byte of class `cls` (-1: not computed yet)
  int8_t& leaf(int32_t id, int32_t cls) { return leaf_[static_cast<size_t>(id) * classes_ + static_cast<size_t>(cls)]; }
  // bytes known to lead the set to itself / to another set (256-bit sets)
  std::array<uint64_t, 4>& fixed(int32_t id) { return fixed_[static_cast<size_t>(id)]; }
  std::array<uint64_t, 4>& moved(int32_t id) { return moved_[static_cast<size_t>(id)]; }

 private:
  void grow() {
    std::vector<int32_t> old(slots_.size() * 2, -1);
    old.swap(slots_);
    const size_t mask = slots_.size() - 1;
    for (int32_t id : old) {
      if (id < 0) continue;
      size_t i = static_cast<size_t>(hashes_[id] >> 20) & mask;
      while (slots_[i] >= 0) i = (i + 1) & mask;
      slots_[i] = id;
    }
  }
  size_t classes_;
  std::vector<Config> members_;
  std::vector<uint32_t> offsets_;
  std::vector<uint64_t> hashes_;
  std::vector<int32_t> next_;
  std::vector<int8_t> leaf_;
  std::vector<std::array<uint64_t, 4>> fixed_, moved_;
  std::vector<int32_t> slots_;
};

// One DFS of the whole trie from the root with the configurations `roots`: walk_below's
// answer from the root, but each level holds one interned set of configurations and a child's
// set is a memoized transition of its parent's set, so a node costs one table load once the
// walk has met its (set, byte class), whatever the number of configurations. A leaf only asks
// whether some configuration takes its byte (memoized too), so boundaries at leaves (where no
// byte follows) are never handed to the parser. A big subtree (TokenTrie::subtree_bytes) all
// of whose bytes lead the set to itself (the inside of a name, a number, a comment: the lexeme
// goes on, or ends and the same one starts again) keeps every token below it alive: its
// tokens are taken without walking it; so is one where a single configuration keeps its lexer
// state through every byte below (inside a name where keywords may also start: the set changes
// at every byte, that configuration alone keeps each token alive), by transitions known
// already. Work is counted as walk_below counts it: the configurations at the level, per node
// (a subtree taken whole counts all its nodes).
struct ScratchExceeded {};  // walk_config_sets' sets outgrew the cap: the caller walks another way

template <class Spend, class After>
void walk_config_sets(const TokenTrie& trie, LazyDfa& dfa, std::vector<Config>& roots, uint32_t* bits,
                      Spend spend, After after, size_t max_scratch_bytes) {
  const TrieNode* nodes = trie.nodes().data();
  const size_t num_nodes = trie.nodes().size();
  const int32_t* token_ids = trie.token_ids().data();
  const auto num_ids = static_cast<int32_t>(trie.token_ids().size());
  const uint8_t* class_map = dfa.class_map();
  const TokenTrie::SubtreeBytes& below = trie.subtree_bytes();
  size_t cursor = 0;  // into below.nodes: the walk meets big subtrees in ascending order
  ConfigSets sets(dfa.num_classes());
  const int32_t root = sets.intern(roots);
  if (root < 0) return;
  std::vector<Config> scratch;
  auto step = [&](int32_t set, int32_t cls) {  // the set after a byte of class cls, memoized
    int32_t next = sets.next(set, cls);
    if (next != kUnknown) return next;
    scratch.clear();
    for (size_t i = 0, n = sets.size(set); i < n; ++i) {
      const Config c = sets.members(set)[i];  // (copied: interning may move members)
      const int32_t state = dfa.step_class(c.state, cls);
      if (state < 0) continue;
      scratch.push_back(Config{c.parser, state});
      if (dfa.accepting(state)) {
        const std::vector<Config>& boundary = after(c.parser, state);
        scratch.insert(scratch.end(), boundary.begin(), boundary.end());
      }
    }
    next = sets.intern(scratch);
    sets.next(set, cls) = next;
    if (sets.bytes() > max_scratch_bytes) throw ScratchExceeded{};
    return next;
  };
  // Whether every byte below big node p leads `set` to itself, by transitions the walk has
  // already computed (an unknown one answers no: the walk goes down and computes it, so this
  // computes nothing the plain walk would not).
  auto taken_whole = [&](size_t p, int32_t set) {
    while (below.nodes[cursor] < p) ++cursor;  // (p is listed: it has a big subtree)
    const std::array<uint64_t, 4>& bytes = below.bytes[cursor];
    for (int w = 0; w < 4; ++w) {
      if (bytes[w] & sets.moved(set)[w]) return false;
    }
    for (int w = 0; w < 4; ++w) {
      for (uint64_t todo = bytes[w] & ~sets.fixed(set)[w]; todo; todo &= todo - 1) {
        const int bit = __builtin_ctzll(todo);
        const int32_t next = sets.next(set, class_map[w * 64 + bit]);
        if (next == kUnknown) return false;
        (next == set ? sets.fixed(set) : sets.moved(set))[w] |= 1ull << bit;
        if (next != set) return false;
      }
    }
    return true;
  };
  // Whether some configuration of `set` keeps its lexer state through every byte below big
  // node p (the inside of a name while other lexemes may also start: the set changes, but that
  // configuration alone keeps every token below alive), by transitions already known; each
  // state's bytes known to lead it to itself (loops) or elsewhere (exits) are remembered.
  std::vector<std::array<uint64_t, 4>> loops, exits;
  auto kept_by_one = [&](size_t p, int32_t set) {
    while (below.nodes[cursor] < p) ++cursor;
    const std::array<uint64_t, 4>& bytes = below.bytes[cursor];
    const Config* c = sets.members(set);
    for (size_t i = 0, n = std::min<size_t>(sets.size(set), 8); i < n; ++i) {
      const int32_t state = c[i].state;
      if (static_cast<size_t>(state) >= loops.size()) {
        loops.resize(static_cast<size_t>(state) + 1, {});
        exits.resize(static_cast<size_t>(state) + 1, {});
      }
      bool kept = true;
      for (int w = 0; w < 4 && kept; ++w) kept = !(bytes[w] & exits[state][w]);
      for (int w = 0; w < 4 && kept; ++w) {
        for (uint64_t todo = bytes[w] & ~loops[state][w]; todo && kept; todo &= todo - 1) {
          const int bit = __builtin_ctzll(todo);
          const int32_t to = dfa.peek(state, static_cast<uint8_t>(w * 64 + bit));
          if (to == kUnknown) {
            kept = false;
          } else if (to == state) {
            loops[state][w] |= 1ull << bit;
          } else {
            exits[state][w] |= 1ull << bit;
            kept = false;
          }
        }
      }
      if (kept) return true;
    }
    return false;
  };
  std::vector<int32_t> stack(1, root);  // the set of each open level
  const size_t end = nodes[0].subtree_size;
  size_t p = 1;
  while (p < end) {
    const TrieNode& node = nodes[p];
    const int32_t cls = class_map[node.byte];
    const int32_t set = stack.back();
    spend(static_cast<int64_t>(sets.size(set)));
    bool live;
    int32_t next = kDead;
    if (node.subtree_size == 1) {
      int8_t known = sets.leaf(set, cls);
      if (known < 0) {
        known = 0;
        const Config* c = sets.members(set);
        for (size_t i = 0, n = sets.size(set); i < n && !known; ++i) known = dfa.step_class(c[i].state, cls) >= 0;
        sets.leaf(set, cls) = known;
      }
      live = known != 0;
    } else {
      next = step(set, cls);
      live = next >= 0;
    }
    if (live) {
      for (int32_t k = 0; k < node.token_count; ++k) {
        const int32_t t = token_ids[node.token_begin + k];
        bits[t >> 5] |= 1u << (t & 31);
      }
      if (next < 0) {  // a leaf
        p += 1;
      } else if (node.subtree_size >= TokenTrie::kBytesSubtree &&
                 (taken_whole(p, next) || kept_by_one(p, next))) {  // all alive below
        const size_t last = p + node.subtree_size;
        const int32_t to = last < num_nodes ? nodes[last].token_begin : num_ids;
        for (int32_t i = nodes[p + 1].token_begin; i < to; ++i) bits[token_ids[i] >> 5] |= 1u << (token_ids[i] & 31);
        spend(static_cast<int64_t>(sets.size(next)) * static_cast<int64_t>(node.subtree_size - 1));
        p = last;
      } else {
        stack.push_back(next);
        p += 1;
        continue;
      }
    } else {
      p += node.subtree_size;
    }
    for (int32_t k = 1; k < node.num_parents && stack.size() > 1; ++k) stack.pop_back();
  }
}
}  // namespace

// For each group of events (one event state), hands the event's terminal(s) to the parser,
// steps the resulting configurations over each child byte once, and continues below the
// children those configurations can enter.
void GrammarCore::cross_groups(const EventIndex& index, int32_t parser, uint32_t* bits, Targets& targets,
                               int depth) {
  LazyDfa& dfa = lexer_->dfa();
  const TrieNode* nodes = lexer_->trie().nodes().data();
  const int32_t* token_ids = lexer_->trie().token_ids().data();
  const uint8_t* class_map = dfa.class_map();
  for (const auto& [node, group] : index.big_events) {
    const std::vector<Config>& after = targets(parser, index.states[group]);
    if (!after.empty()) cross_at(node, after, bits, targets, depth + 1);
  }
  std::vector<Config> stepped;
  uint32_t current_group = ~0u;
  const std::vector<Config>* after = nullptr;
  for (uint32_t segment : index.segments) {
    const uint32_t group = segment / 256, byte = segment % 256;
    if (group != current_group) {
      current_group = group;
      after = &targets(parser, index.states[group]);  // map nodes never move
    }
    if (after->empty()) continue;
    const uint32_t first = index.offsets[segment], last = index.offsets[segment + 1];
    const int32_t cls = class_map[byte];
    spend(static_cast<int64_t>(after->size()));
    stepped.clear();
    for (const Config& c : *after) {
      const int32_t next = dfa.step_class(c.state, cls);
      if (next >= 0) stepped.push_back(Config{c.parser, next});
    }
    if (stepped.empty()) continue;  // (the children are never looked at: no work spent on them)
    spend(static_cast<int64_t>(last - first));
    if (stepped.size() > 1) {
      std::sort(stepped.begin(), stepped.end());
      stepped.erase(std::unique(stepped.begin(), stepped.end()), stepped.end());
    }
    for (uint32_t i = first; i < last; ++i) {
      const uint32_t child = index.children[i];
      const TrieNode& node = nodes[child];
      for (int32_t k = 0; k < node.token_count; ++k) {
        const int32_t t = token_ids[node.token_begin + k];
        bits[t >> 5] |= 1u << (t & 31);
      }
      if (node.subtree_size > 1) cross_at(child, stepped, bits, targets, depth + 1);
    }
  }
}

// The tokens strictly below `node` allowed from `configs` (the configurations after node's
// byte, the node's own tokens already handled): the lexeme in progress may continue, end (then
// the parser takes it and the next one starts), again and again.
bool GrammarCore::first_visit(uint32_t node, const Config& c) {
  // open addressing over a power-of-two table; entries of older crossings are stale by epoch
  if ((visit_count_ + 1) * 2 > visits_.size()) {
    std::vector<Visit> old;
    old.swap(visits_);
    visits_.assign(old.empty() ? 4096 : old.size() * 2, Visit{});
    visit_count_ = 0;
    for (const Visit& v : old) {
      if (v.epoch == epoch_) first_visit(v.node, Config{v.parser, v.state});
    }
  }
  const uint64_t key = (static_cast<uint64_t>(node) * 0x9E3779B97F4A7C15ull) ^
                       (static_cast<uint64_t>(static_cast<uint32_t>(c.parser)) * 0xC2B2AE3D27D4EB4Full) ^
                       (static_cast<uint64_t>(static_cast<uint32_t>(c.state)) * 0x165667B19E3779F9ull);
  const size_t mask = visits_.size() - 1;
  for (size_t i = static_cast<size_t>(key >> 17) & mask;; i = (i + 1) & mask) {
    Visit& v = visits_[i];
    if (v.epoch != epoch_) {
      v = Visit{epoch_, node, c.parser, c.state};
      ++visit_count_;
      return true;
    }
    if (v.node == node && v.parser == c.parser && v.state == c.state) return false;
  }
}

void GrammarCore::cross_at(uint32_t node, const std::vector<Config>& configs, uint32_t* bits, Targets& targets,
                           int depth) {
  LazyDfa& dfa = lexer_->dfa();
  const TrieNode* nodes = lexer_->trie().nodes().data();
  // Each (node, configuration) is handled once per crossing: different splits of a token
  // into lexemes (a run of spaces, say) reach the same pair again and again.
  spend(static_cast<int64_t>(configs.size()));
  std::vector<Config> todo;
  todo.reserve(configs.size());
  for (const Config& c : configs) {
    if (first_visit(node, c)) todo.push_back(c);
  }
  if (todo.empty()) return;
  if (nodes[node].subtree_size >= kBigSubtree && depth < kMaxRecursion) {
    size_t kept = 0;
    for (size_t i = 0; i < todo.size(); ++i) {
      const Config c = todo[i];
      const SubtreeData* data = subtree_data(node, c.state);
      if (!data) {  // the cache is full: walk
        todo[kept++] = c;
        continue;
      }
      for (int32_t t : data->inside) bits[t >> 5] |= 1u << (t & 31);
      for (size_t w = 0; w < data->inside_bits.size(); ++w) bits[w] |= data->inside_bits[w];
      cross_groups(data->index, c.parser, bits, targets, depth);
      if (dfa.accepting(c.state)) {  // the lexeme may end exactly at `node`: fresh ones below
        const std::vector<Config>& after = targets(c.parser, c.state);
        if (!after.empty()) cross_at(node, after, bits, targets, depth + 1);
      }
    }
    todo.resize(kept);
    if (todo.empty()) return;
  }
  // small subtree (or no cache room): one walk with per-level deduplication
  std::vector<Config>& buf = walk_buf_;
  buf.assign(todo.begin(), todo.end());
  for (const Config& c : todo) {
    if (!dfa.accepting(c.state)) continue;
    const std::vector<Config>& after = targets(c.parser, c.state);
    buf.insert(buf.end(), after.begin(), after.end());
  }
  if (buf.size() > 1) {
    std::sort(buf.begin(), buf.end());
    buf.erase(std::unique(buf.begin(), buf.end()), buf.end());
  }
  walk_below(node, buf, bits, targets);
}

void GrammarCore::spent() {
  if (dense_cap_ < max_work_) throw Dense{};
  throw LimitError("max_mask_work", static_cast<double>(work_), static_cast<double>(max_work_));
}

void GrammarCore::forget_parsers(const std::vector<uint8_t>& live) {
  for (auto it = dense_.begin(); it != dense_.end();) {
    const auto parser = static_cast<size_t>(*it >> 32);
    it = (parser >= live.size() || !live[parser]) ? dense_.erase(it) : std::next(it);
  }
}

int64_t GrammarCore::crossing(int32_t parser, int32_t state, uint32_t* bits) {
  return with_targets([&](Targets& targets) {
    const EventIndex& index = index_locked(state);
    const int64_t nodes = static_cast<int64_t>(lexer_->trie().nodes().size());
    const uint64_t key = (static_cast<uint64_t>(static_cast<uint32_t>(parser)) << 32) | static_cast<uint32_t>(state);
    if (!dense_.count(key)) {
      dense_cap_ = std::min(nodes, max_work_);
      try {
        cross_groups(index, parser, bits, targets, 0);
        return;
      } catch (const Dense&) {
      }
      // (a mask evicted from the constraint's cache and asked again goes dense at once)
      if (dense_.size() < kMaxDenseEntries) dense_.insert(key);
    }
    // lexemes abut densely: one plain walk from the root steps each (node, configuration) once
    dense_cap_ = max_work_;
    dense_total_.fetch_add(1, std::memory_order_relaxed);
    std::vector<Config>& buf = walk_buf_;
    buf.assign(1, Config{parser, state});
    walk_below(0, buf, bits, targets);
  });
}

int64_t GrammarCore::below(uint32_t node, const std::vector<Config>& configs, uint32_t* bits) {
  if (configs.empty()) return 0;
  return with_targets([&](Targets& targets) { cross_at(node, configs, bits, targets, 0); });
}

int64_t GrammarCore::with_targets(const std::function<void(Targets&)>& walk) {
  std::lock_guard<std::mutex> compute_guard(lexer_->compute_mutex());
  Targets targets(*this);
  ++epoch_;
  visit_count_ = 0;
  work_ = 0;
  dense_cap_ = max_work_;
  struct Count {  // counted also when the walk throws
    std::atomic<int64_t>& total;
    const int64_t& work;
    ~Count() { total.fetch_add(work, std::memory_order_relaxed); }
  } count{steps_total_, work_};
  walk(targets);
  return targets.calls;
}

int64_t GrammarCore::plain_walk(const std::vector<Config>& roots, uint32_t* bits) {
  if (roots.empty()) return 0;
  plain_total_.fetch_add(1, std::memory_order_relaxed);
  return with_targets([&](Targets& targets) {
    std::vector<Config>& buf = walk_buf_;
    buf.assign(roots.begin(), roots.end());
    try {
      walk_config_sets(lexer_->trie(), lexer_->dfa(), buf, bits, [&](int64_t steps) { spend(steps); },
                       [&](int32_t parser, int32_t state) -> const std::vector<Config>& { return targets(parser, state); },
                       plain_walk_scratch_cap());
    } catch (const ScratchExceeded&) {
      // (a grammar making a new configuration set at almost every trie node: the bits set so
      // far are all right, and the per-configuration walk, whose memory is one trie path of
      // configurations, sets the rest; its work counts on the same budget)
      scratch_fallbacks_.fetch_add(1, std::memory_order_relaxed);
      buf.assign(roots.begin(), roots.end());
      walk_below(0, buf, bits, targets);
    }
  });
}

std::atomic<size_t>& GrammarCore::scratch_cap_storage() {
  static std::atomic<size_t> cap{size_t{64} << 20};
  return cap;
}

bool GrammarCore::sliced(int32_t state) {
  const TokenSlices* slices = lexer_->slices();
  if (!slices || slices->slices().empty()) return false;
  return slices->slices().front().max_length <= slices->depth(lexer_->dfa(), state, lexer_->text_depth());
}

int64_t GrammarCore::configuration_bits(int32_t parser, int32_t state, uint32_t* bits) {
  bool plain = false;
  {
    std::lock_guard<std::mutex> compute_guard(lexer_->compute_mutex());
    if (!index_.count(state) && walked_plain_.insert(state).second) plain = !sliced(state);
  }
  if (plain) return plain_walk({Config{parser, state}}, bits);
  events(state);  // the events walk computes the inside row on the way
  lexer_->shared_row(state)->or_into(bits);
  return crossing(parser, state, bits);
}

}  // namespace tokamata
