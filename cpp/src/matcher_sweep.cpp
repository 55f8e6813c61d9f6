// Long life: releasing the parser states no live matcher can reach (see matcher_core.hpp,
// "Long life", and earley.hpp, collect()).
#include <algorithm>

#include "tokamata/matcher_core.hpp"

namespace tokamata {

// ------------------------------------------------------------------------------ registry

void ConstraintCore::register_matcher(const MatcherCore* m) {
  std::lock_guard<std::mutex> guard(registry_mu_);
  matchers_.insert(m);
}

void ConstraintCore::unregister_matcher(const MatcherCore* m) {
  std::lock_guard<std::mutex> guard(registry_mu_);
  matchers_.erase(m);
}

size_t ConstraintCore::num_matchers() const {
  std::lock_guard<std::mutex> guard(registry_mu_);
  return matchers_.size();
}

MatcherCore::MatcherCore(const MatcherCore& other)
    : prefix_bounds_(other.prefix_bounds_), constraint_(other.constraint_), stack_(other.stack_), starts_(other.starts_), terminated_(other.terminated_),
      mask_(other.mask_), prefix_(other.prefix_), prefix_masks_(other.prefix_masks_), forced_(other.forced_),
      forced_positions_(other.forced_positions_), forced_starts_(other.forced_starts_),
      forced_depth_(other.forced_depth_), forced_complete_(other.forced_complete_) {
  // (`other` is registered and holds the same handles until this one is)
  constraint_->register_matcher(this);
}

MatcherCore::~MatcherCore() { constraint_->unregister_matcher(this); }

std::shared_lock<std::shared_mutex> MatcherCore::hold(bool try_only) const {
  if (constraint_->strategy() != Strategy::kEarley) return {};
  if (try_only) return std::shared_lock<std::shared_mutex>(constraint_->sweep_mutex(), std::try_to_lock);
  return std::shared_lock<std::shared_mutex>(constraint_->sweep_mutex());
}

void MatcherCore::held_parsers(std::vector<int32_t>& out) const {
  for (const Configuration& c : stack_) {
    if (c.parser >= 0) out.push_back(c.parser);
  }
  for (const Configuration& c : forced_positions_) {
    if (c.parser >= 0) out.push_back(c.parser);
  }
}

// ------------------------------------------------------------------------------ sweeping

bool ConstraintCore::sweep_due() const {
  return grammar_ && grammar_->parser().num_sets_hint() >= sweep_at_.load(std::memory_order_relaxed);
}

int64_t ConstraintCore::sweep_when(bool only_if_due) {
  if (!grammar_) return 0;
  std::unique_lock<std::shared_mutex> exclusive(sweep_mu_);  // no matcher is in a call now
  EarleyCore& parser = grammar_->parser();
  const int64_t before = parser.num_sets();
  if (only_if_due && before < sweep_at_.load(std::memory_order_relaxed)) return 0;  // another thread swept
  std::vector<int32_t> roots{initial_.parser};
  {
    std::lock_guard<std::mutex> guard(registry_mu_);
    for (const MatcherCore* m : matchers_) m->held_parsers(roots);
  }
  std::sort(roots.begin(), roots.end());
  roots.erase(std::unique(roots.begin(), roots.end()), roots.end());
  // (lock order: budget_mu_, then the lexer's compute mutex, then cache_mu_)
  std::lock_guard<std::mutex> budget(budget_mu_);
  std::lock_guard<std::mutex> compute(lexer_->compute_mutex());
  const std::vector<uint8_t> live = parser.collect(roots);
  auto dead = [&](const Configuration& c) {
    return c.parser >= 0 && (static_cast<size_t>(c.parser) >= live.size() || !live[c.parser]);
  };
  grammar_->forget_parsers(live);
  {
    std::lock_guard<std::mutex> guard(cache_mu_);
    for (auto it = masks_.begin(); it != masks_.end();) it = dead(it->first) ? masks_.erase(it) : std::next(it);
    mask_order_.erase(std::remove_if(mask_order_.begin(), mask_order_.end(), dead), mask_order_.end());
    for (auto it = accepting_.begin(); it != accepting_.end();) it = dead(it->first) ? accepting_.erase(it) : std::next(it);
    auto dead_position = [&](const std::vector<Configuration>& p) { return std::any_of(p.begin(), p.end(), dead); };
    for (auto it = positions_.begin(); it != positions_.end();) {
      it = dead_position(it->first) ? positions_.erase(it) : std::next(it);
    }
    position_order_.erase(std::remove_if(position_order_.begin(), position_order_.end(), dead_position),
                          position_order_.end());
  }
  // token budgets: bounds and profiles of positions naming a released set (matcher_budget.cpp;
  // a bound dropped here is found again from a new witness when asked)
  auto dead_position = [&](const std::vector<Configuration>& p) { return std::any_of(p.begin(), p.end(), dead); };
  for (auto it = bounds_.begin(); it != bounds_.end();) it = dead_position(it->first) ? bounds_.erase(it) : std::next(it);
  for (auto it = profiles_.begin(); it != profiles_.end();) {
    it = dead_position(it->first) ? profiles_.erase(it) : std::next(it);
  }
  profile_order_.erase(std::remove_if(profile_order_.begin(), profile_order_.end(), dead_position),
                       profile_order_.end());
  const int64_t after = parser.num_sets();
  // the next sweep when the live states double (bounded below by the floor and above by half
  // the limit, so the limit is never reached by accumulation alone)
  const int64_t half_limit = std::max<int64_t>(parser.max_sets() / 2, 1);
  const int64_t fixed = fixed_sweep_at_.load(std::memory_order_relaxed);
  sweep_at_.store(fixed >= 0 ? fixed : std::min(std::max<int64_t>(2 * after, kSweepFloor), half_limit),
                  std::memory_order_relaxed);
  sweeps_.fetch_add(1, std::memory_order_relaxed);
  return before - after;
}

}  // namespace tokamata
