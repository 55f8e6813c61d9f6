// Earley recognizer; see earley.hpp.
#include "tokamata/earley.hpp"

#include <algorithm>
#include <functional>
#include <stdexcept>

#include "tokamata/token_row.hpp"  // LimitError

namespace tokamata {

namespace {

template <typename T>
std::string key_of(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

int64_t item_key(int32_t position, int32_t origin) {
  return (static_cast<int64_t>(position) << 32) | static_cast<uint32_t>(origin);
}

}  // namespace

EarleyTables earley_tables(const GrammarRules& rules, int32_t start) {
  const int32_t n = rules.num_nonterminals();
  if (start < 0 || start >= n) throw std::invalid_argument("start out of range");
  EarleyTables t;
  t.start = start;
  t.num_terminals = rules.num_terminals();
  t.nullable = rules.nullable();
  // each nonterminal's rules (their first positions), grouped by a counting sort
  std::vector<int32_t> first_position(static_cast<size_t>(rules.num_rules()));
  FlatRows rule_starts;
  rule_starts.offsets.assign(static_cast<size_t>(n) + 1, 0);
  for (int32_t r = 0; r < rules.num_rules(); ++r) {
    first_position[r] = static_cast<int32_t>(t.next_symbol.size());
    t.next_symbol.insert(t.next_symbol.end(), rules.rhs_begin(r), rules.rhs_end(r));
    t.next_symbol.push_back(kEndOfRule);
    t.lhs_of.insert(t.lhs_of.end(), static_cast<size_t>(rules.rhs_end(r) - rules.rhs_begin(r)) + 1, rules.lhs(r));
    ++rule_starts.offsets[static_cast<size_t>(rules.lhs(r)) + 1];
  }
  for (int32_t nt = 0; nt < n; ++nt) rule_starts.offsets[nt + 1] += rule_starts.offsets[nt];
  rule_starts.values.resize(first_position.size());
  std::vector<int32_t> filled(rule_starts.offsets.begin(), rule_starts.offsets.end() - 1);
  for (int32_t r = 0; r < rules.num_rules(); ++r) rule_starts.values[filled[rules.lhs(r)]++] = first_position[r];
  FlatRows predicts;  // per nonterminal: the nonterminals at its prefix positions
  for (int32_t nt = 0; nt < n; ++nt) {
    for (const int32_t* start_position = rule_starts.begin(nt); start_position != rule_starts.end(nt); ++start_position) {
      for (int32_t position = *start_position; t.next_symbol[position] != kEndOfRule; ++position) {
        const int32_t symbol = t.next_symbol[position];
        t.prefix_positions.values.push_back(position);
        if (symbol >= 0) break;
        predicts.values.push_back(-symbol - 1);
        if (!t.nullable[-symbol - 1]) break;
      }
    }
    t.prefix_positions.close_row();
    predicts.close_row();
  }
  std::vector<int32_t> seen(static_cast<size_t>(n), -1), stack;
  for (int32_t nt = 0; nt < n; ++nt) {
    const size_t row_start = t.prediction_closure.values.size();
    seen[nt] = nt;
    stack.assign(1, nt);
    while (!stack.empty()) {
      const int32_t top = stack.back();
      stack.pop_back();
      t.prediction_closure.values.push_back(top);
      for (const int32_t* other = predicts.begin(top); other != predicts.end(top); ++other) {
        if (seen[*other] != nt) {
          seen[*other] = nt;
          stack.push_back(*other);
        }
      }
    }
    std::sort(t.prediction_closure.values.begin() + static_cast<std::ptrdiff_t>(row_start), t.prediction_closure.values.end());
    t.prediction_closure.close_row();
  }
  return t;
}

EarleyCore::EarleyCore(EarleyTables tables, int64_t max_items, int64_t max_sets)
    : t_(std::move(tables)), max_items_(max_items), max_sets_(max_sets) {
  const size_t n = t_.prefix_positions.size();
  if (t_.prediction_closure.size() != n || t_.nullable.size() != n) throw std::invalid_argument("per-nonterminal tables differ in size");
  if (t_.lhs_of.size() != t_.next_symbol.size()) throw std::invalid_argument("per-position tables differ in size");
  if (t_.start < 0 || static_cast<size_t>(t_.start) >= n) throw std::invalid_argument("start out of range");
  for (int32_t s : t_.next_symbol) {
    if (s != kEndOfRule && (s >= t_.num_terminals || (s < 0 && static_cast<size_t>(-s - 1) >= n)))
      throw std::invalid_argument("symbol out of range");
  }
  for (const FlatRows* rows : {&t_.prefix_positions, &t_.prediction_closure}) {
    if (rows->offsets.empty() || rows->offsets.front() != 0 ||
        static_cast<size_t>(rows->offsets.back()) != rows->values.size() ||
        !std::is_sorted(rows->offsets.begin(), rows->offsets.end()))
      throw std::invalid_argument("malformed per-nonterminal rows");
  }
  for (int32_t p : t_.prefix_positions.values) {
    if (p < 0 || static_cast<size_t>(p) >= t_.next_symbol.size() || t_.next_symbol[p] == kEndOfRule)
      throw std::invalid_argument("prefix position out of range");
  }
  for (int32_t nt : t_.prediction_closure.values) {
    if (nt < 0 || static_cast<size_t>(nt) >= n) throw std::invalid_argument("closure nonterminal out of range");
  }
  for (int32_t lhs : t_.lhs_of) {
    if (lhs < 0 || static_cast<size_t>(lhs) >= n) throw std::invalid_argument("lhs out of range");
  }
  auto root = std::make_unique<Set>();
  std::vector<Item> stack;
  std::vector<int32_t> roots{t_.start};
  close(stack, 0, roots, *root);
  sets_.push_back(std::move(root));
  live_ = 1;
  built_ = 1;
  live_hint_.store(live_, std::memory_order_relaxed);
}

void EarleyCore::check(int32_t handle) const {
  if (handle < 0 || static_cast<size_t>(handle) >= sets_.size() || !sets_[handle])
    throw std::out_of_range("parser state out of range");
}

bool EarleyCore::first_time(int64_t key) {
  if ((seen_count_ + 1) * 2 > seen_.size()) {
    std::vector<std::pair<uint64_t, int64_t>> old;
    old.swap(seen_);
    seen_.assign(old.empty() ? 256 : old.size() * 2, {0, 0});
    seen_count_ = 0;
    for (const auto& entry : old) {
      if (entry.first == epoch_) first_time(entry.second);
    }
  }
  const size_t mask = seen_.size() - 1;
  for (size_t i = static_cast<size_t>((static_cast<uint64_t>(key) * 0x9E3779B97F4A7C15ull) >> 20) & mask;;
       i = (i + 1) & mask) {
    auto& slot = seen_[i];
    if (slot.first != epoch_) {
      slot = {epoch_, key};
      ++seen_count_;
      return true;
    }
    if (slot.second == key) return false;
  }
}

int32_t EarleyCore::intern_allowed(std::vector<int32_t> terminals) {
  const std::string key = key_of(terminals);
  auto it = allowed_ids_.find(key);
  if (it != allowed_ids_.end()) return it->second;
  const int32_t id = static_cast<int32_t>(allowed_sets_.size());
  allowed_sets_.push_back(std::move(terminals));
  allowed_ids_.emplace(key, id);
  return id;
}

const EarleyCore::Predicted* EarleyCore::predicted_for(std::vector<int32_t>& roots) {
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  const std::string roots_key = key_of(roots);
  auto known = predicted_by_roots_.find(roots_key);
  if (known != predicted_by_roots_.end()) return known->second;
  std::vector<int32_t> closed;
  for (int32_t nt : roots) closed.insert(closed.end(), t_.prediction_closure.begin(nt), t_.prediction_closure.end(nt));
  std::sort(closed.begin(), closed.end());
  closed.erase(std::unique(closed.begin(), closed.end()), closed.end());
  const std::string key = key_of(closed);
  auto it = predicted_.find(key);
  const Predicted* out;
  if (it != predicted_.end()) {
    out = it->second.get();
  } else {
    auto block = std::make_unique<Predicted>();
    for (int32_t nt : closed) {
      for (const int32_t* at = t_.prefix_positions.begin(nt); at != t_.prefix_positions.end(nt); ++at) {
        const int32_t position = *at;
        const int32_t symbol = t_.next_symbol[position];
        block->by_symbol.emplace_back(symbol, position);
        if (symbol >= 0) block->terminals.push_back(symbol);
      }
    }
    std::sort(block->by_symbol.begin(), block->by_symbol.end());
    std::sort(block->terminals.begin(), block->terminals.end());
    block->terminals.erase(std::unique(block->terminals.begin(), block->terminals.end()), block->terminals.end());
    out = block.get();
    predicted_.emplace(key, std::move(block));
  }
  predicted_by_roots_.emplace(roots_key, out);
  return out;
}

void EarleyCore::close(std::vector<Item>& stack, int32_t here, std::vector<int32_t>& roots, Set& out) {
  ++epoch_;
  seen_count_ = 0;
  int64_t count = 0;
  auto by_symbol_less = [](const Entry& a, int32_t s) { return a.symbol < s; };
  while (!stack.empty()) {
    const Item item = stack.back();
    stack.pop_back();
    if (!first_time(item_key(item.position, item.origin))) continue;
    if (++count > max_items_) {
      throw LimitError("max_earley_items", static_cast<double>(count), static_cast<double>(max_items_));
    }
    const int32_t symbol = t_.next_symbol[item.position];
    if (symbol == kEndOfRule) {
      const int32_t lhs = t_.lhs_of[item.position];
      if (lhs == t_.start && item.origin == 0) out.accepting = true;
      const Set& parent = *sets_[item.origin];
      const int32_t wanted = -lhs - 1;
      for (auto it = std::lower_bound(parent.entries.begin(), parent.entries.end(), wanted, by_symbol_less);
           it != parent.entries.end() && it->symbol == wanted; ++it) {
        stack.push_back(Item{it->item.position + 1, it->item.origin});
      }
      const auto& predicted = parent.predicted->by_symbol;
      for (auto it = std::lower_bound(predicted.begin(), predicted.end(), std::make_pair(wanted, INT32_MIN));
           it != predicted.end() && it->first == wanted; ++it) {
        stack.push_back(Item{it->second + 1, item.origin});
      }
    } else {
      out.entries.push_back(Entry{symbol, item});
      if (symbol < 0) {
        const int32_t nt = -symbol - 1;
        roots.push_back(nt);
        if (t_.nullable[nt]) stack.push_back(Item{item.position + 1, item.origin});
      }
    }
  }
  std::sort(out.entries.begin(), out.entries.end(), [](const Entry& a, const Entry& b) {
    if (a.symbol != b.symbol) return a.symbol < b.symbol;
    if (a.item.position != b.item.position) return a.item.position < b.item.position;
    return a.item.origin < b.item.origin;
  });
  out.predicted = predicted_for(roots);
  if (here == 0 && t_.nullable[t_.start]) out.accepting = true;
  std::vector<int32_t> allowed;
  for (auto it = std::lower_bound(out.entries.begin(), out.entries.end(), 0, by_symbol_less); it != out.entries.end(); ++it) {
    if (allowed.empty() || allowed.back() != it->symbol) allowed.push_back(it->symbol);
  }
  if (!out.predicted->terminals.empty()) {
    std::vector<int32_t> merged;
    merged.reserve(allowed.size() + out.predicted->terminals.size());
    std::set_union(allowed.begin(), allowed.end(), out.predicted->terminals.begin(), out.predicted->terminals.end(),
                   std::back_inserter(merged));
    allowed.swap(merged);
  }
  out.allowed_id = intern_allowed(std::move(allowed));
}

int32_t EarleyCore::scan_if_built(int32_t handle, int32_t terminal) const {
  std::lock_guard<std::mutex> guard(mu_);
  check(handle);
  const Set& current = *sets_[handle];
  for (const auto& [t, child] : current.children) {
    if (t == terminal) return child;
  }
  auto by_symbol_less = [](const Entry& a, int32_t s) { return a.symbol < s; };
  auto entry = std::lower_bound(current.entries.begin(), current.entries.end(), terminal, by_symbol_less);
  if (entry != current.entries.end() && entry->symbol == terminal) return kScanNotBuilt;
  const auto& predicted = current.predicted->by_symbol;
  auto it = std::lower_bound(predicted.begin(), predicted.end(), std::make_pair(terminal, INT32_MIN));
  if (it != predicted.end() && it->first == terminal) return kScanNotBuilt;
  return -1;
}

int32_t EarleyCore::scan(int32_t handle, int32_t terminal) {
  std::lock_guard<std::mutex> guard(mu_);
  check(handle);
  Set& current = *sets_[handle];
  for (const auto& [t, child] : current.children) {
    if (t == terminal) return child;
  }
  std::vector<Item> kernel;
  auto by_symbol_less = [](const Entry& a, int32_t s) { return a.symbol < s; };
  for (auto it = std::lower_bound(current.entries.begin(), current.entries.end(), terminal, by_symbol_less);
       it != current.entries.end() && it->symbol == terminal; ++it) {
    kernel.push_back(Item{it->item.position + 1, it->item.origin});
  }
  const auto& predicted = current.predicted->by_symbol;
  for (auto it = std::lower_bound(predicted.begin(), predicted.end(), std::make_pair(terminal, INT32_MIN));
       it != predicted.end() && it->first == terminal; ++it) {
    kernel.push_back(Item{it->second + 1, handle});
  }
  if (kernel.empty()) return -1;
  std::sort(kernel.begin(), kernel.end(), [](const Item& a, const Item& b) {
    return a.position != b.position ? a.position < b.position : a.origin < b.origin;
  });
  kernel.erase(std::unique(kernel.begin(), kernel.end(), [](const Item& a, const Item& b) {
    return a.position == b.position && a.origin == b.origin;
  }), kernel.end());
  const std::string key = key_of(kernel);
  int32_t child;
  auto found = by_kernel_.find(key);
  if (found != by_kernel_.end()) {
    child = found->second;
  } else {
    // A new kernel may still close to a set we have: kernels differ in their completed items
    // (a lexeme's rule, completed at once, keeps the origin where the lexeme started), which
    // the future never looks at. Two sets with the same open items and acceptance are the
    // same state; without this, the parser states after k abutting lexemes of different
    // terminals (or split at different places) would be distinct, exponentially many.
    auto fresh = std::make_unique<Set>();
    std::vector<int32_t> roots;
    // (the handle it will get: close() only compares it with 0, the start set's handle)
    const int32_t here = free_.empty() ? static_cast<int32_t>(sets_.size()) : free_.back();
    close(kernel, here, roots, *fresh);
    std::vector<int32_t> content;
    content.reserve(fresh->entries.size() * 2 + 1);
    content.push_back(fresh->accepting ? 1 : 0);
    for (const Entry& e : fresh->entries) {
      content.push_back(e.item.position);
      content.push_back(e.item.origin);
    }
    const std::string content_key = key_of(content);
    auto same = by_content_.find(content_key);
    if (same != by_content_.end()) {
      child = same->second;
    } else {
      if (static_cast<int64_t>(live_) >= max_sets_) {
        throw LimitError("max_parser_states", static_cast<double>(live_ + 1), static_cast<double>(max_sets_));
      }
      fresh->content_key = content_key;
      if (free_.empty()) {
        child = static_cast<int32_t>(sets_.size());
        sets_.push_back(std::move(fresh));
      } else {
        child = free_.back();
        free_.pop_back();
        sets_[child] = std::move(fresh);
      }
      ++live_;
      ++built_;
      live_hint_.store(live_, std::memory_order_relaxed);
      by_content_.emplace(content_key, child);
    }
    by_kernel_.emplace(key, child);
  }
  sets_[handle]->children.emplace_back(terminal, child);
  return child;
}

bool EarleyCore::accepting(int32_t handle) const {
  std::lock_guard<std::mutex> guard(mu_);
  check(handle);
  return sets_[handle]->accepting;
}

int32_t EarleyCore::allowed_id(int32_t handle) const {
  std::lock_guard<std::mutex> guard(mu_);
  check(handle);
  return sets_[handle]->allowed_id;
}

std::vector<int32_t> EarleyCore::allowed(int32_t handle) const {
  std::lock_guard<std::mutex> guard(mu_);
  check(handle);
  return allowed_sets_[sets_[handle]->allowed_id];
}

std::vector<int32_t> EarleyCore::allowed_by_id(int32_t id) const {
  std::lock_guard<std::mutex> guard(mu_);
  if (id < 0 || static_cast<size_t>(id) >= allowed_sets_.size()) throw std::out_of_range("allowed-set id out of range");
  return allowed_sets_[id];
}

int32_t EarleyCore::num_sets() const {
  std::lock_guard<std::mutex> guard(mu_);
  return live_;
}

int64_t EarleyCore::num_built() const {
  std::lock_guard<std::mutex> guard(mu_);
  return built_;
}

int32_t EarleyCore::num_handles() const {
  std::lock_guard<std::mutex> guard(mu_);
  return static_cast<int32_t>(sets_.size());
}

std::vector<uint8_t> EarleyCore::collect(const std::vector<int32_t>& roots) {
  std::lock_guard<std::mutex> guard(mu_);
  std::vector<uint8_t> live(sets_.size(), 0);
  std::vector<int32_t> stack{0};
  live[0] = 1;
  for (int32_t r : roots) {
    check(r);
    if (!live[r]) {
      live[r] = 1;
      stack.push_back(r);
    }
  }
  while (!stack.empty()) {  // a set's completions read the sets its items' origins name
    const Set& s = *sets_[stack.back()];
    stack.pop_back();
    for (const Entry& e : s.entries) {
      const int32_t o = e.item.origin;
      if (!live[o]) {
        live[o] = 1;
        stack.push_back(o);
      }
    }
  }
  for (size_t h = 0; h < sets_.size(); ++h) {
    if (sets_[h] && !live[h]) {
      by_content_.erase(sets_[h]->content_key);
      sets_[h].reset();
      free_.push_back(static_cast<int32_t>(h));
      --live_;
    }
  }
  live_hint_.store(live_, std::memory_order_relaxed);
  // lowest handles first, so the table's live part stays dense
  std::sort(free_.begin(), free_.end(), std::greater<int32_t>());
  for (auto& set : sets_) {
    if (!set) continue;
    auto& children = set->children;
    children.erase(std::remove_if(children.begin(), children.end(),
                                  [&](const std::pair<int32_t, int32_t>& c) { return !live[c.second]; }),
                   children.end());
  }
  for (auto it = by_kernel_.begin(); it != by_kernel_.end();) {
    bool keep = live[it->second] != 0;
    const size_t n = it->first.size() / sizeof(Item);
    const Item* items = reinterpret_cast<const Item*>(it->first.data());
    for (size_t i = 0; keep && i < n; ++i) keep = live[items[i].origin] != 0;
    it = keep ? std::next(it) : by_kernel_.erase(it);
  }
  // (the scratch of closures keeps no handles past a call)
  return live;
}

}  // namespace tokamata
