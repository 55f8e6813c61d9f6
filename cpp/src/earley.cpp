// Earley recognizer; see earley.hpp.
#include "tokamata/earley.hpp"

#include <algorithm>
#include <stdexcept>
#include <unordered_set>

#include "tokamata/token_row.hpp"  // LimitError

namespace tokamata {

namespace {

template <typename T>
std::string key_of(const std::vector<T>& values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(T));
}

}  // namespace

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
  for (const auto& positions : t_.prefix_positions) {
    for (int32_t p : positions) {
      if (p < 0 || static_cast<size_t>(p) >= t_.next_symbol.size() || t_.next_symbol[p] == kEndOfRule)
        throw std::invalid_argument("prefix position out of range");
    }
  }
  for (const auto& closure : t_.prediction_closure) {
    for (int32_t nt : closure) {
      if (nt < 0 || static_cast<size_t>(nt) >= n) throw std::invalid_argument("closure nonterminal out of range");
    }
  }
  for (int32_t lhs : t_.lhs_of) {
    if (lhs < 0 || static_cast<size_t>(lhs) >= n) throw std::invalid_argument("lhs out of range");
  }
  auto root = std::make_unique<Set>();
  close({}, 0, {t_.start}, *root);
  sets_.push_back(std::move(root));
}

void EarleyCore::check(int32_t handle) const {
  if (handle < 0 || static_cast<size_t>(handle) >= sets_.size()) throw std::out_of_range("parser state out of range");
}

int32_t EarleyCore::intern_allowed(std::vector<int32_t> terminals) {
  std::sort(terminals.begin(), terminals.end());
  terminals.erase(std::unique(terminals.begin(), terminals.end()), terminals.end());
  const std::string key = key_of(terminals);
  auto it = allowed_ids_.find(key);
  if (it != allowed_ids_.end()) return it->second;
  const int32_t id = static_cast<int32_t>(allowed_sets_.size());
  allowed_sets_.push_back(std::move(terminals));
  allowed_ids_.emplace(key, id);
  return id;
}

const EarleyCore::Predicted* EarleyCore::predicted_for(std::vector<int32_t> nonterminals) {
  std::sort(nonterminals.begin(), nonterminals.end());
  nonterminals.erase(std::unique(nonterminals.begin(), nonterminals.end()), nonterminals.end());
  const std::string key = key_of(nonterminals);
  auto it = predicted_.find(key);
  if (it != predicted_.end()) return it->second.get();
  auto block = std::make_unique<Predicted>();
  for (int32_t nt : nonterminals) {
    for (int32_t position : t_.prefix_positions[nt]) {
      const int32_t symbol = t_.next_symbol[position];
      if (symbol >= 0) {
        block->scans[symbol].push_back(position);
      } else {
        block->waiting[-symbol - 1].push_back(position);
      }
    }
  }
  const Predicted* out = block.get();
  predicted_.emplace(key, std::move(block));
  return out;
}

void EarleyCore::close(std::vector<Item> stack, int32_t here, std::vector<int32_t> roots, Set& out) {
  std::unordered_set<int64_t> seen;
  while (!stack.empty()) {
    const Item item = stack.back();
    stack.pop_back();
    const int64_t key = (static_cast<int64_t>(item.position) << 32) | static_cast<uint32_t>(item.origin);
    if (!seen.insert(key).second) continue;
    if (static_cast<int64_t>(seen.size()) > max_items_) {
      throw LimitError("max_earley_items " + std::to_string(seen.size()) + " " + std::to_string(max_items_));
    }
    const int32_t symbol = t_.next_symbol[item.position];
    if (symbol == kEndOfRule) {
      const int32_t lhs = t_.lhs_of[item.position];
      if (lhs == t_.start && item.origin == 0) out.accepting = true;
      const Set& parent = *sets_[item.origin];
      auto waiting = parent.waiting.find(lhs);
      if (waiting != parent.waiting.end()) {
        for (const Item& p : waiting->second) stack.push_back(Item{p.position + 1, p.origin});
      }
      auto predicted = parent.predicted->waiting.find(lhs);
      if (predicted != parent.predicted->waiting.end()) {
        for (int32_t p : predicted->second) stack.push_back(Item{p + 1, item.origin});
      }
    } else if (symbol >= 0) {
      out.scans[symbol].push_back(item);
    } else {
      const int32_t nt = -symbol - 1;
      out.waiting[nt].push_back(item);
      roots.push_back(nt);
      if (t_.nullable[nt]) stack.push_back(Item{item.position + 1, item.origin});
    }
  }
  std::vector<int32_t> closed;
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  for (int32_t nt : roots) closed.insert(closed.end(), t_.prediction_closure[nt].begin(), t_.prediction_closure[nt].end());
  out.predicted = predicted_for(std::move(closed));
  if (here == 0 && t_.nullable[t_.start]) out.accepting = true;
  std::vector<int32_t> allowed;
  for (const auto& entry : out.scans) allowed.push_back(entry.first);
  for (const auto& entry : out.predicted->scans) allowed.push_back(entry.first);
  out.allowed_id = intern_allowed(std::move(allowed));
}

int32_t EarleyCore::scan(int32_t handle, int32_t terminal) {
  std::lock_guard<std::mutex> guard(mu_);
  check(handle);
  Set& current = *sets_[handle];
  auto memo = current.children.find(terminal);
  if (memo != current.children.end()) return memo->second;
  std::vector<Item> kernel;
  auto scans = current.scans.find(terminal);
  if (scans != current.scans.end()) {
    for (const Item& item : scans->second) kernel.push_back(Item{item.position + 1, item.origin});
  }
  auto predicted = current.predicted->scans.find(terminal);
  if (predicted != current.predicted->scans.end()) {
    for (int32_t p : predicted->second) kernel.push_back(Item{p + 1, handle});
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
    if (static_cast<int64_t>(sets_.size()) >= max_sets_) {
      throw LimitError("max_parser_states " + std::to_string(sets_.size() + 1) + " " + std::to_string(max_sets_));
    }
    child = static_cast<int32_t>(sets_.size());
    auto fresh = std::make_unique<Set>();
    close(kernel, child, {}, *fresh);
    sets_.push_back(std::move(fresh));
    by_kernel_.emplace(key, child);
  }
  sets_[handle]->children.emplace(terminal, child);
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
  return static_cast<int32_t>(sets_.size());
}

}  // namespace tokamata
